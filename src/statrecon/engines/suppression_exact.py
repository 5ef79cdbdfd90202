"""The exact method of secondary suppression: minimise the cost of the suppressed cells over
binary y_j (CP-SAT) under cuts that every protecting pattern satisfies, added lazily
(Fischetti-Salazar: solve the master, audit its pattern, cut off what failed, repeat).

Soundness. Every cut is a necessary condition of protection (see :mod:`.suppression_cuts`),
so the master's optimum is a lower bound on the cost of any protecting pattern. Once a
pattern passes the integer audit it is an upper bound. The master also asks for a pattern
strictly cheaper than the best audited one; when CP-SAT proves that INFEASIBLE the best one is
optimal, and when its OPTIMAL pattern passes the audit that pattern is. A time limit leaves
the best audited pattern with status ``feasible`` (or ``unknown`` when there is none), and
an INFEASIBLE master with no audited pattern proves that no pattern protects every cell.

Cut coefficients are exact fractions; CP-SAT needs integers, so each cut is multiplied by
the common denominator, or, when that is too large, by a factor t with every coefficient
rounded *up* (``Σ ceil(t c_j) y_j >= ceil(t r)`` follows from ``Σ c_j y_j >= r``).
"""

from __future__ import annotations

import math
from fractions import Fraction

from ortools.sat.python import cp_model

from statrecon.engines.cpsat import new_solver
from statrecon.engines.intervals import CellAudit
from statrecon.engines.suppression_cuts import Cut
from statrecon.engines.suppression_fast import (
    ProtectResult,
    Repair,
    Run,
    audit_pattern,
    fast,
    suppress_order,
)
from statrecon.errors import StatreconError

BIG = 2**40  # largest integer coefficient (or cost) handed to CP-SAT


def _integer_cut(cut: Cut) -> tuple[dict[int, int], int]:
    den = math.lcm(cut.rhs.denominator, *(c.denominator for c in cut.coefs.values()))
    t = Fraction(den) if cut.rhs * den <= BIG else Fraction(2**30) / cut.rhs
    return ({j: math.ceil(c * t) for j, c in cut.coefs.items()}, math.ceil(cut.rhs * t))


def _integer_costs(run: Run) -> dict[int, int]:
    cells = [j for j, c in enumerate(run.candidates) if c]
    den = math.lcm(1, *(run.costs[j].denominator for j in cells))
    costs = {j: int(run.costs[j] * den) for j in cells}
    if sum(costs.values()) > BIG:
        raise StatreconError("costs too large for the exact method (their sum in the "
                             "smallest common unit exceeds 2**40): use the fast method")
    return costs


class Master:
    """min Σ cost_j y_j over candidate cells subject to the cuts, optionally strictly below
    a known cost."""

    def __init__(self, run: Run, workers: int) -> None:
        self.run, self.workers = run, workers
        self.costs = _integer_costs(run)
        self.model = cp_model.CpModel()
        self.y = {j: self.model.new_bool_var(f"y{j}") for j in self.costs}
        self.model.minimize(sum(c * self.y[j] for j, c in self.costs.items()))
        self.added = 0

    def add(self, cuts: list[Cut]) -> None:
        for cut in cuts:
            coefs, rhs = _integer_cut(cut)
            self.model.add(sum(c * self.y[j] for j, c in coefs.items()) >= rhs)
        self.added += len(cuts)

    def cost(self, suppressed: frozenset[int]) -> int:
        return sum(c for j, c in self.costs.items() if j in suppressed)

    def solve(self, below: int | None, hint: frozenset[int] | None
              ) -> tuple[str, frozenset[int] | None]:
        """("optimal", pattern), ("infeasible", None) or ("unknown", None)."""
        model = self.model.clone()
        if below is not None:
            model.add(sum(c * self.y[j] for j, c in self.costs.items()) <= below - 1)
        if hint is not None:
            for j, var in self.y.items():
                model.add_hint(var, j in hint)
        left = self.run.deadline.left()
        if left is not None and left <= 0:
            return "unknown", None
        solver = new_solver(left=left, workers=self.workers)
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return "infeasible", None
        if status != cp_model.OPTIMAL:
            return "unknown", None
        chosen = frozenset(j for j, var in self.y.items() if solver.value(var))
        return "optimal", chosen | frozenset(self.run.primaries)


def _initial_cuts(run: Run) -> list[Cut]:
    """Each equation through a primary cell needs another suppressed cell, or it gives the
    cell away (also an LP cut: the equation's own multiplier)."""
    A, out = run.oracle.A, []
    prim = set(run.primaries)
    for i in run.primaries:
        col = run.problem.matrix[:, [i]].nonzero()[0]
        for k in col:
            cells = [int(c) for c in A.indices[A.indptr[k]:A.indptr[k + 1]]]
            if any(c in prim and c != i for c in cells):
                continue  # already met by another primary cell
            coefs = {c: Fraction(1) for c in cells if c != i and run.candidates[c]}
            out.append(Cut(coefs, Fraction(1), i, "lp"))
    return out


def exact(run: Run, workers: int = 2) -> ProtectResult:
    """The fast method for a first safe pattern and its cuts, then the master loop."""
    first = fast(run)
    if first.status == "infeasible":
        return first
    best = first if first.status == "feasible" else None
    master = Master(run, workers)
    run.pool.extend(_initial_cuts(run))
    master.add(run.pool)
    order = suppress_order(run)
    while True:
        below = None if best is None else master.cost(_set(best))
        run.progress("master", master.added, master.added)
        status, pattern = master.solve(below, None if best is None else _set(best))
        if status == "infeasible":
            if best is None:
                return _done(run, first, "infeasible", "no pattern satisfies the cuts: some "
                             "primary cell cannot be protected")
            return _done(run, best, "optimal", "no cheaper pattern satisfies the cuts")
        if status == "unknown" or pattern is None:
            return _timeout(run, best, first)
        state = Repair(pattern, order)
        prep, failing = audit_pattern(run, state)
        if any(a.verdict == "unknown" for a in failing):
            return _timeout(run, best, first)
        if not failing:
            return run.result(pattern, "optimal", state.audits, order,
                              note=f"optimal: proven after {master.added} cuts")
        new = [c for a in failing for c in run.oracle.cuts(prep, a, pattern)]
        run.pool.extend(new)
        master.add(new)


def _set(result: ProtectResult) -> frozenset[int]:
    return frozenset(j for j, h in enumerate(result.hidden) if h)


def _done(run: Run, base: ProtectResult, status: str, note: str) -> ProtectResult:
    audits: dict[int, CellAudit] = {a.cell: a for a in base.audit.cells}
    return run.result(_set(base), status, audits, base.secondary, note)  # type: ignore[arg-type]


def _timeout(run: Run, best: ProtectResult | None, first: ProtectResult) -> ProtectResult:
    if best is not None:
        return _done(run, best, "feasible", "time limit: the best audited pattern, "
                     "optimality not proven")
    return _done(run, first, "unknown", "time limit before any pattern passed the audit")
