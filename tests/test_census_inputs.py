"""Hostile census inputs (issue 12): every bad release, persons file or output path is one
line naming the file and the value, exit 1, before any solving; nothing is changed silently.

Small synthetic persons files keep each CLI run to a second or two.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import assert_user_error, json_of, statrecon

from statrecon.census.compare import compare
from statrecon.census.release import MAX_VALUE, METADATA_KEY
from statrecon.engines.census import MAX_TRACT_VARIABLES
from statrecon.errors import StatreconError
from statrecon.outputs import atomic_outputs, check_writable

TRACT_A, TRACT_B = "99001000001", "99001000002"
PERSON = {"sex": "female", "age": "34", "white": "Y", "black": "N", "aian": "N", "asian": "N",
          "nhopi": "N", "sor": "N", "hispanic": "N"}


def _persons(path: Path, blocks: list[str], per_block: int = 2) -> Path:
    """A persons CSV: ``per_block`` persons of different ages in each block."""
    rows = [{"block_geoid": b, **PERSON, "age": str(20 + 7 * i),
             "sex": ("female", "male")[i % 2]}
            for b in blocks for i in range(per_block)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A P1+P12 release of two blocks in one tract; its name needs quoting in SQL."""
    d = tmp_path_factory.mktemp("inputs")
    persons = _persons(d / "p.csv", [TRACT_A + "1000", TRACT_A + "1001"])
    out = d / "it's a release.parquet"
    proc = statrecon("census", "tabulate", "--persons", persons, "--out", out, "--tables",
                     "P1,P12")
    assert proc.returncode == 0, proc.stderr
    return out


def _with_value(release: Path, out: Path, value: object, kind: pa.DataType) -> Path:
    """The release with its first P1 value replaced (the value column cast to ``kind``)."""
    table = pq.read_table(release)
    values = table["value"].to_pylist()
    first = table["cell"].to_pylist().index("P0010001")
    values[first] = value
    column = pa.array([v if i == first else kind.to_pandas_dtype()(v)
                       for i, v in enumerate(values)], kind)
    edited = table.set_column(table.schema.get_field_index("value"), "value", column)
    pq.write_table(edited.replace_schema_metadata(table.schema.metadata), out)
    return out


@pytest.mark.parametrize("value, kind, shown", [
    (float("inf"), pa.float64(), "inf"),
    (1e30, pa.float64(), "1e+30"),
    (10**9, pa.int64(), "1000000000"),
    (12.5, pa.float64(), "12.5"),
])
def test_release_values_beyond_a_block_are_one_line(release: Path, tmp_path: Path,
                                                    value: object, kind: pa.DataType,
                                                    shown: str) -> None:
    """inf and 1e30 were DuckDB cast tracebacks, 10**9 a 7 GiB MemoryError."""
    bad = _with_value(release, tmp_path / "bad.parquet", value, kind)
    t0 = time.monotonic()
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet",
                     "--workers", "1")
    line = assert_user_error(proc, str(bad), TRACT_A + "1000", "P0010001", shown)
    assert time.monotonic() - t0 < 30
    if value != 12.5 and value != float("inf"):
        assert f"{MAX_VALUE['block']:,}" in line
    assert not (tmp_path / "r.parquet").exists()
    assert not (tmp_path / "r.parquet.parts").exists()


def test_release_path_is_bound_not_spliced(release: Path, tmp_path: Path) -> None:
    """A file name with a quote reads (the path is a parameter, not SQL text)."""
    proc = statrecon("census", "reconstruct", release, "--out", tmp_path / "r.parquet",
                     "--workers", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json_of(proc)["persons"] == 4


def test_tampered_cell_definitions_are_refused(release: Path, tmp_path: Path) -> None:
    """Definitions come from the file's metadata: a condition smuggling SQL is refused."""
    table = pq.read_table(release)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["cells"][0]["sex"] = "female' OR 1=1 --"
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)}), bad)
    assert_user_error(statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet"),
                      str(bad), "cell definitions", "sex")


def test_a_model_too_big_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """P1 alone prunes nothing: 8 blocks would be 8 x 27,972 CP-SAT variables (gigabytes).
    The estimate refuses it at once instead."""
    persons = _persons(tmp_path / "p.csv", [f"{TRACT_A}{1000 + i}" for i in range(8)], 1)
    rel = tmp_path / "p1.parquet"
    assert statrecon("census", "tabulate", "--persons", persons, "--out", rel, "--tables",
                     "P1").returncode == 0
    t0 = time.monotonic()
    proc = statrecon("census", "reconstruct", rel, "--out", tmp_path / "r.parquet")
    assert_user_error(proc, str(rel), f"tract {TRACT_A}", "223,776 variables",
                      f"{MAX_TRACT_VARIABLES:,}")
    assert time.monotonic() - t0 < 30


