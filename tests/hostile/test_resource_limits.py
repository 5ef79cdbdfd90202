"""Issue 12, "resources bounded": hostile inputs get a clear error or an honest answer within
seconds and a few hundred MiB, never a hang, a swap storm or a RecursionError.

Reproductions held here:
- release files: COUNT(*) = 1e30 or a billion declared records refused before the model is built
  (--max-model-size, also in the API); a column over 0..10^9 not enumerated; --time-limit covers
  building the model; the enumeration keeps a bounded number of rows; a YAML alias bomb refused
  at once; SQL nested too deep or longer than the limit refused, 20,000 ORs read iteratively;
- census: a model too big refused before it is built;
- claims: a block too big for the engine (4,096 units) refused;
- audit-stream: a line without an end is bounded;
- tabulate: --decimals is bounded.

The release-file reproductions A and B and the time limit are measured on the real CLI in a
process of its own. Each run goes through a small wrapper process whose only child is the CLI, so
``RUSAGE_CHILDREN`` there is the CLI's own peak RSS; the wrapper also kills the CLI past a
memory cap or a wall-clock limit, so a regression fails the test instead of swapping the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BLOCK_A,
    COMMAND,
    EXAMPLES,
    ROOT,
    SUM_ALL,
    TRACT_A,
    CliRunner,
    assert_one_line_error,
    assert_user_error,
    audit_cli,
    households,
    json_of,
    statrecon,
    write_persons,
    write_release,
)
from typer.testing import CliRunner as TyperRunner

from statrecon.census.households.synthetic import MAX_BLOCK_UNITS
from statrecon.engines.census import MAX_TRACT_VARIABLES
from statrecon.engines.exact import ExactOptions, reconstruct_exact
from statrecon.engines.exact.record_model import DEFAULT_MAX_MODEL_SIZE, model_size
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


def test_linear_matrix_is_sized_before_it_is_built(tmp_path: Path, run_cli: CliRunner) -> None:
    """The linear engine's query matrix (statistics x public rows) is checked against
    --max-matrix-cells before DuckDB evaluates a single predicate."""
    (tmp_path / "public.csv").write_text("id\n" + "".join(f"{i}\n" for i in range(1, 6)),
                                         encoding="utf-8")
    release = tmp_path / "release.yaml"
    release.write_text("""version: 1
public: public.csv
columns:
  id: {type: integer, known: true}
  x: {type: integer, min: 0, max: 10}
statistics:
  - {id: a, sql: "SELECT SUM(x) FROM t WHERE id < 3", value: 5}
  - {id: b, sql: "SELECT SUM(x) FROM t WHERE id > 3", value: 5}
