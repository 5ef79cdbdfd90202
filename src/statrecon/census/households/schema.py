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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np

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


@dataclass(frozen=True)
class Claim:
    """R(a, m): exactly ``multiplicity`` units match ``values`` on ``columns``."""

    columns: tuple[int, ...]  # sorted column indices into COLUMNS
    values: tuple[int, ...]  # codes, one per column
    multiplicity: int

    @property
    def k(self) -> int:
        return len(self.columns)

    def assignment(self) -> dict[str, str]:
        return {COLUMNS[c].name: COLUMNS[c].values[v]
                for c, v in zip(self.columns, self.values, strict=True)}

    def matches(self, types: np.ndarray) -> np.ndarray:
        """Which rows of a type-code array match the assignment."""
        mask = np.ones(len(types), dtype=bool)
        for c, v in zip(self.columns, self.values, strict=True):
            mask &= types[:, c] == v
        return mask
