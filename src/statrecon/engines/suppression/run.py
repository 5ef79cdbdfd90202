"""What both methods of secondary suppression share: the options, the result, the state of
one run (:class:`Run`), the order in which candidate cells are offered, and the audit of a
pattern (witness tables first, then exact audits). The methods (:mod:`.fast`, :mod:`.exact`)
take a :class:`Run`; the public entry is :func:`statrecon.engines.suppression.protect`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Literal

import numpy as np

from statrecon.engines.intervals import AuditResult, CellAudit, IntervalProblem
from statrecon.engines.intervals.moves import move
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.intervals.reach import Reached, protected_audit, reach
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression.cuts import AuditMap, Cut, Oracle
from statrecon.engines.suppression.inner import breadth, inner_cells
from statrecon.engines.suppression.routes import Routes
from statrecon.errors import check_choice, check_count, check_time_limit

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
    layer may pass a pool or Dask map, see ``cuts.AuditMap``).
    ``prune``: the fast method then publishes again the secondary cells its witnesses
    show are not needed (:mod:`.prune`). Like every ``*Options``: the field's default
    (``ProtectOptions.time_limit``) is the engine's; a value out of range (a method not in
    ``METHODS``) raises ``OptionError`` when the options are made."""

    method: Method = "fast"
    time_limit: float | None = 60.0
    on_progress: Progress | None = None
    workers: int = 2
    audit_map: AuditMap | None = None
    prune: bool = True

    def __post_init__(self) -> None:
        check_choice(self, "method", METHODS)
        check_time_limit(self)
        check_count(self, "workers")


@dataclass(frozen=True)
class ProtectResult:
    """The final pattern (``hidden``: primary and secondary cells), its secondary cells in
    the order they were chosen, their total cost, the status, and the integer audit of every
    primary cell under ``hidden`` (``audit``: every primary cell once a pattern passed; a
    proof of infeasibility may come before any audit, so ``primary`` lists them all).
    ``rounds``: patterns audited; ``cuts``: cuts generated."""

    hidden: tuple[bool, ...]
    secondary: tuple[int, ...]
    cost: Fraction
    status: ProtectStatus
    audit: AuditResult
    rounds: int
    elapsed_s: float
    note: str = ""
    cuts: int = 0
    primary: tuple[int, ...] = ()


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
    prune: bool = True

    @property
    def primaries(self) -> tuple[int, ...]:
        return self.oracle.primaries

    @cached_property
    def inner(self) -> list[tuple[int, ...]]:
        """The inner cells each cell sums (:func:`.inner.inner_cells`)."""
        return inner_cells(self.problem.matrix)

    @cached_property
    def routes(self) -> Routes:
        """The route LPs of :mod:`.routes` over the cells that are or may be suppressed."""
        p = self.problem
        movable = np.flatnonzero([h or c for h, c in zip(p.hidden, self.candidates,
                                                          strict=True)])
        return Routes(p, movable, [float(c) for c in self.costs])

    @cached_property
    def breadth(self) -> list[float]:
        return breadth(self.problem, self.inner)

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
            rounds=self.oracle.audits, elapsed_s=elapsed, note=note, cuts=len(self.pool),
            primary=self.primaries)


def suppress_order(run: Run, zeros_last: bool = False) -> list[int]:
    """Candidate cells, those to suppress first first: cheapest, then (``zeros_last``: the
    non-zero cells before the zeros) smallest, then the narrowest (GaussSuppression publishes
    first the cells of many inner cells, :func:`.inner.breadth`), then index."""
    p, wide = run.problem, run.breadth
    return sorted((j for j in range(p.n_cells) if run.candidates[j]),
                  key=lambda j: (run.costs[j], zeros_last and p.values[j] == 0, p.values[j],
                                 wide[j], j))


@dataclass
class Repair:
    """Where the repair loop stands: the pattern, the order cells joined it, the audit of
    its primary cells, and the primary cells already proven protected (``proven``: under
    this pattern or a part of it of ``proven_at`` cells, which suppressing more cells cannot
    undo). ``gauss``: the secondary cells of the Gaussian pass the pattern started from,
    ``offered``: the order that pass offered the candidates in (empty: no such pass)."""

    suppressed: frozenset[int]
    order: list[int]
    gauss: tuple[int, ...] = ()
    offered: tuple[int, ...] = ()
    audits: dict[int, CellAudit] = field(default_factory=dict)
    proven: dict[int, CellAudit] = field(default_factory=dict)
    proven_at: dict[int, int] = field(default_factory=dict)
    reached: dict[int, Reached] = field(default_factory=dict)  # witnesses of cells not proven

    def grow(self, run: Run, added: set[int]) -> None:
        self.order += sorted(added, key=lambda j: (run.costs[j], j))
        self.suppressed = self.suppressed | added


def by_witness(run: Run, state: Repair, one_by_one: int | None = None) -> list[int]:
    """Prove what witness tables can (:mod:`statrecon.engines.intervals.reach`): few LPs
    cover many cells. Returns the primary cells left unproven. ``one_by_one``: as
    :func:`statrecon.engines.intervals.moves.move`'s."""
    todo = [i for i in run.primaries if i not in state.proven]
    prep = run.oracle.prepared(state.suppressed)
    told = [time.monotonic()]

    def tick(reached: dict[int, Reached]) -> None:  # at most once a second: met() is exact
        if time.monotonic() >= told[0] + 1.0:
            told[0] = time.monotonic()
            met = sum(r.met() for r in reached.values())
            run.progress("witness", len(state.proven) + met, len(run.primaries))

    reached = reach(prep, todo, run.deadline, on_step=tick, start=state.reached)
    move(prep, reached, run.deadline, on_step=tick, one_by_one=one_by_one)
    state.reached = reached
    return keep_met(run, state, prep, reached, todo)


def keep_met(run: Run, state: Repair, prep: Prepared, reached: dict[int, Reached],
             todo: list[int]) -> list[int]:
    """Record the cells whose witnesses meet their protection; the others of ``todo``."""
    for i, r in reached.items():
        if r.met():
            state.proven[i] = protected_audit(prep, r)
            state.proven_at[i] = len(state.suppressed)
    run.progress("witness", len(state.proven), len(run.primaries))
    return [i for i in todo if i not in state.proven]


def audit_pattern(run: Run, state: Repair) -> tuple[Prepared, list[CellAudit]]:
    """Witness tables first (:func:`by_witness`: they prove most cells of a good pattern
    with a few LPs and no certificate), then the LP audit of the cells they leave, then, if
    every one of those passes it, their integer audit; the primary cells that fail
    (``state.audits``: the last audit of every primary cell)."""
    todo = by_witness(run, state)
    prep = run.oracle.prepared(state.suppressed)
    for integer in (False, True):
        if not todo:
            break
        prep, audits = run.oracle.audit(state.suppressed, run.deadline, integer, todo)
        state.audits = {**state.proven, **audits}
        failing = [a for a in audits.values() if a.verdict != "protected"]
        run.progress("audit", len(run.primaries) - len(failing), len(run.primaries))
        if failing:
            return prep, failing
    state.audits = {**state.proven, **state.audits}
    return prep, []
