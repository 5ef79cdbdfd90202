"""Cell key perturbation (CKM) of frequency tables: ptables, record keys, cell keys.

Every record carries a random *record key*; a cell's *cell key* is the sum of the keys of its
records modulo the key range, so the same records always make the same cell key, and the
same cell is perturbed the same way in every table that publishes it (the consistency that
makes differencing useless, and margins attacks possible). A *ptable* maps a true count and a
cell key to the noise added; a zero is never perturbed. Two designs:

- ONS's (:class:`KeyedPTable`, the ``cell-key-perturbation`` package): rows ``pcv, ckey,
  pvalue``, integer keys ``0..K-1`` (K = 256), every ``pcv`` from 1 to 750 with every key
  once; a count above 750 is looked up at ``((n - 1) mod 250) + 501``.
- ABS/Destatis's (:class:`IntervalPTable`, sdcTools' ``ptable`` and ``cellKey``): rows ``i, j,
  p, v, p_int_lb, p_int_ub``, keys in [0, 1) with the row whose interval ``[p_int_lb,
  p_int_ub)`` holds the key (``cellKey``: the first row with key < ``p_int_ub``); row ``i``
  is the true count, the last ``i`` the row of every larger count.

Probabilities and keys are exact (Fractions, read by :mod:`statrecon.number_reader`). What
an attacker knows of the ptable (:data:`KNOWLEDGE`) decides the true counts a published
value allows (:meth:`PTable.possible`): the ptable itself, only its largest noise D, or
nothing but that a zero stays zero.
"""

from __future__ import annotations

import functools
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from statrecon import inputs
from statrecon.errors import InconsistentReleaseError, StatreconError
from statrecon.number_reader import NumberError, parse_number
from statrecon.tables.frames import row_error
from statrecon.tables.model import Cell, Key, Table, TableSet
from statrecon.tables.rules import TableSpec, tabulate
from statrecon.tables.values import show

Format = Literal["ons", "abs"]
Knowledge = Literal["ptable", "d", "nothing"]
KNOWLEDGE: tuple[Knowledge, ...] = ("ptable", "d", "nothing")
KNOWLEDGE_TEXT: dict[Knowledge, str] = {
    "ptable": "the ptable itself (every transition and its probability)",
    "d": "only D, the largest noise (and that a zero is never perturbed)",
    "nothing": "nothing of the ptable (only that a zero is never perturbed)",
}
ONS_COLUMNS = ("pcv", "ckey", "pvalue")
ABS_COLUMNS = ("i", "j", "p", "v", "p_int_lb", "p_int_ub")
ONS_ROWS = 750  # ONS looks counts above 750 up at ((n - 1) mod 250) + 501
ONS_CYCLE = 250
ONS_KEY_RANGE = 256
ONS_ID_KEYS = 4096  # ONS's record key from an ons_id: the id modulo this (its package)
UNIT_KEY_DIGITS = 8  # drawn unit keys have 8 decimals, as cellKey's ck_generate_rkeys
MAX_PTABLE_ROWS = 1_000_000
MAX_NOISE = 1000  # a ptable adding more than this to a count is refused


# ---------------------------------------------------------------------------------- ptables


