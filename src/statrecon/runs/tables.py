"""The audit of a suppressed table, cell by cell, in this process, on a local pool or on Dask;
and its secondary suppression (``protect_tables``).

Suppressed cells are independent units (``engines.intervals.audit_cell``): the prepared
problem is sent once per worker, each cell comes back as it finishes and the progress bar
moves. The result lists the cells in table order whatever order they finished in.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from statrecon.engines.intervals import (
    Apriori,
    AuditOptions,
    AuditResult,
    CellAudit,
    Prepared,
    audit_cell,
    prepare,
    problem_from_tables,
)
from statrecon.engines.suppression import ProtectOptions, ProtectResult, protect
from statrecon.errors import StatreconError
from statrecon.runs.parallel import run_units
from statrecon.runs.progress import Progress, Step
from statrecon.tables import Cell, CellStatus, TableSet


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


Cost = Literal["count", "value", "cost"]
COSTS: tuple[Cost, ...] = ("count", "value", "cost")


@dataclass(frozen=True)
class TableProtection:
    """Secondary suppression of ``tables``: the protected tables (secondary cells marked
    SECONDARY), the engine's result (pattern, status, the integer audit of every primary
    cell) and the keys of the secondary cells."""

    tables: TableSet
    result: ProtectResult
    secondary: tuple[Any, ...]
    excluded: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def protected(self) -> bool:
        return self.result.status in ("optimal", "feasible")


# Why a published cell is not offered for secondary suppression (the keys of ``excluded``).
EXCLUSION_RULES: dict[str, str] = {
    "protected": "status protected (P): never suppressed",
    "empty": "empty: no contributors (value 0, frequency 0); --suppress-empty offers them",
}


def is_empty(cell: Cell) -> bool:
    """A cell known to have no contributors (tau-Argus's empty cell). A zero whose
    frequency is not given may have contributors: it is not empty."""
    return cell.status is CellStatus.EMPTY or (cell.value == 0 and cell.frequency == 0)


def exclusion(cell: Cell, suppress_empty: bool) -> str | None:
    """The rule (a key of ``EXCLUSION_RULES``) that keeps a published cell from being
    suppressed, or None when it may be; primary and secondary cells are never excluded."""
    if cell.status.suppressed:
        return None
    if cell.status is CellStatus.PROTECTED:
        return "protected"
    if is_empty(cell) and not suppress_empty:
        return "empty"
    return None


def protect_tables(tables: TableSet, options: ProtectOptions | None = None, *,
                   cost: Cost = "count", apriori: Apriori = "nonnegative",
                   suppress_empty: bool = False) -> TableProtection:
    """Choose secondary cells so that every primary cell of ``tables`` is protected under the
    integer audit. Every published cell may be suppressed, zeros included, except those a
    rule of ``EXCLUSION_RULES`` keeps (``excluded`` of the result names them, so that an
    "infeasible" proof says over which cells it holds): protected (P) cells, and empty cells
    unless ``suppress_empty``. ``cost``: minimise the number of cells, their total value, or
    their cost column (tau-Argus's COSTVAR; a cell without one costs its value)."""
    if cost not in COSTS:
        raise StatreconError(f"cost {cost!r}: choose from {', '.join(COSTS)}")
    problem = problem_from_tables(tables, apriori)
    cells = tables.cells()
    keys = tables.keys()
    rules = [exclusion(c, suppress_empty) for c in cells]
    candidates = [not c.status.suppressed and rule is None for c, rule in zip(cells, rules,
                                                                              strict=True)]
    excluded = {name: tuple(k for k, r in zip(keys, rules, strict=True) if r == name)
                for name in EXCLUSION_RULES}
    if cost == "count":
        costs = None
    elif cost == "value":
        costs = [c.value for c in cells]
    else:
        costs = [c.cost if c.cost is not None else c.value for c in cells]
    result = protect(problem, candidates=candidates, costs=costs, options=options)
    secondary = tuple(keys[j] for j in result.secondary)
    marked = tables.with_statuses({k: CellStatus.SECONDARY for k in secondary})
    return TableProtection(marked, result, secondary,
                           {name: got for name, got in excluded.items() if got})
