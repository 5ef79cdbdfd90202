"""Census persons, the domain: SF1 cells and their masks, tabulation, the persons file and the
release file's checks.

The bundled slice (examples/census/persons_3tracts.csv: three real tracts, 920 persons, 217
blocks of the Bureau's file) keeps these tests fast; the whole file is for `make bench`.
Reconstruction, comparison, resumability and Dask, run end to end through the CLI, are in
tests/pipelines/test_census_pipeline.py.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import (
    ROOT,
    SLICE,
    CensusSlice,
    assert_user_error,
    edit_release,
    slice_persons,
    statrecon,
)

from statrecon.census.persons.cells import (
    CELL_FILE,
    RACES,
    SEXES,
    definitions_json,
    grid_index,
    p13_cells,
    person_cells,
    select_cells,
)
from statrecon.census.persons.microdata import load_persons
from statrecon.census.persons.release import cells_from_json

# ------------------------------------------------------------------ cells and tabulation


def test_tables_come_from_the_cell_file() -> None:
    with (ROOT / "src" / "statrecon" / "data" / CELL_FILE).open() as f:
        rows = list(csv.DictReader(f))
    per_table = Counter(r["table_number"] for r in rows)
    cells = person_cells()
    assert Counter(c.table for c in cells) == per_table
    expected = {"P1", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "P14", "PCT12",
                *(f"P12{x}" for x in "ABCDEFGHI"), *(f"PCT12{x}" for x in "ABCDEFGHIJKLMNO")}
    assert set(per_table) == expected
    assert {c.level for c in cells if c.table.startswith("PCT")} == {"tract"}
    assert [c.cell for c in select_cells("P1,p12")] == [
        r["cell_number"] for r in rows if r["table_number"] in ("P1", "P12")]


def test_the_stored_definitions_are_the_cells_fields_and_read_back() -> None:
    """What release and reconstruction files store for their cells: every field as
    ``asdict`` gives it, read back to the same cells."""
    from dataclasses import asdict

    cells = person_cells() + p13_cells()
    stored = definitions_json(cells)
    assert stored == [asdict(c) for c in cells]
    assert cells_from_json(json.loads(json.dumps(stored))) == cells


def test_sql_predicates_and_masks_agree_on_random_persons() -> None:
    """Two encodings of every cell (DuckDB SQL for tabulation, numpy masks for the solver)."""
    rng = np.random.default_rng(7)
    n = 3000
    flags = rng.random((n, 6)) < 0.3
    flags[~flags.any(axis=1), 0] = True
    frame = pd.DataFrame(flags, columns=list(RACES))
    frame["sex"] = rng.choice(SEXES, n)
    frame["age"] = rng.integers(0, 111, n)
    frame["hispanic"] = rng.random(n) < 0.3
    race = sum(flags[:, i].astype(np.int64) << i for i in range(6))
    idx = grid_index((frame["sex"] == "female").to_numpy().astype(np.int64),
                     frame["age"].to_numpy(), race, frame["hispanic"].to_numpy().astype(int))
    con = duckdb.connect()
    con.register("p", frame)
    for cell in person_cells()[::7]:
        by_sql = con.sql(f"SELECT ({cell.sql()}) AS hit FROM p").df()["hit"].to_numpy(bool)
        assert (cell.mask()[idx] == by_sql).all(), cell.cell


def test_tabulation_matches_pandas_counts(census_slice: CensusSlice) -> None:
    people = slice_persons()
    rel = pq.read_table(census_slice.release).to_pandas()
    value = rel.set_index(["geoid", "cell"])["value"]
    for block, group in people.groupby("block_geoid"):
        assert value[(block, "P0010001")] == len(group)
        male_22_24 = ((group.sex == "male") & group.age.between(22, 24)).sum()
        assert value[(block, "P0120010")] == male_22_24
        white_black_only = ((group.white == "Y") & (group.black == "Y")
                            & (group[list(RACES[2:])] == "N").all(axis=1))
        assert value[(block, "P0080011")] == white_black_only.sum()  # P8 White; Black
    for tract, group in people.groupby(people.block_geoid.str[:11]):
        hisp_f5 = ((group.hispanic == "Y") & (group.sex == "female") & (group.age == 5)).sum()
        assert value[(tract, "PCT012H112")] == hisp_f5
    levels = rel.groupby("level").geoid.nunique().to_dict()
    assert levels == {"block": people.block_geoid.nunique(), "tract": 3}
    assert len(rel) == levels["block"] * 775 + levels["tract"] * 3296


# ------------------------------------------------------------------ bad input


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("change, parts", [
    (lambda f: f.drop(columns=["hispanic"]), ["missing column", "hispanic"]),
    (lambda f: f.assign(age=f.age.where(f.index != 4, 111)), ["line 6", "age", "111"]),
    (lambda f: f.assign(age=f.age.where(f.index != 0, -1)), ["line 2", "age", "-1"]),
    (lambda f: f.assign(block_geoid=f.block_geoid.where(f.index != 2, "12345")),
     ["line 4", "block_geoid", "15 digits", "12345"]),
    (lambda f: f.assign(sex=f.sex.where(f.index != 1, "M")), ["line 3", "sex", "'M'"]),
    (lambda f: f.assign(white="N", black="N", aian="N", asian="N", nhopi="N", sor="N"),
     ["line 2", "race flag"]),
])
def test_bad_persons_files_are_named(tmp_path: Path, change, parts) -> None:  # type: ignore
    frame = change(slice_persons())
    path = _write(frame, tmp_path / "bad.csv")
    proc = statrecon("census", "tabulate", "--persons", path, "--out", tmp_path / "r.parquet")
    assert_user_error(proc, str(path), *parts)


def test_not_a_release_is_a_user_error(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1]})
    frame.to_parquet(tmp_path / "x.parquet")
    assert_user_error(statrecon("census", "reconstruct", tmp_path / "x.parquet", "--out",
                                tmp_path / "r.parquet"), "census tabulate")
    assert_user_error(statrecon("census", "reconstruct", tmp_path / "nope.parquet", "--out",
                                tmp_path / "r.parquet"), "no such file")


def test_persons_loader_counts(tmp_path: Path) -> None:
    con = duckdb.connect()
    assert load_persons(SLICE, con) == len(slice_persons())


def test_releases_of_the_same_definitions_share_them_and_each_is_checked(
        census_slice: CensusSlice, tmp_path: Path) -> None:
    """The definitions and their identities are read once per process (``read_release``):
    a second release of the same tables gets the same cells, and its own values are still
    checked against every identity (one P12 cell one too many is named); a release of other
    definitions gets its own."""
    from statrecon.census.persons.cells import definitions_digest
    from statrecon.census.persons.release import read_release
    from statrecon.errors import InconsistentReleaseError

    good = read_release(census_slice.release)
    frame = pq.read_table(census_slice.release).to_pandas()
    row = frame[(frame.level == "block") & (frame.table == "P12") & (frame.value > 0)].iloc[0]
    bad = edit_release(census_slice.release, tmp_path / "bad.parquet",
                       {(row.geoid, row.cell): int(row.value) + 1})
    with pytest.raises(InconsistentReleaseError, match=row.geoid):
        read_release(bad)
    again = read_release(census_slice.release)
    assert again.cells is good.cells and again.digest == good.digest
    fewer = tmp_path / "p1.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", fewer, "--tables",
                     "P1,P12").returncode == 0
    other = read_release(fewer)
    assert {c.table for c in other.cells} == {"P1", "P12"}
    assert definitions_digest(other.cells) != definitions_digest(good.cells)


def test_bad_release_values_are_named(census_slice: CensusSlice, tmp_path: Path) -> None:
    import pyarrow as pa

    table = pq.read_table(census_slice.release)
    frame = table.to_pandas()
    block = frame.geoid.iloc[0]
    negative = edit_release(census_slice.release, tmp_path / "neg.parquet",
                            {(block, "P0120010"): -3})
    assert_user_error(statrecon("census", "reconstruct", negative, "--out",
                                tmp_path / "r.parquet"), block, "P0120010", "-3")
    dropped = frame[~((frame.geoid == block) & (frame.cell == "P0140005"))]
    pq.write_table(pa.Table.from_pandas(dropped, preserve_index=False)
                   .replace_schema_metadata(table.schema.metadata), tmp_path / "drop.parquet")
    assert_user_error(statrecon("census", "reconstruct", tmp_path / "drop.parquet", "--out",
                                tmp_path / "r.parquet"), block, "P0140005", "missing")