class PTable:
    """What both designs share: the row of a count, the noise of a (count, cell key), the
    distribution of published values, and the true counts a published value allows."""

    format: Format

    @property
    def noise(self) -> int:
        """D: the largest absolute noise any row adds."""
        raise NotImplementedError

    @property
    def blocked(self) -> int:
        """js: the largest count k >= 1 such that no count is ever published as 1..k."""
        return next(k for k in range(MAX_NOISE + 1) if not self._never_published(k + 1))

    def _never_published(self, value: int) -> bool:
        return all(value - n not in self.noises(n) for n in range(max(1, value - self.noise),
                                                                   value + self.noise + 1))

    def row(self, n: int) -> int:
        """The row a true count ``n >= 1`` is looked up in."""
        raise NotImplementedError

    def perturbation(self, n: int, ckey: Fraction) -> int:
        """The noise added to a cell of true count ``n`` and cell key ``ckey``."""
        raise NotImplementedError

    def outcomes(self, n: int) -> dict[int, Fraction]:
        """The noise -> probability of a cell of true count ``n`` (zero: 0 with certainty),
        over a uniformly random cell key; only noises of positive probability."""
        raise NotImplementedError

    def noises(self, n: int) -> frozenset[int]:
        return frozenset(self.outcomes(n)) if n else frozenset({0})

    def cell_key(self, key_sum: Fraction) -> Fraction:
        raise NotImplementedError

    def record_key_error(self, key: Fraction) -> str | None:
        """Why ``key`` cannot be a record key of this ptable, or None."""
        raise NotImplementedError

    def draw_keys(self, size: int, seed: int) -> list[Fraction]:
        raise NotImplementedError

    def possible(self, published: int, knowledge: Knowledge) -> tuple[int, int | None]:
        """The least and greatest true count (None: no bound) that could be published as
        ``published`` under what the attacker knows (:data:`KNOWLEDGE`): with the ptable,
        the hull of the counts whose row can add ``published - n``; with D, ``published +-
        D``; with nothing, any count. Under each, a zero stays zero, so a published value
        above 0 means a true count of at least 1."""
        least = 1 if published > 0 else 0
        if knowledge == "nothing":
            return least, None
        if knowledge == "d":
            return max(least, published - self.noise), published + self.noise
        counts = self.sources(published)
        if not counts:
            raise InconsistentReleaseError(f"the ptable never publishes {published}: the "
                                           "release is inconsistent with its ptable")
        return min(counts), max(counts)

    def sources(self, published: int) -> tuple[int, ...]:
        """Every true count that the ptable can publish as ``published``, ascending."""
        low = max(0, published - self.noise)
        return tuple(n for n in range(low, published + self.noise + 1)
                     if published - n in self.noises(n))

    def likelihood(self, seen: Sequence[int]) -> dict[int, Fraction]:
        """``P(published in seen | true count n)`` over a uniformly random cell key, for
        every ``n`` where it is positive: ``seen`` is one value when it is published, the
        values below the threshold when it is withheld."""
        counts = sorted({n for y in seen for n in self.sources(y)})
        out = {n: sum((self.outcomes(n).get(y - n, Fraction(0)) for y in seen), Fraction(0))
               for n in counts}
        return {n: p for n, p in out.items() if p}

    def possible_below(self, threshold: int, knowledge: Knowledge) -> tuple[int, int | None]:
        """The counts a cell published as below ``threshold`` (suppressed) could have."""
        if knowledge == "nothing":
            return 0, None
        if knowledge == "d":
            return 0, threshold - 1 + self.noise
        # the greatest source of a value below the threshold: from the top down, stopping
        # once no lower value's sources (at most y + D) can beat it (a threshold of 100,000
        # from a release file took 6 s scanned in full)
        top = 0
        for y in range(threshold - 1, -1, -1):
            if y + self.noise <= top:
                break
            top = max(top, *self.sources(y), 0)
        return 0, top


@dataclass(frozen=True)
class KeyedPTable(PTable):
    """ONS's ptable: ``values[pcv][ckey]`` is the noise added to a count looked up at ``pcv``
    (1..750) with cell key ``ckey`` (0..key_range - 1)."""

    values: Mapping[int, tuple[int, ...]] = field(hash=False)
    key_range: int = ONS_KEY_RANGE
    format: Format = "ons"

    @functools.cached_property
    def noise(self) -> int:  # read on every count's sources: the whole table scanned once
        return max(abs(v) for row in self.values.values() for v in row)

    @functools.cached_property
    def _outcomes(self) -> dict[int, dict[int, Fraction]]:
        """Each row's outcomes, counted the first time the row is asked for."""
        return {}

    def row(self, n: int) -> int:
        return n if n <= ONS_ROWS else (n - 1) % ONS_CYCLE + ONS_ROWS - ONS_CYCLE + 1

    def perturbation(self, n: int, ckey: Fraction) -> int:
        return 0 if n == 0 else self.values[self.row(n)][int(ckey)]

    def outcomes(self, n: int) -> dict[int, Fraction]:
        if n == 0:
            return {0: Fraction(1)}
        row = self.row(n)
        if row not in self._outcomes:
            counts = Counter(self.values[row])
            self._outcomes[row] = {v: Fraction(c, self.key_range)
                                   for v, c in sorted(counts.items())}
        return dict(self._outcomes[row])

    def cell_key(self, key_sum: Fraction) -> Fraction:
        return Fraction(int(key_sum) % self.key_range)

    def record_key_error(self, key: Fraction) -> str | None:
        if key.denominator != 1 or not 0 <= key < self.key_range:
            return (f"record key {show(key)} is not a whole number from 0 to "
                    f"{self.key_range - 1} (the ptable's cell keys)")
        return None

    def draw_keys(self, size: int, seed: int) -> list[Fraction]:
        rng = np.random.default_rng(seed)
        return [Fraction(int(k)) for k in rng.integers(0, self.key_range, size=size)]


