"""Statistical tables: hierarchies, cells, linked tables and the additivity they obey.

A table crosses explanatory variables, each with a hierarchy of codes (a total, subtotals,
leaves); every combination of codes is a cell, and every cell of a subtotal code is the sum of
the cells of its children. Those equations are what an attacker of a suppressed table uses,
so they are derived here from the hierarchies, never listed by hand: one source of truth for
the audit, the protection and the readers' checks.

Linked tables publish the same cell more than once: (A=a, B=Total) in one table and
(A=a, C=Total) in another are both "the cells with A=a". A cell's *key* is therefore the set
of its (variable, code) pairs whose code is not that variable's total, and a :class:`TableSet`
counts each key once. Values are exact Fractions throughout (see ``numbers``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from fractions import Fraction
from functools import cached_property
from typing import Literal

import numpy as np
import scipy.sparse as sp

from statrecon.errors import StatreconError
from statrecon.tables.values import show

Key = frozenset[tuple[str, str]]
Kind = Literal["frequency", "magnitude"]
KINDS: tuple[Kind, ...] = ("frequency", "magnitude")
# a grid of more cells than this is refused before it is built: a cell and its share of the
# equations, the audit's problem and the suppression run take about 4 KB (measured: 3.8 GB
# for a 1,002,001-cell grid), so this bounds a run at about 4 GB; readers refuse more input
# lines than this too
MAX_CELLS = 1_000_000
ZERO = Fraction(0)
NO_PROTECTION = (ZERO, ZERO)


class CellStatus(StrEnum):
    """What a publisher does with a cell; tau-Argus's status letters in parentheses."""

    SAFE = "safe"  # S: published
    PRIMARY = "primary"  # U: unsafe by a rule or by hand: suppressed
    SECONDARY = "secondary"  # M: suppressed to protect the primary cells
    EMPTY = "empty"  # E (Z in some tools), or absent from the file: value 0, frequency 0
    PROTECTED = "protected"  # P: published, and never chosen for secondary suppression

    @property
    def suppressed(self) -> bool:
        """Whether the published table hides the cell's value."""
        return self in (CellStatus.PRIMARY, CellStatus.SECONDARY)


def show_code(code: str) -> str:
    """A code for a message: tau-Argus pads codes with spaces (``" 1"``), a reader does not."""
    return code.strip() or repr(code)


# ----------------------------------------------------------------------------------------
# hierarchies


