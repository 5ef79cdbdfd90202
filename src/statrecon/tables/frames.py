"""Tables from pandas data frames (one row per cell), and back.

A frame holds one row per cell: a column of codes per explanatory variable, the value, and
optionally the frequency, status, protection levels, cost and largest contributions. With
``margins="compute"`` (the default) the rows are the cells *below* the totals (every code a
leaf of its hierarchy) and every total is computed from them, as easySdcTable's
``ProtectTable`` does from ``z1``; with ``margins="given"`` the rows may hold any cells,
totals included, and the table is checked to add up. A combination of codes with no row is an
EMPTY cell (known to be 0); a row whose value is 0 is a published zero.

A hierarchy is a :class:`Hierarchy`, a parent -> children mapping, or ``"flat"`` (the
default): a total over the codes present, sorted. :func:`hierarchy_from_columns` builds one
from nested grouping columns (``fylke`` above ``region``).

Statuses are CellStatus values (``"primary"``) or tau-Argus letters (``"U"``); a missing status
is safe. Protection levels are absolute; a primary cell without them gets none (0, 0). As in
the tau-Argus reader, a lower protection level above the value of a cell in a table without
negative values is an error. Rows are counted from 1 in messages.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from statrecon import inputs
from statrecon.errors import StatreconError
from statrecon.number_reader import NumberError
from statrecon.tables._grid import aggregate, largest, objects
from statrecon.tables.model import (
    NO_PROTECTION,
    Cell,
    CellStatus,
    Hierarchy,
    Kind,
    Table,
    TableSet,
    check_grid_size,
    show_code,
)
from statrecon.tables.values import decimals_of, exact, show

HierarchySpec = Hierarchy | Mapping[str, Sequence[str]] | Literal["flat"]
Margins = Literal["compute", "given"]
_LETTERS = {"s": CellStatus.SAFE, "u": CellStatus.PRIMARY, "m": CellStatus.SECONDARY,
            "p": CellStatus.PROTECTED, "e": CellStatus.EMPTY, "z": CellStatus.EMPTY}


@dataclass(frozen=True)
class Columns:
    """Which frame columns hold what (None or empty: the frame has no such column)."""

    value: str
    frequency: str | None = None
    status: str | None = None
    lower: str | None = None
    upper: str | None = None
    cost: str | None = None
    top: tuple[str, ...] = ()
    sliding: str | None = None


def code_text(value: object) -> str | None:
    """A code as text: ``10100.0`` (a code R stored as a number) is ``"10100"``; None for a
    missing code."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def resolve_hierarchy(variable: str, given: HierarchySpec, present: Sequence[str],
                      total: str = "Total") -> Hierarchy:
    """A hierarchy from its spec: a Hierarchy, a parent -> children mapping, or "flat" over
    the codes ``present`` (the total left out)."""
    if isinstance(given, Hierarchy):
        if given.variable != variable:
            raise StatreconError(f"the hierarchy given for {variable} is that of "
                                 f"{given.variable}")
        return given
    if isinstance(given, str):
        if given != "flat":
            raise StatreconError(f"hierarchy of {variable}: {given!r} is neither a "
                                 f"hierarchy, a parent -> children mapping nor 'flat'")
        return Hierarchy.flat(variable, sorted(set(present) - {total}), total)
    return Hierarchy.from_children(variable, given)


def hierarchy_from_columns(frame: pd.DataFrame, variable: str, columns: Sequence[str],
                           total: str = "Total") -> Hierarchy:
    """The hierarchy of nested grouping columns, coarse to fine (``["fylke", "region"]``):
    the total, then each coarse code with the finer codes its rows hold. A finer code
    under two coarser ones is an error."""
    if not columns:
        raise StatreconError(f"hierarchy of {variable}: no columns given")
    require_columns(frame, columns, "frame")
    children: dict[str, list[str]] = {total: []}
    parent_of: dict[str, str] = {}
    rows = frame[list(columns)].drop_duplicates()
    for values in rows.itertuples(index=False):
        path = [total, *(_code_or_fail(v, c) for v, c in zip(values, columns, strict=True))]
        for parent, child in itertools.pairwise(path):
            if parent_of.setdefault(child, parent) != parent:
                raise StatreconError(f"hierarchy of {variable}: {show_code(child)} is under "
                                     f"both {show_code(parent_of[child])} and "
                                     f"{show_code(parent)}")
            kids = children.setdefault(parent, [])
            if child not in kids:
                kids.append(child)
    return Hierarchy(variable, total, {p: tuple(sorted(k)) for p, k in children.items()})