@dataclass(frozen=True)
class Transition:
    """One row of an ABS/Destatis ptable: count ``i`` is published as ``j`` with probability
    ``p``, for the cell keys in ``[lower, upper)``."""

    i: int
    j: int
    p: Fraction
    lower: Fraction
    upper: Fraction

    @property
    def v(self) -> int:
        return self.j - self.i


@dataclass(frozen=True)
class IntervalPTable(PTable):
    """An ABS/Destatis ptable: per true count ``i`` (1..top; ``top`` stands for every larger
    count) its transitions, in key order, their intervals covering [0, 1)."""

    rows: Mapping[int, tuple[Transition, ...]] = field(hash=False)
    format: Format = "abs"

    @functools.cached_property
    def top(self) -> int:
        return max(self.rows)

    @functools.cached_property
    def noise(self) -> int:
        return max(abs(t.v) for row in self.rows.values() for t in row if t.p > 0)

    def row(self, n: int) -> int:
        return min(n, self.top)

    def perturbation(self, n: int, ckey: Fraction) -> int:
        if n == 0:
            return 0
        return next(t.v for t in self.rows[self.row(n)] if ckey < t.upper)

    def outcomes(self, n: int) -> dict[int, Fraction]:
        if n == 0:
            return {0: Fraction(1)}
        found: dict[int, Fraction] = defaultdict(Fraction)
        for t in self.rows[self.row(n)]:
            if t.p > 0:
                found[t.v] += t.p
        return dict(sorted(found.items()))

    def cell_key(self, key_sum: Fraction) -> Fraction:
        return key_sum - math.floor(key_sum)

    def record_key_error(self, key: Fraction) -> str | None:
        if not 0 <= key < 1:
            return f"record key {show(key)} is not in [0, 1) (the ptable's cell keys)"
        return None

    def draw_keys(self, size: int, seed: int) -> list[Fraction]:
        rng = np.random.default_rng(seed)
        scale = 10**UNIT_KEY_DIGITS
        return [Fraction(int(k), scale) for k in rng.integers(0, scale, size=size)]


def keyed(ptable: IntervalPTable, key_range: int = ONS_KEY_RANGE) -> KeyedPTable:
    """The ABS/Destatis ``ptable`` in ONS's format: count ``pcv`` and integer key ``k`` get
    the noise ``ptable`` gives the key ``k / key_range`` (so each noise gets about ``p *
    key_range`` of the keys, and an ONS key ``k`` perturbs as the unit key ``k / key_range``
    would)."""
    rows: dict[int, tuple[int, ...]] = {}  # one per row of ``ptable``: counts past its top
    for pcv in range(1, ONS_ROWS + 1):      # share the top row
        row = ptable.row(pcv)
        if row not in rows:
            rows[row] = _keyed_row(ptable.rows[row], key_range)
    return KeyedPTable({pcv: rows[ptable.row(pcv)] for pcv in range(1, ONS_ROWS + 1)},
                       key_range)


