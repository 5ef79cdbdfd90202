"""A publication read back: the cells an agency published (one row per cell: its codes and
the published value, ``x`` where it was withheld below a threshold), as the structure of the
linked tables it comes from and each cell's published value. What ``tables audit --ptable``
audits: a perturbed table published by someone else, whose true counts nobody gives us.

The rows are what ``tables perturb`` publishes: a column of codes per explanatory variable
(a table's totals under the code ``Total``), a ``value`` column and, for several linked
tables, a ``table`` column naming each row's table; a variable a table does not have is
blank on its rows. A hierarchy is flat over the codes present (the total above them), or
read from a tau-Argus ``.hrc`` file (``--hierarchy VAR=FILE``). A cell of a table's grid
that has no row was not published: it is only known to be at least 0 (never read as a
zero). The values are not checked to add up: perturbed values do not.

Every mistake is one line naming ``file:line`` (the header is line 1 of a CSV; a Parquet
file's rows are counted from 1).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Literal

from statrecon.errors import InconsistentReleaseError, StatreconError
from statrecon.number_reader import NumberError, parse_number
from statrecon.tables import _rda
from statrecon.tables.frames import (
    code_text,
    load_frame,
    require_columns,
    row_error,
    row_where,
)
from statrecon.tables.model import (
    Cell,
    CellStatus,
    Hierarchy,
    Key,
    Table,
    TableSet,
    check_grid_size,
    show_code,
)
from statrecon.tables.values import show

WITHHELD = "x"
TABLE_COLUMN = "table"
TOTAL = "Total"
Published = int | Literal["x"] | None  # a count, withheld, or not in the publication


@dataclass(frozen=True)
class PublishedCells:
    """The linked tables a publication comes from (``tables``: every cell's value 0, a
    placeholder: the true counts are not known) and, per cell in ``tables.keys()`` order,
    its published value (``published``: a count, ``"x"`` withheld, None: no row) and where
    it was read (``rows``: ``file:line``, None without a row)."""

    tables: TableSet
    published: tuple[Published, ...]
    rows: tuple[str | None, ...]
    source: str

    def with_values(self, values: Sequence[int]) -> TableSet:
        """The tables with these values (``keys()`` order) in place of the placeholders."""
        column = {k: i for i, k in enumerate(self.tables.keys())}
        out = []
        for table in self.tables.tables:
            cells = tuple(replace(c, value=Fraction(values[column[table.key(c)]]),
                                  frequency=None) for c in table.cells)
            out.append(replace(table, cells=cells))
        return TableSet(tuple(out))


def read_hierarchy(path: Path, variable: str) -> Hierarchy:
    """A tau-Argus ``.hrc`` file (lead ``@``) as the hierarchy of ``variable``, its codes
    without fixed-width padding (as a CSV writes them), the total ``Total`` above them."""
    hrc = _rda.read_hrc(Path(path), variable, TOTAL, "@")
    seen: dict[str, str] = {}
    for code in (c for kids in hrc.children.values() for c in kids):
        if seen.setdefault(code.strip(), code) != code:
            raise StatreconError(f"{path}: codes {seen[code.strip()]!r} and {code!r} differ "
                                 "only in their padding", where=str(path))
    return Hierarchy(variable, TOTAL, {p.strip(): tuple(c.strip() for c in kids)
                                       for p, kids in hrc.children.items()})


def _value(path: Path, row: int, column: str, raw: object) -> int | Literal["x"]:
    text = code_text(raw)
    if text is None or not text.strip():
        raise row_error(path, row, f"{column}: a missing value (write {WITHHELD} for a withheld "
                               "cell)")
    if text.strip().lower() == WITHHELD:
        return "x"
    try:
        number = parse_number(text.strip())
    except NumberError as e:
        raise row_error(path, row, f"{column}: {e}") from None
    if number.denominator != 1 or number < 0:
        raise row_error(path, row, f"{column} {show(number)} is not a whole number >= 0, as a "
                               "published count must be")
    if number >= 2**62:
        raise row_error(path, row, f"{column} {show(number)} is too large")
    return int(number)


def read_published(path: Path | str, dimensions: Sequence[str], value: str = "value",
                   hierarchies: Mapping[str, Hierarchy] | None = None) -> PublishedCells:
    """The publication in ``path`` (module docstring): its tables' structure, linked, and
    each cell's published value."""
    path = Path(path)
    if not dimensions:
        raise StatreconError(f"{path}: give the explanatory variables with --dimensions")
    frame = load_frame(path, "published table")
    require_columns(frame, [*dimensions, value], str(path))
    given = dict(hierarchies or {})
    unknown = sorted(set(given) - set(dimensions))
    if unknown:
        raise StatreconError(f"--hierarchy {unknown[0]}: not one of the dimensions "
                             f"({', '.join(dimensions)})")
    codes = {d: [code_text(v) for v in frame[d].tolist()] for d in dimensions}
    values = frame[value].tolist()
    if TABLE_COLUMN in frame.columns:
        names = [code_text(v) for v in frame[TABLE_COLUMN].tolist()]
        if None in names:
            raise row_error(path, names.index(None), f"{TABLE_COLUMN}: a missing table name")
    else:
        names = [path.stem] * len(frame)
    groups: dict[str, list[int]] = {}
    for row, name in enumerate(names):
        groups.setdefault(str(name), []).append(row)
    if not groups:
        raise StatreconError(f"{path}: no published cells", where=str(path))
    seen: dict[Key, tuple[int | Literal["x"], int]] = {}
    tables = []
    for name, rows in groups.items():
        table, keys = _table(path, name, rows, dimensions, codes, given)
        tables.append(table)
        for row, key in zip(rows, keys, strict=True):
            _publish(path, row, key, _value(path, row, value, values[row]), seen, table)
    linked = TableSet(tuple(tables))
    order = linked.keys()
    published = tuple(seen[k][0] if k in seen else None for k in order)
    where = tuple(row_where(path, seen[k][1]) if k in seen else None for k in order)
    return PublishedCells(linked, published, where, str(path))


