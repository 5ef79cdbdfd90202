"""The SF1 person tables of a slice published under a protection agencies use (issue 30,
item 4): cell key perturbation (an ONS-format ptable or an ABS/Destatis one), rounding to a
base, suppression of small counts, or targeted record swapping; each cell published with the
hard bounds its published value leaves on the true count.

The bounds are what makes a reconstruction of the release a proof: a perturbed count lies in
the hull of the counts the ptable can publish as the value seen (``PTable.possible``), a
rounded one within what the rounding method allows (``tables.rounding.possible``), a
suppressed one anywhere from 0 up to what its block holds (or, the rule being known, below
the threshold). No probability enters: the ptable's support and the rounding rule are hard
limits. Swapping publishes exact tables of the *swapped* persons: their bounds are points,
true of the swapped file only (``ProtectedCensus.of_truth`` is False), so a reconstruction
proves facts of the swapped file, not of the persons.

One mechanism of each kind: the ptable is built by ``engines/ckm`` and applied by
``tables/ckm.perturb``, rounding is ``tables/rounding``'s, swapping ``census/persons/swap``'s;
counts and key sums come from the one tabulation (``census/persons/tabulate``). Median cells
(P13) are not counts and are left out.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal, cast

import numpy as np
import pandas as pd
import pyarrow as pa

from statrecon.census.persons.cells import RACES, Sf1Cell, select_cells
from statrecon.census.persons.microdata import BLOCK_COLUMN
from statrecon.census.persons.release import (
    MAX_VALUE,
    CensusRelease,
    ReleaseNoise,
    ReleaseProtection,
    write_release,
)
from statrecon.census.persons.swap import (
    PersonsSwap,
    read_persons,
    statement,
    swap_persons,
    swapped_file,
)
from statrecon.census.persons.swap_statement import describe
from statrecon.census.persons.tabulate import KEY_COLUMN, tabulate_cells
from statrecon.db import hardened
from statrecon.engines.ckm import MAX_D, PTableParams, build_ptable
from statrecon.errors import (
    InconsistentReleaseError,
    StatreconError,
    check_choice,
    check_count,
    check_option,
)
from statrecon.tables import ckm, rounding

Method = Literal["ckm-ons", "ckm-abs", "round", "suppress", "swap"]
METHODS: tuple[Method, ...] = ("ckm-ons", "ckm-abs", "round", "suppress", "swap")
# what the attacker may be assumed to know, per method; the first is the default: the most
# for CKM and rounding (the ptable, the method), for suppression nothing of the rule (a
# suppressed cell unknown, as issue 30 states it; "rule": in 1..threshold - 1)
KNOWLEDGE: dict[Method, tuple[str, ...]] = {
    "ckm-ons": ckm.KNOWLEDGE, "ckm-abs": ckm.KNOWLEDGE, "round": rounding.KNOWLEDGE,
    "suppress": ("nothing", "rule"), "swap": ("swap",)}
DEFAULT_THRESHOLD: dict[Method, int] = {"ckm-ons": 0, "ckm-abs": 0, "suppress": 3}
# what a protected release file must state, per method (``protection_of`` writes them all)
STATED: dict[Method, tuple[str, ...]] = {
    "ckm-ons": ("d", "v", "js", "threshold", "knowledge"),
    "ckm-abs": ("d", "v", "js", "threshold", "knowledge"),
    "round": ("base", "rounding", "knowledge"), "suppress": ("threshold", "knowledge"),
    "swap": ()}
LEVELS = ("block", "tract")
ROUNDINGS = ("nearest", "random")  # controlled rounding needs the tables' equations


@dataclass(frozen=True)
class CensusProtectOptions:
    """A protection and its parameters. CKM: the ptable of sdcTools' (``d``, ``v``, ``js``)
    (``ckm-ons`` in ONS's format: integer record keys 0..255, counts above 750 looked up
    cyclically), ``threshold`` withholds a published value below it (default 0: none).
    Rounding: ``base`` and ``rounding`` (nearest or random). Suppression: counts from 1 to
    ``threshold`` - 1 withheld (default 3; zeros are published). Swapping: ``rate`` of the
    persons, every person counted below ``swap_k`` in its block swapped too (0: the rate
    alone), partners within their tract of the same voting age (``census swap``'s
    defaults). ``knowledge``: what the attacker knows (``KNOWLEDGE``; None: its first)."""

    method: Method
    seed: int = 0
    d: int = 2
    v: Fraction = Fraction(108, 100)
    js: int = 1
    threshold: int | None = None
    base: int = 5
    rounding: str = "nearest"
    rate: float = 0.05
    knowledge: str | None = None
    swap_k: int = 3

    def __post_init__(self) -> None:
        check_choice(self, "method", METHODS)
        check_count(self, "seed", 0)
        check_option(self, "d", isinstance(self.d, int) and 1 <= self.d <= MAX_D,
                     f"a whole number from 1 to {MAX_D}")
        check_option(self, "v", isinstance(self.v, int | Fraction) and self.v > 0,
                     "an exact number above 0")
        check_option(self, "js", isinstance(self.js, int) and 0 <= self.js <= MAX_D,
                     f"a whole number from 0 to {MAX_D}")
        check_count(self, "base", 2)
        check_count(self, "swap_k", 0)
        check_count(self, "threshold", 0, optional=True)
        check_choice(self, "rounding", ROUNDINGS)
        check_option(self, "rate", isinstance(self.rate, int | float)
                     and not isinstance(self.rate, bool) and 0 <= self.rate <= 1,
                     "a share of the persons in [0, 1]")
        check_option(self, "knowledge", self.knowledge is None
                     or self.knowledge in KNOWLEDGE[self.method],
                     f"one of {', '.join(KNOWLEDGE[self.method])} for {self.method}")

    @property
    def known(self) -> str:
        return self.knowledge or KNOWLEDGE[self.method][0]

    @property
    def cutoff(self) -> int:
        return DEFAULT_THRESHOLD.get(self.method, 0) if self.threshold is None \
            else self.threshold


@dataclass(frozen=True)
class BoundedCells:
    """One level's cells (geographies x cells): the ``published`` value (-1: withheld) and
    the least and greatest true count it allows."""

    geoids: tuple[str, ...]
    published: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


@dataclass(frozen=True)
class ProtectedCensus:
    """A protected release: the count cells (definition order) with their bounds per level,
    what the attacker is assumed to know (``statement``), and whether the bounds hold for
    the true persons (``of_truth``; swapping: only for the swapped ones)."""

    options: CensusProtectOptions
    cells: tuple[Sf1Cell, ...]
    block: BoundedCells
    tract: BoundedCells
    statement: str
    of_truth: bool = True

    @property
    def block_cells(self) -> tuple[Sf1Cell, ...]:
        return tuple(c for c in self.cells if c.level == "block")

    def exact_share(self) -> float:
        """The share of block cells whose published value is their true value as a point."""
        return float((self.block.lo == self.block.hi).mean()) if self.block.lo.size else 1.0


def protect_census(persons: pd.DataFrame, options: CensusProtectOptions,
                   tables: str = "sf1-persons") -> ProtectedCensus:
    """Publish the person tables of ``persons`` (a checked persons frame, as
    ``census/persons/swap.read_persons`` gives: block_geoid, sex, age, the race flags and
    hispanic as booleans) under ``options``."""
    cells = count_cells(tables)
    if options.method == "swap":
        plan = swap_plan(options)
        result = swap_persons(persons, plan)
        block, tract = _tabulate(swapped_file(persons, result), cells)
        points = [BoundedCells(t.geoids, t.published, t.published, t.published)
                  for t in (block, tract)]
        text = (f"{describe(statement(result, plan))} (partners of the same voting age "
                "within the tract): exact tables of the swapped persons, so every bound "
                "holds for them, not for the persons themselves")
        return ProtectedCensus(options, cells, points[0], points[1], text, of_truth=False)
    if options.method in ("ckm-ons", "ckm-abs"):
        return _perturbed(persons, cells, options)
    publish = _rounded if options.method == "round" else _suppressed
    levels = [publish(true, cells, level, options)
              for true, level in zip(_tabulate(persons, cells), LEVELS, strict=True)]
    return ProtectedCensus(options, cells, levels[0], levels[1], _statement(options))



def swap_plan(options: CensusProtectOptions) -> PersonsSwap:
    """The swap a ``swap`` release makes (``census swap``'s defaults: partners of the same
    voting age within the tract), at the options' rate, k and seed."""
    return PersonsSwap(rate=options.rate, k=options.swap_k, seed=options.seed)