def _keyed_row(transitions: Sequence[Transition], key_range: int) -> tuple[int, ...]:
    """The noise of each integer key k of one row: the first transition whose interval ends
    past k / key_range (k / R < upper exactly when k < ceil(upper * R)), in one walk. Making
    a Fraction and scanning the row per key took 1.7 s for the 750 x 256 keys of ONS's
    format, at every import of a module that builds one."""
    out: list[int] = []
    for t in transitions:
        end = min(key_range, math.ceil(t.upper * key_range))
        out += [t.v] * max(0, end - len(out))
    if len(out) != key_range:
        raise StatreconError(f"ptable row {transitions[0].i}: its intervals do not cover "
                             "[0, 1)")
    return tuple(out)


# ------------------------------------------------------------------------ reading a ptable


def read_ptable(path: Path | str) -> PTable:
    """A ptable file (CSV or Parquet) through the input gate: ONS's columns (``pcv, ckey,
    pvalue``) or ABS/Destatis's (``i, j, p, v, p_int_lb, p_int_ub``, and sdcTools' ``type``
    column if it is ``all``); every number exact; a ptable that is not a distribution,
    misses a count or a key, or gives a cell key twice is one error naming ``file:line``."""
    path = Path(path)
    frame = inputs.read_columnar(path, "ptable").to_pandas()
    if len(frame) > MAX_PTABLE_ROWS:
        raise StatreconError(f"{path}: a ptable of {len(frame):,} rows is over the limit of "
                             f"{MAX_PTABLE_ROWS:,}", where=str(path))
    columns = set(frame.columns)
    if set(ONS_COLUMNS) <= columns:
        return _ons(frame, path)
    if set(ABS_COLUMNS) <= columns:
        return _abs(frame, path)
    raise StatreconError(f"{path}: a ptable has ONS's columns ({', '.join(ONS_COLUMNS)}) or "
                         f"ABS/Destatis's ({', '.join(ABS_COLUMNS)}); it has "
                         f"{', '.join(map(str, frame.columns))}", where=str(path))


def exact_column(frame: pd.DataFrame, column: str, path: Path, *,
                 whole: bool = False) -> list[Fraction]:
    """A column's numbers, exact (each distinct text read once); a missing value, a value
    that is no number (or, ``whole``, no whole number) names its line."""
    series = frame[column]
    if series.isna().any():
        raise row_error(path, int(np.flatnonzero(series.isna().to_numpy())[0]),
                    f"{column}: a missing value")
    codes, uniques = pd.factorize(series)
    first = {int(c): row for row, c in reversed(list(enumerate(codes.tolist())))}
    values = [_number(raw, column, path, first[u], whole) for u, raw in enumerate(uniques)]
    return [values[c] for c in codes.tolist()]


def _number(raw: object, column: str, path: Path, row: int, whole: bool) -> Fraction:
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
        raise row_error(path, row, f"{column}: a missing value")
    try:
        value = parse_number(str(raw)) if isinstance(raw, str) else _typed(raw)
    except NumberError as e:
        raise row_error(path, row, f"{column}: {e}") from None
    if whole and value.denominator != 1:
        raise row_error(path, row, f"{column} {show(value)} is not a whole number")
    return value


def _typed(raw: object) -> Fraction:
    # lazy: the exact reader of typed values (Parquet) lives with the number reader
    from statrecon.number_reader import exact_value

    value = exact_value(raw)
    if value is None:
        raise NumberError(f"{raw!r} is not a number")
    return value