@dataclass(frozen=True)
class Hierarchy:
    """The codes of one explanatory variable as a tree: each parent is the sum of its
    children. ``children`` lists, in file order, the children of every code that has some;
    every other code is a leaf. ``total`` is the root (the variable's total code)."""

    variable: str
    total: str
    children: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        kept = {str(p): tuple(str(c) for c in kids) for p, kids in self.children.items()
                if len(kids) > 0}
        object.__setattr__(self, "children", kept)
        self._parents  # noqa: B018  (validates: one parent a code, all under the total)

    @classmethod
    def flat(cls, variable: str, codes: Iterable[str], total: str = "Total") -> Hierarchy:
        """A total over ``codes`` with no subtotals."""
        codes = tuple(codes)
        return cls(variable, total, {total: codes} if codes else {})

    @classmethod
    def from_children(cls, variable: str,
                      children: Mapping[str, Sequence[str]]) -> Hierarchy:
        """The tree of a parent -> children mapping; its root (the one parent that is nobody's
        child) is the total."""
        below = {c for kids in children.values() for c in kids}
        roots = [p for p in children if p not in below]
        if len(roots) != 1:
            found = ", ".join(show_code(r) for r in roots) or "none (a cycle)"
            raise StatreconError(f"hierarchy of {variable}: needs exactly one root code (a "
                                 f"parent that is nobody's child); found {found}")
        return cls(variable, roots[0], {p: tuple(kids) for p, kids in children.items()})

    @cached_property
    def _parents(self) -> dict[str, str]:
        parents: dict[str, str] = {}
        for parent, kids in self.children.items():
            for child in kids:
                self._check_child(parent, child, parents)
                parents[child] = parent
        unreachable = [p for p in self.children if p != self.total and p not in parents]
        if unreachable:
            raise StatreconError(f"hierarchy of {self.variable}: code "
                                 f"{show_code(unreachable[0])} has children but is not "
                                 f"under the total {show_code(self.total)}")
        if len(self._preorder) != len(parents) + 1:
            raise StatreconError(f"hierarchy of {self.variable}: a cycle among its codes")
        return parents

    def _check_child(self, parent: str, child: str, parents: Mapping[str, str]) -> None:
        name = self.variable
        if child == "":
            raise StatreconError(f"hierarchy of {name}: an empty code under {parent!r}")
        if child == self.total:
            raise StatreconError(f"hierarchy of {name}: the total {show_code(child)} appears "
                                 f"as a child of {show_code(parent)}")
        if child in parents:
            raise StatreconError(f"hierarchy of {name}: code {show_code(child)} appears "
                                 f"twice (under {show_code(parents[child])} and "
                                 f"{show_code(parent)})")

    @cached_property
    def _preorder(self) -> tuple[str, ...]:
        order: list[str] = []
        stack = [self.total]
        seen: set[str] = set()
        while stack:
            code = stack.pop()
            if code in seen:  # only in a cycle, which _parents then reports
                continue
            seen.add(code)
            order.append(code)
            stack.extend(reversed(self.children.get(code, ())))
        return tuple(order)

    @cached_property
    def _position(self) -> dict[str, int]:
        return {code: i for i, code in enumerate(self._preorder)}

    def codes(self) -> tuple[str, ...]:
        """Every code, the total first, depth-first in file order."""
        return self._preorder

    def leaves(self) -> tuple[str, ...]:
        """The codes without children, in ``codes()`` order."""
        return tuple(c for c in self._preorder if c not in self.children)

    def __contains__(self, code: object) -> bool:
        return code in self._position

    def __len__(self) -> int:
        return len(self._preorder)

    def index(self, code: str) -> int:
        """The position of ``code`` in ``codes()`` (KeyError if it is not a code)."""
        return self._position[code]

    def is_leaf(self, code: str) -> bool:
        return code not in self.children

    def parent(self, code: str) -> str | None:
        """The parent of ``code``; None for the total."""
        return self._parents.get(code)

    def ancestors(self, code: str) -> tuple[str, ...]:
        """The parent, the grandparent, ... up to the total (empty for the total)."""
        found: list[str] = []
        parent = self._parents.get(code)
        while parent is not None:
            found.append(parent)
            parent = self._parents.get(parent)
        return tuple(found)


def grid_size(hierarchies: Iterable[Hierarchy]) -> int:
    return math.prod(len(h) for h in hierarchies)


def check_grid_size(hierarchies: Iterable[Hierarchy], where: str | None = None) -> None:
    """Refuse a grid of more than MAX_CELLS cells before it is built."""
    hierarchies = list(hierarchies)
    n = grid_size(hierarchies)
    if n > MAX_CELLS:
        sizes = " x ".join(f"{len(h)} {h.variable}" for h in hierarchies)
        raise StatreconError(f"{where + ': ' if where else ''}a table of {n:,} cells "
                             f"({sizes}) is over the limit of {MAX_CELLS:,}", where=where)


# ----------------------------------------------------------------------------------------
# cells and tables


@dataclass(frozen=True)
class Cell:
    """One cell: its codes, its exact value and what is published about it."""

    codes: tuple[tuple[str, str], ...]  # ((variable, code), ...) in the table's variable order
    value: Fraction
    frequency: int | None  # contributors; None where the input gives none
    status: CellStatus
    protection: tuple[Fraction, Fraction] = NO_PROTECTION  # (lower, upper), absolute, >= 0
    cost: Fraction | None = None
    top: tuple[Fraction, ...] = ()  # largest contributions, largest first (p% and NK rules)
    sliding: Fraction = Fraction(0)  # sliding protection level: the interval's least width

    def __post_init__(self) -> None:
        if not isinstance(self.value, Fraction):
            object.__setattr__(self, "value", Fraction(self.value))
        lower, upper = self.protection
        if lower < 0 or upper < 0 or self.sliding < 0:
            raise StatreconError(f"cell {self.name}: a negative protection level")
        if self.frequency is not None and self.frequency < 0:
            raise StatreconError(f"cell {self.name}: a negative frequency")
        if self.status is CellStatus.EMPTY and (self.value != 0 or self.frequency):
            raise StatreconError(f"cell {self.name}: an empty cell must have value 0 and "
                                 f"frequency 0, not {show(self.value)} and {self.frequency}")

    @property
    def name(self) -> str:
        return ", ".join(f"{v}={show_code(c)}" for v, c in self.codes)

    def code(self, variable: str) -> str:
        for v, c in self.codes:
            if v == variable:
                return c
        raise KeyError(variable)