def count_cells(tables: str = "sf1-persons") -> tuple[Sf1Cell, ...]:
    """The cells a protected release publishes: the tables' counts (medians left out)."""
    return tuple(c for c in select_cells(tables) if not c.is_median)


def true_tables(persons: pd.DataFrame, cells: tuple[Sf1Cell, ...]
                ) -> tuple[BoundedCells, BoundedCells]:
    """The true counts of ``cells`` (block, tract) as geographies x cells in ``published``
    (bounds left empty): what a protection is measured against."""
    return _tabulate(persons, cells)


def _statement(options: CensusProtectOptions) -> str:
    """What the attacker is assumed to know, in words (every release states it)."""
    if options.method == "round":
        return rounding.knowledge_text(_method(options), _round_knows(options), options.base)
    if options.method == "suppress":
        t = options.cutoff
        return (f"counts from 1 to {t - 1} suppressed, zeros published; the attacker knows "
                + ("the rule: a suppressed count lies in 1.." + str(t - 1) if options.known
                   == "rule" else "nothing of the rule: a suppressed count lies anywhere "
                   "from 0 to what its block holds"))
    return (f"cell key perturbation, {options.method[4:].upper()} format, D = {options.d}, "
            f"V = {options.v}, js = {options.js}, threshold {options.cutoff}; the attacker "
            f"knows {ckm.KNOWLEDGE_TEXT[_ckm_knows(options)]}")


