"""The audit of a suppressed table, cell by cell, in this process, on a local pool or on Dask.

Suppressed cells are independent units (``engines.intervals.audit_cell``): the prepared
problem is sent once per worker, each cell comes back as it finishes and the progress bar
moves. The result lists the cells in table order whatever order they finished in.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

from statrecon.engines.intervals import AuditOptions, AuditResult, CellAudit, audit_cell, prepare
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.table_problem import Apriori, problem_from_tables
from statrecon.runs.parallel import run_units
from statrecon.runs.progress import Progress, Step
from statrecon.tables import TableSet


@dataclass(frozen=True)
class TableAudit:
    """An audit of ``tables``: one ``CellAudit`` per suppressed cell (``result``), each cell's
    key in ``tables`` beside it (``keys``, same order)."""

    tables: TableSet
    result: AuditResult
    keys: tuple[Any, ...]
    apriori: Apriori

    @property
    def all_protected(self) -> bool:
        return self.result.all_protected


def _audit_one(shared: tuple[Prepared, AuditOptions], cell: int) -> CellAudit:
    prepared, options = shared
    return audit_cell(prepared, cell, options)


def audit_tables(tables: TableSet, options: AuditOptions | None = None, *,
                 apriori: Apriori = "nonnegative", workers: int = 1, executor: str | None = None,
                 on_progress: Progress | None = None) -> TableAudit:
    """Audit every suppressed cell of ``tables`` (LP and, unless switched off, integer
    intervals, each bound proven or unknown)."""
    options = replace(options or AuditOptions(), on_progress=None)  # not sent to workers
    start = time.perf_counter()
    problem = problem_from_tables(tables, apriori)
    prepared = prepare(problem)
    cells = [j for j, hidden in enumerate(problem.hidden) if hidden]
    if on_progress is not None:
        on_progress(Step(0, len(cells), 0))
    found: dict[int, CellAudit] = {}
    names = problem.cell_names
    units = run_units(_audit_one, (prepared, options), cells, workers=workers,
                      executor=executor)
    with closing(units):
        for cell, audited in units:
            found[cell] = audited
            if on_progress is not None:
                flagged = sum(a.verdict != "protected" for a in found.values())
                on_progress(Step(len(found), len(cells), flagged, names[cell]))
    ordered = tuple(found[j] for j in cells)
    keys = tables.keys()
    return TableAudit(tables, AuditResult(ordered, time.perf_counter() - start),
                      tuple(keys[j] for j in cells), apriori)