@dataclass(frozen=True)
class Table:
    """One table: the full grid of its variables' codes (a combination absent from the input
    is an EMPTY cell), each cell once."""

    name: str
    variables: tuple[str, ...]
    hierarchies: Mapping[str, Hierarchy] = field(hash=False)
    response: str  # the response's name ("freq" for a frequency table)
    kind: Kind
    decimals: int  # published precision: value * 10**decimals is an integer
    cells: tuple[Cell, ...]
    source: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "hierarchies", dict(self.hierarchies))
        object.__setattr__(self, "cells", tuple(self.cells))
        self._check_header()
        self._position  # noqa: B018  (validates the grid)
        self._check_decimals()

    def _check_header(self) -> None:
        if len(set(self.variables)) != len(self.variables) or not self.variables:
            raise StatreconError(f"table {self.name}: needs distinct explanatory variables")
        if set(self.hierarchies) != set(self.variables):
            raise StatreconError(f"table {self.name}: one hierarchy per variable "
                                 f"({', '.join(self.variables)}) is needed")
        for v in self.variables:
            if self.hierarchies[v].variable != v:
                raise StatreconError(f"table {self.name}: the hierarchy given for {v} is "
                                     f"that of {self.hierarchies[v].variable}")
        if self.kind not in KINDS:
            raise StatreconError(f"table {self.name}: kind must be one of {KINDS}")
        if self.decimals < 0:
            raise StatreconError(f"table {self.name}: negative decimals")
        check_grid_size(self.hierarchies[v] for v in self.variables)

    def _check_decimals(self) -> None:
        scale = 10**self.decimals
        for cell in self.cells:
            if (cell.value * scale).denominator != 1:
                raise StatreconError(f"table {self.name}: cell {cell.name} has value "
                                     f"{show(cell.value)}, more precise than its "
                                     f"{self.decimals} decimals")

    @cached_property
    def _position(self) -> dict[tuple[str, ...], int]:
        expected = grid_size(self.hierarchies.values())
        if len(self.cells) != expected:
            raise StatreconError(f"table {self.name}: {len(self.cells)} cells, but its "
                                 f"hierarchies make a grid of {expected}")
        position: dict[tuple[str, ...], int] = {}
        for i, cell in enumerate(self.cells):
            position[self._codes_of(cell)] = i
        if len(position) != len(self.cells):
            raise StatreconError(f"table {self.name}: a cell appears twice")
        return position

    def _codes_of(self, cell: Cell) -> tuple[str, ...]:
        if tuple(v for v, _ in cell.codes) != self.variables:
            raise StatreconError(f"table {self.name}: cell {cell.name} does not have the "
                                 f"variables {', '.join(self.variables)} in that order")
        for v, c in cell.codes:
            if c not in self.hierarchies[v]:
                raise StatreconError(f"table {self.name}: cell {cell.name}: {show_code(c)} "
                                     f"is not a code of {v}")
        return tuple(c for _, c in cell.codes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(self.hierarchies[v]) for v in self.variables)

    def index(self, codes: Mapping[str, str] | Sequence[str]) -> int:
        """The position in ``cells`` of the cell with these codes (by variable, or in the
        table's variable order); a StatreconError names a combination that is no cell."""
        if isinstance(codes, Mapping):
            codes = tuple(codes.get(v, self.hierarchies[v].total) for v in self.variables)
        found = self._position.get(tuple(codes))
        if found is None:
            raise StatreconError(f"table {self.name}: no cell "
                                 f"{', '.join(map(show_code, codes))}")
        return found

    def cell(self, codes: Mapping[str, str] | Sequence[str]) -> Cell:
        return self.cells[self.index(codes)]

    @cached_property
    def grid(self) -> np.ndarray:
        """Positions in ``cells`` laid out on the grid: axis i runs over the codes of
        variable i in ``codes()`` order."""
        hierarchies = [self.hierarchies[v] for v in self.variables]
        grid = np.empty(self.shape, dtype=np.int64)
        for i, cell in enumerate(self.cells):
            grid[tuple(h.index(c) for h, (_, c) in zip(hierarchies, cell.codes,
                                                      strict=True))] = i
        return grid

    def key(self, cell: Cell) -> Key:
        """The cell's identity across linked tables: its codes that are not totals."""
        return frozenset((v, c) for v, c in cell.codes if c != self.hierarchies[v].total)

    def with_statuses(self, statuses: Mapping[int, CellStatus]) -> Table:
        """A copy with the cells at these positions given new statuses (protection levels
        kept for primary cells, zero for the others)."""
        cells = list(self.cells)
        for i, status in statuses.items():
            primary = status is CellStatus.PRIMARY
            cells[i] = replace(cells[i], status=status,
                               protection=cells[i].protection if primary else NO_PROTECTION,
                               sliding=cells[i].sliding if primary else Fraction(0))
        return replace(self, cells=tuple(cells))