def _method(options: CensusProtectOptions) -> rounding.Method:
    return cast(rounding.Method, options.rounding)  # checked against ROUNDINGS


def _round_knows(options: CensusProtectOptions) -> rounding.Knowledge:
    return cast(rounding.Knowledge, options.known)  # checked against KNOWLEDGE["round"]


def _ckm_knows(options: CensusProtectOptions) -> ckm.Knowledge:
    return cast(ckm.Knowledge, options.known)  # checked against KNOWLEDGE["ckm-*"]


# ------------------------------------------------------------------------- the tabulation


def _persons_table(persons: pd.DataFrame, keys: np.ndarray | None) -> pa.Table:
    """The ``persons`` table the tabulation reads, from a checked persons frame."""
    block = persons[BLOCK_COLUMN].astype(str).to_numpy()
    columns = {"block": block, "tract": np.array([b[:11] for b in block]),
               "sex": persons["sex"].astype(str).to_numpy(),
               "age": persons["age"].astype(np.int64).to_numpy(),
               **{f: persons[f].astype(bool).to_numpy() for f in (*RACES, "hispanic")}}
    if keys is not None:
        columns[KEY_COLUMN] = keys.astype(np.int64)
    return pa.table(columns)


def _tabulate(persons: pd.DataFrame, cells: tuple[Sf1Cell, ...],
              keys: np.ndarray | None = None) -> tuple[BoundedCells, BoundedCells]:
    """Each level's true counts (or, with ``keys``, key sums) as geographies x cells, in
    ``published`` (bounds left empty)."""
    con = hardened({"persons": _persons_table(persons, keys)})
    try:
        table = tabulate_cells(con, cells, keyed=keys is not None)
    finally:
        con.close()
    out = []
    for level in LEVELS:
        n = sum(c.level == level for c in cells)
        rows = table.filter(pa.compute.equal(table["level"], level))
        values = rows["value"].to_numpy().astype(np.int64).reshape(-1, n) if n else \
            np.zeros((0, 0), dtype=np.int64)
        geoids = tuple(rows["geoid"].to_pylist()[::n]) if n else ()
        empty = np.zeros((0, 0), dtype=np.int64)
        out.append(BoundedCells(geoids, values, empty, empty))
    return out[0], out[1]


# ------------------------------------------------------------------------- the protections

Rule = Callable[[int], tuple[int, int | None]]  # published value -> least, greatest count
_INCONSISTENT = ": the release is inconsistent with its protection"


