"""Issue 12, "helpful where silent": the command line says what it is doing and means the same
thing everywhere.

Reproductions held here: progress reaches stderr on long runs (plain lines, stdout stays pure
JSON; --quiet silences it); flags look like flags in every help; ``--workers`` means the same
everywhere (0 = all cores); output to a pipe is not wrapped; ``audit-stream`` reading a terminal
says how to end the input.

Options are checked in process (typer's runner); progress runs the real ``cli.main`` in
process (``conftest.statrecon``: stdout and stderr are pipes to it, not terminals); what needs
the real console script (a pipe's width, a terminal on stdin) runs it.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from conftest import COMMAND, EXAMPLES, ROOT, SLICE, SUM_ALL, CensusSlice, audit_cli, statrecon
from typer.testing import CliRunner

from statrecon.commands.progress import PlainProgress, elapsed_text


def run_cli(*args: str | Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """The real console script with stdout and stderr piped (not terminals)."""
    full = {**os.environ, "NO_COLOR": "1", **(env or {})}
    full.pop("COLUMNS", None)
    return subprocess.run([*COMMAND, *map(str, args)], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120, check=False)


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
    from conftest import households

    path = households(tmp_path)
    env = {"STATRECON_PROGRESS_INTERVAL": "0.05"}
    proc = statrecon("claims", "verify", "--households", path, "--json", "--k", "5",
                     "--no-negative", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["blocks"]  # stdout stays pure JSON
    lines = proc.stderr.splitlines()
    assert lines and all(re.fullmatch(r"\d+/2 blocks, [\d,]+ claims, \d\d:\d\d elapsed", line)
                         for line in lines), lines
    assert lines[-1].startswith("2/2 blocks")


def test_reconstruct_json_says_it_is_running() -> None:
    env = {"STATRECON_PROGRESS_INTERVAL": "0.05"}
    proc = statrecon("reconstruct", EXAMPLES / "block.yaml", "--json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == "unique"
    assert re.search(r"^Reconstructing: \d\d:\d\d elapsed( \(.*\))?$", proc.stderr, re.MULTILINE)
    quiet = statrecon("reconstruct", EXAMPLES / "block.yaml", "--json", "--quiet", env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize("command", ["tabulate", "compare", "report"])
def test_census_steps_say_they_are_running(command: str, census_slice: CensusSlice,
                                           tmp_path: Path) -> None:
    """Census tabulate, compare and report take seconds on a real file: they report progress
    on stderr too (plain lines off a terminal), and --quiet silences them. (The slice's
    release and reconstruction come from the session's ``census_slice``.)"""
    persons, recon = SLICE, census_slice.recon
    env = {"STATRECON_PROGRESS_INTERVAL": "0.01"}
    args = {"tabulate": ["--persons", persons, "--out", tmp_path / "r2.parquet", "--json"],
            "compare": ["--truth", persons, "--recon", recon, "--json"],
            "report": [recon, "--out", tmp_path / "report.html"]}[command]
    proc = statrecon("census", command, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^\w[\w ]*: \d\d:\d\d elapsed$", proc.stderr, re.MULTILINE), proc.stderr
    quiet = statrecon("census", command, *args, "--quiet", env=env)
    assert quiet.returncode == 0 and "elapsed" not in quiet.stderr


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


# --------------------------------------------------------------------------- audit-stream


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_stdin_on_a_terminal_says_how_to_end(audit_schema: Path) -> None:
    main, other = os.openpty()
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    try:
        proc = subprocess.Popen([*COMMAND, "audit-stream", str(audit_schema), "--json"], cwd=ROOT,
                                env=env, stdin=other, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        os.close(other)
        os.write(main, f"q1: {SUM_ALL} ; 32.1\n".encode() + b"\x04")
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(main)
    assert proc.returncode == 0, err
    assert "reading statistics from stdin" in err and "Ctrl-D" in err
    assert json.loads(out.splitlines()[0])["statistic"] == "q1"
    piped = audit_cli(audit_schema, "--json", stdin=f"q1: {SUM_ALL} ; 32.1\n")
    assert piped.returncode == 0 and "stdin" not in piped.stderr


def test_workers_zero_means_every_core_this_process_may_use() -> None:
    """``--workers 0`` (most commands' default): the cores this process may run on, not the
    machine's: a process pinned to one core (as taskset or a container does) gets 1; a
    number given stays as given."""
    from statrecon.commands.options import workers_option

    assert workers_option(3) == 3
    code = ("import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
            "from statrecon.commands.options import workers_option; "
            "print(workers_option(0), os.cpu_count())")
    pinned, machine = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                     text=True, check=True).stdout.split()
    assert int(pinned) == 1 and int(machine) >= 1
