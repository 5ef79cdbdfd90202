"""Tables from microdata, and the primary suppression rules.

:func:`tabulate` crosses the explanatory variables of a data frame of contributions (one row
per record) into the full table: every code combination of the hierarchies, totals summed
from the records below them, the frequency (number of contributors) and the largest
contributions of each cell (for the p% and dominance rules). With ``contributor`` the records
of one contributor count as one, in every cell they fall in (tau-Argus's holdings, SSBtools'
contributor variable). A weight multiplies the value; frequencies and the largest
contributions stay unweighted, as in tau-Argus by default. Combinations without records are
EMPTY cells (tau-Argus), or published zeros with ``zeros="cells"`` (SSBtools' ``extend0``).

:func:`mark_primary` marks the safe cells that a rule finds sensitive as PRIMARY:

- :class:`MinFrequency` ``(max_n)``: a cell with 1 to ``max_n`` contributors, the convention of
  sdcTable and GaussSuppression (``freq <= maxN``; tau-Argus's ``FREQ(n, ...)`` with
  ``n = max_n + 1``). A cell with none is left to ``protect_zeros``.
- :class:`PPercent` ``(p, n=1)``: the remainder ``x - x1 - (x2 + ... + x(n+1))`` is below
  ``p`` % of the largest contribution ``x1``, so that a coalition of the next ``n``
  contributors estimates ``x1`` within ``p`` % (tau-Argus ``P(p, n)``).
- :class:`Dominance` ``(n, k)``: the ``n`` largest contributions exceed ``k`` % of the cell
  (tau-Argus ``NK(n, k)``).
- ``protect_zeros``: a published zero (frequency 0, not EMPTY) is primary (GaussSuppression's
  ``protectZeros``).

The rules on magnitudes assume nonnegative contributions. A new primary cell gets the
protection levels ``protection`` gives: by default none (0, 0), GaussSuppression's
convention that a primary cell must only not be disclosed exactly; a fraction of the cell's
value (``Protection(lower=Fraction(1, 10), upper=Fraction(1, 10))``) or absolute amounts
(``relative=False``). The lower level of a nonnegative cell is capped at its value (the cell
cannot go below zero), as tau-Argus caps its manual safety margin.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Literal, NoReturn, cast

import numpy as np
import pandas as pd

from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError
from statrecon.tables._grid import aggregate, largest
from statrecon.tables.frames import (
    HierarchySpec,
    frame_codes,
    require_columns,
    resolve_hierarchy,
)
from statrecon.tables.model import (
    Cell,
    CellStatus,
    Hierarchy,
    Kind,
    Table,
    check_grid_size,
    show_code,
)
from statrecon.tables.safety import Facts, SafetyRules, mark_unsafe
from statrecon.tables.values import decimals_of, exact, show

Number = int | Fraction | str


@dataclass(frozen=True)
class TableSpec:
    """What to tabulate from microdata."""

    variables: Sequence[str]  # explanatory columns
    hierarchies: Mapping[str, HierarchySpec] = field(default_factory=dict)  # default flat
    response: str | None = None  # None: a frequency table (records counted)
    weight: str | None = None
    contributor: str | None = None  # records of one contributor count once
    name: str = "table"
    decimals: int | None = None  # default: the fewest that write every value exactly
    tops: int = 2  # largest contributions kept per cell (p%: n + 1, NK: n)
    zeros: Literal["empty", "cells"] = "empty"
    total: str = "Total"  # total code of the flat hierarchies


# ----------------------------------------------------------------------------------------
# tabulation


def tabulate(microdata: pd.DataFrame, spec: TableSpec, source: str = "microdata") -> Table:
    """The full table of ``spec`` over ``microdata`` (see the module docstring); mistakes
    name ``source:row N`` (the file the records came from)."""
    where = source
    extra = [c for c in (spec.response, spec.weight, spec.contributor) if c]
    require_columns(microdata, [*spec.variables, *extra], where)
    if spec.zeros not in ("empty", "cells"):
        raise StatreconError(f"zeros must be 'empty' or 'cells', not {spec.zeros!r}")
    codes = frame_codes(microdata, spec.variables, where)
    hierarchies = [resolve_hierarchy(v, spec.hierarchies.get(v, "flat"),
                                     sorted(set(codes[:, i])), spec.total)
                   for i, v in enumerate(spec.variables)]
    check_grid_size(hierarchies, where)
    _check_leaves(codes, hierarchies, where)
    if spec.contributor and microdata[spec.contributor].isna().any():
        row = int(np.flatnonzero(microdata[spec.contributor].isna().to_numpy())[0]) + 1
        raise StatreconError(f"{where}:row {row}: no {spec.contributor}",
                             where=f"{where}:row {row}")
    amounts = _Amounts.of(microdata, spec, where)
    return _table(spec, hierarchies, amounts,
                  _stats(codes, hierarchies, amounts, microdata, spec))


def _check_leaves(codes: np.ndarray, hierarchies: Sequence[Hierarchy], where: str) -> None:
    for i, h in enumerate(hierarchies):
        bad = {c for c in set(codes[:, i]) if c not in h or not h.is_leaf(c)}
        if bad:
            r = next(r for r, c in enumerate(codes[:, i]) if c in bad)
            code = codes[r, i]
            what = "not a code" if code not in h else "a total, not a leaf,"
            raise StatreconError(f"{where}:row {r + 1}: {h.variable}={show_code(code)} "
                                 f"is {what} of its hierarchy", where=f"{where}:row {r + 1}")


@dataclass(frozen=True)
class _Amounts:
    """Each record's value (weighted, times 10**decimals) and contribution (unweighted,
    times 10**top_decimals), as integers (NumPy int64, or Python ints in an object array
    where int64 could overflow)."""

    values: np.ndarray
    decimals: int
    contributions: np.ndarray
    top_decimals: int

    @classmethod
    def of(cls, frame: pd.DataFrame, spec: TableSpec, where: str) -> _Amounts:
        one = (np.ones(len(frame), dtype=np.int64), 0)
        response, top_decimals = _integers(frame, spec.response, where) if spec.response \
            else one
        weight, weight_decimals = _integers(frame, spec.weight, where) if spec.weight else one
        values, decimals = _fewest(_times(response, weight), top_decimals + weight_decimals)
        if spec.decimals is not None:
            if spec.decimals < decimals:
                raise StatreconError(f"{where}: values need {decimals} decimals, more than "
                                     f"the {spec.decimals} given", where=where)
            values = _times(values, np.full(len(values), 10 ** (spec.decimals - decimals),
                                            dtype=object))
            decimals = spec.decimals
        return cls(_narrow(values), decimals, _narrow(response), top_decimals)


def _integers(frame: pd.DataFrame, column: str, where: str) -> tuple[np.ndarray, int]:
    """A numeric column exactly as integers times 10**decimals (each distinct value read
    once; a float is the decimal it prints as)."""
    series = frame[column]
    if pd.api.types.is_integer_dtype(series.dtype) and not series.isna().any():
        return series.to_numpy(dtype=object), 0
    exact_of: dict[object, Fraction] = {}
    for raw in pd.unique(series.to_numpy(dtype=object)):
        try:
            value = exact(raw)
        except NumberError as e:
            r = next(r for r, v in enumerate(series.tolist(), start=1) if v is raw or v == raw)
            raise StatreconError(f"{where}:row {r}: {column}: {e}",
                                 where=f"{where}:row {r}") from None
        if value is None or decimals_of(value) is None:
            _not_a_number(series, column, where)
        exact_of[raw] = value
    decimals = max((decimals_of(v) or 0 for v in exact_of.values()), default=0)
    scaled = {raw: (v * 10**decimals).numerator for raw, v in exact_of.items()}
    return np.array([scaled[v] for v in series.to_numpy(dtype=object)], dtype=object), decimals


def _not_a_number(series: pd.Series, column: str, where: str) -> NoReturn:
    for r, raw in enumerate(series.tolist(), start=1):
        value = exact(raw)
        if value is None or decimals_of(value) is None:
            raise StatreconError(f"{where}:row {r}: {column} {raw!r} is not a number with a "
                                 f"finite decimal form", where=f"{where}:row {r}")
    raise AssertionError("a value was not a number, but no row holds it")


def _times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(object) * b.astype(object)


def _fewest(values: np.ndarray, decimals: int) -> tuple[np.ndarray, int]:
    """Drop trailing decimal zeros common to every value."""
    while decimals and all(v % 10 == 0 for v in values):
        values = np.array([v // 10 for v in values], dtype=object)
        decimals -= 1
    return values, decimals


def _narrow(values: np.ndarray) -> np.ndarray:
    """int64 when every partial sum fits, else the Python integers."""
    if sum(abs(int(v)) for v in values) < 2**62:
        return np.asarray(values, dtype=np.int64)
    return np.asarray(values, dtype=object)


@dataclass(frozen=True)
class _Stats:
    """Per grid position (row-major): the summed value, the number of contributors and the
    largest contributions, as scaled integers."""

    values: np.ndarray
    counts: np.ndarray
    tops: np.ndarray  # tuples


def _stats(codes: np.ndarray, hierarchies: Sequence[Hierarchy], amounts: _Amounts,
           frame: pd.DataFrame, spec: TableSpec) -> _Stats:
    """Each cell's statistics. Without contributors the records are summed at the bottom
    cells and the totals aggregated on the grid (a total's largest contributions are the
    largest of its children's); a contributor in several cells needs every cell's own
    grouping, so its records are spread to every cell above them first."""
    shape = tuple(len(h) for h in hierarchies)
    k = spec.tops if spec.response else 0
    if spec.contributor:
        cell, record = _cells_above(codes, hierarchies)
        units = pd.DataFrame({"cell": cell, "unit": frame[spec.contributor].to_numpy()[record],
                              "value": amounts.values[record],
                              "contribution": amounts.contributions[record]})
        units = units.groupby(["cell", "unit"], sort=False, as_index=False).sum()
        return _per_cell(units, math.prod(shape), k)
    own = tuple(np.array([h.index(c) for c in codes[:, i]], dtype=np.int64)
                for i, h in enumerate(hierarchies))
    units = pd.DataFrame({"cell": np.ravel_multi_index(own, shape), "value": amounts.values,
                          "contribution": amounts.contributions})
    leaves = _per_cell(units, math.prod(shape), k)
    return _Stats(
        aggregate(leaves.values.reshape(shape), hierarchies, operator.add).ravel(),
        aggregate(leaves.counts.reshape(shape), hierarchies, operator.add).ravel(),
        aggregate(leaves.tops.reshape(shape), hierarchies, largest(k)).ravel())


def _per_cell(units: pd.DataFrame, size: int, k: int) -> _Stats:
    cell = units["cell"].to_numpy(dtype=np.int64)
    value = units["value"].to_numpy()
    sums = np.zeros(size, dtype=object)
    if value.dtype == np.int64:
        exact_sums = np.zeros(size, dtype=np.int64)
        np.add.at(exact_sums, cell, value)
        sums[:] = exact_sums.tolist()
    else:  # Python integers past int64
        for c, v in zip(cell.tolist(), value.tolist(), strict=True):
            sums[c] += v
    tops = np.empty(size, dtype=object)
    tops[:] = [()] * size
    for c, found in (_largest_per_cell(units, k) if k else {}).items():
        tops[c] = tuple(found)
    return _Stats(sums, np.bincount(cell, minlength=size).astype(object), tops)


def _cells_above(codes: np.ndarray,
                 hierarchies: Sequence[Hierarchy]) -> tuple[np.ndarray, np.ndarray]:
    """(grid position, record) for each record and each cell it falls in: its own codes or
    any of their ancestors, on every axis."""
    shape = tuple(len(h) for h in hierarchies)
    above = []  # per axis: records x (depth + 1) positions, -1 past the total
    for i, h in enumerate(hierarchies):
        chains = {c: [h.index(c), *(h.index(a) for a in h.ancestors(c))]
                  for c in set(codes[:, i])}
        depth = max(len(chain) for chain in chains.values())
        table = {c: chain + [-1] * (depth - len(chain)) for c, chain in chains.items()}
        above.append(np.array([table[c] for c in codes[:, i]], dtype=np.int64))
    cells, records = [], []
    for levels in itertools.product(*(range(a.shape[1]) for a in above)):
        index = [a[:, k] for a, k in zip(above, levels, strict=True)]
        ok = np.all([i >= 0 for i in index], axis=0)
        cells.append(np.ravel_multi_index(tuple(i[ok] for i in index), shape))
        records.append(np.flatnonzero(ok))
    return np.concatenate(cells), np.concatenate(records)


def _table(spec: TableSpec, hierarchies: Sequence[Hierarchy], amounts: _Amounts,
           stats: _Stats) -> Table:
    scale, top_scale = 10**amounts.decimals, 10**amounts.top_decimals
    variables = tuple(spec.variables)
    empty = CellStatus.EMPTY if spec.zeros == "empty" else CellStatus.SAFE
    cells = []
    for position, value, count, top in zip(
            itertools.product(*(h.codes() for h in hierarchies)), stats.values.tolist(),
            stats.counts.tolist(), stats.tops.tolist(), strict=True):
        codes = tuple(zip(variables, position, strict=True))
        if count:
            cells.append(Cell(codes, Fraction(int(value), scale), int(count), CellStatus.SAFE,
                              top=tuple(Fraction(t, top_scale) for t in top)))
        else:
            cells.append(Cell(codes, Fraction(0), 0, empty))
    kind: Kind = "magnitude" if spec.response else "frequency"
    return Table(spec.name, variables, {h.variable: h for h in hierarchies},
                 spec.response or "freq", kind, amounts.decimals, tuple(cells))


def _largest_per_cell(units: pd.DataFrame, k: int) -> dict[int, list[int]]:
    """The k largest contributions of each cell, largest first."""
    cell = units["cell"].to_numpy(dtype=np.int64)
    contribution = units["contribution"].to_numpy()
    if contribution.dtype == np.int64:
        order = np.lexsort((-contribution, cell))
    else:  # Python integers past int64
        order = np.array(sorted(range(len(cell)), key=lambda i: (cell[i], -contribution[i])),
                         dtype=np.int64)
    cell, contribution = cell[order], contribution[order]
    starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    rank = np.arange(len(cell)) - np.repeat(starts, np.diff(np.r_[starts, len(cell)]))
    keep = rank < k
    tops: dict[int, list[int]] = {}
    for c, x in zip(cell[keep].tolist(), contribution[keep].tolist(), strict=True):
        tops.setdefault(c, []).append(int(x))
    return tops


# ----------------------------------------------------------------------------------------
# rules


def _percent(value: Number, what: str) -> Fraction:
    found = exact(value)
    if found is None or not 0 < found <= 100:
        raise StatreconError(f"{what} must be a percentage in (0, 100], not {value!r}")
    return found


@dataclass(frozen=True)
class MinFrequency:
    """Primary when 1 <= frequency <= max_n (sdcTable/GaussSuppression ``maxN``)."""

    max_n: int

    def __post_init__(self) -> None:
        if self.max_n < 1:
            raise StatreconError(f"maxN must be at least 1, not {self.max_n}")

    def sensitive(self, cell: Cell) -> bool:
        frequency = _frequency(cell, "the minimum frequency rule")
        return 1 <= frequency <= self.max_n

    def __str__(self) -> str:
        return f"frequency <= {self.max_n}"


@dataclass(frozen=True)
class PPercent:
    """Primary when x - x1 - (x2 + ... + x(n+1)) < p/100 * x1 (tau-Argus ``P(p, n)``)."""

    p: Number
    n: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", _percent(self.p, "p of the p% rule"))
        if self.n < 1:
            raise StatreconError(f"n of the p% rule must be at least 1, not {self.n}")

    def sensitive(self, cell: Cell) -> bool:
        tops = _tops(cell, self.n + 1, "the p% rule")
        remainder = cell.value - sum(tops)
        return tops[0] > 0 and remainder < Fraction(self.p) / 100 * tops[0]

    def __str__(self) -> str:
        return f"p%-rule (p={show(Fraction(self.p))}, n={self.n})"


@dataclass(frozen=True)
class Dominance:
    """Primary when the n largest contributions exceed k % of the cell (``NK(n, k)``)."""

    n: int
    k: Number

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", _percent(self.k, "k of the dominance rule"))
        if self.n < 1:
            raise StatreconError(f"n of the dominance rule must be at least 1, not {self.n}")

    def sensitive(self, cell: Cell) -> bool:
        tops = _tops(cell, self.n, "the dominance rule")
        return cell.value > 0 and sum(tops) > Fraction(self.k) / 100 * cell.value

    def __str__(self) -> str:
        return f"({self.n}, {show(Fraction(self.k))})-dominance"


Rule = MinFrequency | PPercent | Dominance


def _frequency(cell: Cell, rule: str) -> int:
    if cell.frequency is None:
        raise StatreconError(f"{rule} needs each cell's frequency; cell {cell.name} has none")
    return cell.frequency


def _tops(cell: Cell, k: int, rule: str) -> list[Fraction]:
    """The k largest contributions, zeros beyond the cell's contributors."""
    if len(cell.top) < k and (cell.frequency is None or cell.frequency > len(cell.top)):
        raise StatreconError(f"{rule} needs the {k} largest contributions of each cell; cell "
                             f"{cell.name} has {len(cell.top)} (tabulate with tops={k})")
    return [*cell.top[:k], *[Fraction(0)] * (k - len(cell.top))]


@dataclass(frozen=True)
class Protection:
    """Protection levels of a new primary cell: fractions of its value (``relative``) or
    absolute amounts; a nonnegative cell's lower level is capped at its value. ``sliding``:
    the least width of the attacker's interval, wherever it lies (tau-Argus's sliding
    protection level), likewise a fraction or an amount."""

    lower: Number = 0
    upper: Number = 0
    relative: bool = True
    sliding: Number = 0

    def __post_init__(self) -> None:
        for name in ("lower", "upper", "sliding"):
            level = exact(getattr(self, name))
            if level is None or level < 0:
                raise StatreconError(f"protection {name} must be a number >= 0, not "
                                     f"{getattr(self, name)!r}")
            object.__setattr__(self, name, level)

    def levels(self, value: Fraction) -> tuple[Fraction, Fraction]:
        size = abs(value) if self.relative else Fraction(1)
        lower, upper = Fraction(self.lower) * size, Fraction(self.upper) * size
        if value >= 0:
            lower = min(lower, value)
        return lower, upper

    def sliding_level(self, value: Fraction) -> Fraction:
        return Fraction(self.sliding) * (abs(value) if self.relative else 1)


def sensitivity(cell: Cell, rules: Sequence[Rule], protect_zeros: bool = False) -> str | None:
    """The first rule (in words) that finds ``cell`` sensitive, or None."""
    if protect_zeros and cell.status is not CellStatus.EMPTY and (
            cell.frequency == 0 if cell.frequency is not None else cell.value == 0):
        return "zero cell"
    for rule in rules:
        if rule.sensitive(cell):
            return str(rule)
    return None


def mark_primary(table: Table, rules: Sequence[Rule] = (), *, protect_zeros: bool = False,
                 protection: Protection | None = None) -> Table:
    """A copy of ``table`` with each SAFE cell that a rule (or ``protect_zeros``) finds
    sensitive made PRIMARY, with ``protection``'s levels; other statuses are kept."""
    protection = protection or Protection()
    cells = list(table.cells)
    for i, cell in enumerate(cells):
        if cell.status is CellStatus.SAFE and sensitivity(cell, rules, protect_zeros):
            cells[i] = replace(cell, status=CellStatus.PRIMARY,
                               protection=protection.levels(cell.value),
                               sliding=protection.sliding_level(cell.value))
    return replace(table, cells=tuple(cells))


def table_from_microdata(microdata: pd.DataFrame, spec: TableSpec,
                         rules: Sequence[Rule] = (), *, protect_zeros: bool = False,
                         protection: Protection | None = None,
                         source: str = "microdata") -> Table:
    """``tabulate`` then ``mark_primary``."""
    return mark_primary(tabulate(microdata, spec, source), rules, protect_zeros=protect_zeros,
                        protection=protection)


# ----------------------------------------------------------------------------------------
# tau-Argus's safety rules on microdata (tables/safety.py): records, holdings, weights


@dataclass(frozen=True)
class RuleColumns:
    """The microdata columns tau-Argus's rules read beyond the table's own: ``holding``
    (tau-Argus's ``<HOLDING>``: records of one enterprise, for holding-level rules) and
    ``request`` with its two ``request_codes`` (``<REQUEST>``: a contributor who asked for
    protection, for REQ)."""

    holding: str | None = None
    request: str | None = None
    request_codes: tuple[str, str] = ("1", "2")


def table_with_safety_rules(microdata: pd.DataFrame, spec: TableSpec, rules: SafetyRules,
                            columns: RuleColumns = RuleColumns(), *,
                            missing: Mapping[str, Sequence[str]] | None = None,
                            source: str = "microdata") -> Table:
    """The table of ``spec`` over ``microdata`` with the cells tau-Argus's ``rules`` make
    unsafe marked PRIMARY, each with the protection levels of its rule
    (:mod:`statrecon.tables.safety`). With ``WGT(1)`` the spec's weight weighs the rules
    too; holding-level rules read ``columns.holding``, REQ ``columns.request``; with
    ``MIS(1)`` a cell with a code of ``missing`` stays safe."""
    if rules.weighted and not spec.weight:
        raise StatreconError(f"{rules.where}: WGT(1) weighs the table, but it has no weight "
                             "variable", where=rules.where or None)
    if rules.needs_holding and not columns.holding:
        raise StatreconError(f"{rules.where}: holding-level rules (the third and fourth P or "
                             "NK, the second FREQ or REQ) need a holding variable",
                             where=rules.where or None)
    if spec.contributor:
        raise StatreconError("tau-Argus's rules count records and holdings: give the "
                             "holding variable as RuleColumns.holding, not contributor")
    needed = [c for c in (columns.holding, columns.request) if c]
    require_columns(microdata, needed, source)
    table = tabulate(microdata, replace(spec, tops=max(1, rules.individual.tops)), source)
    facts = _rule_facts(microdata, table, spec, rules, columns, source)
    return mark_unsafe(table, rules, lambda i, cell: facts[i], missing=missing)


def _rule_facts(frame: pd.DataFrame, table: Table, spec: TableSpec, rules: SafetyRules,
                columns: RuleColumns, where: str) -> list[tuple[Facts, Facts | None]]:
    """Each cell's facts at the record level (and the holding level when its rules need
    them), from every (cell, record) pair of the records below the cell."""
    hierarchies = [table.hierarchies[v] for v in table.variables]
    cell, record = _cells_above(frame_codes(frame, spec.variables, where), hierarchies)
    if spec.response:
        amount, decimals = _integers(frame, spec.response, where)
    else:
        amount, decimals = np.ones(len(frame), dtype=object), 0
    weighted = rules.weighted and spec.weight is not None
    weight, weight_decimals = (_integers(frame, spec.weight, where) if weighted and spec.weight
                               else (np.ones(len(frame), dtype=object), 0))
    pairs = pd.DataFrame({"cell": cell, "x": amount[record], "w": weight[record]})
    if columns.request:
        codes = frame[columns.request].map(lambda v: str(v).strip()).to_numpy()[record]
        pairs["request"] = [columns.request_codes.index(c) + 1
                            if c in columns.request_codes else 0 for c in codes]
    scale, weight_scale = 10**decimals, 10**weight_decimals
    own = _level_facts(pairs, rules.individual.tops, scale, weight_scale if weighted else None)
    held: dict[int, Facts] = {}
    if rules.needs_holding and columns.holding:
        pairs["holding"] = frame[columns.holding].to_numpy()[record]
        grouped = pairs.groupby(["cell", "holding"], sort=False, as_index=False).agg(
            x=("x", "sum"), w=("w", "first"),
            **({"request": ("request", "max")} if columns.request else {}))
        held = _level_facts(grouped, rules.holding.tops, scale, None)
    empty = Facts(0)
    return [(own.get(i, empty), held.get(i, empty) if rules.needs_holding else None)
            for i in range(len(table.cells))]


INT64_SAFE = 2**62  # contributions below this in size are sorted as int64, exactly


def _top_facts(cell: np.ndarray, x: np.ndarray, tops: int, scale: int
               ) -> dict[int, Facts] | None:
    """:func:`_level_facts` without weights or requests, in int64 arrays (None when a
    contribution is too large for them): sorting a million exact Python integers and
    walking 54,000 pandas groups took 10 s of a 1,000,000-record job (issue 28's scale)."""
    if not len(x) or max(abs(int(x.max())), abs(int(x.min()))) >= INT64_SAFE:
        return None if len(x) else {}
    cs, xs = _by_cell_largest_first(np.asarray(cell, dtype=np.int64), x.astype(np.int64))
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    counts = np.diff(np.r_[starts, len(cs)])
    tops_of = [np.where(counts > k, xs[np.minimum(starts + k, len(xs) - 1)], 0).tolist()
               for k in range(tops)]
    found: dict[int, Facts] = {}
    for g, (c, n) in enumerate(zip(cs[starts].tolist(), counts.tolist(), strict=True)):
        top = tuple(Fraction(tops_of[k][g], scale) for k in range(min(tops, n)))
        found[c] = Facts(n, top)
    return found


def _by_cell_largest_first(cs: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (cell, contribution) sorted by cell, then largest first. One sort of the
    key ``cell * span + (largest - x)`` where it fits int64 (0.1 s for 18,000,000 pairs,
    where ``lexsort`` took 6 s); ``lexsort`` otherwise."""
    if not len(xs):
        return cs, xs
    high, span = int(xs.max()), int(xs.max()) - int(xs.min()) + 1
    if int(cs.min()) >= 0 and (int(cs.max()) + 1) * span < 2**63:
        key = cs * span + (high - xs)
        key.sort()
        return key // span, high - key % span
    order = np.lexsort((-xs, cs))
    return cs[order], xs[order]


def _level_facts(pairs: pd.DataFrame, tops: int, scale: int, weight_scale: int | None
                 ) -> dict[int, Facts]:
    """Per cell: contributors, the largest contributions (enough of them to weigh ``tops``
    with weights), the total weight and the largest requesting contribution per code."""
    if weight_scale is None and "request" not in pairs:
        fast = _top_facts(pairs["cell"].to_numpy(), pairs["x"].to_numpy(), tops, scale)
        if fast is not None:
            return fast
    ordered = pairs.sort_values(["cell", "x"], ascending=[True, False], kind="stable")
    found: dict[int, Facts] = {}
    for c, group in ordered.groupby("cell", sort=False):
        xs = group["x"].tolist()
        ws = group["w"].tolist()
        if weight_scale is None:
            top = tuple(Fraction(int(x), scale) for x in xs[:tops])
            weights = total = None
        else:
            weights_all = [Fraction(int(w), weight_scale) for w in ws]
            keep, used = 0, Fraction(0)
            while keep < len(xs) and used < tops:
                used += weights_all[keep]
                keep += 1
            top = tuple(Fraction(int(x), scale) for x in xs[:keep])
            weights, total = tuple(weights_all[:keep]), sum(weights_all, Fraction(0))
        requests: dict[int, Fraction] = {}
        if "request" in group:
            for code, x in zip(group["request"].tolist(), xs, strict=True):
                if code and code not in requests:
                    requests[code] = Fraction(int(x), scale)
        found[int(cast(int, c))] = Facts(len(xs), top, weights, total, requests)
    return found