def _bounded(geoids: tuple[str, ...], published: np.ndarray, rule: Rule, cap: int,
             level_cells: Sequence[Sf1Cell]) -> BoundedCells:
    """Each published value (-1: withheld) with the bounds ``rule`` gives it (an upper None:
    ``cap``); a value the protection cannot publish names its geography and cell."""
    shifted = published + 1  # withheld (-1) at 0: every value an index
    seen = np.bincount(shifted.ravel(), minlength=1)
    lo_of = np.zeros(len(seen), dtype=np.int64)
    hi_of = np.zeros(len(seen), dtype=np.int64)
    for index in np.flatnonzero(seen).tolist():  # each distinct value once, then a lookup
        try:
            low, high = rule(index - 1)
        except InconsistentReleaseError as e:
            g, c = (int(i[0]) for i in np.nonzero(shifted == index))
            cell = level_cells[c]
            raise InconsistentReleaseError(
                f"{cell.level} {geoids[g]} {cell.table} {cell.cell}: {e}") from None
        lo_of[index], hi_of[index] = low, cap if high is None else min(high, cap)
    return BoundedCells(geoids, published, lo_of[shifted], hi_of[shifted])


def _limits(options: CensusProtectOptions, geoids: tuple[str, ...], published: np.ndarray,
            level_cells: Sequence[Sf1Cell], cap: int) -> BoundedCells:
    """One level's published values with the true counts each allows under ``options``: the
    one place bounds are made, for a protection run here and for a release read back."""
    out = _bounded(geoids, published, _rule(options), cap, level_cells)
    if options.method != "suppress" or options.known == "rule" or not out.hi.size:
        return out
    total = next((k for k, c in enumerate(level_cells) if c.is_total), None)
    if total is None:
        return out
    # a suppressed count is at most what its geography holds: its total, when published
    room = np.where(out.published[:, total] >= 0, out.hi[:, total], cap)
    hi = np.where(out.published < 0, room[:, None], out.hi)
    return BoundedCells(out.geoids, out.published, out.lo, hi)


def _rule(options: CensusProtectOptions) -> Rule:
    """The least and greatest true count a published value allows (-1: withheld), the
    attacker knowing ``options.known``; InconsistentReleaseError for a value the method
    never publishes."""
    if options.method == "round":
        return functools.partial(_round_rule, options.base, _method(options),
                                 _round_knows(options))
    if options.method == "suppress":
        return functools.partial(_suppress_rule, options.cutoff, options.known)
    ptable = _ptable(options.method, options.d, Fraction(options.v), options.js)
    return functools.partial(_ckm_rule, ptable, options.cutoff, _ckm_knows(options))


def _round_rule(base: int, method: rounding.Method, knows: rounding.Knowledge, value: int
                ) -> tuple[int, int | None]:
    if value < 0 or value % base:
        raise InconsistentReleaseError(f"{value} is not a multiple of {base}, so rounding to "
                                       f"base {base} never publishes it{_INCONSISTENT}")
    low, high = rounding.possible(Fraction(value), base, method, knows, 1)
    return int(low), int(high)


def _suppress_rule(threshold: int, known: str, value: int) -> tuple[int, int | None]:
    """Counts 1..t-1 withheld; a withheld count lies in 1..t-1 (the rule known) or anywhere
    from 0 up (``_limits`` then caps it at its geography's published total)."""
    if value >= 0:
        if 0 < value < threshold:
            raise InconsistentReleaseError(f"{value} is published, but counts from 1 to "
                                           f"{threshold - 1} are suppressed{_INCONSISTENT}")
        return value, value
    return (1, threshold - 1) if known == "rule" else (0, None)


def _ckm_rule(ptable: ckm.PTable, threshold: int, knows: ckm.Knowledge, value: int
              ) -> tuple[int, int | None]:
    if value < 0:
        return ptable.possible_below(threshold, knows)
    if value < threshold:
        raise InconsistentReleaseError(f"{value} is published, but values below the "
                                       f"threshold {threshold} are withheld{_INCONSISTENT}")
    return ptable.possible(value, knows)


def _level_cells(cells: tuple[Sf1Cell, ...], level: str) -> list[Sf1Cell]:
    return [c for c in cells if c.level == level]