def whole_column(frame: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    """A column of whole numbers (each distinct text read exactly once) as int64; a value
    that is missing, no number, no whole number or beyond +-2**62 names its line."""
    series = frame[column]
    if series.isna().any():
        raise row_error(path, int(np.flatnonzero(series.isna().to_numpy())[0]),
                    f"{column}: a missing value")
    codes, uniques = pd.factorize(series)
    _, first = np.unique(codes, return_index=True)  # the first row of each distinct value
    values = [_number(raw, column, path, int(first[u]), True) for u, raw in enumerate(uniques)]
    big = next((u for u, v in enumerate(values) if abs(v) >= 2**62), None)
    if big is not None:
        raise row_error(path, int(first[big]), f"{column} {show(values[big])} is too large")
    return np.array([int(v) for v in values], dtype=np.int64)[codes]


def _ons(frame: pd.DataFrame, path: Path) -> KeyedPTable:
    pcv, ckey, pvalue = (whole_column(frame, c, path) for c in ONS_COLUMNS)
    if not len(pcv):
        raise StatreconError(f"{path}: an empty ptable", where=str(path))
    _check_ons_rows(path, pcv, ckey, pvalue)
    key_range = int(ckey.max()) + 1
    twice = pd.Series(pcv * key_range + ckey).duplicated().to_numpy()
    if twice.any():
        row = int(np.flatnonzero(twice)[0])
        raise row_error(path, row, f"pcv {pcv[row]}, ckey {ckey[row]} is given twice")
    grid = np.zeros((ONS_ROWS + 1, key_range), dtype=np.int64)
    given = np.zeros((ONS_ROWS + 1, key_range), dtype=bool)
    grid[pcv, ckey] = pvalue
    given[pcv, ckey] = True
    for count in range(1, ONS_ROWS + 1):
        if not given[count].all():
            what = "no rows" if not given[count].any() else \
                f"no row for ckey {int(np.flatnonzero(~given[count])[0])}"
            raise StatreconError(f"{path}: pcv {count} has {what}: an ONS ptable gives every "
                                 f"count from 1 to {ONS_ROWS} every cell key from 0 to "
                                 f"{key_range - 1}", where=str(path))
    return KeyedPTable({c: tuple(grid[c].tolist()) for c in range(1, ONS_ROWS + 1)},
                       key_range)


def _check_ons_rows(path: Path, pcv: np.ndarray, ckey: np.ndarray, pvalue: np.ndarray) -> None:
    outside = np.flatnonzero((pcv < 1) | (pcv > ONS_ROWS))
    if len(outside):
        row = int(outside[0])
        raise row_error(path, row, f"pcv {pcv[row]} is outside 1..{ONS_ROWS} (ONS looks a count "
                               f"above {ONS_ROWS} up at ((n - 1) mod {ONS_CYCLE}) + "
                               f"{ONS_ROWS - ONS_CYCLE + 1})")
    negative = np.flatnonzero(ckey < 0)
    if len(negative):
        raise row_error(path, int(negative[0]), f"ckey {ckey[negative[0]]} is negative")
    if ckey.max() >= 2**16:
        row = int(np.argmax(ckey))
        raise row_error(path, row, f"ckey {ckey[row]} is over the limit of {2**16 - 1}")
    wrong = np.flatnonzero((pcv + pvalue < 0) | (np.abs(pvalue) > MAX_NOISE))
    if len(wrong):
        row = int(wrong[0])
        raise row_error(path, row, f"pvalue {pvalue[row]} would publish the count {pcv[row]} as "
                               f"{pcv[row] + pvalue[row]}")


def _abs(frame: pd.DataFrame, path: Path) -> IntervalPTable:
    if "type" in frame.columns:
        bad = [r for r, t in enumerate(frame["type"].tolist()) if str(t) != "all"]
        if bad:
            raise row_error(path, bad[0], "type must be 'all': a ptable for counts (sdcTools' "
                                      "even/odd tables are for magnitudes)")
    i, j, p, v, lower, upper = (exact_column(frame, c, path, whole=c in ("i", "j", "v"))
                                for c in ABS_COLUMNS)
    rows: dict[int, list[tuple[int, Transition]]] = defaultdict(list)
    for row in range(len(frame)):
        t = Transition(int(i[row]), int(j[row]), p[row], lower[row], upper[row])
        _check_transition(path, row, t, int(v[row]))
        rows[t.i].append((row, t))
    if not rows:
        raise StatreconError(f"{path}: an empty ptable", where=str(path))
    for n, found in rows.items():
        _check_abs_row(path, n, found)
    counts = sorted(n for n in rows if n > 0)
    missing = next((n for n in range(1, max(counts, default=0) + 1) if n not in rows), None)
    if not counts or missing is not None:
        raise StatreconError(f"{path}: no rows for i = {missing or 1}: every count from 1 to "
                             "the largest i needs its row", where=str(path))
    return IntervalPTable({n: tuple(t for _, t in rows[n]) for n in counts})


def _check_transition(path: Path, row: int, t: Transition, v: int) -> None:
    if t.i < 0 or t.j < 0:
        raise row_error(path, row, f"i = {t.i}, j = {t.j}: counts are never negative")
    if t.v != v:
        raise row_error(path, row, f"v = {v} but j - i = {t.v}")
    if abs(v) > MAX_NOISE:
        raise row_error(path, row, f"v = {v} is over the limit of +-{MAX_NOISE}")
    if t.p < 0:
        raise row_error(path, row, f"p = {show(t.p)} is a negative probability")
    if t.upper - t.lower != t.p:
        raise row_error(path, row, f"p_int_ub - p_int_lb = {show(t.upper - t.lower)}, not p = "
                               f"{show(t.p)}")
    if t.i == 0 and t.j != 0:
        raise row_error(path, row, "a zero is never perturbed: i = 0 has only j = 0")


def _check_abs_row(path: Path, n: int, found: Sequence[tuple[int, Transition]]) -> None:
    """The transitions of count ``n`` are a distribution: intervals from 0 to 1, each
    starting where the one before ended (file order), each published count once."""
    end = Fraction(0)
    for row, t in found:
        if t.lower != end:
            raise row_error(path, row, f"i = {n}: p_int_lb = {show(t.lower)}, but the row before "
                                   f"ends at {show(end)} (rows of one i in order, from 0)")
        end = t.upper
    if end != 1:
        total = sum((t.p for _, t in found), Fraction(0))
        raise row_error(path, found[-1][0], f"i = {n}: the probabilities sum to {show(total)}, "
                                        "not 1")
    seen: set[int] = set()
    for row, t in found:
        if t.j in seen:
            raise row_error(path, row, f"i = {n}, j = {t.j} is given twice")
        seen.add(t.j)


# ------------------------------------------------------------------------ writing a ptable


def ptable_frame(ptable: PTable) -> pd.DataFrame:
    """The ptable as its format's rows (exact decimals as text, a Fraction without a finite
    decimal as ``p/q``)."""
    if isinstance(ptable, KeyedPTable):
        data = [(n, k, v) for n, row in sorted(ptable.values.items())
                for k, v in enumerate(row)]
        return pd.DataFrame(data, columns=list(ONS_COLUMNS))
    assert isinstance(ptable, IntervalPTable)
    rows: list[tuple[Any, ...]] = [(0, 0, "1", 0, "0", "1")]
    rows += [(t.i, t.j, show(t.p), t.v, show(t.lower), show(t.upper))
             for n in sorted(ptable.rows) for t in ptable.rows[n]]
    return pd.DataFrame(rows, columns=list(ABS_COLUMNS))


# ---------------------------------------------------------------------------- record keys


def record_keys(frame: pd.DataFrame, column: str, path: Path, ptable: PTable
                ) -> list[Fraction]:
    """The record keys in ``column`` of the microdata, exact; a missing key or one outside
    the ptable's key range names its line."""
    if column not in frame.columns:
        raise StatreconError(f"{path}: no column {column!r} of record keys (it has "
                             f"{', '.join(map(str, frame.columns))})", where=str(path))
    keys = exact_column(frame, column, path)
    for row, key in enumerate(keys):
        error = ptable.record_key_error(key)
        if error:
            raise row_error(path, row, error)
    return keys


def ons_id_keys(frame: pd.DataFrame, column: str, path: Path, ptable: PTable
                ) -> list[Fraction]:
    """The record keys ONS's package makes from ids (``ons_id`` there): each whole id modulo
    4096, summed into cell keys modulo the ptable's key range like any other key; so only a
    ptable with whole-number cell keys (ONS's format) takes them. A missing or fractional
    id names its line (the package would leave that record without a key)."""
    if ptable.format != "ons":
        raise StatreconError(f"{path}: record keys from ids ({column!r}) are whole numbers; "
                             "the ptable's cell keys are in [0, 1) (ABS format): give "
                             "--record-key or --seed instead", where=str(path))
    if column not in frame.columns:
        raise StatreconError(f"{path}: no column {column!r} of ids (it has "
                             f"{', '.join(map(str, frame.columns))})", where=str(path))
    return [Fraction(int(i) % ONS_ID_KEYS) for i in exact_column(frame, column, path,
                                                                   whole=True)]


# ------------------------------------------------------------------------ the perturbation


@dataclass(frozen=True)
class Perturbation:
    """One cell's perturbation: its true ``count``, the sum of its records' keys and the
    cell key, the ptable's ``row`` (0: a zero, not looked up), the ``noise`` added, and the
    ``published`` count (None: below the threshold, not published)."""

    count: int
    key_sum: Fraction
    ckey: Fraction
    row: int
    noise: int
    published: int | None


def perturb(count: int, key_sum: Fraction, ptable: PTable, threshold: int = 0
            ) -> Perturbation:
    """The perturbation of a cell of true ``count`` whose records' keys sum to ``key_sum``:
    a zero stays zero; a published value below ``threshold`` is withheld (ONS's package
    withholds a perturbed count below its threshold, 10 by default)."""
    if count < 0:
        raise StatreconError(f"a cell count of {count}")
    ckey = ptable.cell_key(key_sum)
    noise = ptable.perturbation(count, ckey)
    published = count + noise
    return Perturbation(count, key_sum, ckey, ptable.row(count) if count else 0, noise,
                        published if published >= threshold else None)


def perturb_all(counts: Iterable[int], key_sums: Iterable[Fraction], ptable: PTable,
                threshold: int = 0) -> tuple[Perturbation, ...]:
    return tuple(perturb(n, s, ptable, threshold)
                 for n, s in zip(counts, key_sums, strict=True))


# ---------------------------------------------------------------------------- tabulation

KEY_COLUMN = "record_key"  # the column drawn record keys go in


def table_name(variables: Sequence[str]) -> str:
    return " x ".join(variables)


def tabulate_counts(frame: pd.DataFrame, variables: Sequence[str], key_column: str,
                    source: str) -> tuple[Table, tuple[Fraction, ...]]:
    """The frequency table of ``variables`` over the records of ``frame`` (flat codes, the
    totals as margins; a code combination without records an EMPTY cell), and each cell's
    sum of the record keys in ``key_column``, in the table's cell order."""
    spec = TableSpec(tuple(variables), response=key_column, tops=0, name=table_name(variables))
    sums = tabulate(frame, spec, source)
    cells = tuple(Cell(c.codes, Fraction(c.frequency or 0), c.frequency or 0, c.status)
                  for c in sums.cells)
    counts = Table(sums.name, sums.variables, sums.hierarchies, "freq", "frequency", 0, cells,
                   source=source)
    return counts, tuple(c.value for c in sums.cells)


def count_tables(frame: pd.DataFrame, tables: Sequence[Sequence[str]], key_column: str,
                 source: str) -> tuple[TableSet, tuple[Fraction, ...]]:
    """The linked frequency tables of ``tables`` (each a list of variables) over ``frame``,
    and the key sum of every cell in ``TableSet.keys()`` order: a cell published in two
    tables is one cell, with one key sum, so one perturbation."""
    if not tables:
        raise StatreconError("give the variables of at least one table")
    names = [table_name(v) for v in tables]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise StatreconError(f"the table {twice} is asked for twice")
    built = [tabulate_counts(frame, v, key_column, source) for v in tables]
    linked = TableSet(tuple(t for t, _ in built))
    sums: dict[Key, Fraction] = {}
    for table, table_sums in built:
        for cell, key_sum in zip(table.cells, table_sums, strict=True):
            sums.setdefault(table.key(cell), key_sum)
    order = linked.keys()
    return linked, tuple(sums[k] for k in order)


def perturb_tables(tables: TableSet, key_sums: Sequence[Fraction], ptable: PTable,
                   threshold: int = 0) -> tuple[Perturbation, ...]:
    """Every cell of ``tables`` (``keys()`` order) perturbed: its count and key sum."""
    counts = [int(c.value) for c in tables.cells()]
    return perturb_all(counts, key_sums, ptable, threshold)
