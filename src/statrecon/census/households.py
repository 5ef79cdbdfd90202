"""The housing-unit schema of the Generate-then-Verify experiment and its SF1 block tables.

Ten columns describe a housing unit (reference 003, section 4): tenure, vacancy status,
household size, household type (7), detailed household type (12), people under 18 present,
people 65+ present, Hispanic householder, householder age and householder race. A vacant unit
has ``NA`` in every household column.

Two things live here and nowhere else:

* the **structural rules** that make a unit coherent, written as *forbidden patterns* (a
  conjunction of column conditions no unit may match). One list serves every consumer: the
  enumeration of coherent unit types, the check of a user's rows (the message names the rule),
  the paper's one-hot integer programme (a linear cut per pattern and row) and SQL;
* the **block tables**, read from the Bureau's SF1 cell descriptors (package data), not typed
  by hand. A cell title such as ``Householder 15 to 34 years`` under ``Owner occupied:`` and
  ``Husband-wife family:`` becomes a conjunction over the columns. The paper names tables by the
  newer (2020 DHC) numbering; ``PAPER_TABLES`` maps each to the 2010 SF1 table whose cells it
  uses and lists the race/Hispanic iterations the paper used.

Householder age uses the nine groups the block tables (H17 in 2010) and the 2010 household
microdata publish: 15–24, 25–34, 35–44, 45–54, 55–59, 60–64, 65–74, 75–84, 85+.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from statrecon.census.descriptors import descriptors

NA = "NA"
NA_CODE = 15  # the code of NA in a type array (four bits per column)
TABLE = "households"


@dataclass(frozen=True)
class Column:
    name: str
    values: tuple[str, ...]
    title: str

    def code(self, value: str) -> int:
        return NA_CODE if value == NA else self.values.index(value)


VACANT_STATUSES = ("for_rent", "rented_not_occupied", "for_sale", "sold_not_occupied",
                   "seasonal", "migrant_workers", "other_vacant")
AGES = ("15-24", "25-34", "35-44", "45-54", "55-59", "60-64", "65-74", "75-84", "85+")
AGES_65_PLUS = frozenset({"65-74", "75-84", "85+"})
RACES = ("white", "black", "aian", "asian", "nhopi", "sor", "two_or_more")
HH_TYPES = ("married", "family_male", "family_female", "nonfamily_male_alone",
            "nonfamily_male_not_alone", "nonfamily_female_alone", "nonfamily_female_not_alone")
HH_DETAILS = ("married_children", "married_no_children", "cohabiting_children",
              "cohabiting_no_children", "male_children", "male_relatives", "male_nonrelatives",
              "male_alone", "female_children", "female_relatives", "female_nonrelatives",
              "female_alone")
SIZES = ("1", "2", "3", "4", "5", "6", "7+")
YES_NO = ("yes", "no")

COLUMNS: tuple[Column, ...] = (
    Column("tenure", ("owned_mortgage", "owned_free", "rented", "no_cash_rent"),
           "tenure (owned with a mortgage or loan, owned free and clear, rented, occupied "
           "without payment of rent)"),
    Column("vacancy", ("occupied", *VACANT_STATUSES), "vacancy status (occupied, or why vacant)"),
    Column("size", SIZES, "household size"),
    Column("hh_type", HH_TYPES, "household type"),
    Column("hh_type_detail", HH_DETAILS,
           "household type with cohabitation and own children under 18"),
    Column("under18", YES_NO, "people under 18 present (not householder, spouse or partner)"),
    Column("over65", YES_NO, "people 65 years and over present"),
    Column("hispanic", YES_NO, "householder is Hispanic or Latino"),
    Column("age", AGES, "age of householder"),
    Column("race", RACES, "race of householder"),
)
COLUMN_NAMES = tuple(c.name for c in COLUMNS)
HOUSEHOLD_COLUMNS = tuple(n for n in COLUMN_NAMES if n != "vacancy")
COL = {c.name: i for i, c in enumerate(COLUMNS)}
N_COLUMNS = len(COLUMNS)

FAMILY = frozenset({"married", "family_male", "family_female"})
ALONE = frozenset({"nonfamily_male_alone", "nonfamily_female_alone"})
NONFAMILY = frozenset(HH_TYPES) - FAMILY
MALE_HOUSEHOLDER = frozenset({"family_male", "nonfamily_male_alone", "nonfamily_male_not_alone"})
FEMALE_HOUSEHOLDER = frozenset({"family_female", "nonfamily_female_alone",
                                "nonfamily_female_not_alone"})
OWN_CHILDREN = frozenset({"married_children", "cohabiting_children", "male_children",
                          "female_children"})
COUPLE = frozenset({"married_children", "married_no_children", "cohabiting_children",
                    "cohabiting_no_children"})

# Which household types each detailed type can go with. A cohabiting couple's household is a
# family household when the householder has relatives there (own children included), else a
# nonfamily household of two or more; the householder's sex is not a column.
DETAIL_TYPES: dict[str, frozenset[str]] = {
    "married_children": frozenset({"married"}),
    "married_no_children": frozenset({"married"}),
    "cohabiting_children": frozenset({"family_male", "family_female"}),
    "cohabiting_no_children": frozenset({"family_male", "family_female",
                                         "nonfamily_male_not_alone",
                                         "nonfamily_female_not_alone"}),
    "male_children": frozenset({"family_male"}),
    "male_relatives": frozenset({"family_male"}),
    "male_nonrelatives": frozenset({"nonfamily_male_not_alone"}),
    "male_alone": frozenset({"nonfamily_male_alone"}),
    "female_children": frozenset({"family_female"}),
    "female_relatives": frozenset({"family_female"}),
    "female_nonrelatives": frozenset({"nonfamily_female_not_alone"}),
    "female_alone": frozenset({"nonfamily_female_alone"}),
}

Pattern = Mapping[str, frozenset[str]]


@dataclass(frozen=True)
class Rule:
    """A forbidden pattern: no housing unit may match every condition in ``pattern``."""

    name: str
    message: str
    pattern: Mapping[str, frozenset[str]] = field(hash=False)

    def matches(self, row: Mapping[str, str]) -> bool:
        return all(row[c] in vals for c, vals in self.pattern.items())


def min_size(detail: str, under18: bool, over65: bool, age65: bool) -> int:
    """The fewest people a household with these attributes can have.

    Householder, plus the partner of a couple, plus a person under 18 (who is never the
    householder, spouse or partner), plus a person 65+ when the householder is younger (a
    couple's partner may be that person). A family or a nonfamily household that is not alone
    has somebody besides the householder.
    """
    if detail.endswith("_alone"):
        return 1
    if detail in COUPLE:
        return 2 + int(under18)
    elder = int(over65 and not age65)
    return 1 + max(1, int(under18) + elder)


@cache
def rules() -> tuple[Rule, ...]:
    """Every structural rule, as forbidden patterns (generated, so none is forgotten)."""
    out: list[Rule] = []
    vacant = frozenset(VACANT_STATUSES)
    for name in HOUSEHOLD_COLUMNS:
        values = frozenset(COLUMNS[COL[name]].values)
        out.append(Rule(f"vacant-{name}", f"a vacant unit has {name} NA",
                        {"vacancy": vacant, name: values}))
        out.append(Rule(f"occupied-{name}", f"an occupied unit has a {name} (not NA)",
                        {"vacancy": frozenset({"occupied"}), name: frozenset({NA})}))
    for detail, types in DETAIL_TYPES.items():
        out.append(Rule(f"type-{detail}",
                        f"hh_type_detail {detail} goes only with hh_type "
                        f"{' or '.join(sorted(types))}",
                        {"hh_type_detail": frozenset({detail}),
                         "hh_type": frozenset(HH_TYPES) - types}))
    out.append(Rule("alone-size", "a householder living alone has household size 1",
                    {"hh_type": ALONE, "size": frozenset(SIZES[1:])}))
    out.append(Rule("size-alone", "household size 1 means the householder lives alone",
                    {"hh_type": frozenset(HH_TYPES) - ALONE, "size": frozenset({"1"})}))
    out.append(Rule("children-under18",
                    "own children under 18 present means people under 18 are present",
                    {"hh_type_detail": OWN_CHILDREN, "under18": frozenset({"no"})}))
    out.append(Rule("age-over65", "a householder aged 65+ means people 65+ are present",
                    {"age": AGES_65_PLUS, "over65": frozenset({"no"})}))
    out.append(Rule("alone-under18", "a householder living alone has nobody under 18",
                    {"hh_type": ALONE, "under18": frozenset({"yes"})}))
    out.append(Rule("alone-over65", "a householder living alone and under 65 has nobody 65+",
                    {"hh_type": ALONE, "over65": frozenset({"yes"}),
                     "age": frozenset(AGES) - AGES_65_PLUS}))
    for detail in HH_DETAILS:
        if detail.endswith("_alone"):
            continue
        for u18, o65, a65 in itertools.product((True, False), repeat=3):
            need = min_size(detail, u18, o65, a65)
            if need <= 2:  # size 1 is already excluded for households not living alone
                continue
            ages = AGES_65_PLUS if a65 else frozenset(AGES) - AGES_65_PLUS
            out.append(Rule(
                f"min-size-{detail}-{'u' if u18 else ''}{'o' if o65 else ''}{'a' if a65 else ''}",
                f"a {detail} household with under18={'yes' if u18 else 'no'}, "
                f"over65={'yes' if o65 else 'no'} and householder age "
                f"{'65+' if a65 else 'under 65'} has at least {need} people",
                {"hh_type_detail": frozenset({detail}),
                 "under18": frozenset({"yes" if u18 else "no"}),
                 "over65": frozenset({"yes" if o65 else "no"}), "age": ages,
                 "size": frozenset(SIZES[:need - 1])}))
    return tuple(out)


def broken_rule(row: Mapping[str, str]) -> Rule | None:
    """The first structural rule this unit breaks, or None when it is coherent."""
    for rule in rules():
        if rule.matches(row):
            return rule
    return None


# --- unit types ---------------------------------------------------------------------------

def _codes(name: str, values: Iterable[str]) -> np.ndarray:
    col = COLUMNS[COL[name]]
    return np.array(sorted(col.code(v) for v in values), dtype=np.uint8)


def pattern_mask(types: np.ndarray, pattern: Pattern) -> np.ndarray:
    """Which rows of a type array match every condition of ``pattern``."""
    mask = np.ones(len(types), dtype=bool)
    for name, values in pattern.items():
        mask &= np.isin(types[:, COL[name]], _codes(name, values))
    return mask


@cache
def unit_types() -> np.ndarray:
    """Every coherent housing-unit type, one row of column codes each (uint8, NA = 15).

    Sorted by packed key, so ``type_index`` can find a unit by binary search.
    """
    # Rules that only involve the household-composition columns are applied to their product
    # first (21,168 rows), then crossed with tenure, Hispanic origin and race; the remaining
    # rules are applied to the result. Same set as filtering the whole product, 10x faster.
    core = ("size", "hh_type", "hh_type_detail", "under18", "over65", "age")
    core_rows = np.array(list(itertools.product(
        *(range(len(COLUMNS[COL[n]].values)) for n in core))), dtype=np.uint8)
    grid = np.zeros((len(core_rows), N_COLUMNS), dtype=np.uint8)
    grid[:, [COL[n] for n in core]] = core_rows
    inner = [r for r in rules() if set(r.pattern) <= set(core)]
    outer = [r for r in rules() if not set(r.pattern) <= set(core)]
    keep = np.ones(len(grid), dtype=bool)
    for rule in inner:
        keep &= ~pattern_mask(grid, rule.pattern)
    grid = grid[keep]
    rest = ("tenure", "hispanic", "race")
    rest_rows = np.array(list(itertools.product(
        *(range(len(COLUMNS[COL[n]].values)) for n in rest))), dtype=np.uint8)
    occ = np.repeat(grid, len(rest_rows), axis=0)
    occ[:, [COL[n] for n in rest]] = np.tile(rest_rows, (len(grid), 1))
    vac = np.full((len(VACANT_STATUSES), N_COLUMNS), NA_CODE, dtype=np.uint8)
    vac[:, COL["vacancy"]] = np.arange(1, len(VACANT_STATUSES) + 1)
    types = np.vstack([occ, vac])
    keep = np.ones(len(types), dtype=bool)
    for rule in outer:
        keep &= ~pattern_mask(types, rule.pattern)
    types = types[keep]
    order = np.argsort(pack(types), kind="stable")
    out = types[order]
    out.setflags(write=False)
    return out


def pack(types: np.ndarray) -> np.ndarray:
    """One int64 per row: four bits per column, column 0 in the lowest bits."""
    key = np.zeros(len(types), dtype=np.int64)
    for j in range(N_COLUMNS):
        key |= types[:, j].astype(np.int64) << (4 * j)
    return key


@cache
def _type_keys() -> np.ndarray:
    return pack(unit_types())


def type_index(codes: np.ndarray) -> np.ndarray:
    """Index in ``unit_types()`` of each row of codes, or -1 for an incoherent row."""
    keys = pack(np.asarray(codes, dtype=np.uint8).reshape(-1, N_COLUMNS))
    ref = _type_keys()
    pos = np.searchsorted(ref, keys).clip(0, len(ref) - 1)
    return np.where(ref[pos] == keys, pos, -1)


def decode(codes: Iterable[int]) -> dict[str, str]:
    return {c.name: (NA if int(v) == NA_CODE else c.values[int(v)])
            for c, v in zip(COLUMNS, codes, strict=True)}


# --- tables -------------------------------------------------------------------------------

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