# ----------------------------------------------------------------------------------------
# additivity


@dataclass(frozen=True)
class Additivity:
    """The equations of a table set: row r says ``matrix[r] @ x == 0`` (+1 on the parent
    cell, -1 on each child), columns in ``TableSet.keys()`` order; ``names[r]`` says it in
    words."""

    matrix: sp.csr_matrix
    names: tuple[str, ...]

    def violations(self, values: Sequence[Fraction | int]) -> np.ndarray:
        """The rows (ascending) that ``values`` (one per column) do not satisfy, exactly."""
        scaled = _common_integers(values)
        if self.matrix.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        longest = int(np.diff(self.matrix.indptr).max())
        biggest = max((abs(v) for v in scaled), default=0)
        if biggest * longest < 2**62:
            residual = self.matrix @ np.asarray(scaled, dtype=np.int64)
            return np.flatnonzero(residual)
        return np.array([r for r in range(self.matrix.shape[0])
                         if self._residual(r, scaled) != 0], dtype=np.int64)

    def _residual(self, row: int, values: Sequence[int]) -> int:
        lo, hi = self.matrix.indptr[row], self.matrix.indptr[row + 1]
        return sum(int(a) * values[j] for a, j in zip(self.matrix.data[lo:hi],
                                                       self.matrix.indices[lo:hi],
                                                       strict=True))

    def sides(self, row: int, values: Sequence[Fraction | int]) -> tuple[Fraction, Fraction]:
        """(parent's value, sum of the children's values) of equation ``row``."""
        lo, hi = self.matrix.indptr[row], self.matrix.indptr[row + 1]
        parent, children = ZERO, ZERO
        for a, j in zip(self.matrix.data[lo:hi], self.matrix.indices[lo:hi], strict=True):
            if a > 0:
                parent += Fraction(values[j])
            else:
                children += Fraction(values[j])
        return parent, children

    def parent(self, row: int) -> int:
        """The column of equation ``row``'s parent cell."""
        lo, hi = self.matrix.indptr[row], self.matrix.indptr[row + 1]
        return int(self.matrix.indices[lo + int(np.argmax(self.matrix.data[lo:hi]))])

    def check(self, values: Sequence[Fraction | int]) -> None:
        """Raise a StatreconError naming the first equation ``values`` break, with both
        sides; return if every equation holds."""
        bad = self.violations(values)
        if len(bad):
            row = int(bad[0])
            parent, children = self.sides(row, values)
            more = f" (and {len(bad) - 1} more equations)" if len(bad) > 1 else ""
            raise StatreconError(f"the table does not add up: {self.names[row]}: "
                                 f"{show(parent)} != {show(children)}{more}",
                                 statistic=self.names[row])


