"""The fenced code blocks of the README and of the documentation site's pages.

Shared by the tests that run every command the documentation shows (``test_readme.py``),
the Dask page's test (``tests/runs/test_dask_cluster.py``) and the site's own tests
(``test_docs.py``). A command is a line of a fenced block that starts with ``statrecon `` (or
``$ statrecon ``), with ``\\``-continued lines joined and a trailing ``# comment`` dropped;
the other lines of a block (output, ``make`` targets) are not run.
"""

from __future__ import annotations

import csv
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from conftest import statrecon

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """The README and every Markdown page of the site (the hooks' folder aside)."""
    found = [ROOT / "README.md"]
    found += sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.relative_to(DOCS).parts)
    return found


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # the line of its opening fence
    language: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def commands(self) -> tuple[str, ...]:
        joined = self.body.replace("\\\n", " ")
        return tuple(re.sub(r"\s+#.*$", "", line.removeprefix("$ ")).strip()
                     for line in joined.splitlines()
                     if line.removeprefix("$ ").startswith("statrecon "))


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order."""
    out: list[Block] = []
    lines: list[str] = []
    start, language, inside = 0, "", False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            if inside:
                out.append(Block(page, start, language, "\n".join(lines)))
            else:
                start, language, lines = number, line.strip().removeprefix("```").strip(), []
            inside = not inside
            continue
        if inside:
            lines.append(line)
    return out


def command_blocks() -> list[Block]:
    """Every block with a command, once: a block repeated word for word on another page (the
    README's examples are the guides') runs once, under its first place."""
    seen: set[tuple[str, ...]] = set()
    found = []
    for page in pages():
        for block in blocks(page):
            if block.commands and block.commands not in seen:
                seen.add(block.commands)
                found.append(block)
    return found


def python_blocks() -> list[Block]:
    """Every ``python`` block, once."""
    seen: set[str] = set()
    found = []
    for page in pages():
        for block in blocks(page):
            if block.language == "python" and block.body not in seen:
                seen.add(block.body)
                found.append(block)
    return found


# the guides show a conflict set, or equations that admit no controlled rounding (exit 2)
INFEASIBLE = {"examples/contradiction.yaml", "examples/tables/rounding/three_fives.csv"}
# tables audited to show what they disclose (exit 4: some suppressed cell is not protected)
UNPROTECTED = {"examples/tables/tauargus/TestTable.arb", "examples/tables/threeway/threeway.csv",
               "examples/tables/ckm/two_ones.csv"}


def _first_block(folder: Path) -> str:
    for name in ("tables.csv", "blocks.csv"):
        if (folder / name).exists():
            with (folder / name).open(encoding="utf-8") as f:
                return next(csv.DictReader(f))["block"]
    raise AssertionError("no households or tables file written before a --block command")


def run_documented(command: str, workdir: Path, where: str) -> str:
    """Run one documented command in ``workdir``; its stdout. Fails on an exit code the page
    does not lead one to expect, or a traceback."""
    args = shlex.split(command)[1:]
    args = ["1" if a == "50" and args[i - 1] == "--blocks" else a for i, a in enumerate(args)]
    if "--block" in args:
        args[args.index("--block") + 1] = _first_block(workdir)
    proc = statrecon(*args, cwd=workdir)
    audited = args[:2] == ["tables", "audit"] and UNPROTECTED & set(args)
    want = 2 if INFEASIBLE & set(args) else 4 if audited else 0
    assert proc.returncode == want, (f"{where}: {command}", proc.stderr[-2000:])
    assert "Traceback" not in proc.stdout + proc.stderr, command
    return proc.stdout
