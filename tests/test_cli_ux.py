"""How the command line behaves (issue 12): options that make no sense are refused with one
line, progress reaches stderr on long runs, flags look like flags, ``--workers`` means the same
everywhere, output to a pipe is not wrapped, and ``tabulate`` never overwrites its input.

Options are checked in process (typer's runner); what a user sees runs the real console script.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import typer
from test_cli import COMMAND, EXAMPLES, ROOT, assert_user_error, statrecon
from typer.testing import CliRunner

from statrecon.commands.experiment import experiment_app
from statrecon.commands.progress import PlainProgress, elapsed_text
from statrecon.errors import StatreconError


def run_cli(*args: str | Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """The real console script with stdout and stderr piped (not terminals)."""
    full = {**os.environ, "NO_COLOR": "1", **(env or {})}
    full.pop("COLUMNS", None)
    return subprocess.run([*COMMAND, *map(str, args)], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120, check=False)


def experiment_cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(experiment_app, name="experiment")
    return app


# --------------------------------------------------------------------------- experiments


@pytest.mark.parametrize(("args", "part"), [
    (["diffix", "--primes", "4"], "got 4"),
    (["diffix", "--primes", "2,3,1"], "got 1"),
    (["diffix", "--primes", "-3"], "got -3"),
    (["diffix", "--primes", "3,3"], "named twice"),
    (["diffix", "--primes", "1" + "0" * 30], "prime numbers"),
    (["diffix", "--offsets", "nan"], "--offsets"),
    (["diffix", "--offsets", "-1"], "--offsets"),
    (["diffix", "--exponents", "inf"], "--exponents"),
    (["diffix", "--exponents", "0"], "--exponents"),
    (["diffix", "--base-sigma", "nan"], "base_sigma"),
    (["diffix", "--time-limit", "nan"], "--time-limit"),
    (["diffix", "--ids", "100000000"], "--ids 100000000"),
    (["dinur-nissim", "--sigmas", "nan"], "sigmas"),
    (["dinur-nissim", "--c", "nan"], "c must be"),
    (["dinur-nissim", "--c", "-2"], "c must be"),
    (["dinur-nissim", "--n", "-5"], "n must be"),
    (["dinur-nissim", "--n", "1000000"], "matrix entries"),
    (["dinur-nissim", "--n", "30", "--c", "1e9"], "matrix entries"),
    (["dinur-nissim", "--runtime", "--runtime-ns", "100,100000"], "matrix entries"),
    (["dinur-nissim", "--exhaustive-alpha", "nan"], "--exhaustive-alpha"),
    (["dinur-nissim", "--time-limit", "-1"], "--time-limit"),
])
def test_experiment_options_that_make_no_sense(args: list[str], part: str) -> None:
    result = CliRunner().invoke(experiment_cli(), ["experiment", *args])
    assert isinstance(result.exception, StatreconError), result.output
    message = str(result.exception)
    assert part in message and "\n" not in message


@pytest.mark.parametrize("command", ["diffix", "dinur-nissim"])
def test_negative_seed_is_refused_by_the_option(command: str) -> None:
    result = CliRunner().invoke(experiment_cli(), ["experiment", command, "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output  # typer's usage error


def test_cli_diffix_with_a_composite_prime_is_one_line() -> None:
    assert_user_error(statrecon("experiment", "diffix", "--primes", "4"), "--primes", "got 4")
    assert_user_error(statrecon("experiment", "dinur-nissim", "--seed", "-1"), "--seed")


# --------------------------------------------------------------------------- progress


def test_plain_progress_lines_name_units_count_and_time() -> None:
    stream = io.StringIO()
    with PlainProgress(stream, "blocks", "claims", pace=(0.0, 0.02)) as bar:
        task = bar.add_task("blocks", total=50, count=0)
        bar.update(task, advance=12, count=3456)
        time.sleep(0.1)
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 2 and lines[-1] == "12/50 blocks, 3,456 claims, 00:00 elapsed"
    quiet = io.StringIO()
    with PlainProgress(quiet, "blocks", pace=(60.0, 60.0)) as bar:  # a short run: silent
        bar.add_task("blocks", total=3)
    assert quiet.getvalue() == ""
    assert elapsed_text(42) == "00:42" and elapsed_text(3723) == "1:02:03"


def test_claims_verify_json_reports_progress_on_stderr(tmp_path: Path) -> None:
    from test_claims_cli import households

    path = households(tmp_path)
    env = {"STATRECON_PROGRESS_INTERVAL": "0.05"}
    proc = run_cli("claims", "verify", "--households", path, "--json", "--k", "5",
                   "--no-negative", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["blocks"]  # stdout stays pure JSON
    lines = proc.stderr.splitlines()
    assert lines and all(re.fullmatch(r"\d+/2 blocks, [\d,]+ claims, \d\d:\d\d elapsed", line)
                         for line in lines), lines
    assert lines[-1].startswith("2/2 blocks")


def test_reconstruct_json_says_it_is_running() -> None:
    env = {"STATRECON_PROGRESS_INTERVAL": "0.05"}
    proc = run_cli("reconstruct", EXAMPLES / "block.yaml", "--json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == "unique"
    assert re.search(r"^Reconstructing: \d\d:\d\d elapsed$", proc.stderr, re.MULTILINE)
    quiet = run_cli("reconstruct", EXAMPLES / "block.yaml", "--json", "--quiet", env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""
