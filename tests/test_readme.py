"""The README's examples run as written, from a copy of the repository's examples folder.

Every ``statrecon ...`` line of every fenced block runs, in order within its block (later
lines read what earlier ones wrote), and must exit 0 (2 where the README says the release is
infeasible) without a traceback. Two edits keep the suite fast and the placeholders real:
``--blocks 50`` becomes ``--blocks 1``, and a block id (``ID`` or the one printed in the
README) becomes the first block of the tables just written.
"""

from __future__ import annotations

import csv
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import COMMAND, ROOT

README = ROOT / "README.md"
INFEASIBLE = {"examples/contradiction.yaml"}  # the README shows its conflict set (exit 2)
# tables audited to show what they disclose (exit 4: some suppressed cell is not protected)
UNPROTECTED = {"examples/tables/tauargus/TestTable.arb", "examples/tables/threeway/threeway.csv"}


def _blocks() -> list[tuple[int, list[str]]]:
    """(first line number, commands) of every fenced block with a statrecon command."""
    out, lines, start, inside = [], [], 0, False
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            if inside and lines:
                out.append((start, lines))
            inside, lines, start = not inside, [], number
            continue
        if inside:
            lines.append(line)
    blocks = []
    for start, body in out:
        joined = "\n".join(body).replace("\\\n", " ")
        commands = [re.sub(r"\s+#.*$", "", c.removeprefix("$ ")).strip()
                    for c in joined.splitlines()
                    if c.removeprefix("$ ").startswith("statrecon ")]
        if commands:
            blocks.append((start, commands))
    return blocks


def _first_block(folder: Path) -> str:
    for name in ("tables.csv", "blocks.csv"):
        if (folder / name).exists():
            with (folder / name).open(encoding="utf-8") as f:
                return next(csv.DictReader(f))["block"]
    raise AssertionError("no households or tables file written before a --block command")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


@pytest.mark.parametrize(("line", "commands"), _blocks(), ids=lambda v: str(v)
                         if isinstance(v, int) else None)
def test_every_readme_command_runs(line: int, commands: list[str], workdir: Path) -> None:
    for command in commands:
        args = shlex.split(command)[1:]
        args = ["1" if a == "50" and args[i - 1] == "--blocks" else a for i, a in enumerate(args)]
        if "--block" in args:
            args[args.index("--block") + 1] = _first_block(workdir)
        proc = subprocess.run([*COMMAND, *args], cwd=workdir, capture_output=True, text=True,
                              timeout=300, check=False)
        audited = args[:2] == ["tables", "audit"] and UNPROTECTED & set(args)
        want = 2 if INFEASIBLE & set(args) else 4 if audited else 0
        assert proc.returncode == want, (f"README line {line}: {command}", proc.stderr[-2000:])
        assert "Traceback" not in proc.stdout + proc.stderr, command


def test_the_python_example_runs(workdir: Path) -> None:
    text = README.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None, "the README has no python example"
    proc = subprocess.run([sys.executable, "-c", code.group(1)], cwd=workdir,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_the_readme_commands_are_found() -> None:
    """The parser is not vacuous: the blocks the README is known to have are there."""
    found = [c for _, block in _blocks() for c in block]
    assert any(c.startswith("statrecon tabulate --microdata examples/tabulate/") for c in found)
    assert any("audit-stream" in c for c in found) and any("claims verify" in c for c in found)
    assert len(found) >= 15
