"""The census engine against a brute-force oracle on tiny tracts (hypothesis).

The oracle knows nothing of the engine's masks, pruning or witnesses: it evaluates the cell
definitions with DuckDB (the tabulation's SQL join) on every one of the 27,972 person types,
enumerates every multiset of persons per block that reproduces the block's published cells,
keeps the combinations that reproduce the tract's cells, and reads off what is certain.
"""

from __future__ import annotations

import itertools
from collections import Counter
from functools import cache

import duckdb
import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.census.persons.cells import (
    MEDIAN_SCALE,
    RACES,
    SEXES,
    Sf1Cell,
    attribute_grid,
    p13_cells,
    person_cells,
)
from statrecon.census.persons.release import TractTables
from statrecon.census.persons.tabulate import tabulate_cells
from statrecon.engines.census import CellMatrices, reconstruct_tract

TRACT = "01001000100"
BLOCKS = (TRACT + "1000", TRACT + "1001")
# Tiny person types: one age bin (30-34), White / Black / both, either origin, either sex.
TYPES = [(sex, age, race, hisp) for sex in SEXES for age in (30, 31, 33, 45)
         for race in (1, 2, 3) for hisp in (False, True)]


def _cells(with_p13: bool) -> tuple[Sf1Cell, ...]:
    return person_cells() + (p13_cells() if with_p13 else ())


@cache
def _mats(with_p13: bool) -> CellMatrices:
    return CellMatrices.build(_cells(with_p13))


def _persons_frame(people: list[tuple[str, tuple[str, int, int, bool]]]) -> pd.DataFrame:
    rows = []
    for block, (sex, age, race, hisp) in people:
        row = {"block": block, "tract": block[:11], "sex": sex, "age": age, "hispanic": hisp}
        row.update({r: bool((race >> i) & 1) for i, r in enumerate(RACES)})
        rows.append(row)
    return pd.DataFrame(rows)


@cache
def _tabulation_database() -> duckdb.DuckDBPyConnection:
    return duckdb.connect()  # one per process: a new database cost 13 ms an example


def _tabulate(frame: pd.DataFrame, with_p13: bool) -> pd.DataFrame:
    con = _tabulation_database()
    con.register("p", frame)
    con.execute("CREATE OR REPLACE TABLE persons AS SELECT * FROM p")
    con.unregister("p")
    return tabulate_cells(con, _cells(with_p13)).to_pandas()


def _grid_frame(rows: np.ndarray) -> pd.DataFrame:
    g = attribute_grid()
    return pd.DataFrame({
        "sex": np.array(SEXES)[g.sex[rows]], "age": g.age[rows].astype(np.int32),
        "hispanic": g.hispanic[rows].astype(bool),
        **{r: ((g.race[rows] >> i) & 1).astype(bool) for i, r in enumerate(RACES)}})


def _members(frame: pd.DataFrame, cells: list[Sf1Cell]) -> np.ndarray:
    """Membership of each row of ``frame`` in each cell, by DuckDB evaluating
    ``Sf1Cell.sql()``."""
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE grid AS SELECT * FROM frame")  # planned 4x faster than a view
    columns = []
    for lo in range(0, len(cells), 50):
        sql = ", ".join(f"({c.sql()}) AS c{i}" for i, c in enumerate(cells[lo:lo + 50]))
        columns.append(con.execute(f"SELECT {sql} FROM grid").fetchnumpy())
    return np.column_stack([v for part in columns for v in part.values()]).astype(bool)


@cache
def _membership() -> dict[str, np.ndarray]:
    """Membership in every block cell of every one of the 27,972 grid types; in every tract
    cell, of the types a block of these examples can hold (``rows``, the grid indices).

    Those are the types in no count cell that is zero for a block holding one person of
    every TYPE: counts only grow with persons, so such a cell is zero in every example's
    blocks too, and the oracle allows no type outside them (``_oracle`` asserts it). The
    3,296 tract cells over the whole grid took DuckDB 3-5 s on one core; over these 120 rows
    about 1.5 s, most of it planning."""
    grid = np.arange(len(attribute_grid().age))
    block_cells = [c for c in _cells(True) if c.level == "block"]
    block = _members(_grid_frame(grid), block_cells)
    everyone = _tabulate(_persons_frame([(BLOCKS[0], t) for t in TYPES]), False)
    values = everyone[everyone.level == "block"]["value"].to_numpy()
    counted = len(values)  # the person cells: every one a count
    rows = np.flatnonzero(~block[:, :counted][:, values == 0].any(axis=1))
    tract = _members(_grid_frame(rows), [c for c in _cells(True) if c.level == "tract"])
    return {"block": block, "tract": tract, "rows": rows}


