"""Every example of the README and of the documentation site runs as written, from a copy of
the repository's examples folder (the blocks are found by ``doc_blocks``).

Every ``statrecon ...`` line of every fenced block runs, in order within its block (later
lines read what earlier ones wrote), and must exit 0 (2 where the page says the release is
infeasible, 4 where it audits a table to show what it discloses) without a traceback. A block
repeated word for word on another page runs once. Two edits keep the suite fast and the
placeholders real: ``--blocks 50`` becomes ``--blocks 1``, and a block id (``ID`` or the one
printed on the page) becomes the first block of the tables just written, and the 28 bundled
tracts' two persons files are cut to the three of ``persons_3tracts.csv`` (the same persons,
still gzip-compressed: the commands on them run as written, in seconds). The blocks that
point at a Dask cluster (``dask://``) run in ``tests/runs/test_dask_cluster.py``, on a
cluster that test starts. Every ``python`` block runs too.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from doc_blocks import Block, command_blocks, python_blocks, run_documented

CLUSTER = "dask://"  # blocks run by tests/runs/test_dask_cluster.py


CENSUS = ROOT / "examples" / "census"
WHOLE = ("census2010_reconstructed_persons.csv.gz", "census2010_dp_reconstructed_persons.csv.gz")


@pytest.fixture(scope="module")
def three_tracts() -> dict[str, bytes]:
    """Each of the whole files' persons in the tracts of ``persons_3tracts.csv``, compressed."""
    with (CENSUS / "persons_3tracts.csv").open(encoding="utf-8") as f:
        next(f)
        tracts = {line.split(",")[1][:11] for line in f}
    cut = {}
    for name in WHOLE:
        lines = gzip.decompress((CENSUS / name).read_bytes()).decode().splitlines(keepends=True)
        kept = [lines[0]] + [line for line in lines[1:] if line.split(",")[1][:11] in tracts]
        assert len(kept) > 900, name  # the three tracts are in both files
        cut[name] = gzip.compress("".join(kept).encode(), compresslevel=1)
    return cut


@pytest.fixture
def workdir(tmp_path: Path, three_tracts: dict[str, bytes]) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for name, data in three_tracts.items():
        (tmp_path / "examples" / "census" / name).write_bytes(data)
    return tmp_path


LOCAL = [b for b in command_blocks() if not any(CLUSTER in c for c in b.commands)]


@pytest.mark.parametrize("block", LOCAL, ids=lambda b: b.where)
def test_every_documented_command_runs(block: Block, workdir: Path) -> None:
    for command in block.commands:
        run_documented(command, workdir, block.where)


@pytest.mark.parametrize("block", python_blocks(), ids=lambda b: b.where)
def test_every_python_example_runs(block: Block, workdir: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    exec(compile(block.body, block.where, "exec"), {"__name__": "__docs__"})


def test_the_documented_commands_are_found() -> None:
    """The parser is not vacuous: the blocks the pages are known to have are there, and the
    README has a Python example."""
    found = [c for b in command_blocks() for c in b.commands]
    assert any(c.startswith("statrecon tabulate --microdata examples/tabulate/") for c in found)
    assert any("audit-stream" in c for c in found) and any("claims verify" in c for c in found)
    assert any(CLUSTER in c for c in found)
    assert len(found) >= 15
    assert any(b.page.name == "README.md" for b in python_blocks())