""", encoding="utf-8")
    assert_one_line_error(run_cli("reconstruct", release, "--method", "ls",
                                  "--max-matrix-cells", "9"),
                          "2 statistics x 5 public rows = 10 matrix cells", "limit of 9",
                          "--max-matrix-cells")
    code, out, err = run_cli("reconstruct", release, "--method", "ls", "--max-matrix-cells",
                             "10", "--json")
    assert code == 0, err
    assert json.loads(out)["status"] == "estimated"


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
    from statrecon.engines.exact import reconstruct as exact

    release = load_release(EXAMPLES / "block_2b.yaml")  # 30 datasets of 3 rows
    known = compile_known(release, None)
    full = reconstruct_exact(release, known)
    monkeypatch.setattr(exact, "MAX_ROWS_KEPT", 30)
    cut = reconstruct_exact(release, known)
    assert (full.solution_count, full.complete) == (30, True)
    assert (cut.solution_count, cut.complete, cut.status) == (10, False, "multiple")
    assert cut.column_values == full.column_values and cut.certain_complete
    assert cut.certain_rows == full.certain_rows


# --------------------------------------------------------------------------- release files: parsing


def test_yaml_alias_bomb_is_refused_at_once(tmp_path: Path, run_cli: CliRunner) -> None:
    """Nine levels of nine aliases: 600 bytes that expand to 387 million strings."""
    text = 'version: 1\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    text += "columns: {age: {type: integer, min: 0, max: 3}}\n"
    path = tmp_path / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    assert len(text) < 700
    start = time.perf_counter()
    assert_one_line_error(run_cli("reconstruct", path), "bomb.yaml:", "aliases")
    assert time.perf_counter() - start < 5


def test_deep_nesting_is_a_clear_limit(tmp_path: Path, run_cli: CliRunner) -> None:
    sql = "SELECT COUNT(*) FROM t WHERE " + "(" * 3000 + "age = 1" + ")" * 3000
    assert_one_line_error(run_cli("reconstruct", write_release(tmp_path, sql=sql)),
                          "'q'", "nested 3000 deep", "limit is 100")


def test_nesting_within_the_limit_is_read(tmp_path: Path, run_cli: CliRunner) -> None:
    sql = "SELECT COUNT(*) FROM t WHERE " + "(" * 100 + "age = 1" + ")" * 100
    code, _, err = run_cli("reconstruct", write_release(tmp_path, extra="records: 1\n", sql=sql),
                           "--json")
    assert code == 0, err


def test_twenty_thousand_ors_take_an_iterative_path(tmp_path: Path,
                                                    run_cli: CliRunner) -> None:
    """A flat chain of ORs is walked without recursion: no RecursionError, a real answer."""
    where = " OR ".join(f"age = {i % 10}" for i in range(20_000))
    path = write_release(tmp_path, extra="records: 2\n",
                         sql=f"SELECT COUNT(*) FROM t WHERE {where}", value="1")
    code, out, err = run_cli("reconstruct", path, "--json")
    assert code == 0, err
    assert "Traceback" not in err
    assert '"status": "multiple"' in out


def test_sql_longer_than_the_limit(tmp_path: Path, run_cli: CliRunner) -> None:
    where = " OR ".join(["age = 1"] * 130_000)
    assert_one_line_error(run_cli("reconstruct", write_release(tmp_path, sql=f"SELECT COUNT(*) "
                                                                         f"FROM t WHERE {where}")),
                          "'q'", "longer than the limit")


# --------------------------------------------------------------------------- census


def test_a_model_too_big_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """P1 alone prunes nothing: 8 blocks would be 8 x 27,972 CP-SAT variables (gigabytes).
    The estimate refuses it at once instead."""
    persons = write_persons(tmp_path / "p.csv", [f"{TRACT_A}{1000 + i}" for i in range(8)], 1)
    rel = tmp_path / "p1.parquet"
    assert statrecon("census", "tabulate", "--persons", persons, "--out", rel, "--tables",
                     "P1").returncode == 0
    t0 = time.monotonic()
    proc = statrecon("census", "reconstruct", rel, "--out", tmp_path / "r.parquet")
    assert_user_error(proc, str(rel), f"tract {TRACT_A}", "223,776 variables",
                      f"{MAX_TRACT_VARIABLES:,}")
    assert time.monotonic() - t0 < 30


# --------------------------------------------------------------------------- claims


def test_a_block_too_big_for_the_engine_is_refused(tmp_path: Path) -> None:
    """Multiplicities are packed in 12 bits: a block of 4,096 units would corrupt claims."""
    path = households(tmp_path)
    lines = path.read_text().splitlines()
    unit = next(line for line in lines[1:] if line.startswith(BLOCK_A))
    path.write_text("\n".join([*lines, *[unit] * MAX_BLOCK_UNITS]) + "\n")
    assert_user_error(statrecon("claims", "tabulate", "--households", path, "--out",
                                tmp_path / "t.csv"), str(path), BLOCK_A, "4,098", "4,095",
                      f"line {MAX_BLOCK_UNITS + 4}")  # its 4,096th unit


# --------------------------------------------------------------------------- audit-stream


def test_cli_line_without_end_is_bounded(audit_schema: Path, tmp_path: Path) -> None:
    path = tmp_path / "stream.txt"
    path.write_bytes(b"q1: " + SUM_ALL.encode() + b" WHERE id IN (" + b"1," * 600_000)
    assert_user_error(audit_cli(audit_schema, "--input", path), f"{path}:1", "longer than")


# --------------------------------------------------------------------------- tabulate


def test_tabulate_decimals_are_bounded(tmp_path: Path) -> None:
    """10**decimals is computed exactly: a billion decimals would never finish."""
    from statrecon.cli import app

    result = TyperRunner().invoke(app, [
        "tabulate", "--microdata", str(EXAMPLES / "hospital_truth.csv"), "--release",
        str(EXAMPLES / "hospital.yaml"), "--out", str(tmp_path / "out.yaml"),
        "--decimals", "1000000000"])
    assert result.exit_code == 2 and "--decimals" in result.output
    assert not (tmp_path / "out.yaml").exists()
