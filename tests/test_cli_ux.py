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
from typing import Any

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


@pytest.mark.parametrize("args", [
    ["claims", "experiment", "--out", "never", "--time-limit", "nan"],
    ["claims", "verify", "--tables", "never.csv", "--time-limit", "nan"],
])
def test_claims_time_limit_nan_is_refused(tmp_path: Path, args: list[str]) -> None:
    from statrecon.cli import app

    args = [str(tmp_path / a) if a.startswith("never") else a for a in args]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, StatreconError), result.output
    assert "--time-limit nan" in str(result.exception)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


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


# --------------------------------------------------------------------------- options


def all_commands() -> list[tuple[str, Any]]:
    """Every command of ``statrecon`` with its path ('' for the group itself)."""
    from statrecon.cli import app

    out: list[tuple[str, Any]] = []

    def walk(path: str, command: Any) -> None:
        out.append((path, command))
        for name, sub in getattr(command, "commands", {}).items():
            walk(f"{path} {name}".strip(), sub)

    walk("", typer.main.get_command(app))
    return out


def test_flags_are_plain_flags_in_every_help() -> None:
    commands = all_commands()
    assert len(commands) >= 12
    from statrecon.cli import app

    for path, command in commands:
        result = CliRunner().invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, path
        for param in command.params:
            kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            if param.param_type_name == "option" and kind is bool:
                assert param.is_flag, (path, param.name)  # --all, never --all <bool>


def test_workers_mean_the_same_everywhere() -> None:
    options = [(path, p) for path, command in all_commands() for p in command.params
               if p.name == "workers"]
    assert {path for path, _ in options} >= {"census reconstruct", "claims verify",
                                             "claims experiment"}
    from statrecon.cli import app

    for path, param in options:
        assert param.min == 0 and "0 = all cores" in (param.help or ""), path
        refused = CliRunner().invoke(app, [*path.split(), "--workers", "-1"])
        assert refused.exit_code == 2 and "--workers" in refused.output, path


def test_output_into_a_pipe_is_not_wrapped(tmp_path: Path) -> None:
    long_id = "statistic_with_a_long_descriptive_name_" * 4
    text = (EXAMPLES / "contradiction.yaml").read_text(encoding="utf-8")
    path = tmp_path / "long.yaml"
    path.write_text(text.replace("id: 2B-count,", f"id: {long_id},"), encoding="utf-8")
    proc = run_cli("reconstruct", path)
    assert proc.returncode == 2, proc.stderr
    assert long_id in proc.stdout  # on one line, not cut at 80 columns


def test_tabulate_refuses_to_overwrite_its_inputs(tmp_path: Path) -> None:
    release = tmp_path / "hospital.yaml"
    release.write_bytes((EXAMPLES / "hospital.yaml").read_bytes())
    truth = tmp_path / "truth.csv"
    truth.write_bytes((EXAMPLES / "hospital_truth.csv").read_bytes())
    before = release.read_bytes(), truth.read_bytes()
    from statrecon.cli import app

    for out, named in ((tmp_path / "." / "hospital.yaml", "--release"), (truth, "--microdata")):
        result = CliRunner().invoke(app, ["tabulate", "--microdata", str(truth), "--release",
                                          str(release), "--out", str(out)])
        assert isinstance(result.exception, StatreconError), result.output
        assert f"--out {out}" in str(result.exception) and named in str(result.exception)
    assert (release.read_bytes(), truth.read_bytes()) == before


def test_tabulate_decimals_are_bounded(tmp_path: Path) -> None:
    """10**decimals is computed exactly: a billion decimals would never finish."""
    from statrecon.cli import app

    result = CliRunner().invoke(app, [
        "tabulate", "--microdata", str(EXAMPLES / "hospital_truth.csv"), "--release",
        str(EXAMPLES / "hospital.yaml"), "--out", str(tmp_path / "out.yaml"),
        "--decimals", "1000000000"])
    assert result.exit_code == 2 and "--decimals" in result.output
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("args", [
    ["reconstruct", "examples/hospital.yaml", "--method", "sgd"],
    ["census", "compare", "--truth", "t.csv", "--recon", "r.parquet"],
    ["claims", "experiment", "--out", "never-written"],
])
def test_negative_seeds_are_refused(args: list[str]) -> None:
    """numpy refuses negative seeds with a message naming another option, or a traceback."""
    from statrecon.cli import app

    result = CliRunner().invoke(app, [*args, "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output, result.output
    assert not Path("never-written").exists()  # refused before the run folder is made