def test_unwritable_out_fails_before_any_tract_is_solved(release: Path, tmp_path: Path) -> None:
    """Was: the first tract solved, then a traceback when its part could not be written."""
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    out = blocker / "r.parquet"
    assert_user_error(statrecon("census", "reconstruct", release, "--out", out), str(out))
    assert_user_error(statrecon("census", "tabulate", "--persons",
                                _persons(tmp_path / "p.csv", [TRACT_A + "1000"]), "--out", out),
                      str(out))
    assert_user_error(statrecon("census", "block-release", release, "--block",
                                TRACT_A + "1000", "--out", tmp_path), str(tmp_path), "folder")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_refused_before_work(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(StatreconError, match="cannot write there"):
            check_writable(folder / "r.parquet", "--out")
    finally:
        folder.chmod(0o700)


def test_check_writable_and_atomic_outputs_leave_nothing_behind(tmp_path: Path) -> None:
    check_writable(tmp_path / "out.csv", "--out")
    assert list(tmp_path.iterdir()) == []
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    with pytest.raises(StatreconError, match=r"b\.csv: disk full"), \
            atomic_outputs(first, second) as (tmp_a, tmp_b):
        tmp_a.write_text("written")
        raise StatreconError(f"{tmp_b}: disk full")  # the message names the final file
    assert list(tmp_path.iterdir()) == []  # neither output, no temporaries
    with atomic_outputs(first, second) as (tmp_a, tmp_b):
        tmp_a.write_text("a")
        tmp_b.write_text("b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv"]


def test_fractional_age_is_refused_not_rounded(tmp_path: Path) -> None:
    """TRY_CAST turned age 12.5 into 13 without a word."""
    persons = _persons(tmp_path / "p.csv", [TRACT_A + "1000"])
    text = persons.read_text().splitlines()
    text[2] = text[2].replace(",27,", ",12.5,")
    persons.write_text("\n".join(text) + "\n")
    assert_user_error(statrecon("census", "tabulate", "--persons", persons, "--out",
                                tmp_path / "r.parquet"), str(persons), "line 3", "age",
                      "'12.5'")
    assert not (tmp_path / "r.parquet").exists()


@pytest.fixture(scope="module")
def one_tract(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Truth over two tracts (3 blocks); a reconstruction of tract A only."""
    d = tmp_path_factory.mktemp("compare")
    truth = _persons(d / "truth.csv", [TRACT_A + "1000", TRACT_B + "1000", TRACT_B + "1001"])
    only_a = _persons(d / "a.csv", [TRACT_A + "1000"])
    rel, recon = d / "a.parquet", d / "recon.parquet"
    assert statrecon("census", "tabulate", "--persons", only_a, "--out", rel).returncode == 0
    proc = statrecon("census", "reconstruct", rel, "--out", recon, "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    return {"truth": truth, "recon": recon}


def test_compare_scores_the_common_tracts_and_counts_the_rest(one_tract: dict[str, Path]
                                                              ) -> None:
    """Was: tract B's persons counted as unmatched (a match rate of a third, not 1)."""
    result = compare(one_tract["truth"], one_tract["recon"])
    assert result["persons"] == 2 and result["tracts"] == 1 and result["blocks"] == 1
    assert result["exact_match_rate"] == 1.0
    assert (result["truth_blocks_left_out"], result["truth_tracts_left_out"],
            result["truth_persons_left_out"]) == (2, 1, 4)
    human = statrecon("census", "compare", "--truth", one_tract["truth"], "--recon",
                      one_tract["recon"])
    assert human.returncode == 0, human.stderr
    assert "Left out: 2 blocks (4 persons) in 1 tracts" in " ".join(human.stdout.split())


def test_compare_strict_refuses_a_wider_truth(one_tract: dict[str, Path]) -> None:
    proc = statrecon("census", "compare", "--truth", one_tract["truth"], "--recon",
                     one_tract["recon"], "--strict", "--json")
    assert_user_error(proc, str(one_tract["truth"]), "2 blocks in 1 tracts", TRACT_B, "--strict")
    assert proc.stdout == ""