def _rounded(true: BoundedCells, cells: tuple[Sf1Cell, ...], level: str,
             options: CensusProtectOptions) -> BoundedCells:
    base, method = options.base, _method(options)
    flat = true.published.ravel()
    out = np.zeros_like(flat)
    live = np.flatnonzero(flat)  # a zero is a multiple: it stays, whatever the method
    fractions = [Fraction(int(v)) for v in flat[live]]
    done = rounding.round_nearest(fractions, base) if method == "nearest" else \
        rounding.round_random(fractions, base, options.seed, 1)
    out[live] = [int(r) for r in done]
    return _limits(options, true.geoids, out.reshape(true.published.shape),
                   _level_cells(cells, level), MAX_VALUE[level])


def _suppressed(true: BoundedCells, cells: tuple[Sf1Cell, ...], level: str,
                options: CensusProtectOptions) -> BoundedCells:
    t, values = options.cutoff, true.published
    return _limits(options, true.geoids, np.where((values > 0) & (values < t), -1, values),
                   _level_cells(cells, level), MAX_VALUE[level])


@functools.cache
def _ptable(method: Method, d: int, v: Fraction, js: int) -> ckm.PTable:
    """sdcTools' maximum-entropy ptable of (d, v, js); in ONS's format for ``ckm-ons``."""
    built = build_ptable(PTableParams(d, v, js))
    return ckm.keyed(built) if method == "ckm-ons" else built


def _perturbed(persons: pd.DataFrame, cells: tuple[Sf1Cell, ...],
               options: CensusProtectOptions) -> ProtectedCensus:
    """Every cell perturbed by ``tables/ckm.perturb`` from its count and its key sum (the
    persons' record keys drawn with the seed, as ``tables perturb`` draws them): the same
    persons make the same cell key, so a cell published in two tables is perturbed alike."""
    ptable = _ptable(options.method, options.d, Fraction(options.v), options.js)
    keys = ptable.draw_keys(len(persons), options.seed)
    scale = max(k.denominator for k in keys) if keys else 1
    whole = np.array([int(k * scale) for k in keys], dtype=np.int64)
    threshold = options.cutoff
    zero = ckm.perturb(0, Fraction(0), ptable, threshold).published
    levels = []
    for true, sums, level in zip(_tabulate(persons, cells), _tabulate(persons, cells, whole),
                                 LEVELS, strict=True):
        assert true.geoids == sums.geoids  # one tabulation, one order
        flat, key_sums = true.published.ravel(), sums.published.ravel()
        out = np.full(flat.shape, -1 if zero is None else zero, dtype=np.int64)
        for i in np.flatnonzero(flat).tolist():
            got = ckm.perturb(int(flat[i]), Fraction(int(key_sums[i]), scale), ptable,
                              threshold).published
            out[i] = -1 if got is None else got
        levels.append(_limits(options, true.geoids, out.reshape(true.published.shape),
                              _level_cells(cells, level), MAX_VALUE[level]))
    return ProtectedCensus(options, cells, levels[0], levels[1], _statement(options))


# ------------------------------------------------------------------- as a release file


def protection_of(protected: ProtectedCensus) -> ReleaseProtection:
    """What the release states about its protection: the method and its public parameters
    (never the seed), what the attacker is assumed to know, in words too."""
    o, said = protected.options, protected.statement
    if o.method == "round":
        return ReleaseProtection(o.method, base=o.base, rounding=o.rounding,
                                 knowledge=o.known, statement=said)
    if o.method == "suppress":
        return ReleaseProtection(o.method, threshold=o.cutoff, knowledge=o.known,
                                 statement=said)
    return ReleaseProtection(o.method, d=o.d, v=Fraction(o.v), js=o.js, threshold=o.cutoff,
                             knowledge=o.known, statement=said)


