"""Targeted record swapping, as sdcMicro's ``recordSwap`` does it: a pure function over a pandas
frame of records (persons), grouped into units (households) that move together.

A swap exchanges the geography of two units (the ``move`` columns of every record of each),
never their attributes. What the method does, in order (sdcMicro's C++ ``recordSwap``, read in
its source and vignette; the differences are listed below):

1. **Risk.** For every geographic level ``h`` of the hierarchy (highest first), a record's
   count is the number of records in its level-``h`` area with its values of the risk
   variables; its risk is 1 / count. A unit's risk at ``h`` is the largest over its records.
2. **At risk (k-anonymity).** A unit with a record counted below ``k`` at some level must be
   swapped out of its area at the *highest* such level (``k = 0``, and ``k = 1``, mark none).
3. **Swaps at the higher levels.** Level by level, area by area, each unit at risk there
   gets a partner: a unit not yet swapped, in another area of that level, with the same
   values of the similarity variables (the first profile that finds one, then the next: the
   fallback profiles). Partners are drawn with probability proportional to their risk at
   that level: each unit's key is risk / Exp(1), drawn once per level, and the largest
   eligible key wins (Efraimidis and Spirakis's weighted sampling without replacement).
4. **The swap rate.** ``round(rate x units / 2)`` pairs in all (a pair swaps two units), shared
   among the lowest-level areas in proportion to their units (the remainders to areas drawn
   at random). At the lowest level each area swaps its units at risk there, and then units
   drawn by risk until its share of pairs is reached, counting the pairs already started
   in it at the higher levels; partners as in 3.
5. **Top-up** (not in sdcMicro, which stops short): when an area runs out of units or
   partners, units drawn by risk from anywhere are paired at the lowest level until the
   total is reached or no two unswapped units can be paired.

So with ``k = 0`` exactly ``round(rate x units / 2)`` pairs are swapped unless the
population cannot give that many (and then no further pair exists); with ``k > 0`` every unit
at risk is swapped out of its area whenever any partner is left, and the total is at least
that. Each pair keeps every area's count of units by the similarity variables (both units
share them); a ``within`` column keeps every pair inside one of its areas, so those areas
keep every count.

Differences from sdcMicro: the total is rounded to the nearest pair where sdcMicro flips a
coin between floor and ceiling; the top-up; units at risk are taken in order of a risk key
(sdcMicro's order is a hash set's); the random numbers are numpy's (PCG64), so the same seed
gives other swaps than sdcMicro's Mersenne twister, with the same distribution; sdcMicro's
donor keys live in a map keyed by the key itself (two equal keys lose one unit), ours do not.
Keeping swaps inside a higher area is done in sdcMicro by naming that area's variable among
the similarity variables, which ``within`` does for every profile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Real

import numpy as np
import pandas as pd

from statrecon.errors import StatreconError

RISK, RATE, PARTNER = "risk", "rate", "partner"  # why a unit was swapped


@dataclass(frozen=True)
class SwapPlan:
    """What to swap and how.

    ``hierarchy``: the columns naming the areas, highest level first (a level's area is the
    combination of its column and those above it). ``risk``: the risk variables (record
    columns). ``similar``: the similarity profiles, each a tuple of unit-level columns (an
    empty profile matches any unit); the first that finds a partner is used. ``within``: a
    unit-level column every pair shares (added to every profile). ``unit``: the column of
    household ids (None: every record is its own unit). ``move``: the columns exchanged
    (default: the hierarchy's). ``names``: the levels' names in the result (default: the
    hierarchy's columns).
    """

    hierarchy: tuple[str, ...]
    risk: tuple[str, ...]
    rate: float
    k: int = 3
    similar: tuple[tuple[str, ...], ...] = ((),)
    within: str | None = None
    unit: str | None = None
    move: tuple[str, ...] = ()
    seed: int = 0
    names: tuple[str, ...] = ()

    @property
    def moved(self) -> tuple[str, ...]:
        return self.move or self.hierarchy

    @property
    def level_names(self) -> tuple[str, ...]:
        return self.names or self.hierarchy


@dataclass(frozen=True)
class SwapResult:
    """The swapped records and what happened to every unit.

    ``frame``: the records in their order and with their index, the ``move`` columns
    exchanged within each pair, nothing else changed. ``units``: one row per unit in order
    of its first record: ``unit`` (its household id, or its record's index label),
    ``records``, ``area`` (its lowest-level area before the swap), ``risk_level`` (the
    highest level where a record of it is counted below k; None: not at risk),
    ``swapped``, ``partner`` (the partner's label), ``to`` (the partner's lowest-level
    area), ``level`` (the level it was swapped across), ``reason`` (risk, rate or partner),
    ``profile`` (1-based index of the profile matched), ``protected`` (at risk and swapped
    out of the area where it is at risk), and ``risk_<level>`` for every level (1 / the
    smallest count among its records).
    """

    frame: pd.DataFrame
    units: pd.DataFrame
    plan: SwapPlan
    target_pairs: int

    @property
    def pairs(self) -> int:
        return int(self.units["swapped"].sum()) // 2

    @property
    def at_risk(self) -> int:
        return int(self.units["risk_level"].notna().sum())

    @property
    def protected(self) -> int:
        return int(self.units["protected"].sum())

    def pairs_by_level(self) -> dict[str, int]:
        """Pairs swapped across each level (every level named, zeros included)."""
        started = self.units[self.units["swapped"] & (self.units["reason"] != PARTNER)]
        counts = started["level"].value_counts()
        return {name: int(counts.get(name, 0)) for name in self.plan.level_names}


def target_pairs(rate: float, units: int) -> int:
    """``rate x units / 2`` pairs, to the nearest (a half up), read from the rate as written
    (0.05 is 1/20, not its binary neighbour)."""
    exact = Fraction(str(rate)) * units / 2
    return math.floor(exact + Fraction(1, 2))


def check_plan(plan: SwapPlan, columns: Iterable[object]) -> None:
    """One line for the first thing wrong with ``plan`` against a frame of ``columns``."""
    rate = plan.rate
    if isinstance(rate, bool) or not isinstance(rate, Real) or not 0 <= rate <= 1:
        raise StatreconError(f"the swap rate must lie in [0, 1], got {rate}")
    if isinstance(plan.k, bool) or not isinstance(plan.k, Integral) or plan.k < 0:
        raise StatreconError(f"k (the k-anonymity threshold) must be a whole number >= 0, "
                             f"got {plan.k}")
    if not isinstance(plan.seed, Integral) or plan.seed < 0:
        raise StatreconError(f"the seed must be a whole number >= 0, got {plan.seed}")
    if not plan.hierarchy:
        raise StatreconError("name at least one geographic level to swap across")
    if not plan.similar:
        raise StatreconError("give at least one similarity profile (an empty one matches "
                             "any unit)")
    if plan.names and len(plan.names) != len(plan.hierarchy):
        raise StatreconError("name every level of the hierarchy once")
    have = {str(c) for c in columns}
    wanted = [*plan.hierarchy, *plan.risk, *(c for p in plan.similar for c in p),
              *plan.moved, *([plan.within] if plan.within else []),
              *([plan.unit] if plan.unit else [])]
    unknown = sorted({c for c in wanted if c not in have})
    if unknown:
        shown = ", ".join(sorted(have)[:20]) + (", ..." if len(have) > 20 else "")
        raise StatreconError(f"unknown column(s) {', '.join(unknown)}; the records have "
                             f"{shown}")


def record_swap(frame: pd.DataFrame, plan: SwapPlan) -> SwapResult:
    """Targeted record swapping of ``frame`` under ``plan`` (seeded: the same frame and plan
    give the same swaps)."""
    check_plan(plan, frame.columns)
    return _Swapper(frame, plan).run()


class _Swapper:
    """One run: the units, their risks and profiles, the pairs made so far."""

    def __init__(self, frame: pd.DataFrame, plan: SwapPlan) -> None:
        self.frame, self.plan = frame, plan
        self.rng = np.random.default_rng(plan.seed)
        if plan.unit is None:
            self.unit_of = np.arange(len(frame))
            self.labels: Sequence[object] = list(frame.index)
        else:
            ids = frame[plan.unit]
            if ids.isna().any():
                row = frame.index[int(np.flatnonzero(ids.isna().to_numpy())[0])]
                raise StatreconError(f"record {row}: no household id in column {plan.unit}")
            codes, uniques = pd.factorize(ids, sort=False)
            self.unit_of, self.labels = codes, list(uniques)
        self.n = len(self.labels)
        self.first = np.unique(self.unit_of, return_index=True)[1].astype(np.int64)
        self._check_unit_level()
        h_count = len(plan.hierarchy)
        self.area = [self._codes(plan.hierarchy[:h + 1]) for h in range(h_count)]
        self.risk, self.must = self._risks()
        within = [plan.within] if plan.within else []
        self.profiles = [self._codes((*within, *p)) for p in plan.similar]
        self.used = np.zeros(self.n, dtype=bool)
        self.partner = np.full(self.n, -1, dtype=np.int64)
        self.level = np.full(self.n, -1, dtype=np.int64)
        self.reason = np.full(self.n, "", dtype=object)
        self.profile = np.zeros(self.n, dtype=np.int64)
        self.tried_lowest = np.zeros(self.n, dtype=bool)
        self.failed = np.zeros(self.n, dtype=bool)
        self.started = np.zeros(int(self.area[-1].max(initial=-1)) + 1, dtype=np.int64)
        self.pairs = 0

    # ------------------------------------------------------------------ the units' data

    def _check_unit_level(self) -> None:
        """A household's geography and similarity variables are the same for all its
        records."""
        plan = self.plan
        if plan.unit is None or self.n == len(self.frame):
            return
        columns = dict.fromkeys([*plan.hierarchy, *plan.moved,
                                 *([plan.within] if plan.within else []),
                                 *(c for p in plan.similar for c in p)])
        for column in columns:
            values = self.frame[column]
            head = values.iloc[self.first[self.unit_of]].reset_index(drop=True)
            own = values.reset_index(drop=True)
            differs = own.ne(head) & ~(own.isna() & head.isna())
            if differs.any():
                row = int(np.flatnonzero(differs.to_numpy())[0])
                label = self.labels[int(self.unit_of[row])]
                raise StatreconError(f"household {label}: column {column} differs between its "
                                     f"records ({head.iloc[row]!r} and {own.iloc[row]!r}); a "
                                     "household's geography and similarity variables are "
                                     "its own, the same for every member")

    def _codes(self, columns: Sequence[str]) -> np.ndarray:
        """Each unit's group over ``columns`` (its first record's values), numbered in
        sorted order; every unit in one group when there are no columns."""
        return _groups(self.frame.iloc[self.first], columns)

    def _risks(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Each unit's risk at every level (1 / the smallest count of its records' risk
        combination in its area), and the highest level where it is at risk (the number of
        levels: nowhere)."""
        plan, levels = self.plan, len(self.plan.hierarchy)
        risks: list[np.ndarray] = []
        must = np.full(self.n, levels, dtype=np.int64)
        for h in range(levels):
            group = _groups(self.frame, [*plan.hierarchy[:h + 1], *plan.risk])
            counts = np.bincount(group)[group]
            smallest = np.full(self.n, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(smallest, self.unit_of, counts)
            risks.append(1.0 / smallest)
            if plan.k > 0:
                at_risk = (smallest < plan.k) & (must == levels)
                must[at_risk] = h
        return risks, must

    # ------------------------------------------------------------------------- the run

    def run(self) -> SwapResult:
        plan, levels = self.plan, len(self.plan.hierarchy)
        target = target_pairs(plan.rate, self.n)
        quota = self._quotas(target)
        for h in range(levels - 1):
            donors = _Donors(self._donor_order(h), self.profiles, self.area[h], self.used)
            mine = np.flatnonzero(self.must == h)
            key = self.risk[h][mine] / self.rng.exponential(size=len(mine))
            for u in mine[np.lexsort((-key, self.area[h][mine]))].tolist():
                if not self.used[u]:
                    self._swap(u, h, RISK, donors)
        lowest = levels - 1
        donors = _Donors(self._donor_order(lowest), self.profiles, self.area[lowest],
                         self.used)
        order = np.argsort(self.area[lowest], kind="stable")
        bounds = np.flatnonzero(np.diff(self.area[lowest][order])) + 1
        for members in np.split(order, bounds) if self.n else []:
            self._lowest_area(members, quota, donors)
        if self.pairs < target:  # top-up
            rest = np.flatnonzero(~self.used & ~self.tried_lowest)
            key = self.risk[lowest][rest] / self.rng.exponential(size=len(rest))
            for u in rest[np.argsort(-key, kind="stable")].tolist():
                if self.pairs >= target:
                    break
                if not self.used[u]:
                    self._swap(u, lowest, RISK if self.must[u] == lowest else RATE, donors)
        return self._result(target)

    def _quotas(self, target: int) -> np.ndarray:
        """The pairs each lowest-level area starts: ``target`` in proportion to its units,
        the remainders (fewer than the areas) to areas drawn at random."""
        sizes = np.bincount(self.area[-1], minlength=len(self.started)).astype(np.int64)
        if self.n == 0:
            return sizes
        quota = (target * sizes) // self.n
        extra = target - int(quota.sum())
        quota[self.rng.choice(len(quota), size=extra, replace=False)] += 1
        return quota

    def _donor_order(self, h: int) -> np.ndarray:
        """The units by risk / Exp(1) at level ``h``, largest first: the order partners are
        drawn in (a draw proportional to risk, without replacement)."""
        key = self.risk[h] / self.rng.exponential(size=self.n)
        return np.argsort(-key, kind="stable")

    def _lowest_area(self, members: np.ndarray, quota: np.ndarray, donors: _Donors) -> None:
        """One lowest-level area: its units at risk there, then units drawn by risk until
        its share of pairs is started."""
        lowest = len(self.plan.hierarchy) - 1
        area = int(self.area[lowest][members[0]])
        free = members[~self.used[members] & ~self.failed[members]]
        must = free[self.must[free] == lowest]
        others = free[self.must[free] == lowest + 1]
        wanted = max(0, int(quota[area]) - int(self.started[area]) - len(must))
        must_key = self.risk[lowest][must] / self.rng.exponential(size=len(must))
        chosen = [must[np.argsort(-must_key, kind="stable")]]
        if wanted and len(others):
            key = self.risk[lowest][others] / self.rng.exponential(size=len(others))
            chosen.append(others[np.argsort(-key, kind="stable")[:wanted]])
        for i, units in enumerate(chosen):
            for u in units.tolist():
                if not self.used[u]:
                    self._swap(u, lowest, RISK if i == 0 else RATE, donors)

    def _swap(self, u: int, h: int, why: str, donors: _Donors) -> None:
        """Find ``u`` a partner across level ``h``, or note that none is left."""
        found = donors.find(u)
        lowest = h == len(self.plan.hierarchy) - 1
        if found is None:
            self.failed[u] = True
            self.tried_lowest[u] |= lowest
            return
        v, p = found
        self.used[[u, v]] = True
        self.partner[u], self.partner[v] = v, u
        self.level[[u, v]] = h
        self.reason[u], self.reason[v] = why, PARTNER
        self.profile[[u, v]] = p + 1
        self.started[self.area[-1][u]] += 1
        self.pairs += 1

    def _result(self, target: int) -> SwapResult:
        plan, names = self.plan, self.plan.level_names
        source = np.where(self.partner >= 0, self.partner, np.arange(self.n))
        rows = self.first[source[self.unit_of]]
        frame = self.frame.copy()
        for column in plan.moved:
            frame[column] = self.frame[column].array.take(rows)
        lowest_col = plan.hierarchy[-1]
        area = self.frame[lowest_col].iloc[self.first].to_numpy()
        swapped = self.partner >= 0
        protected = swapped & (self.must < len(names)) & (self.level <= self.must)
        units = pd.DataFrame({
            "unit": _objects(self.labels),
            "records": np.bincount(self.unit_of, minlength=self.n),
            "area": area,
            "risk_level": _objects([names[m] if m < len(names) else None
                                    for m in self.must.tolist()]),
            "swapped": swapped,
            "partner": _objects([self.labels[p] if p >= 0 else None
                                 for p in self.partner.tolist()]),
            "to": _objects([area[p] if p >= 0 else None for p in self.partner.tolist()]),
            "level": _objects([names[h] if h >= 0 else None for h in self.level.tolist()]),
            "reason": _objects([r or None for r in self.reason.tolist()]),
            "profile": self.profile,
            "protected": protected,
            **{f"risk_{name}": risk for name, risk in zip(names, self.risk, strict=True)},
        })
        return SwapResult(frame, units, plan, target)


def _groups(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """Each row's group over ``columns`` (a missing value is a value), numbered in sorted
    order where the values sort; all rows in group 0 when there are no columns."""
    if not columns or not len(frame):
        return np.zeros(len(frame), dtype=np.int64)
    group = np.zeros(len(frame), dtype=np.int64)
    for column in columns:
        try:
            code = pd.factorize(frame[column], sort=True, use_na_sentinel=False)[0]
        except TypeError:  # values that do not sort (text beside numbers): as they come
            code = pd.factorize(frame[column], sort=False, use_na_sentinel=False)[0]
        # the groups so far, each split by this column (renumbered: never overflows)
        combined = group * (int(code.max()) + 1) + code
        group = np.unique(combined, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return group


def _objects(values: Sequence[object]) -> pd.Series:
    """``values`` as a column of Python objects: ids stay ids (no float for a missing one),
    None stays None (no NaN)."""
    column = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        column[i] = value
    return pd.Series(column, dtype=object)


class _Donors:
    """The partners one level draws from: every unit in that level's key order, grouped by
    each profile's key; a unit is skipped once swapped, or when it lives in the area the
    seeker must leave."""

    def __init__(self, order: np.ndarray, profiles: list[np.ndarray], area: np.ndarray,
                 used: np.ndarray) -> None:
        self.area, self.used, self.profiles = area.tolist(), used, profiles
        self.groups: list[dict[int, list[int]]] = []
        self.start: list[dict[int, int]] = []
        for key in profiles:
            ranked = key[order]
            by_key = np.argsort(ranked, kind="stable")
            cuts = np.flatnonzero(np.diff(ranked[by_key])) + 1
            groups = {int(ranked[part[0]]): order[part].tolist()
                      for part in np.split(by_key, cuts) if len(part)}
            self.groups.append(groups)
            self.start.append(dict.fromkeys(groups, 0))

    def find(self, u: int) -> tuple[int, int] | None:
        """The first unswapped unit outside ``u``'s area with ``u``'s profile (the first
        profile that has one), marked as taken by the caller; None if there is none."""
        used, area, home = self.used, self.area, self.area[u]
        for p, key in enumerate(self.profiles):
            k = int(key[u])
            units, i = self.groups[p][k], self.start[p][k]
            while i < len(units) and used[units[i]]:
                i += 1
            self.start[p][k] = i
            for v in units[i:]:
                if area[v] != home and not used[v]:
                    return v, p
        return None
