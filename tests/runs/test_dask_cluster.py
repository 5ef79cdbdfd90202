"""One machine to many: the commands of ``docs/guides/dask.md``, as written, on a Dask
``LocalCluster`` this test starts (its workers are separate processes, as on a real cluster),
give the same results as on one machine.

The page's scheduler address is a placeholder; the test puts the cluster's own in its place.
One worker process: what a cluster adds to one machine (the function and the shared data
pickled to another process, units sent and gathered as they finish) is all there, at half the
start-up of two (each worker imports the solvers); units spread over several workers and
gathered in any order are checked on a threaded two-worker cluster in
``tests/pipelines/test_census_pipeline.py``.
The reference is the same command with ``--workers 1`` (in this process): ``run_units`` runs
one function in this process, on a local pool or on Dask, and the census and table tests
check the pool against this process (``tests/pipelines/test_census_pipeline.py``: the resumed
run equals the pool's; ``tests/commands/test_tables_audit.py``: two workers equal one), so
the cluster equals the local pool too, without starting a second set of processes here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from conftest import ROOT
from doc_blocks import DOCS, blocks, run_documented

PAGE = DOCS / "guides" / "dask.md"
PLACEHOLDER = "dask://scheduler.example.org:8786"


def _page_commands() -> list[str]:
    found = [c for b in blocks(PAGE) for c in b.commands]
    assert any(PLACEHOLDER in c for c in found), "the page shows no command on a cluster"
    return found


def _cells(output: str) -> list[dict[str, Any]]:
    """A ``tables audit --json`` output's cells, their timings aside."""
    return [{k: v for k, v in cell.items() if k != "elapsed_s"}
            for cell in json.loads(output)["cells"]]


def test_the_pages_commands_on_a_cluster_equal_one_machine(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    commands = _page_commands()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        on_cluster = [run_documented(c.replace(PLACEHOLDER, address), tmp_path, PAGE.name)
                      for c in commands]
        assert len(cluster.workers) == 1  # a nanny with its worker process
    (tmp_path / "recon.parquet").rename(tmp_path / "cluster.parquet")
    # the commands that ran on the cluster, again on one machine (their inputs are there)
    on_one = [run_documented(c.replace(f"--executor {PLACEHOLDER}", "--workers 1"), tmp_path,
                             PAGE.name) if PLACEHOLDER in c else out
              for c, out in zip(commands, on_cluster, strict=True)]
    assert pq.read_table(tmp_path / "cluster.parquet").to_pylist() == \
        pq.read_table(tmp_path / "recon.parquet").to_pylist()
    audits = [i for i, c in enumerate(commands) if c.startswith("statrecon tables audit")]
    assert audits
    for i in audits:
        assert _cells(on_cluster[i]) and _cells(on_cluster[i]) == _cells(on_one[i])
