"""The exact method of secondary suppression: minimise the cost of the suppressed cells over
binary y_j under cuts that every protecting pattern satisfies, added lazily (Fischetti-Salazar:
solve the master, audit its pattern, cut off what failed, repeat).

The master is a set-cover-like integer programme. HiGHS's MIP (LP bounds, branch and cut)
solves it far faster than CP-SAT (tau-Argus's OPT also uses an LP-based MIP): on easySdcTable's
z2 linked tables 0.7 s against 15-44 s, on a 3-way table of issue 15's bench 2.2 s against
more than 60 s (measured side by side). HiGHS computes in floats, so it gets the master only
when every integer coefficient, right-hand side and the total cost are at most 2**20 (each
sum then stays an exact double, far from HiGHS's tolerances); otherwise CP-SAT, in exact
integers. Either way the master's word is a solver status (OPTIMAL or INFEASIBLE), and every
pattern it proposes is audited exactly before it is returned. On a master too large for
HiGHS to prove anything, HiGHS still proposes patterns (each checked against every cut and
the cost bound in integers, then audited) and CP-SAT gives only the last word: that nothing
cheaper satisfies the cuts. CP-SAT searching alone did not improve on the fast method's
pattern of tau-Argus's act x region table (cost 112,650,446 in cents) in 60 s, where OPT
found one 4.3 % cheaper.

Soundness. Every cut is a necessary condition of protection (see :mod:`.cuts`),
so the master's optimum is a lower bound on the cost of any protecting pattern. Once a
pattern passes the integer audit it is an upper bound. The master also asks for a pattern
strictly cheaper than the best audited one; when the solver proves that INFEASIBLE the best one is
optimal, and when its OPTIMAL pattern passes the audit that pattern is (the same with
HiGHS's statuses). A time limit leaves
the best audited pattern with status ``feasible`` (or ``unknown`` when there is none), and
an INFEASIBLE master with no audited pattern proves that no pattern protects every cell.

Cut coefficients are exact fractions; CP-SAT needs integers, so each cut is multiplied by
the common denominator, or, when that is too large, by a factor t with every coefficient
rounded *up* (``Σ ceil(t c_j) y_j >= ceil(t r)`` follows from ``Σ c_j y_j >= r``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model

from statrecon.engines.intervals import CellAudit
from statrecon.engines.solvers import highs
from statrecon.engines.solvers.cpsat import new_solver
from statrecon.engines.suppression.cuts import Cut
from statrecon.engines.suppression.run import (
    ProtectResult,
    Repair,
    Run,
    audit_pattern,
    suppress_order,
)
from statrecon.errors import StatreconError

BIG = 2**40  # largest integer coefficient (or cost) handed to CP-SAT
FLOAT_SAFE = 2**20  # largest coefficient, right-hand side or total cost handed to HiGHS
HIGHS_SHARE = 0.8  # of the time left, given to one HiGHS master solve (it can overrun its
                   # limit by the length of one LP: 8.6 s for a 7.1 s limit on z3, measured)


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
        self.rows: list[tuple[dict[int, int], int]] = []
        self.float_safe = sum(self.costs.values()) <= FLOAT_SAFE
        self.proposed = 0  # patterns HiGHS proposed on a master its floats cannot prove

    def add(self, cuts: list[Cut]) -> None:
        for cut in cuts:
            coefs, rhs = _integer_cut(cut)
            self.model.add(sum(c * self.y[j] for j, c in coefs.items()) >= rhs)
            self.rows.append((coefs, rhs))
            self.float_safe &= rhs <= FLOAT_SAFE and max(coefs.values(), default=0) \
                <= FLOAT_SAFE
        self.added += len(cuts)

    @property
    def described(self) -> str:
        """The master's solvers, for the result's note."""
        if self.float_safe:
            return "HiGHS master"
        n = self.proposed
        return "CP-SAT master" + (f"; HiGHS proposed {n} pattern{'s' * (n != 1)}" if n else "")

    def cost(self, suppressed: frozenset[int]) -> int:
        return sum(c for j, c in self.costs.items() if j in suppressed)

    def solve(self, below: int | None, hint: frozenset[int] | None
              ) -> tuple[str, frozenset[int] | None]:
        """("optimal", pattern), ("infeasible", None), ("unknown", None), or ("proposed",
        pattern): a pattern that satisfies every cut and costs less than ``below``, checked
        in integers, found by HiGHS on a master too large for its floats to prove anything
        (the caller audits it and asks again, below it; only CP-SAT proves the end)."""
        left = self.run.deadline.left()
        if left is not None and left <= 0:
            return "unknown", None
        if self.float_safe:
            return self._highs(below, left)
        status, pattern = self._highs(below, left)
        if status == "optimal" and pattern is not None and self.satisfies(pattern, below):
            self.proposed += 1
            return "proposed", pattern
        return self._cpsat(below, hint, self.run.deadline.left())

    def satisfies(self, pattern: frozenset[int], below: int | None) -> bool:
        """Every cut met and the cost under ``below``, in integers."""
        return (below is None or self.cost(pattern) < below) and all(
            sum(c for j, c in coefs.items() if j in pattern) >= rhs
            for coefs, rhs in self.rows)

    def _cpsat(self, below: int | None, hint: frozenset[int] | None, left: float | None
               ) -> tuple[str, frozenset[int] | None]:
        if left is not None and left <= 0:
            return "unknown", None
        model = self.model.clone()
        if below is not None:
            model.add(sum(c * self.y[j] for j, c in self.costs.items()) <= below - 1)
        if hint is not None:
            for j, var in self.y.items():
                model.add_hint(var, j in hint)
        solver = new_solver(left=left, workers=self.workers)
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return "infeasible", None
        if status != cp_model.OPTIMAL:
            return "unknown", None
        chosen = frozenset(j for j, var in self.y.items() if solver.value(var))
        return "optimal", chosen | frozenset(self.run.primaries)


    def _highs(self, below: int | None, left: float | None
               ) -> tuple[str, frozenset[int] | None]:
        """The master on HiGHS's MIP, with no relative gap allowed."""
        cols = list(self.costs)
        index = {j: k for k, j in enumerate(cols)}
        entries = [(r, index[j], c) for r, (coefs, _) in enumerate(self.rows)
                   for j, c in coefs.items()]
        rows, at, data = (zip(*entries, strict=True) if entries else ((), (), ()))
        A = sp.csr_matrix((np.array(data, dtype=float), (np.array(rows, dtype=np.int64),
                                                         np.array(at, dtype=np.int64))),
                          shape=(len(self.rows), len(cols)))
        cost = np.array([self.costs[j] for j in cols], dtype=float)
        row_lo = np.array([r for _, r in self.rows], dtype=float)
        row_hi = np.full(len(self.rows), np.inf)
        if below is not None:
            A = sp.vstack([A, sp.csr_matrix(cost.reshape(1, -1))], format="csr")
            row_lo, row_hi = np.append(row_lo, -np.inf), np.append(row_hi, below - 1)
        # HiGHS's MIP checks its clock between LPs: leave it room
        got = highs.solve(cost, A, row_lo, row_hi, np.zeros(len(cols)), np.ones(len(cols)),
                          time_limit=None if left is None else max(HIGHS_SHARE * left, 0.001),
                          integrality=np.ones(len(cols), dtype=bool), mip_rel_gap=0.0)
        if got.status == "infeasible":
            return "infeasible", None
        if got.status != "optimal":  # a time or iteration limit, or a failure
            return "unknown", None
        chosen = frozenset(j for j, v in zip(cols, got.x, strict=True) if v > 0.5)
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


def exact(run: Run, first: ProtectResult, workers: int = 2) -> ProtectResult:
    """The master loop, from ``first``: the fast method's pattern on this run (its cuts are
    in ``run.pool``; the registry in :mod:`.entry` runs it first)."""
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
            return _done(run, best, "optimal", "no cheaper pattern satisfies the cuts "
                         f"({master.described})")
        if status == "unknown" or pattern is None:
            return _timeout(run, best, first)
        state = Repair(pattern, order)
        prep, failing = audit_pattern(run, state)
        if any(a.verdict == "unknown" for a in failing):
            return _timeout(run, best, first)
        if not failing and status == "proposed":  # cheaper, not proven least: ask below it
            best = run.result(pattern, "feasible", state.audits, order)
            continue
        if not failing:
            return run.result(pattern, "optimal", state.audits, order,
                              note=f"optimal: proven after {master.added} cuts "
                                   f"({master.described})")
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
