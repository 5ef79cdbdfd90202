"""The audit of a suppressed table, cell by cell, in this process, on a local pool or on Dask;
and its secondary suppression (``protect_tables``).

Suppressed cells are independent units (``engines.intervals.audit_cell``): the prepared
problem is sent once per worker, each cell comes back as it finishes and the progress bar
moves. The result lists the cells in table order whatever order they finished in.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

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
from statrecon.engines.intervals.singletons import SingletonAudit, audit_singletons
from statrecon.engines.suppression import ProtectOptions, ProtectResult, protect
from statrecon.engines.suppression.costs import (
    COST_FUNCTIONS,
    CostFunction,
    distance_costs,
    transform,
    tree_steps,
)
from statrecon.engines.suppression.singletons import protect_against_singletons
from statrecon.errors import StatreconError
from statrecon.result import html_view
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
    singletons: tuple[SingletonAudit, ...] = ()  # with singletons=True: the primary cells
    singletons_checked: int | None = None  # ... audited by each singleton; None: not asked

    @property
    def all_protected(self) -> bool:
        return self.result.all_protected and all(
            a.audit.verdict == "protected" for a in self.singletons)

    @property
    def verdicts(self) -> set[str]:
        """Every verdict of the audit, the singletons' included."""
        return {c.verdict for c in self.result.cells} | {
            a.audit.verdict for a in self.singletons}

    def _repr_html_(self) -> str:
        """Jupyter's view: each table drawn as a table, every suppressed cell coloured and
        named by its verdict with the attacker's interval (never its value), and a legend."""
        # lazy: report/ sits above runs/; its grid builder is loaded only when Jupyter draws
        from statrecon.report.table_grid import CSS, grids_html, legend_html

        counts = Counter(c.verdict for c in self.result.cells)
        words = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "nothing"
        audits = dict(zip(self.keys, self.result.cells, strict=True))
        return html_view(f"Audit: {len(self.result.cells)} suppressed cells, {words}",
                         f"<style>{CSS}</style>", legend_html(),
                         grids_html(self.tables, audits))


def _audit_one(shared: tuple[Prepared, AuditOptions], cell: int) -> CellAudit:
    prepared, options = shared
    return audit_cell(prepared, cell, options)


def singleton_cells(tables: TableSet, suppressed: bool = True) -> list[int]:
    """The cells of a magnitude table with exactly one contributor (positions in ``keys()``;
    ``suppressed``: only those suppressed): their respondent knows the value. In a frequency
    table a respondent knows only that their cell counts at least one, not this attack."""
    if tables.tables[0].kind != "magnitude":
        return []
    return [j for j, c in enumerate(tables.cells())
            if c.frequency == 1 and (c.status.suppressed or not suppressed)]


def audit_tables(tables: TableSet, options: AuditOptions | None = None, *,
                 apriori: Apriori = "nonnegative", workers: int = 1, executor: str | None = None,
                 on_progress: Progress | None = None, singletons: bool = False) -> TableAudit:
    """Audit every suppressed cell of ``tables`` (LP and, unless switched off, integer
    intervals, each bound proven or unknown). ``singletons``: also audit each primary cell
    by every respondent alone in a suppressed cell, who knows that cell's value."""
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
    alone: list[int] = singleton_cells(tables) if singletons else []
    primaries = [j for j, c in enumerate(tables.cells()) if c.status is CellStatus.PRIMARY]
    attacks = audit_singletons(prepared, alone, primaries, options) if alone else ()
    return TableAudit(tables, AuditResult(ordered, time.perf_counter() - start),
                      tuple(keys[j] for j in cells), apriori, attacks,
                      len(alone) if singletons else None)


Cost = CostFunction
COSTS: tuple[Cost, ...] = COST_FUNCTIONS