def options_of(release: CensusRelease) -> CensusProtectOptions:
    """The protection a release states, checked as options (a StatreconError naming the
    file: a method the reader knows with parameters that do not go together)."""
    p = release.protection
    if p is None:
        raise StatreconError(f"{release.path}: not a protected release (make one with "
                             "`census tabulate --protect`)")
    stated = {"d": p.d, "v": p.v, "js": p.js, "threshold": p.threshold, "base": p.base,
              "rounding": p.rounding, "knowledge": p.knowledge}
    missing = [k for k in STATED[cast(Method, p.method)] if stated[k] is None]
    if missing:  # no default fills what the bounds depend on: the file must say it
        raise StatreconError(f"{release.path}: protection: {p.method} states "
                             f"{', '.join(STATED[cast(Method, p.method)])}; "
                             f"{', '.join(missing)} missing")
    fields = {k: v for k, v in (("d", p.d), ("v", p.v), ("js", p.js), ("base", p.base),
                                ("rounding", p.rounding)) if v is not None}
    try:
        options = CensusProtectOptions(cast(Method, p.method), threshold=p.threshold,
                                       knowledge=p.knowledge, **fields)  # type: ignore[arg-type]
        _rule(options)  # a ptable that cannot be built is refused here, naming the file
    except StatreconError as e:
        raise StatreconError(f"{release.path}: protection: {e}") from None
    return options


def release_bounds(release: CensusRelease) -> tuple[BoundedCells, BoundedCells]:
    """Each level's published values with the least and greatest true count they allow, by
    the rule ``protect_census`` publishes with; InconsistentReleaseError (exit 2) naming the
    file and the cell where a value is one its protection never publishes."""
    options = options_of(release)
    try:
        return (_limits(options, release.blocks, release.block_values,
                        release.block_cells, MAX_VALUE["block"]),
                _limits(options, release.tracts, release.tract_values,
                        release.tract_cells, MAX_VALUE["tract"]))
    except InconsistentReleaseError as e:
        raise InconsistentReleaseError(f"{release.path}: {e}") from None


def noise_scale(options: CensusProtectOptions) -> float:
    """The standard deviation of a method's error, the weight of its cells in the top-down
    estimate: rounding to b, sqrt((b^2 - 1) / 12) (the residue uniform); CKM, sqrt(V)."""
    if options.method == "round":
        return math.sqrt((options.base ** 2 - 1) / 12)
    return math.sqrt(float(options.v))


def estimate_noise(release: CensusRelease) -> ReleaseNoise:
    """A protected release's cells as noisy measurements for the top-down estimate, each
    weighed by its method's error (``noise_scale``); refused for withheld cells (the
    estimate needs every cell: ``census certain`` proves what they leave)."""
    options = options_of(release)
    if options.method == "suppress" or (release.block_values < 0).any() or (
            release.tract_values < 0).any():
        raise StatreconError(f"{release.path}: cells withheld by its protection "
                             f"({options.method}); the reconstruction needs every cell "
                             "published: `census certain` proves what the release reveals")
    scale = noise_scale(options)
    return ReleaseNoise(math.nan, {c.table: scale for c in release.cells},
                        f"{options.method}: the method's own error, weighed as noise of its "
                        "standard deviation")


def write_protected(protected: ProtectedCensus, path: Path, tables: str) -> None:
    """The protected tables as a release file (``census/persons/release``): the published
    values (a withheld cell null) and the protection, so ``read_release`` and
    ``release_bounds`` give back every cell's bounds."""
    parts = []
    for level, bounded in zip(LEVELS, (protected.block, protected.tract), strict=True):
        cells = _level_cells(protected.cells, level)
        n, g = len(cells), len(bounded.geoids)
        values = bounded.published.reshape(-1) if n else np.zeros(0, dtype=np.int64)
        parts.append(pa.table({
            "level": pa.array([level] * (g * n), pa.string()),
            "geoid": pa.array(np.repeat(np.array(bounded.geoids, dtype=object), n),
                              pa.string()),
            "table": pa.array([c.table for c in cells] * g, pa.string()),
            "cell": pa.array([c.cell for c in cells] * g, pa.string()),
            "value": pa.array(values, pa.int64(), mask=values < 0)}))
    write_release(pa.concat_tables(parts), protected.cells, tables, path,
                  protection=protection_of(protected))


def publish_protected(persons_path: Path, out: Path, options: CensusProtectOptions,
                      tables: str = "sf1-persons") -> ProtectedCensus:
    """``census tabulate --protect``: the persons file checked, its count tables published
    under ``options`` and written to ``out``."""
    if options.method == "swap":
        raise StatreconError("swapping publishes exact tables of swapped persons: run "
                             "`census swap`, then `census tabulate --swap-statement`")
    protected = protect_census(read_persons(persons_path).persons, options, tables)
    write_protected(protected, out, tables)
    return protected
