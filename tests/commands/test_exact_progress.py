"""Issue 14 item 2: a long exact search says what it is doing on stderr.

Plain lines (stderr is not a terminal here, as in a pipe): the phase (building the model,
enumerating with the datasets found so far, proving k of m) and the time left before the
limit. Nothing with --quiet, and stdout stays the JSON document with --json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from conftest import CliRunner

# Eight values of 0..30 summing to 120: millions of datasets, so enumeration runs until the
# time limit (1 s, with a line every 0.15 s), then the proofs are cut short.
LONG = {"version": 1, "table": "t", "records": 8,
        "columns": {"x": {"type": "integer", "min": 0, "max": 30}},
        "statistics": [{"id": "total", "sql": "SELECT SUM(x) FROM t", "value": 120}]}
LIMIT_S = 1
ARGS = ("--method", "exact", "--time-limit", str(LIMIT_S), "--limit", "100000000")


@pytest.fixture
def long_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STATRECON_PROGRESS_INTERVAL", "0.15")
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(LONG))
    return path


def test_phase_lines_on_stderr_with_json_on_stdout(run_cli: CliRunner, long_release: Path
                                                   ) -> None:
    code, out, err = run_cli("reconstruct", long_release, *ARGS, "--json")
    assert code in (0, 3), err  # 3: the limit cut the enumeration (unknown)
    data = json.loads(out)  # stdout is the document alone
    assert data["status"] in ("multiple", "unknown") and data["solution_count"] > 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) >= 3, err
    assert all(line.startswith("Reconstructing: ") for line in lines), err
    enumerating = [line for line in lines if "enumerating: " in line]
    assert enumerating, err
    counts = [int(m.group(1).replace(",", "")) for line in enumerating
              if (m := re.search(r"enumerating: ([\d,]+) datasets found", line))]
    assert counts and counts == sorted(counts) and counts[-1] > 0  # a running count
    lefts = re.findall(r"(\d\d):(\d\d) left", "\n".join(enumerating))
    assert lefts and all(int(m) * 60 + int(s) <= LIMIT_S for m, s in lefts)


def test_nothing_on_stderr_with_quiet(run_cli: CliRunner, long_release: Path) -> None:
    code, out, err = run_cli("reconstruct", long_release, *ARGS, "--json", "--quiet")
    assert code in (0, 3) and err == ""
    assert json.loads(out)["solution_count"] > 1


def test_a_short_search_prints_no_progress(run_cli: CliRunner, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATRECON_PROGRESS_INTERVAL", "5")
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump({**LONG, "records": 2, "statistics": [
        {"id": "total", "sql": "SELECT SUM(x) FROM t", "value": 3}]}))
    code, out, err = run_cli("reconstruct", path, "--method", "exact", "--json")
    assert code == 0 and err == ""
    assert json.loads(out)["solution_count"] == 2
