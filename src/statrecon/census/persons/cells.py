"""The 2010 SF1 person tables, read from the Bureau's own cell file (not hand-typed lists).

Every cell of P1, P6–P12, P12A–I, P14 (block level) and PCT12, PCT12A–O (tract level) is a
conjunction over the person schema: race flags (``Y``/``N``/any), "two or more races" (yes/no/
any), Hispanic (yes/no/any), sex (any or one) and an age range. That is all the reconstruction
needs: a cell is a SQL predicate for DuckDB (tabulation) and a 0/1 mask over the attribute grid
(the reconstruction's variables).

The attribute grid: sex (2) x single-year age 0–110 (111) x race combination (63 non-empty
subsets of the six races) x Hispanic (2) = 27,972 attribute cells.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources

import numpy as np
import scipy.sparse as sp

from statrecon.census.descriptors import descriptors
from statrecon.errors import StatreconError

RACES = ("white", "black", "aian", "asian", "nhopi", "sor")
SEXES = ("male", "female")
MAX_AGE = 110
N_AGES = MAX_AGE + 1
N_RACES = 63  # non-empty subsets of the six races, encoded as bit masks 1..63
GRID_SIZE = len(SEXES) * N_AGES * N_RACES * 2
LEVELS = ("block", "tract")
CELL_FILE = "sf1_vars_race_binaries.csv"


@dataclass(frozen=True)
class Sf1Cell:
    """One published cell: the persons it counts, as a conjunction of attribute conditions."""

    table: str
    cell: str
    level: str  # "block" or "tract"
    title: str
    race: tuple[bool | None, ...]  # one entry per RACES: True (has it), False (not), None (any)
    two_or_more: bool | None  # True: two or more races; False: exactly one; None: any
    hispanic: bool | None
    sex: str | None  # "male", "female" or None (both)
    age_lo: int
    age_hi: int
    statistic: str = "count"  # "count", or "median" (of age; value x 10, one implied decimal)

    @property
    def is_median(self) -> bool:
        return self.statistic == "median"

    @property
    def is_total(self) -> bool:
        """Counts every person (P1): no condition on any attribute."""
        return (not self.is_median and all(r is None for r in self.race)
                and self.two_or_more is None and self.hispanic is None and self.sex is None
                and self.age_lo == 0 and self.age_hi >= MAX_AGE)

    def sql(self) -> str:
        """The cell as a DuckDB predicate over the person columns (flags are booleans)."""
        parts: list[str] = []
        for name, flag in zip(RACES, self.race, strict=True):
            if flag is not None:
                parts.append(name if flag else f"NOT {name}")
        if self.two_or_more is not None:
            n_races = " + ".join(f"{r}::INT" for r in RACES)
            parts.append(f"({n_races}) {'>=' if self.two_or_more else '='} "
                         f"{2 if self.two_or_more else 1}")
        if self.hispanic is not None:
            parts.append("hispanic" if self.hispanic else "NOT hispanic")
        if self.sex is not None:
            parts.append(f"sex = '{self.sex}'")
        if (self.age_lo, self.age_hi) != (0, MAX_AGE):
            parts.append(f"age BETWEEN {self.age_lo} AND {self.age_hi}")
        return " AND ".join(parts) if parts else "TRUE"

    def members(self) -> np.ndarray:
        """Indices of the attribute cells this cell counts (cached: masks are rebuilt often)."""
        return _members(self)

    def mask(self) -> np.ndarray:
        """Which of the GRID_SIZE attribute cells this cell counts (bool vector)."""
        flags = _grid_flags()
        age = attribute_grid().age
        keep = (age >= self.age_lo) & (age <= self.age_hi)
        for (yes, no), flag in zip(flags.race, self.race, strict=True):
            if flag is not None:
                keep &= yes if flag else no
        if self.two_or_more is not None:
            keep &= flags.two_or_more[0 if self.two_or_more else 1]
        if self.hispanic is not None:
            keep &= flags.hispanic[0 if self.hispanic else 1]
        if self.sex is not None:
            keep &= flags.sex[SEXES.index(self.sex)]
        return keep


@functools.lru_cache(maxsize=16384)
def _members(cell: Sf1Cell) -> np.ndarray:
    return np.flatnonzero(cell.mask()).astype(np.int32)


def mask_matrix(cells: list[Sf1Cell] | tuple[Sf1Cell, ...]) -> sp.csr_matrix:
    """Cells x GRID_SIZE 0/1 matrix of the cells' members (int32: products count overlaps of
    up to 27,972 types, which int8 would overflow)."""
    parts = [c.members() for c in cells]
    indptr = np.cumsum([0] + [len(p) for p in parts])
    indices = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return sp.csr_matrix((np.ones(len(indices), dtype=np.int32), indices, indptr),
                         shape=(len(parts), GRID_SIZE))


@dataclass(frozen=True)
class AttributeGrid:
    """Column vectors describing each attribute cell index (see module docstring)."""

    sex: np.ndarray
    age: np.ndarray
    race: np.ndarray  # bit mask 1..63, bit i = RACES[i]
    hispanic: np.ndarray
    n_races: np.ndarray


@cache
def attribute_grid() -> AttributeGrid:
    """Index layout: ((sex * N_AGES + age) * 63 + (race - 1)) * 2 + hispanic."""
    idx = np.arange(GRID_SIZE)
    hispanic = idx % 2
    race = (idx // 2) % N_RACES + 1
    age = (idx // (2 * N_RACES)) % N_AGES
    sex = idx // (2 * N_RACES * N_AGES)
    n_races = np.zeros(GRID_SIZE, dtype=np.int64)
    for bit in range(len(RACES)):
        n_races += (race >> bit) & 1
    return AttributeGrid(sex=sex, age=age, race=race, hispanic=hispanic, n_races=n_races)


@dataclass(frozen=True)
class _GridFlags:
    """The attribute cells' conditions as bool vectors, each computed once ((yes, no) pairs):
    a mask is their conjunction, 3.5 times faster than deriving them per cell."""

    race: tuple[tuple[np.ndarray, np.ndarray], ...]  # per race bit
    two_or_more: tuple[np.ndarray, np.ndarray]
    hispanic: tuple[np.ndarray, np.ndarray]
    sex: tuple[np.ndarray, ...]  # per code of SEXES


@cache
def _grid_flags() -> _GridFlags:
    grid = attribute_grid()

    def both(yes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return yes, ~yes

    return _GridFlags(
        race=tuple(both(((grid.race >> bit) & 1).astype(bool)) for bit in range(len(RACES))),
        two_or_more=both(grid.n_races >= 2), hispanic=both(grid.hispanic.astype(bool)),
        sex=tuple(grid.sex == code for code in range(len(SEXES))))


def grid_index(sex: np.ndarray, age: np.ndarray, race: np.ndarray,
               hispanic: np.ndarray) -> np.ndarray:
    """Attribute cell index of persons given as sex code, age, race bit mask, Hispanic 0/1."""
    return ((sex * N_AGES + age) * N_RACES + (race - 1)) * 2 + hispanic


def _flag(value: str, *, cell: str, column: str) -> bool | None:
    value = value.strip()
    if value in ("missing", ""):
        return None
    if value in ("Y", "hispanic", "two"):
        return True
    if value == "N":
        return False
    raise ValueError(f"{CELL_FILE}: cell {cell}: unexpected {column} value {value!r}")


def parse_cells(text: str) -> tuple[Sf1Cell, ...]:
    """Parse the Bureau's cell file (columns as in ``recon/layouts/sf1_vars_race_binaries``)."""
    cells: list[Sf1Cell] = []
    for row in csv.DictReader(io.StringIO(text)):
        cell = row["cell_number"]
        if row["median_age"].strip() not in ("missing", ""):
            continue  # P13 medians are not counts; see census.p13
        sex = row["sex"].strip()
        cells.append(Sf1Cell(
            table=row["table_number"].strip(),
            cell=cell,
            level=row["level"].strip(),
            title=row["title"].strip(),
            race=tuple(_flag(row[r], cell=cell, column=r) for r in RACES),
            two_or_more=_flag(row["two"], cell=cell, column="two"),
            hispanic=_flag(row["hispanic"], cell=cell, column="hispanic"),
            sex=None if sex in ("missing", "") else sex,
            age_lo=int(row["start_age"]),
            age_hi=int(row["end_age"]),
        ))
    return tuple(cells)


