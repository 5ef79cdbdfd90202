"""Hostile claims inputs (issue 12): tables CSVs, households files and output paths.

Every bad input is one line naming the file, the line and the value (exit 1) before any work;
nothing is changed silently; the negative-claim budget gives the same answer on every run.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from pathlib import Path

import pytest
from test_claims_cli import BLOCK_A, households
from test_cli import assert_user_error, json_of, statrecon

from statrecon.census.household_blocks import MAX_BLOCK_UNITS, generate_blocks
from statrecon.census.household_release import tabulate_sql
from statrecon.commands.claims_run import read_tables
from statrecon.engines.claims import BlockRelease, ClaimsOptions, verify_block
from statrecon.errors import StatreconError


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The published tables of the two small test blocks (``claims tabulate``)."""
    d = tmp_path_factory.mktemp("tables")
    out = d / "tables.csv"
    proc = statrecon("claims", "tabulate", "--households", households(d), "--out", out)
    assert proc.returncode == 0, proc.stderr
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _write(rows: list[dict[str, str]], path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["block", "cell", "value"])
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.mark.parametrize("value, shown", [
    (str(10**30), "1000000000000000000000000000000"), ("1e30", "1e30"), ("-1", "-1"),
    ("12.5", "12.5"), ("", "''"), ("٣", "٣"), (str(MAX_BLOCK_UNITS + 1), "4,096"),
])
def test_bad_counts_are_named(tables: Path, tmp_path: Path, value: str, shown: str) -> None:
    """10**30 was an OverflowError traceback; '٣' (an Arabic-Indic 3) passed as 3."""
    rows = _rows(tables)
    rows[3]["value"] = value
    bad = _write(rows, tmp_path / "bad.csv")
    with pytest.raises(StatreconError) as e:
        read_tables(bad)
    message = str(e.value)
    for part in (str(bad), "line 5", rows[3]["cell"], shown):
        assert part in message, message


def test_huge_count_from_the_command_line(tables: Path, tmp_path: Path) -> None:
    rows = _rows(tables)
    rows[0]["value"] = str(10**30)
    bad = _write(rows, tmp_path / "bad.csv")
    assert_user_error(statrecon("claims", "verify", "--tables", bad), str(bad), "line 2",
                      "at most 4,095")


def test_a_cell_given_twice_is_refused(tables: Path, tmp_path: Path) -> None:
    """Was: the last value won without a word."""
    rows = _rows(tables)
    again = dict(rows[1], value=str(int(rows[1]["value"]) + 1))
    bad = _write([*rows[:5], again, *rows[5:]], tmp_path / "twice.csv")
    assert_user_error(statrecon("claims", "verify", "--tables", bad), str(bad), "line 7",
                      rows[1]["cell"], "first at line 3")
    same = _write([*rows[:5], rows[1], *rows[5:]], tmp_path / "same.csv")
    with pytest.raises(StatreconError, match="appears again"):
        read_tables(same)  # even with the same value: one cell, one line


def test_bad_block_ids_are_named(tables: Path, tmp_path: Path) -> None:
    rows = _rows(tables)
    rows[0]["block"] = "01003010100100١"
    bad = _write(rows, tmp_path / "bad.csv")
    with pytest.raises(StatreconError, match="line 2: block id"):
        read_tables(bad)


def test_a_block_too_big_for_the_engine_is_refused(tmp_path: Path) -> None:
    """Multiplicities are packed in 12 bits: a block of 4,096 units would corrupt claims."""
    path = households(tmp_path)
    lines = path.read_text().splitlines()
    unit = next(line for line in lines[1:] if line.startswith(BLOCK_A))
    path.write_text("\n".join([*lines, *[unit] * MAX_BLOCK_UNITS]) + "\n")
    assert_user_error(statrecon("claims", "tabulate", "--households", path, "--out",
                                tmp_path / "t.csv"), str(path), BLOCK_A, "4,098", "4,095",
                      f"line {MAX_BLOCK_UNITS + 4}")  # its 4,096th unit


def test_unwritable_outputs_fail_before_any_work(tmp_path: Path) -> None:
    """tabulate, block-release and experiment were tracebacks after the work was done."""
    path = households(tmp_path)
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    out = blocker / "out.csv"
    assert_user_error(statrecon("claims", "tabulate", "--households", path, "--out", out),
                      str(out))
    assert_user_error(statrecon("claims", "block-release", "--households", path, "--block",
                                BLOCK_A, "--out", out), str(out))
    t0 = time.monotonic()
    assert_user_error(statrecon("claims", "experiment", "--out", blocker, "--blocks", "1"),
                      str(blocker), "not a folder")
    assert time.monotonic() - t0 < 30
    assert blocker.read_text() == "not a folder"


def test_generate_blocks_writes_both_files_or_neither(tmp_path: Path) -> None:
    """Was: the targets file written, then a traceback on the population file."""
    out, population = tmp_path / "blocks.csv", tmp_path / "population"
    population.mkdir()  # cannot be replaced by a file
    assert_user_error(statrecon("claims", "generate-blocks", "--blocks", "2", "--out", out,
                                "--population-out", population), str(population))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["population"]  # no partial output
    ok = statrecon("claims", "generate-blocks", "--blocks", "2", "--out", out)
    assert ok.returncode == 0, ok.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "blocks.csv", "blocks_population.csv", "population"]


def test_negative_budget_is_deterministic() -> None:
    """The budget for 'at least one' questions counts solver work, not wall seconds: a block
    where it binds (some questions left open) gives the same claims on every run, so the
    output cannot depend on how loaded the machine is."""
    assert "negative_time_limit" not in {f.name for f in dataclasses.fields(ClaimsOptions)}
    block = "010039270001018"  # 11 units: the budget below settles some questions, not all
    values = tabulate_sql(generate_blocks(6, 0).targets)[block]
    options = ClaimsOptions(negative_work_limit=0.1)
    runs = [verify_block(BlockRelease(block, values), options) for _ in range(2)]
    first, second = runs
    assert first.status == "ok"
    assert first.negative_undecided > 0  # the budget binds
    assert [str(c) for c in first.negative] == [str(c) for c in second.negative]
    assert first.negative_undecided == second.negative_undecided
    assert [str(c) for c in first.verified] == [str(c) for c in second.verified]
    unlimited = verify_block(BlockRelease(block, values),
                             dataclasses.replace(options, negative_work_limit=None))
    assert unlimited.negative_undecided == 0
    assert {str(c) for c in first.negative} < {str(c) for c in unlimited.negative}


def test_open_negative_questions_are_reported(tmp_path: Path) -> None:
    """How many 'at least one' questions the budget left open: in the JSON and the table."""
    path = households(tmp_path)
    data = json_of(statrecon("claims", "verify", "--households", path, "--k", "20", "--json"))
    assert all(b["negative_undecided"] == 0 for b in data["blocks"])
    proc = statrecon("claims", "verify", "--households", path, "--k", "20")
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout[:proc.stdout.index("┡")].splitlines()[-2:]  # two-line column titles
    titles = [" ".join(parts) for parts in zip(*(line.split("┃")[1:-1] for line in header),
                                               strict=True)]
    assert "negative open" in [" ".join(t.split()) for t in titles]
    assert BLOCK_A in proc.stdout  # block ids printed whole