def _common_integers(values: Sequence[Fraction | int]) -> list[int]:
    """``values`` times the least common multiple of their denominators."""
    fractions = [Fraction(v) for v in values]
    scale = math.lcm(*{f.denominator for f in fractions}) if fractions else 1
    return [f.numerator * (scale // f.denominator) for f in fractions]


# ----------------------------------------------------------------------------------------
# linked tables


@dataclass(frozen=True)
class _Index:
    keys: tuple[Key, ...]
    column: dict[Key, int]
    places: tuple[tuple[tuple[int, int], ...], ...]  # per column: (table, cell position) each


@dataclass(frozen=True)
class TableSet:
    """One or several linked tables: a cell published in two tables is one cell. A cell's key
    is the set of its (variable, code) pairs whose code is not that variable's total, so
    (A=a, B=Total) in table 1 and (A=a, C=Total) in table 2 are the same cell {A: a}.
    Linked tables share their response; a shared cell must have the same value, frequency
    and status wherever it is published (its protection levels are the largest given)."""

    tables: tuple[Table, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", tuple(self.tables))
        if not self.tables:
            raise StatreconError("a table set needs at least one table")
        names = [t.name for t in self.tables]
        if len(set(names)) != len(names):
            raise StatreconError(f"linked tables need distinct names, not {names}")
        first = self.tables[0]
        for t in self.tables[1:]:
            if (t.response, t.kind) != (first.response, first.kind):
                raise StatreconError(f"tables {first.name} and {t.name} cannot be linked: "
                                     f"their responses differ ({first.response}, {first.kind}"
                                     f" and {t.response}, {t.kind})")
        self._merged  # noqa: B018  (validates shared cells)

    @cached_property
    def _index(self) -> _Index:
        column: dict[Key, int] = {}
        places: list[list[tuple[int, int]]] = []
        for t, table in enumerate(self.tables):
            for i, cell in enumerate(table.cells):
                key = table.key(cell)
                j = column.setdefault(key, len(places))
                if j == len(places):
                    places.append([])
                places[j].append((t, i))
        return _Index(tuple(column), column, tuple(tuple(p) for p in places))

    @cached_property
    def _merged(self) -> tuple[Cell, ...]:
        return tuple(self._merge(j, places) for j, places in enumerate(self._index.places))

    def _merge(self, column: int, places: Sequence[tuple[int, int]]) -> Cell:
        t0, i0 = places[0]
        first = self.tables[t0].cells[i0]
        lower, upper = first.protection
        sliding = first.sliding
        for t, i in places[1:]:
            other = self.tables[t].cells[i]
            for what in ("value", "frequency", "status"):
                a, b = getattr(first, what), getattr(other, what)
                if a != b and not (what == "frequency" and None in (a, b)):
                    raise StatreconError(
                        f"linked tables disagree on cell {self.cell_name(self.keys()[column])}"
                        f": {what} {_show(a)} in {self.tables[t0].name} ({first.name}) but "
                        f"{_show(b)} in {self.tables[t].name} ({other.name})")
            lower, upper = max(lower, other.protection[0]), max(upper, other.protection[1])
            sliding = max(sliding, other.sliding)
        if (lower, upper) != first.protection or sliding != first.sliding:
            return replace(first, protection=(lower, upper), sliding=sliding)
        return first

    @property
    def decimals(self) -> int:
        return max(t.decimals for t in self.tables)

    @property
    def kind(self) -> Kind:
        return self.tables[0].kind

    def keys(self) -> tuple[Key, ...]:
        """The distinct cells, in order of first appearance (table by table)."""
        return self._index.keys

    def column(self, key: Key) -> int:
        """The position of ``key`` in ``keys()``."""
        return self._index.column[key]

    def cell(self, key: Key) -> Cell:
        """The cell (as the first table publishing it has it)."""
        return self._merged[self._index.column[key]]

    def cells(self) -> tuple[Cell, ...]:
        """One cell per key, in ``keys()`` order."""
        return self._merged

    def values(self) -> tuple[Fraction, ...]:
        return tuple(c.value for c in self._merged)

    def where(self, key: Key) -> list[tuple[str, dict[str, str]]]:
        """Every (table name, codes) where the cell ``key`` is published."""
        found = []
        for t, i in self._index.places[self._index.column[key]]:
            table = self.tables[t]
            found.append((table.name, dict(table.cells[i].codes)))
        return found

    def cell_name(self, key: Key) -> str:
        """The cell in words: its non-total codes (``Total`` for the grand total)."""
        if not key:
            return "Total"
        order = self._variable_order
        pairs = sorted(key, key=lambda p: (order.get(p[0], len(order)), p[0]))
        return ", ".join(f"{v}={show_code(c)}" for v, c in pairs)

    @cached_property
    def _variable_order(self) -> dict[str, int]:
        order: dict[str, int] = {}
        for table in self.tables:
            for v in table.variables:
                order.setdefault(v, len(order))
        return order

    def cell_names(self) -> tuple[str, ...]:
        return tuple(self.cell_name(k) for k in self.keys())

    def with_statuses(self, statuses: Mapping[Key, CellStatus]) -> TableSet:
        """A copy with these cells given new statuses in every table publishing them."""
        per_table: list[dict[int, CellStatus]] = [{} for _ in self.tables]
        for key, status in statuses.items():
            for t, i in self._index.places[self._index.column[key]]:
                per_table[t][i] = status
        return TableSet(tuple(table.with_statuses(updates) if updates else table
                              for table, updates in zip(self.tables, per_table, strict=True)))

    def equations(self) -> Additivity:
        """The additivity equations of every table (each hierarchy's parent = the sum of
        its children, at every combination of the other variables' codes); a row that two
        linked tables share appears once."""
        return self._equations

    @cached_property
    def _equations(self) -> Additivity:
        blocks = [block for t, table in enumerate(self.tables)
                  for block in _table_blocks(table, self.grid_columns(t))]
        return _assemble(blocks, len(self.keys()), dedupe=len(self.tables) > 1)

    def grid_columns(self, t: int) -> np.ndarray:
        """For each grid position of table ``t`` (``Table.grid``), the column of its cell in
        ``keys()`` order."""
        table = self.tables[t]
        columns = np.fromiter((self._index.column[table.key(c)] for c in table.cells),
                              dtype=np.int64, count=len(table.cells))
        return columns[table.grid]


def _show(value: object) -> str:
    return show(value) if isinstance(value, Fraction) else str(value)


@dataclass(frozen=True)
class _Block:
    """The equations of one parent code of one variable, at every combination of the other
    variables' codes: row r is parents[r] = sum(children[r])."""

    parents: np.ndarray  # (rows,)
    children: np.ndarray  # (rows, number of children)
    names: list[str]


def _table_blocks(table: Table, columns: np.ndarray) -> Iterable[_Block]:
    for axis, variable in enumerate(table.variables):
        hierarchy = table.hierarchies[variable]
        others = [table.hierarchies[v] for v in table.variables if v != variable]
        for parent, kids in hierarchy.children.items():
            parents = np.take(columns, hierarchy.index(parent), axis=axis).ravel()
            children = np.stack([np.take(columns, hierarchy.index(k), axis=axis).ravel()
                                 for k in kids], axis=1)
            head = (f"{table.name}: {variable} {show_code(parent)} = "
                    f"{' + '.join(show_code(k) for k in kids)}")
            yield _Block(parents, children, _names(head, others))


def _names(head: str, others: Sequence[Hierarchy]) -> list[str]:
    if not others:
        return [head]
    shown = [[f"{h.variable}={show_code(c)}" for c in h.codes()] for h in others]
    return [f"{head} ({', '.join(combo)})" for combo in itertools.product(*shown)]


def _assemble(blocks: Sequence[_Block], n_columns: int, dedupe: bool) -> Additivity:
    indices: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    names: list[str] = []
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for block in blocks:
        keep = _fresh_rows(block, seen) if dedupe else np.ones(len(block.parents), dtype=bool)
        rows = np.concatenate([block.parents[keep, None], block.children[keep]], axis=1)
        indices.append(rows.ravel())
        lengths.append(np.full(len(rows), rows.shape[1], dtype=np.int64))
        names.extend(itertools.compress(block.names, keep))
    length = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum(length)]).astype(np.int64)
    index = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
    data = np.full(len(index), -1, dtype=np.int64)
    data[indptr[:-1][length > 0]] = 1
    matrix = sp.csr_matrix((data, index, indptr), shape=(len(names), n_columns),
                           dtype=np.int64)
    return Additivity(matrix, tuple(names))


def _fresh_rows(block: _Block, seen: set[tuple[int, tuple[int, ...]]]) -> np.ndarray:
    keep = np.zeros(len(block.parents), dtype=bool)
    for r, (parent, children) in enumerate(zip(block.parents.tolist(),
                                               block.children.tolist(), strict=True)):
        row = (parent, tuple(sorted(children)))
        if row not in seen:
            seen.add(row)
            keep[r] = True
    return keep
