"""benchmarks/bench_protect_scale.py's data (issue 28's scale run) on a small grid: the tau-Argus
job it writes (fixed-width microdata, .rda with .hrc hierarchies, two tables) reads back, through
statrecon's job reader, as the same cells with the same values and frequencies as the tables it
tabulates directly, and the library run proves every primary cell (the script cannot rot)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_protect_scale
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return bench_protect_scale


def test_the_job_it_writes_reads_back_as_its_tables(bench, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from statrecon.runs.job import open_job
    from statrecon.tables.job import read_job

    micro = bench.microdata(2000, 1, regions=1)
    direct = bench.tables(micro)
    _, read = open_job(read_job(bench.write_job(micro, tmp_path)))
    assert len(read) == 2
    for mine, job in zip(direct.tables, read, strict=True):
        theirs = job.table
        assert theirs.variables == mine.variables
        want = {c.codes: (c.value, c.frequency) for c in mine.cells}
        got = {c.codes: (c.value, c.frequency) for c in theirs.cells}
        assert got == want
        assert max(c.frequency for c in mine.cells) == 2000  # the grand total


def test_the_library_run_proves_every_primary_cell(bench) -> None:  # type: ignore[no-untyped-def]
    got = bench.run_statrecon(bench.tables(bench.microdata(60_000, 1, regions=1)), 60.0,
                              quiet=True)
    assert got["status"] == "feasible" and got["all_protected"]
    assert got["primary"] > 100 and got["verdicts"] == {"protected": got["primary"]}
