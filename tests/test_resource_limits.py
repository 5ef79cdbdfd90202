"""Bounded resources: hostile releases get a clear error or an honest answer within seconds
and a few hundred MiB, measured on the real CLI in a process of its own.

Each run goes through a small wrapper process whose only child is the CLI, so
``RUSAGE_CHILDREN`` there is the CLI's own peak RSS; the wrapper also kills the CLI past a
memory cap or a wall-clock limit, so a regression fails the test instead of swapping the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_cli import COMMAND, EXAMPLES, ROOT, assert_user_error, json_of, statrecon

from statrecon.engines.exact import ExactOptions, reconstruct_exact
from statrecon.engines.record_model import DEFAULT_MAX_MODEL_SIZE, model_size
from statrecon.errors import StatreconError
from statrecon.release.files import load_release
from statrecon.release.known import compile_known

CAP_MIB = 1024  # the wrapper kills the CLI above this
PEAK_MIB = 600  # what a bounded run may use (interpreter, DuckDB, OR-tools included)
WALL_S = 60  # the wrapper kills the CLI after this

_WRAPPER = """
import json, os, resource, subprocess, sys, time
cap_kib, limit_s, report, *cmd = sys.argv[1:]
start = time.monotonic()
child = subprocess.Popen(cmd)
killed = None
while child.poll() is None:
    try:
        with open(f"/proc/{child.pid}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    except (OSError, StopIteration):
        rss = 0
    if rss > int(cap_kib):
        killed = "memory"
    elif time.monotonic() - start > float(limit_s):
        killed = "time"
    if killed:
        child.kill()
        child.wait()
        break
    time.sleep(0.01)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(report, "w") as f:
    json.dump({"peak_kib": peak, "wall_s": time.monotonic() - start, "killed": killed,
               "returncode": child.returncode}, f)
"""


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    peak_mib: float
    wall_s: float
    killed: str | None


def run_measured(tmp: Path, *args: str | Path) -> Measured:
    report = tmp / "usage.json"
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, str(CAP_MIB * 1024), str(WALL_S),
                           str(report), *COMMAND, *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=WALL_S + 30, check=False)
    usage: dict[str, Any] = json.loads(report.read_text())
    return Measured(usage["returncode"], proc.stdout, proc.stderr, usage["peak_kib"] / 1024,
                    usage["wall_s"], usage["killed"])


def assert_bounded(m: Measured) -> None:
    assert m.killed is None, f"killed for {m.killed}: {m.stderr[-500:]}"
    assert m.peak_mib < PEAK_MIB, f"peak RSS {m.peak_mib:.0f} MiB"


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "release.yaml"
    path.write_text(text)
    return path


HUGE_COUNT = """\
version: 1
table: t
columns:
  x: {type: integer, min: 0, max: 10}
statistics:
  - {id: n, sql: "SELECT COUNT(*) FROM t", value: 1e30}
"""

WIDE_DOMAIN = """\
version: 1
table: t
records: 3
columns:
  x: {type: integer, min: 0, max: 1000000000}
statistics:
  - {id: s, sql: "SELECT SUM(x) FROM t", value: 1000}
"""


def test_huge_count_is_refused_before_building(tmp_path: Path) -> None:
    """Reproduction A: the row count is only bounded by COUNT(*) = 1e30 (was 5.9 GB in 60 s,
    --time-limit ignored)."""
    m = run_measured(tmp_path, "reconstruct", _write(tmp_path, HUGE_COUNT), "--time-limit", "5")
    assert_bounded(m)
    assert m.wall_s < 20
    line = assert_user_error(subprocess.CompletedProcess([], m.returncode, m.stdout, m.stderr),
                             "release.yaml", "10^30 rows", "over the limit of 3,000,000",
                             "--max-model-size")
    assert "records:" in line


def test_many_declared_records_are_refused_too(tmp_path: Path) -> None:
    text = HUGE_COUNT.replace("columns:", "records: 1000000000\ncolumns:", 1)
    proc = statrecon("reconstruct", _write(tmp_path, text))
    assert_user_error(proc, "1,000,000,000 rows", "--max-model-size")


def test_model_size_limit_is_an_option(tmp_path: Path) -> None:
    block = EXAMPLES / "block.yaml"
    assert_user_error(statrecon("reconstruct", block, "--max-model-size", "100"),
                      "block.yaml", "7 rows", "over the limit of 100")
    proc = statrecon("reconstruct", block, "--max-model-size", "100000", "--json")
    assert proc.returncode == 0 and json_of(proc)["status"] == "unique"
    assert_user_error(statrecon("reconstruct", block, "--max-model-size", "0"),
                      "--max-model-size")


def test_model_size_limit_in_the_api() -> None:
    release = load_release(EXAMPLES / "block_2b.yaml")
    known = compile_known(release, None)
    size = model_size(release, known)
    assert size.rows == 3 and size.statistics == 3 and 0 < size.terms < DEFAULT_MAX_MODEL_SIZE
    with pytest.raises(StatreconError, match="over the limit of"):
        reconstruct_exact(release, known, ExactOptions(max_model_size=size.terms - 1))
    result = reconstruct_exact(release, known, ExactOptions(max_model_size=size.terms))
    assert result.status == "multiple" and result.solution_count == 30


def test_wide_integer_domain_is_not_enumerated(tmp_path: Path) -> None:
    """Reproduction B: a column over 0..10^9 and an enumeration cut by --limit (the value
    proofs listed the whole domain: 16 GB in 60 s). Its extremes are proven, not every value."""
    m = run_measured(tmp_path, "reconstruct", _write(tmp_path, WIDE_DOMAIN), "--json")
    assert_bounded(m)
    assert m.returncode == 0, m.stderr
    data = json.loads(m.stdout)
    assert data["status"] == "multiple" and data["complete"] is False
    values = data["column_values"]["x"]
    assert min(values) == 0 and max(values) == 1000  # proven extremes (SUM = 1000, x >= 0)
    assert data["column_ranges"] == {"x": [0, 1000]}  # proven, not every value listed
    assert data["certain_complete"] is True


def test_time_limit_covers_building_the_model(tmp_path: Path) -> None:
    """20,000 rows under the size limit take seconds to build: --time-limit 1 stops the
    building itself and answers unknown (exit 3)."""
    text = """\
version: 1
table: t
records: 20000
columns:
  x: {type: integer, min: 0, max: 100}
  c: {type: categorical, values: [a, b, c]}
statistics:
  - {id: s1, sql: "SELECT COUNT(*) FROM t WHERE x < 50", value: 10000}
  - {id: s2, sql: "SELECT SUM(x) FROM t WHERE c = 'a'", value: 300000}
  - {id: s3, sql: "SELECT COUNT(*) FROM t WHERE c = 'b' AND x > 20", value: 5000}
"""
    m = run_measured(tmp_path, "reconstruct", _write(tmp_path, text), "--time-limit", "1",
                     "--json")
    assert_bounded(m)
    assert m.returncode == 3, m.stderr
    data = json.loads(m.stdout)
    assert data["status"] == "unknown" and data["elapsed_s"] < 2.5


def test_enumeration_keeps_a_bounded_number_of_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Datasets of many rows fill memory fast (10,000 of 2,000 rows: GBs); past MAX_ROWS_KEPT
    rows the enumeration stops as if --limit were reached, and the proofs still hold."""
    from statrecon.engines import exact

    release = load_release(EXAMPLES / "block_2b.yaml")  # 30 datasets of 3 rows
    known = compile_known(release, None)
    full = reconstruct_exact(release, known)
    monkeypatch.setattr(exact, "MAX_ROWS_KEPT", 30)
    cut = reconstruct_exact(release, known)
    assert (full.solution_count, full.complete) == (30, True)
    assert (cut.solution_count, cut.complete, cut.status) == (10, False, "multiple")
    assert cut.column_values == full.column_values and cut.certain_complete
    assert cut.certain_rows == full.certain_rows