@dataclass(frozen=True)
class TableProtection:
    """Secondary suppression of ``tables``: the protected tables (secondary cells marked
    SECONDARY), the engine's result (pattern, status, the integer audit of every primary
    cell) and the keys of the secondary cells."""

    tables: TableSet
    result: ProtectResult
    secondary: tuple[Any, ...]
    excluded: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    singletons: tuple[SingletonAudit, ...] = ()  # the final pattern's singleton audits
    singletons_checked: int | None = None  # None: not asked

    @property
    def protected(self) -> bool:
        return self.result.status in ("optimal", "feasible")

    def _repr_html_(self) -> str:
        """Jupyter's view: the protected tables drawn as tables, primary and secondary cells
        marked (audit the result, ``audit_tables(p.tables)``, to see each one's verdict)."""
        # lazy: report/ sits above runs/; its grid builder is loaded only when Jupyter draws
        from statrecon.report.table_grid import CSS, grids_html

        primary = sum(c.status is CellStatus.PRIMARY for c in self.tables.cells())
        return html_view(f"Protection: {self.result.status}, {primary} primary and "
                         f"{len(self.secondary)} secondary cells suppressed",
                         f"<style>{CSS}</style>", grids_html(self.tables, {}))


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
                   suppress_empty: bool = False, singletons: bool = False,
                   cost_lambda: Fraction = Fraction(1)) -> TableProtection:
    """Choose secondary cells so that every primary cell of ``tables`` is protected under the
    integer audit. Every published cell may be suppressed, zeros included, except those a
    rule of ``EXCLUSION_RULES`` keeps (``excluded`` of the result names them, so that an
    "infeasible" proof says over which cells it holds): protected (P) cells, and empty cells
    unless ``suppress_empty``. ``cost``: minimise the number of cells, their total value,
    their cost column (tau-Argus's COSTVAR; a cell without one costs its value), their
    contributors, or their distance to the primary cells, each cost transformed by
    ``cost_lambda`` (:mod:`statrecon.engines.suppression.costs`).
    ``singletons``: also protect every primary cell against each respondent alone in a
    suppressed cell (:func:`singleton_cells`, once the pattern is chosen: a secondary cell
    with one contributor counts too)."""
    if cost not in COSTS:
        raise StatreconError(f"cost {cost!r}: choose from {', '.join(COSTS)}")
    start = time.monotonic()
    problem = problem_from_tables(tables, apriori)
    cells = tables.cells()
    keys = tables.keys()
    rules = [exclusion(c, suppress_empty) for c in cells]
    candidates = [not c.status.suppressed and rule is None for c, rule in zip(cells, rules,
                                                                              strict=True)]
    excluded = {name: tuple(k for k, r in zip(keys, rules, strict=True) if r == name)
                for name in EXCLUSION_RULES}
    costs = cell_costs(tables, cost, cost_lambda)
    attacks: tuple[SingletonAudit, ...] = ()
    alone = singleton_cells(tables, suppressed=False) if singletons else []
    options = within_time(options or ProtectOptions(), time.monotonic() - start)
    if singletons:
        result, attacks = protect_against_singletons(problem, alone, candidates=candidates,
                                                     costs=costs, options=options)
    else:
        result = protect(problem, candidates=candidates, costs=costs, options=options)
    secondary = tuple(keys[j] for j in result.secondary)
    marked = tables.with_statuses({k: CellStatus.SECONDARY for k in secondary})
    return TableProtection(marked, result, secondary,
                           {name: got for name, got in excluded.items() if got}, attacks,
                           sum(result.hidden[s] for s in alone) if singletons else None)


FINISH = 6.0  # the finishing work after the search, in times building the problem took


def within_time(options: ProtectOptions, built_s: float) -> ProtectOptions:
    """``options`` with the search's time limit less the ``built_s`` seconds spent building
    the problem and ``FINISH`` times as many for what follows the search, so that
    ``--time-limit`` bounds the command and not the search alone. Each is linear in the
    cells: on issue 28's job (97,236 linked cells) building took 0.7 s and what followed
    the deadline 3.9 s (the pruned pattern's audits 0.9 s, the result 0.4 s, marking the
    tables 0.6 s, writing them 1.0 s, and the last solves past the deadline). The search
    keeps at least 1 % of its limit."""
    if options.time_limit is None:
        return options
    left = options.time_limit - (1.0 + FINISH) * built_s
    return replace(options, time_limit=max(options.time_limit / 100, left))


def cell_costs(tables: TableSet, cost: Cost, lam: Fraction = Fraction(1)
               ) -> list[Fraction] | None:
    """What suppressing each cell of ``tables`` costs (``keys()`` order) under the cost
    function ``cost`` and tau-Argus's lambda transformation; None: every cell 1."""
    cells = tables.cells()
    if cost == "count":
        return None
    if cost == "value":
        found = [c.value for c in cells]
    elif cost == "cost":
        found = [c.cost if c.cost is not None else c.value for c in cells]
    elif cost == "frequency":
        unknown = next((c for c in cells if c.frequency is None), None)
        if unknown is not None:
            raise StatreconError(f"--cost frequency: cell {unknown.name} has no frequency")
        found = [Fraction(c.frequency or 0) for c in cells]
    else:
        found = _distances(tables)
    return list(transform(found, lam))


def _distances(tables: TableSet) -> list[Fraction]:
    """Each cell's distance cost (``costs.distance_costs``), the least over its tables."""
    index = {k: j for j, k in enumerate(tables.keys())}
    best = [float("inf")] * len(index)
    for table in tables.tables:
        hierarchies = [table.hierarchies[v] for v in table.variables]
        steps = []
        for h in hierarchies:
            codes = h.codes()
            steps.append(tree_steps([-1 if (p := h.parent(c)) is None else h.index(p)
                                     for c in codes]))
        grid = table.grid
        flat_of = np.empty(grid.size, dtype=np.int64)
        flat_of[grid.ravel()] = np.arange(grid.size)  # cell -> its flat grid position
        primaries = [tuple(int(x) for x in np.unravel_index(flat_of[i], grid.shape))
                     for i, c in enumerate(table.cells) if c.status is CellStatus.PRIMARY]
        found = distance_costs(grid.shape, steps, primaries)
        for flat, position in enumerate(grid.flat):
            j = index[table.key(table.cells[int(position)])]
            best[j] = min(best[j], float(found.flat[flat]))
    return [Fraction(int(b)) if b != float("inf") else Fraction(1) for b in best]