@cache
def person_cells() -> tuple[Sf1Cell, ...]:
    """Every SF1 person-table cell the package ships (block and tract level)."""
    text = resources.files("statrecon").joinpath("data", CELL_FILE).read_text("utf-8")
    return parse_cells(text)


TABLE_SETS = {"sf1-persons": None}  # None = every table in the cell file


MEDIAN_SCALE = 10  # SF1 medians have one implied decimal: 34.5 is stored as 345


@cache
def p13_cells() -> tuple[Sf1Cell, ...]:
    """P13 (median age by sex, block level), read from the SF1 data field descriptors."""
    sexes = {"Both sexes": None, "Male": "male", "Female": "female"}
    return tuple(Sf1Cell(table="P13", cell=d.code, level="block", title=f"Median age: {d.name}",
                         race=(None,) * len(RACES), two_or_more=None, hispanic=None,
                         sex=sexes[d.name], age_lo=0, age_hi=MAX_AGE, statistic="median")
                 for d in descriptors() if d.table == "P13" and d.code)


def select_cells(tables: str = "sf1-persons", *, with_p13: bool = False
                 ) -> tuple[Sf1Cell, ...]:
    """Cells of a named table set, or of a comma-separated list of table names."""
    cells = person_cells()
    extra = p13_cells() if with_p13 else ()
    if tables in TABLE_SETS:
        return cells + extra
    wanted = [t.strip().upper() for t in tables.split(",") if t.strip()]
    known = {c.table for c in cells}
    unknown = [t for t in wanted if t not in known]
    if not wanted or unknown:
        raise StatreconError(
            f"--tables {tables!r}: unknown table(s) {', '.join(unknown) or '(none given)'}; "
            f"use sf1-persons or names among {', '.join(sorted(known))}")
    return tuple(c for c in cells if c.table in wanted) + extra


def definitions_json(cells: tuple[Sf1Cell, ...]) -> list[dict[str, object]]:
    """The cells' fields as release and reconstruction files store them (JSON): what
    ``dataclasses.asdict`` gives, without its recursive copy of every value (the fields are
    flat: 6 ms for the 4,071 SF1 person cells instead of 70)."""
    names = _FIELD_NAMES
    return [{name: getattr(c, name) for name in names} for c in cells]


_FIELD_NAMES = tuple(f.name for f in fields(Sf1Cell))


@functools.lru_cache(maxsize=8)
def definitions_digest(cells: tuple[Sf1Cell, ...]) -> str:
    """A short fingerprint of a cell set, stored with releases and reconstructions (worked
    out once per process for each set: 4 ms for the 4,071 SF1 person cells)."""
    h = hashlib.sha256()
    for c in cells:
        h.update(repr(c).encode())
    return h.hexdigest()[:16]