def _publish(path: Path, row: int, key: Key, shown: int | Literal["x"],
             seen: dict[Key, tuple[int | Literal["x"], int]], table: Table) -> None:
    """One row's value for its cell; a cell published twice must show the same value (CKM
    perturbs a cell the same way in every table)."""
    first = seen.setdefault(key, (shown, row))
    if first[0] != shown:
        where = row_where(path, row)
        name = ", ".join(f"{v}={show_code(c)}" for v, c in sorted(key)) or "the grand total"
        raise InconsistentReleaseError(
            f"{where}: cell {name} of table {table.name} is published as {shown}, but as "
            f"{first[0]} on {row_where(path, first[1])}: one cell is published alike in every "
            "table, so the release is inconsistent", where=where)


def _table(path: Path, name: str, rows: list[int], dimensions: Sequence[str],
           codes: Mapping[str, list[str | None]], given: Mapping[str, Hierarchy]
           ) -> tuple[Table, list[Key]]:
    """One table's structure from its rows: its variables (the dimensions its rows fill),
    their hierarchies and the full grid of cells (value 0), and each row's cell key."""
    variables = []
    for d in dimensions:
        missing = [r for r in rows if codes[d][r] is None]
        if len(missing) == len(rows):
            continue
        if missing:
            raise row_error(path, missing[0], f"a missing code in column {d} (table {name}: "
                                          "its other rows have one)")
        variables.append(d)
    if not variables:
        raise row_error(path, rows[0], f"table {name}: no codes in any of the dimensions")
    found = {}
    for v in variables:
        present = sorted({str(codes[v][r]) for r in rows} - {TOTAL})
        found[v] = given.get(v) or Hierarchy.flat(v, present, TOTAL)
    keys: list[Key] = []
    places: dict[tuple[str, ...], int] = {}
    for r in rows:
        combo = tuple(str(codes[v][r]) for v in variables)
        for v, code in zip(variables, combo, strict=True):
            if code not in found[v]:
                raise row_error(path, r, f"code {show_code(code)} is not in the hierarchy of {v}")
        if combo in places:
            raise row_error(path, r, f"cell {', '.join(map(show_code, combo))} of table {name} "
                                 f"again (first on {row_where(path, places[combo])})")
        places[combo] = r
        keys.append(frozenset((v, c) for v, c in zip(variables, combo, strict=True)
                              if c != found[v].total))
    check_grid_size((found[v] for v in variables), where=f"{path}: table {name}")
    grid: itertools.product[tuple[str, ...]] = itertools.product(
        *(found[v].codes() for v in variables))
    cells = tuple(Cell(tuple(zip(variables, combo, strict=True)), Fraction(0), None,
                       CellStatus.SAFE) for combo in grid)
    table = Table(name, tuple(variables), found, "freq", "frequency", 0, cells,
                  source=str(path))
    return table, keys