def _median_x10(ages: np.ndarray) -> int:
    """SF1's P13 value: the median age with one implied decimal, 0 for an empty group."""
    return round(MEDIAN_SCALE * float(np.median(ages))) if len(ages) else 0


def _oracle(tables: TractTables, with_p13: bool) -> list[tuple[Counter[int], ...]]:
    member = _membership()
    block_cells = [c for c in _cells(with_p13) if c.level == "block"]
    count = np.array([not c.is_median for c in block_cells])
    medians = np.flatnonzero(~count)
    block_member = member["block"][:, : len(block_cells)]
    ages = attribute_grid().age
    datasets_per_block = []
    for b in range(len(tables.blocks)):
        values = tables.block_values[b]
        allowed = np.flatnonzero(~(block_member[:, (values == 0) & count]).any(axis=1))
        n = int(values[0])
        found = []
        for combo in itertools.combinations_with_replacement(allowed.tolist(), n):
            hits = block_member[list(combo)]
            if not (hits.sum(axis=0)[count] == values[count]).all():
                continue
            if all(_median_x10(ages[np.array(combo)][hits[:, k]]) == values[k]
                   for k in medians):
                found.append(combo)
        datasets_per_block.append(found)
    position = np.full(len(ages), -1)
    position[member["rows"]] = np.arange(len(member["rows"]))
    out = []
    for choice in itertools.product(*datasets_per_block):
        everyone = position[[t for combo in choice for t in combo]]
        assert (everyone >= 0).all(), "a type outside the rows the tract cells were read for"
        if (member["tract"][everyone].sum(axis=0) == tables.tract_values).all():
            out.append(tuple(Counter(combo) for combo in choice))
    return out


people_strategy = st.lists(st.sampled_from(range(len(TYPES))), min_size=1, max_size=2)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=people_strategy, second=people_strategy, with_p13=st.booleans())
def test_certification_equals_brute_force(first: list[int], second: list[int],
                                          with_p13: bool) -> None:
    """With and without P13 (median age by sex), a non-linear statistic."""
    people = [(BLOCKS[0], TYPES[i]) for i in first] + [(BLOCKS[1], TYPES[i]) for i in second]
    long = _tabulate(_persons_frame(people), with_p13)
    blocks = long[long.level == "block"]
    tables = TractTables(
        TRACT, BLOCKS,
        blocks["value"].to_numpy().reshape(2, -1).astype(np.int64),
        long[long.level == "tract"]["value"].to_numpy().astype(np.int64))
    result = reconstruct_tract(tables, _mats(with_p13))
    assert result.status == "ok"
    datasets = _oracle(tables, with_p13)
    assert datasets, "the truth itself is consistent"
    mats = _mats(with_p13)
    for b, block in enumerate(result.blocks):
        seen = [d[b] for d in datasets]
        mine = Counter(block.records.tolist())
        assert mine in seen  # the reconstruction is a consistent dataset
        assert block.unique == all(s == seen[0] for s in seen)
        certain = Counter(seen[0])  # a copy: &= works in place
        for s in seen[1:]:
            certain &= s
        assert Counter(block.certain.tolist()) == certain
        binned = [Counter(mats.binned(np.array(list(s.elements()))).tolist()) for s in seen]
        assert block.unique_binned == all(s == binned[0] for s in binned)
        least = Counter(binned[0])
        for s in binned[1:]:
            least &= s
        assert block.certain_binned == sum(least.values())


def test_solver_conflict_names_the_contradicting_cells() -> None:
    """P1 raised to 3 for a two-person block while every other cell still says two: no cell
    is empty of candidates, so CP-SAT (assumptions, then deletion) must name the conflict."""
    people = [(BLOCKS[0], TYPES[0]), (BLOCKS[0], TYPES[1]), (BLOCKS[1], TYPES[2])]
    long = _tabulate(_persons_frame(people), False)
    blocks = long[long.level == "block"]
    values = blocks["value"].to_numpy().reshape(2, -1).astype(np.int64)
    values[0, 0] = 3  # P1
    tables = TractTables(TRACT, BLOCKS, values,
                         long[long.level == "tract"]["value"].to_numpy().astype(np.int64))
    result = reconstruct_tract(tables, _mats(False))
    assert result.status == "infeasible" and not result.blocks
    named = [c for c in result.conflict if "=" in c]
    assert f"{BLOCKS[0]} P1:P0010001 = 3" in named
    assert 2 <= len(named) <= 6  # P1 and a few cells that say two