def _code_or_fail(value: object, column: str) -> str:
    code = code_text(value)
    if code is None:
        raise StatreconError(f"column {column}: a missing code")
    return code


def require_columns(frame: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise StatreconError(f"{where}: no column {', '.join(map(repr, missing))} (it has "
                             f"{', '.join(map(str, frame.columns))})", where=where)


# ----------------------------------------------------------------------------------------
# frame -> table


def table_from_frame(frame: pd.DataFrame, dimensions: Sequence[str], value: str, *,
                     hierarchies: Mapping[str, HierarchySpec] | None = None,
                     frequency: str | None = None, status: str | None = None,
                     lower: str | None = None, upper: str | None = None,
                     cost: str | None = None, top: Sequence[str] = (),
                     sliding: str | None = None,
                     kind: Kind | None = None, decimals: int | None = None,
                     margins: Margins = "compute", name: str = "table",
                     response: str | None = None, total: str = "Total",
                     source: str | None = None) -> Table:
    """A Table from one row per cell (see the module docstring). ``kind`` defaults to
    "frequency" (the value is a count, and the frequency) when no other ``frequency`` column
    is given, else "magnitude"; ``decimals`` to the fewest that write every value exactly."""
    where = source or name
    columns = Columns(value, frequency, status, lower, upper, cost, tuple(top), sliding)
    require_columns(frame, [*dimensions, *_named(columns)], where)
    if margins not in ("compute", "given"):
        raise StatreconError(f"margins must be 'compute' or 'given', not {margins!r}")
    kind = kind or ("frequency" if frequency in (None, value) else "magnitude")
    codes = frame_codes(frame, dimensions, where)
    given = dict(hierarchies or {})
    found = [resolve_hierarchy(d, given.get(d, "flat"), sorted(set(codes[:, i])), total)
             for i, d in enumerate(dimensions)]
    check_grid_size(found, where)
    rows = _Rows(frame, columns, kind, where).read(codes, found, margins)
    builder = _Builder(found, kind, frequency is not None or kind == "frequency", where)
    if margins == "compute":
        builder.complete(rows)
    table = builder.table(rows, name, response or value, decimals, source)
    if margins == "given":
        _check_adds_up(table, rows, where)
    return table


def read_frame(path: Path | str, dimensions: Sequence[str], value: str,
               **options: object) -> Table:
    """A Table from a Parquet or CSV file of one row per cell (``table_from_frame``'s
    options); a CSV's columns are read as text, its numbers exactly."""
    path = Path(path)
    frame = load_frame(path, "table file")
    options.setdefault("name", path.stem)
    options.setdefault("source", str(path))
    return table_from_frame(frame, dimensions, value, **options)  # type: ignore[arg-type]


def load_frame(path: Path, what: str) -> pd.DataFrame:
    """A CSV/TSV (every column text, an empty cell missing) or Parquet file of cells or
    records, through the input gate (``inputs.read_columnar``: sized as it is decoded); its
    numbers are read exactly later, never as floats."""
    frame = inputs.read_columnar(path, what).to_pandas()
    if path.suffix.lower() not in (".parquet", ".pq"):
        frame = frame.replace({"": None})
    return frame


def row_where(path: Path, row: int) -> str:
    """Where row ``row`` (0-based) of a file read by :func:`load_frame` is: its line in a
    CSV (the header is line 1), its row in a Parquet file."""
    if path.suffix.lower() in (".parquet", ".pq"):
        return f"{path}:row {row + 1}"
    return f"{path}:{row + 2}"


def row_error(path: Path, row: int, message: str) -> StatreconError:
    """The one-line error for row ``row`` of such a file, naming where it is."""
    where = row_where(path, row)
    return StatreconError(f"{where}: {message}", where=where)


def _named(columns: Columns) -> list[str]:
    named = [columns.value, columns.frequency, columns.status, columns.lower, columns.upper,
             columns.cost, *columns.top, columns.sliding]
    return [c for c in named if c]


def frame_codes(frame: pd.DataFrame, dimensions: Sequence[str], where: str) -> np.ndarray:
    """The code columns as text (``code_text`` of each distinct value), rows x dimensions;
    a missing code names its row."""
    codes = np.empty((len(frame), len(dimensions)), dtype=object)
    for i, d in enumerate(dimensions):
        column = frame[d]
        missing = column.isna().to_numpy()
        if missing.any():
            r = int(np.flatnonzero(missing)[0]) + 1
            raise StatreconError(f"{where}:row {r}: a missing code in column {d}",
                                 where=f"{where}:row {r}")
        raw = column.to_numpy(dtype=object)
        text = {v: code_text(v) for v in pd.unique(raw)}
        codes[:, i] = [text[v] for v in raw]
    return codes


@dataclass
class _Row:
    """One frame row as a cell, before the grid is complete."""

    value: Fraction
    frequency: int | None
    status: CellStatus
    lower: Fraction | None
    upper: Fraction | None
    cost: Fraction | None
    top: tuple[Fraction, ...]
    row: int | None  # 1-based row of the frame; None for a computed or empty cell
    sliding: Fraction | None = None


@dataclass
class _Rows:
    """Reads and checks each frame row."""

    frame: pd.DataFrame
    columns: Columns
    kind: Kind
    where: str

    def read(self, codes: np.ndarray, hierarchies: Sequence[Hierarchy],
             margins: Margins) -> dict[tuple[str, ...], _Row]:
        found: dict[tuple[str, ...], _Row] = {}
        data = {c: self.frame[c].tolist() for c in _named(self.columns)}
        for r in range(len(self.frame)):
            key = tuple(codes[r])
            where = f"{self.where}:row {r + 1}"
            _check_codes(key, hierarchies, margins, where)
            if key in found:
                raise StatreconError(f"{where}: cell {', '.join(map(show_code, key))} again "
                                     f"(first on row {found[key].row})", where=where)
            found[key] = self._row({c: v[r] for c, v in data.items()}, r + 1, where)
        return found

    def _number(self, row: Mapping[str, object], column: str | None,
                where: str) -> Fraction | None:
        if not column:
            return None
        raw = row[column]
        if isinstance(raw, str) and not raw.strip():
            return None
        try:
            number = exact(raw)
        except NumberError as e:
            raise StatreconError(f"{where}: {column}: {e}", where=where) from None
        if number is None and code_text(raw) is not None:
            raise StatreconError(f"{where}: {column} {raw!r} is not a number", where=where)
        return number

    def _row(self, row: Mapping[str, object], number: int, where: str) -> _Row:
        value = self._number(row, self.columns.value, where)
        if value is None:
            raise StatreconError(f"{where}: no {self.columns.value}", where=where)
        frequency = self._frequency(row, value, where)
        status = _status(row.get(self.columns.status) if self.columns.status else None,
                         where)
        if status is CellStatus.EMPTY and (value != 0 or frequency):
            raise StatreconError(f"{where}: an empty cell must have value 0 and frequency "
                                 f"0", where=where)
        levels = [self._number(row, c, where) for c in (self.columns.lower,
                                                        self.columns.upper,
                                                        self.columns.sliding)]
        if any(level is not None and level < 0 for level in levels):
            raise StatreconError(f"{where}: a negative protection level", where=where)
        tops = tuple(sorted((t for t in (self._number(row, c, where) for c in self.columns.top)
                             if t is not None), reverse=True))
        return _Row(value, frequency, status, levels[0], levels[1],
                    self._number(row, self.columns.cost, where), tops, number, levels[2])

    def _frequency(self, row: Mapping[str, object], value: Fraction,
                   where: str) -> int | None:
        given = self._number(row, self.columns.frequency, where)
        if self.kind == "frequency":
            if value.denominator != 1 or value < 0:
                raise StatreconError(f"{where}: {self.columns.value} {show(value)} is not a "
                                     "whole number >= 0, as a count must be (a table without "
                                     "a frequency column is a frequency table; give the "
                                     "contributors' column, --frequency, for magnitudes)",
                                     where=where)
            if given is not None and given != value:
                raise StatreconError(f"{where}: a frequency table's frequency "
                                     f"{show(given)} differs from its value {show(value)}",
                                     where=where)
            given = value
        if given is None:
            return None
        if given.denominator != 1 or given < 0:
            raise StatreconError(f"{where}: frequency {show(given)} is not a whole number "
                                 f">= 0", where=where)
        return int(given)


def _check_codes(key: tuple[str, ...], hierarchies: Sequence[Hierarchy], margins: Margins,
                 where: str) -> None:
    for code, hierarchy in zip(key, hierarchies, strict=True):
        if code not in hierarchy:
            raise StatreconError(f"{where}: code {show_code(code)} is not in the hierarchy "
                                 f"of {hierarchy.variable}", where=where)
        if margins == "compute" and not hierarchy.is_leaf(code):
            raise StatreconError(f"{where}: {hierarchy.variable}={show_code(code)} is a "
                                 f"total; with margins='compute' the rows are the cells below "
                                 f"the totals (margins='given' reads a frame with totals)",
                                 where=where)


def _status(raw: object, where: str) -> CellStatus:
    text = code_text(raw)
    if text is None or not text.strip():
        return CellStatus.SAFE
    text = text.strip().lower()
    if text in _LETTERS:
        return _LETTERS[text]
    try:
        return CellStatus(text)
    except ValueError:
        raise StatreconError(f"{where}: unknown status {raw!r} (one of "
                             f"{', '.join(s.value for s in CellStatus)}, or a tau-Argus "
                             f"letter S, U, M, P, E)", where=where) from None


# ----------------------------------------------------------------------------------------
# the grid


@dataclass
class _Builder:
    hierarchies: list[Hierarchy]
    kind: Kind
    counted: bool  # whether cells have frequencies
    where: str

    def grid(self) -> list[tuple[str, ...]]:
        return list(itertools.product(*(h.codes() for h in self.hierarchies)))

    def _empty(self) -> _Row:
        return _Row(Fraction(0), 0 if self.counted else None, CellStatus.EMPTY, None, None,
                    None, (), None)

    def complete(self, rows: dict[tuple[str, ...], _Row]) -> None:
        """Every total computed from the rows below it (margins="compute")."""
        grid = self.grid()
        shape = tuple(len(h) for h in self.hierarchies)
        cells = [rows.get(codes) or self._empty() for codes in grid]
        k = max((len(c.top) for c in cells), default=0)
        values = aggregate(objects([c.value for c in cells], shape), self.hierarchies,
                           operator.add)
        frequencies = aggregate(objects([c.frequency or 0 for c in cells], shape),
                                self.hierarchies, operator.add)
        tops = aggregate(objects([c.top for c in cells], shape), self.hierarchies,
                         largest(k))
        empty = aggregate(np.array([c.status is CellStatus.EMPTY for c in cells],
                                   dtype=bool).reshape(shape), self.hierarchies,
                          np.logical_and)
        for codes, v, f, t, e in zip(grid, values.ravel(), frequencies.ravel(), tops.ravel(),
                                     empty.ravel(), strict=True):
            if codes not in rows and not e:
                rows[codes] = _Row(v, f if self.counted else None, CellStatus.SAFE, None,
                                   None, None, t, None)

    def table(self, rows: dict[tuple[str, ...], _Row], name: str, response: str,
              decimals: int | None, source: str | None) -> Table:
        grid = self.grid()
        cells = [rows.get(codes) or self._empty() for codes in grid]
        nonnegative = all(c.value >= 0 for c in cells)
        variables = tuple(h.variable for h in self.hierarchies)
        built = tuple(self._cell(variables, codes, c, nonnegative)
                      for codes, c in zip(grid, cells, strict=True))
        return Table(name, variables, {h.variable: h for h in self.hierarchies}, response,
                     self.kind, self._decimals(cells, decimals), built, source=source)

    def _decimals(self, cells: Sequence[_Row], decimals: int | None) -> int:
        needed = 0
        for c in cells:
            d = decimals_of(c.value)
            if d is None:
                raise StatreconError(f"{self._where(c)}: value {show(c.value)} has no finite "
                                     f"decimal form", where=self._where(c))
            needed = max(needed, d)
        if decimals is not None and decimals < needed:
            raise StatreconError(f"{self.where}: values need {needed} decimals, more than "
                                 f"the {decimals} given", where=self.where)
        return needed if decimals is None else decimals

    def _where(self, row: _Row) -> str:
        return f"{self.where}:row {row.row}" if row.row else self.where

    def _cell(self, variables: tuple[str, ...], codes: tuple[str, ...], row: _Row,
              nonnegative: bool) -> Cell:
        protection, sliding = NO_PROTECTION, Fraction(0)
        if row.status is CellStatus.PRIMARY:
            protection = (row.lower or Fraction(0), row.upper or Fraction(0))
            sliding = row.sliding or Fraction(0)
            if nonnegative and protection[0] > row.value:
                raise StatreconError(f"{self._where(row)}: lower protection level "
                                     f"{show(protection[0])} is larger than the value "
                                     f"{show(row.value)}; no suppression can protect it "
                                     f"(the cell cannot go below 0)", where=self._where(row))
        return Cell(tuple(zip(variables, codes, strict=True)), row.value, row.frequency,
                    row.status, protection, row.cost, row.top, sliding)


def _check_adds_up(table: Table, rows: Mapping[tuple[str, ...], _Row], where: str) -> None:
    equations = TableSet((table,)).equations()
    values = [c.value for c in table.cells]
    bad = equations.violations(values)
    if not len(bad):
        return
    row = int(bad[0])
    parent, children = equations.sides(row, values)
    codes = tuple(c for _, c in table.cells[equations.parent(row)].codes)
    found = rows.get(codes)
    at = f"{where}:row {found.row}" if found and found.row else where
    raise StatreconError(f"{at}: the table does not add up: {equations.names[row]}: "
                         f"{show(parent)} != {show(children)}", where=at,
                         statistic=equations.names[row])


# ----------------------------------------------------------------------------------------
# table -> frame


def to_frame(table: Table, *, empty: bool = True, exact_numbers: bool = True) -> pd.DataFrame:
    """One row per cell: the codes, ``value``, ``frequency`` (if the table has any),
    ``status`` (CellStatus values), ``lower``/``upper`` protection, ``sliding`` protection
    (if any cell has one), ``cost`` and ``top1``... (if any). Numbers are exact: whole
    numbers as integers, others as Fractions (floats with ``exact_numbers=False``).
    ``empty=False`` leaves out the EMPTY cells."""
    cells = [c for c in table.cells if empty or c.status is not CellStatus.EMPTY]
    data: dict[str, list[object]] = {v: [c.code(v) for c in cells] for v in table.variables}
    data["value"] = [c.value for c in cells]
    if any(c.frequency is not None for c in cells):
        data["frequency"] = [c.frequency for c in cells]
    data["status"] = [c.status.value for c in cells]
    data["lower"] = [c.protection[0] for c in cells]
    data["upper"] = [c.protection[1] for c in cells]
    if any(c.sliding for c in cells):
        data["sliding"] = [c.sliding for c in cells]
    if any(c.cost is not None for c in cells):
        data["cost"] = [c.cost for c in cells]
    for i in range(max((len(c.top) for c in cells), default=0)):
        data[f"top{i + 1}"] = [c.top[i] if i < len(c.top) else None for c in cells]
    numbers = ("value", "lower", "upper", "sliding", "cost")
    frame = pd.DataFrame({name: _numbers(values, exact_numbers)
                          if name in numbers or name.startswith("top") else values
                          for name, values in data.items()})
    if "frequency" in frame:
        frame["frequency"] = frame["frequency"].astype("Int64")
    return frame


def _numbers(values: Sequence[object], exact_numbers: bool) -> pd.Series:
    if not exact_numbers:
        floats: list[float | None] = [None if v is None else float(v)  # type: ignore[arg-type]
                                      for v in values]
        return pd.Series(floats, dtype="float64")
    if all(isinstance(v, Fraction) and v.denominator == 1 for v in values):
        return pd.Series([int(v) for v in values], dtype="int64")  # type: ignore[call-overload]
    return pd.Series(values, dtype=object)


def written_numbers(frame: pd.DataFrame, parquet: bool) -> pd.DataFrame:
    """``to_frame``'s exact numbers as a file holds them without changing one: whole numbers
    as integers (int64, or text beyond it), others as their exact decimals (text in a CSV;
    Parquet: text too, since a decimal column's precision would have to hold the widest);
    a value with no finite decimal (a fraction from a DP release) as ``p/q``. Never a float:
    ``200000000000000015`` stays itself."""
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if column.dtype != object or not any(isinstance(v, Fraction) for v in column):
            continue
        out[name] = [None if v is None else show(v) if isinstance(v, Fraction) else v
                     for v in column]
    if parquet:
        for name in out.columns:
            if out[name].dtype == object and all(v is None or isinstance(v, str)
                                                  for v in out[name]):
                out[name] = out[name].astype("string")
    return out
