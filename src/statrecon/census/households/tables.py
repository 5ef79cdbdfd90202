"""The SF1 block tables of housing units: every published cell as a conjunction of column
conditions, parsed from the Bureau's descriptors, and what one block publishes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from statrecon.census.descriptors import descriptors
from statrecon.census.households.schema import (
    ALONE,
    COL,
    COLUMNS,
    FAMILY,
    FEMALE_HOUSEHOLDER,
    HH_DETAILS,
    HH_TYPES,
    MALE_HOUSEHOLDER,
    N_COLUMNS,
    NA_CODE,
    NONFAMILY,
    OWN_CHILDREN,
    RACES,
    SIZES,
    TABLE,
    VACANT_STATUSES,
    unit_types,
)


@dataclass(frozen=True)
class HouseholdCell:
    """One published block cell: the units it counts, as a conjunction of column conditions."""

    table: str  # the paper's table name with its iteration letter, e.g. "H13A"
    cell: str  # e.g. "H13A_004"
    title: str  # the path of SF1 titles, e.g. "Owner occupied > Householder 25 to 34 years"
    source: str  # the 2010 SF1 field the cell structure comes from, e.g. "H0170004"
    predicate: tuple[tuple[str, frozenset[str]], ...]
    depth: int
    parent: int  # index of the parent cell within its table, -1 for the table's total

    def pattern(self) -> dict[str, frozenset[str]]:
        return dict(self.predicate)

    def sql(self) -> str:
        """The cell as a SQL predicate over the ``households`` columns (DuckDB dialect)."""
        parts = []
        for name, values in self.predicate:
            vals = sorted(values)
            if len(vals) == 1:
                parts.append(f"{name} = '{vals[0]}'")
            else:
                parts.append(f"{name} IN ({', '.join(repr(v) for v in vals)})")
        return " AND ".join(parts) if parts else "TRUE"

    def statistic_sql(self) -> str:
        return f"SELECT COUNT(*) FROM {TABLE} WHERE {self.sql()}"


@dataclass(frozen=True)
class HouseholdTable:
    name: str  # the paper's name, with iteration letter
    source: str  # the 2010 SF1 table
    title: str
    cells: tuple[HouseholdCell, ...]


# The paper's tables (2020 numbering) -> the 2010 SF1 table with the same cells, and the
# iterations the paper used: A-G race alone, H Hispanic, I-O not Hispanic by race, P-V
# Hispanic by race. 2010 SF1 published only A-I for P18, H16 and H17 and no H4 iterations;
# the others are built the same way from the base table (documented in the README).
PAPER_TABLES: tuple[tuple[str, str, str], ...] = (
    ("P16", "P18", "ABCDEFGHIJKLMNOPQRSTUV"),
    ("P19", "P25", ""),
    ("P20", "P19", ""),
    ("P21", "P20", ""),
    ("H1", "H1", ""),
    ("H3", "H3", ""),
    ("H4", "H4", "ABCDEFGHIJKLMNOPQRSTUV"),
    ("H5", "H5", ""),
    ("H6", "H6", ""),
    ("H7", "H7", ""),
    ("H9", "H13", ""),
    ("H10", "H14", ""),
    ("H11", "H15", ""),
    ("H12", "H16", "ABCDEFGHI"),
    ("H13", "H17", "ABCDEFGHI"),
    ("H14", "H18", ""),
    ("H15", "H19", ""),
)


def iteration_filter(letter: str) -> dict[str, frozenset[str]]:
    """The householders a table iteration counts: A-G one race, H Hispanic, I-O not
    Hispanic and one race, P-V Hispanic and one race."""
    if letter in "ABCDEFG":
        return {"race": frozenset({RACES["ABCDEFG".index(letter)]})}
    if letter == "H":
        return {"hispanic": frozenset({"yes"})}
    if letter in "IJKLMNO":
        return {"hispanic": frozenset({"no"}), "race": frozenset({RACES["IJKLMNO".index(letter)]})}
    if letter in "PQRSTUV":
        return {"hispanic": frozenset({"yes"}),
                "race": frozenset({RACES["PQRSTUV".index(letter)]})}
    raise ValueError(f"unknown table iteration {letter!r}")


OCCUPIED = {"vacancy": frozenset({"occupied"})}
UNIVERSE = {"H1": {}, "H3": {}, "H5": {"vacancy": frozenset(VACANT_STATUSES)}}
_AGE_RANGE = re.compile(r"^Householder (\d+) (?:to (\d+) years|years and over)$")
_SIZE = re.compile(r"^(\d+)-person household$")
_RACE_TITLES = {
    "Householder who is White alone": "white",
    "Householder who is Black or African American alone": "black",
    "Householder who is American Indian and Alaska Native alone": "aian",
    "Householder who is Asian alone": "asian",
    "Householder who is Native Hawaiian and Other Pacific Islander alone": "nhopi",
    "Householder who is Some Other Race alone": "sor",
    "Householder who is Two or More Races": "two_or_more",
}
_PHRASES: dict[str, tuple[str, dict[str, frozenset[str]] | None]] = {
    "Total": ("total", {}),
    "Occupied": ("occupancy", dict(OCCUPIED)),
    "Vacant": ("occupancy", {"vacancy": frozenset(VACANT_STATUSES)}),
    "Owned with a mortgage or a loan": ("tenure", {"tenure": frozenset({"owned_mortgage"})}),
    "Owned free and clear": ("tenure", {"tenure": frozenset({"owned_free"})}),
    "Owner occupied": ("tenure", {"tenure": frozenset({"owned_mortgage", "owned_free"})}),
    "Owner-occupied": ("tenure", {"tenure": frozenset({"owned_mortgage", "owned_free"})}),
    "Renter occupied": ("tenure", {"tenure": frozenset({"rented", "no_cash_rent"})}),
    "Renter-occupied": ("tenure", {"tenure": frozenset({"rented", "no_cash_rent"})}),
    "For rent": ("vacancy", {"vacancy": frozenset({"for_rent"})}),
    "Rented, not occupied": ("vacancy", {"vacancy": frozenset({"rented_not_occupied"})}),
    "For sale only": ("vacancy", {"vacancy": frozenset({"for_sale"})}),
    "Sold, not occupied": ("vacancy", {"vacancy": frozenset({"sold_not_occupied"})}),
    "For seasonal, recreational, or occasional use": ("vacancy",
                                                      {"vacancy": frozenset({"seasonal"})}),
    "For migrant workers": ("vacancy", {"vacancy": frozenset({"migrant_workers"})}),
    "Other vacant": ("vacancy", {"vacancy": frozenset({"other_vacant"})}),
    "Not Hispanic or Latino householder": ("hispanic", {"hispanic": frozenset({"no"})}),
    "Hispanic or Latino householder": ("hispanic", {"hispanic": frozenset({"yes"})}),
    "7-or-more-person household": ("size", {"size": frozenset({"7+"})}),
    "2-or-more-person household": ("size", {"size": frozenset(SIZES[1:])}),
    "Family households": ("family", {"hh_type": FAMILY}),
    "Nonfamily households": ("family", {"hh_type": NONFAMILY}),
    "Husband-wife family": ("famtype", {"hh_type": frozenset({"married"})}),
    "Other family": ("famtype", {"hh_type": frozenset({"family_male", "family_female"})}),
    "Male householder, no wife present": ("sex", {"hh_type": frozenset({"family_male"})}),
    "Female householder, no husband present": ("sex",
                                               {"hh_type": frozenset({"family_female"})}),
    "Male householder": ("sex", {"hh_type": MALE_HOUSEHOLDER}),
    "Female householder": ("sex", {"hh_type": FEMALE_HOUSEHOLDER}),
    "Householder living alone": ("alone", {"hh_type": ALONE}),
    "Living alone": ("alone", {"hh_type": ALONE}),
    "Householder not living alone": ("alone", {"hh_type": frozenset(HH_TYPES) - ALONE}),
    "Not living alone": ("alone", {"hh_type": frozenset(HH_TYPES) - ALONE}),
    "With own children under 18 years": ("ownchild", {"hh_type_detail": OWN_CHILDREN}),
    "No own children under 18 years": ("ownchild",
                                       {"hh_type_detail": frozenset(HH_DETAILS) - OWN_CHILDREN}),
    "With children under 18 years": ("under18", {"under18": frozenset({"yes"})}),
    "No children under 18 years": ("under18", {"under18": frozenset({"no"})}),
    "Households with one or more people under 18 years": ("under18",
                                                          {"under18": frozenset({"yes"})}),
    "Households with no people under 18 years": ("under18", {"under18": frozenset({"no"})}),
    "Households with one or more people 65 years and over": ("over65",
                                                            {"over65": frozenset({"yes"})}),
    "Households with no people 65 years and over": ("over65", {"over65": frozenset({"no"})}),
    # ages of the children are not a column: such cells are not published here
    "Under 6 years only": ("childage", None),
    "Under 6 years and 6 to 17 years": ("childage", None),
    "6 to 17 years only": ("childage", None),
}
_AGE_BOUNDS = {"15-24": (15, 24), "25-34": (25, 34), "35-44": (35, 44), "45-54": (45, 54),
               "55-59": (55, 59), "60-64": (60, 64), "65-74": (65, 74), "75-84": (75, 84),
               "85+": (85, 200)}


def phrase(title: str) -> tuple[str, dict[str, frozenset[str]] | None]:
    """(dimension, conditions) of one SF1 cell title; conditions None: not expressible.

    Raises ValueError for a title it does not know, so a new table never slips in silently.
    """
    if title in _PHRASES:
        return _PHRASES[title]
    if title in _RACE_TITLES:
        return "race", {"race": frozenset({_RACE_TITLES[title]})}
    if m := _SIZE.match(title):
        return "size", {"size": frozenset({m.group(1)})}
    if m := _AGE_RANGE.match(title):
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else 200
        groups = frozenset(a for a, (a_lo, a_hi) in _AGE_BOUNDS.items()
                           if a_lo >= lo and a_hi <= hi)
        spans = [a for a, (a_lo, a_hi) in _AGE_BOUNDS.items() if a_lo <= hi and a_hi >= lo]
        if set(spans) != groups:
            raise ValueError(f"age range {title!r} does not fall on the age groups")
        return "age", {"age": groups}
    raise ValueError(f"unknown SF1 cell title {title!r}")


def _conjoin(*patterns: Mapping[str, frozenset[str]]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for p in patterns:
        for name, vals in p.items():
            out[name] = out[name] & vals if name in out else vals
    return out


@cache
def _descriptor_rows() -> dict[str, list[tuple[str, str]]]:
    """(field code, title) of every cell of every 2010 SF1 table, in table order."""
    out: dict[str, list[tuple[str, str]]] = {}
    for d in descriptors():
        if d.code:
            out.setdefault(d.table, []).append((d.code, d.name))
    return out


@cache
def _table_titles() -> dict[str, str]:
    out: dict[str, str] = {}
    for d in descriptors():
        if not d.code and d.table not in out:
            out[d.table] = re.sub(r"\s*\[\d+\].*$", "", d.name).strip()
    return out


def _parse_source(source: str) -> list[tuple[str, str, int, int, dict[str, frozenset[str]]]]:
    """The expressible cells of a 2010 table: (field, title path, depth, parent, conditions).

    The descriptor file has no indentation, so the hierarchy is rebuilt from meaning: a title
    ending in ':' opens a group; a title on the same dimension as an open group (e.g. 'Renter
    occupied:' after 'Owner occupied:') closes that group and everything under it.
    """
    rows = _descriptor_rows().get(source)
    if not rows:
        raise ValueError(f"SF1 table {source} is not in the descriptor file")
    # stack entries: (dimension, conditions or None, title, cell index or -1)
    stack: list[tuple[str, dict[str, frozenset[str]] | None, str, int]] = []
    cells: list[tuple[str, str, int, int, dict[str, frozenset[str]]]] = []
    for code, raw in rows:
        is_group = raw.endswith(":")
        title = raw.rstrip(":").strip()
        dim, cond = phrase(title)
        for i, entry in enumerate(stack):
            if entry[0] == dim:
                del stack[i:]
                break
        parent_conds = [e[1] for e in stack]
        expressible = cond is not None and all(c is not None for c in parent_conds)
        index = -1
        if expressible:
            assert cond is not None
            conds = _conjoin(*(c for c in parent_conds if c is not None), cond)
            path = " > ".join([e[2] for e in stack if e[0] != "total"] + [title])
            parent = next((e[3] for e in reversed(stack) if e[3] >= 0), -1)
            index = len(cells)
            cells.append((code, path or title, len(stack), parent, conds))
        if is_group:
            stack.append((dim, cond, title, index))
    return cells


@cache
def household_tables() -> tuple[HouseholdTable, ...]:
    """Every block table of the paper, iterations included, in the paper's order."""
    out: list[HouseholdTable] = []
    titles = _table_titles()
    for paper, source, letters in PAPER_TABLES:
        base = _parse_source(source)
        universe = UNIVERSE.get(paper, OCCUPIED)
        for letter in ("", *letters):
            extra = iteration_filter(letter) if letter else {}
            name = paper + letter
            cells = tuple(
                HouseholdCell(table=name, cell=f"{name}_{code[-3:]}", title=path,
                              source=code, depth=depth, parent=parent,
                              predicate=tuple(sorted(_conjoin(universe, extra, conds).items())))
                for code, path, depth, parent, conds in base)
            out.append(HouseholdTable(name, source, titles.get(source, source), cells))
    return tuple(out)


def all_cells() -> tuple[HouseholdCell, ...]:
    return tuple(c for t in household_tables() for c in t.cells)


@dataclass(frozen=True)
class TableIndex:
    """Cells as chains: each unit type lies in a chain of nested cells per table.

    ``deepest[t, j]`` is the deepest cell (global index) of table j containing type t, or -1.
    Every cell containing t is on the chain from that cell up through ``parent``. Cells of a
    table are nested or disjoint, so this is the whole membership in a few bytes per type.
    """

    cells: tuple[HouseholdCell, ...]
    deepest: np.ndarray  # (n_types, n_tables) int32
    parent: np.ndarray  # (n_cells,) int32, global index, -1 at a table's top
    table_of: np.ndarray  # (n_cells,) int32

    @cached_property
    def _deepest_by_table(self) -> np.ndarray:
        return np.ascontiguousarray(self.deepest.T)  # one table's column read contiguously

    def least_over_deepest(self, per_cell: np.ndarray) -> np.ndarray:
        """Per unit type, the least of ``per_cell`` (int64, by global cell) over its
        deepest cell in each table (int64's maximum where no table holds it). Why one
        table at a time: gathering all of them at once is twice as slow (issue 29)."""
        ext = np.append(np.asarray(per_cell, dtype=np.int64), np.iinfo(np.int64).max)
        by_table = self._deepest_by_table  # -1 (no cell) picks the appended maximum
        out = ext[by_table[0]]
        for row in by_table[1:]:
            np.minimum(out, ext[row], out=out)
        return out

    def chain(self, cell: int) -> list[int]:
        out = []
        while cell >= 0:
            out.append(cell)
            cell = int(self.parent[cell])
        return out


@cache
def table_index() -> TableIndex:
    types = unit_types()
    tables = household_tables()
    cells: list[HouseholdCell] = []
    parent: list[int] = []
    table_of: list[int] = []
    deepest = np.full((len(types), len(tables)), -1, dtype=np.int32)
    col_masks = {(j, v): types[:, j] == v for j in range(N_COLUMNS) for v in range(16)
                 if v < len(COLUMNS[j].values) or v == NA_CODE}
    for j, table in enumerate(tables):
        offset = len(cells)
        order = sorted(range(len(table.cells)), key=lambda i: table.cells[i].depth)
        for i in order:
            cell = table.cells[i]
            mask = np.ones(len(types), dtype=bool)
            for name, values in cell.predicate:
                k = COL[name]
                col = np.zeros(len(types), dtype=bool)
                for v in values:
                    col |= col_masks[(k, COLUMNS[k].code(v))]
                mask &= col
            deepest[mask, j] = offset + i
        for cell in table.cells:
            cells.append(cell)
            parent.append(offset + cell.parent if cell.parent >= 0 else -1)
            table_of.append(j)
    deepest.setflags(write=False)
    return TableIndex(tuple(cells), deepest, np.array(parent, dtype=np.int32),
                      np.array(table_of, dtype=np.int32))


@cache
def _positions() -> dict[str, int]:
    return {c.cell: i for i, c in enumerate(table_index().cells)}


def cell_position(cell: str) -> int:
    """Global index of a cell id such as ``H1_001`` in ``table_index().cells``."""
    return _positions()[cell]


@dataclass(frozen=True)
class BlockRelease:
    """What is published for one block: one count per cell of ``table_index().cells``."""

    block: str
    values: np.ndarray  # int64, one per published cell (zeros included)

    @property
    def units(self) -> int:
        """Housing units in the block (H1)."""
        return int(self.values[cell_position("H1_001")])
