"""The fast method of secondary suppression and what both methods share: the options, the
result, and the state of one run (:class:`Run`). The public entry is
:func:`statrecon.engines.suppression.protect`.

Fast: the Gaussian-elimination pass (:mod:`.suppression_gauss`) suppresses cells until no
primary cell is determined by the equations alone; then a repair loop audits the pattern
exactly and, for each primary cell still unprotected, suppresses the cell with the least cost
per unit of what its cut asks (:mod:`.suppression_cuts`), until every primary cell passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from statrecon.engines.cpsat import Deadline
from statrecon.engines.intervals import AuditResult, CellAudit, IntervalProblem
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.suppression_cuts import AuditMap, Cut, Oracle
from statrecon.engines.suppression_gauss import gauss_pattern

Method = Literal["fast", "exact"]
ProtectStatus = Literal["optimal", "feasible", "unknown", "infeasible"]
METHODS: tuple[Method, ...] = ("fast", "exact")
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ProtectOptions:
    """``time_limit``: seconds for the whole run (None: none); past it the status is
    ``unknown``, or ``feasible`` with the best pattern that passed the integer audit.
    ``on_progress(stage, done, total)``: stage is "gauss", "audit" or "master".
    ``workers``: CP-SAT search workers of the exact method's master problem.
    ``audit_map``: how the cells of one pattern are audited (default: in turn; the runs
    layer may pass a pool or Dask map, see ``suppression_cuts.AuditMap``)."""

    method: Method = "fast"
    time_limit: float | None = 60.0
    on_progress: Progress | None = None
    workers: int = 2
    audit_map: AuditMap | None = None


@dataclass(frozen=True)
class ProtectResult:
    """The final pattern (``hidden``: primary and secondary cells), its secondary cells in
    the order they were chosen, their total cost, the status, and the integer audit of every
    primary cell under ``hidden``. ``rounds``: patterns audited; ``cuts``: cuts generated."""

    hidden: tuple[bool, ...]
    secondary: tuple[int, ...]
    cost: Fraction
    status: ProtectStatus
    audit: AuditResult
    rounds: int
    elapsed_s: float
    note: str = ""
    cuts: int = 0


@dataclass
class Run:
    """One protection run: the problem, what may be suppressed and at what cost, the audit
    oracle, the clock, and the cuts found so far (shared by both methods)."""

    problem: IntervalProblem
    candidates: tuple[bool, ...]
    costs: tuple[Fraction, ...]
    oracle: Oracle
    deadline: Deadline
    on_progress: Progress | None
    start: float = field(default_factory=time.perf_counter)
    pool: list[Cut] = field(default_factory=list)

    @property
    def primaries(self) -> tuple[int, ...]:
        return self.oracle.primaries

    def progress(self, stage: str, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(stage, done, total)

    def result(self, suppressed: frozenset[int], status: ProtectStatus,
               audits: dict[int, CellAudit], order: Sequence[int] = (), note: str = ""
               ) -> ProtectResult:
        prim = set(self.primaries)
        secondary = [j for j in order if j in suppressed and j not in prim]
        secondary += sorted(j for j in suppressed if j not in prim and j not in secondary)
        elapsed = time.perf_counter() - self.start
        return ProtectResult(
            hidden=tuple(j in suppressed for j in range(self.problem.n_cells)),
            secondary=tuple(secondary),
            cost=sum((self.costs[j] for j in secondary), Fraction(0)), status=status,
            audit=AuditResult(tuple(audits[i] for i in self.primaries if i in audits),
                              elapsed),
            rounds=self.oracle.audits, elapsed_s=elapsed, note=note, cuts=len(self.pool))


def suppress_order(run: Run) -> list[int]:
    """Candidate cells, those to suppress first first: cheapest, then smallest, then index."""
    p = run.problem
    return sorted((j for j in range(p.n_cells) if run.candidates[j]),
                  key=lambda j: (run.costs[j], p.values[j], j))


def fast(run: Run) -> ProtectResult:
    """Gaussian elimination, then the audit-driven repair loop (module docstring)."""
    p = run.problem
    fixed = [j for j in range(p.n_cells) if not p.hidden[j] and not run.candidates[j]]
    secondary, _ = gauss_pattern(p.matrix, run.primaries, fixed,
                                 list(reversed(suppress_order(run))),
                                 lambda d, t: run.progress("gauss", d, t))
    return repair(run, frozenset((*run.primaries, *secondary)), secondary)


@dataclass
class Repair:
    """Where the repair loop stands: the pattern, the order cells joined it, and the audit
    of its primary cells."""

    suppressed: frozenset[int]
    order: list[int]
    audits: dict[int, CellAudit] = field(default_factory=dict)


def repair(run: Run, suppressed: frozenset[int], order: Sequence[int]) -> ProtectResult:
    """Audit; for each primary cell still unprotected add the cheapest cell its cuts offer;
    until every primary cell is protected, one is proven impossible, or time runs out. The
    LP audit screens each pattern; the integer audit runs once the LP audit passes."""
    state = Repair(suppressed, list(order))
    while True:
        prep, failing = audit_pattern(run, state)
        if failing and run.deadline.expired:  # cached audits alone would not see the clock
            return _unknown(run, state, failing[0])
        if not failing:
            return run.result(state.suppressed, "feasible", state.audits, state.order)
        unknown = [a for a in failing if a.verdict == "unknown"]
        if unknown:
            return _unknown(run, state, unknown[0])
        added: set[int] = set()
        for a in failing:
            cuts = run.oracle.cuts(prep, a, state.suppressed)
            run.pool.extend(cuts)
            # a violated cut whose cells are all suppressed already cannot be met by adding
            # cells (nor can any cut without cells): no pattern protects cell a
            stuck = next((c for c in cuts if not _open_cells(c, state.suppressed)), None)
            if stuck is not None:
                return _infeasible(run, state, a, stuck)
            added.add(_cheapest(run, cuts, state.suppressed))
        state.order += sorted(added, key=lambda j: (run.costs[j], j))
        state.suppressed = state.suppressed | added


def audit_pattern(run: Run, state: Repair) -> tuple[Prepared, list[CellAudit]]:
    """The LP audit of the pattern, then, if every primary cell passes it, the integer
    audit; the primary cells that fail (``state.audits``: the last audit of each)."""
    for integer in (False, True):
        prep, state.audits = run.oracle.audit(state.suppressed, run.deadline, integer)
        failing = [a for a in state.audits.values() if a.verdict != "protected"]
        run.progress("audit", len(run.primaries) - len(failing), len(run.primaries))
        if failing:
            return prep, failing
    return prep, []


def _open_cells(cut: Cut, suppressed: frozenset[int]) -> list[int]:
    """The cells of ``cut`` not suppressed yet: adding one of them is what can meet it."""
    return [j for j in cut.coefs if j not in suppressed]


def _cheapest(run: Run, cuts: list[Cut], suppressed: frozenset[int]) -> int:
    """The cell, not suppressed yet, with the least cost per unit of the first cut's
    shortfall it covers (a cell of the LP cut if there is one, else of the neighbourhood
    cut). Never a suppressed cell: each round of the repair loop grows the pattern, so the
    loop ends."""
    cut = cuts[0]
    short = cut.rhs - cut.lhs(suppressed)
    return min(_open_cells(cut, suppressed),
               key=lambda j: (run.costs[j] / min(cut.coefs[j], short),
                              run.problem.values[j], j))


def _infeasible(run: Run, state: Repair, audit: CellAudit, cut: Cut) -> ProtectResult:
    why = "its LP interval" if cut.kind == "lp" else "its interval"
    note = (f"cell {audit.name!r} cannot be protected: no cell that may be suppressed "
            f"widens {why} (verdict {audit.verdict} with every useful cell suppressed)")
    return run.result(state.suppressed, "infeasible", state.audits, state.order, note)


def _unknown(run: Run, state: Repair, audit: CellAudit) -> ProtectResult:
    why = "time limit" if run.deadline.expired else "the audit could not prove its bounds"
    note = f"cell {audit.name!r}: protection not established ({why})"
    return run.result(state.suppressed, "unknown", state.audits, state.order, note)
