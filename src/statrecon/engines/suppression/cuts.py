"""What secondary suppression learns from auditing a pattern: which primary cells it leaves
unprotected, and a constraint (a *cut*) on the suppression variables y (y_j = 1: cell j
suppressed) that every protecting pattern satisfies and the audited one violates.

Two kinds, both exact (Fractions) and valid for every pattern, so an optimum under them is a
lower bound on the true optimum:

- **LP cut** (Fischetti and Salazar). For multipliers g on the equations and a primary cell
  i put d = e_i - Aᵀg. Every completion x has ``x_i - v_i = d·(x - v)`` (v the true table),
  and under a pattern only the suppressed cells can move, within their a-priori bounds, so
  the attacker's LP maximum of x_i is at most ``v_i + Σ_{j suppressed} w_j`` with
  ``w_j = d_j (hi_j - v_j)`` for d_j > 0 and ``-d_j (v_j - lo_j)`` for d_j < 0 (minimum
  alike). Integer protection implies LP protection (the integer interval lies inside the LP
  one), so a protecting pattern has ``Σ_j w_j y_j >= level``. With g the LP dual of the
  audited pattern the sum over its cells is the LP gap itself, so the cut cuts it off.
- **Neighbourhood cut.** Suppressing more cells only widens every interval (the attacker
  knows less), and cells that share no equation with the component of i in pattern S leave
  that component, hence i's interval, unchanged. So if S leaves i unprotected, every
  protecting pattern contains a cell outside S that shares an equation with that component
  (if T protects, so does T ∪ S, which must differ from S next to the component).

A level 0 cell must still not be disclosed: its integer interval must have width at least
one lattice step 1/scale, which the LP interval then has too (both sides' cuts summed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import scipy.sparse as sp

from statrecon.engines.intervals import AuditOptions, CellAudit, IntervalProblem, audit_cell
from statrecon.engines.intervals.problem import Prepared, prepare
from statrecon.engines.intervals.results import Bound, Pairs
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression.screen import Screened, float_gap, meets, screen_cells

Side = Literal["upper", "lower"]
# audits the given cells of a prepared problem, results in the same order: in turn here, on
# a pool or Dask when the caller (runs/) passes its own
AuditMap = Callable[[Prepared, list[int], AuditOptions], list[CellAudit]]


def audit_in_turn(prep: Prepared, cells: list[int], options: AuditOptions
                  ) -> list[CellAudit]:
    return [audit_cell(prep, i, options) for i in cells]


@dataclass(frozen=True)
class Requirement:
    """What protecting cell i asks of the attacker's interval: the gaps ``sides`` (upper:
    max - value, lower: value - min) must add up to at least ``level``."""

    sides: tuple[Side, ...]
    level: Fraction


def requirements(p: IntervalProblem, i: int) -> tuple[Requirement, ...]:
    low, up = p.protection_of(i)
    out = []
    if up > 0:
        out.append(Requirement(("upper",), up))
    if low > 0:
        out.append(Requirement(("lower",), low))
    sliding = p.sliding_of(i)
    if sliding > 0:
        out.append(Requirement(("upper", "lower"), max(sliding, Fraction(1, p.scale))))
    return tuple(out) or (Requirement(("upper", "lower"), Fraction(1, p.scale)),)


@dataclass(frozen=True)
class Cut:
    """``Σ coefs[j] y_j >= rhs`` over candidate cells (primary cells, always suppressed, are
    moved to the right; cells that may not be suppressed dropped). ``rhs`` > 0 and every
    coefficient is in (0, rhs] (a larger one is capped: y is binary). ``kind``: lp or
    neighbourhood; ``cell``: the primary cell it protects."""

    coefs: dict[int, Fraction]
    rhs: Fraction
    cell: int
    kind: Literal["lp", "neighbourhood"]

    def lhs(self, suppressed: set[int] | frozenset[int]) -> Fraction:
        return sum((c for j, c in self.coefs.items() if j in suppressed), Fraction(0))

    def violated(self, suppressed: set[int] | frozenset[int]) -> bool:
        return self.lhs(suppressed) < self.rhs


class Oracle:
    """Audits patterns of one problem, and turns each failure into cuts. Audits are cached
    by (cell, cells of its component): an unchanged component gives the same audit."""

    def __init__(self, problem: IntervalProblem, candidates: tuple[bool, ...],
                 audit_map: AuditMap | None = None) -> None:
        self.problem = problem
        self.candidates = candidates
        self.primaries = tuple(j for j, h in enumerate(problem.hidden) if h)
        self.A = sp.csr_matrix(problem.matrix)
        self.cache: dict[tuple[int, bool, frozenset[int]], CellAudit] = {}
        self.screens: dict[tuple[int, frozenset[int]], Screened] = {}
        self.last: tuple[frozenset[int], Prepared] | None = None
        self._components: tuple[Prepared, dict[int, frozenset[int]]] | None = None
        self.audits = 0
        self.audit_map = audit_map or audit_in_turn

    def audit(self, suppressed: frozenset[int], deadline: Deadline, integer: bool = True,
              cells: Sequence[int] | None = None) -> tuple[Prepared, dict[int, CellAudit]]:
        """The audit of the primary ``cells`` (default: all) under the pattern
        ``suppressed``: the integer audit, or with ``integer`` False the LP audit alone (a
        cheaper screen: a failure it proves is a failure of the integer audit too, the
        integer interval lying inside)."""
        prep = self.prepared(suppressed)
        self.audits += 1
        todo = []
        out: dict[int, CellAudit] = {}
        for i in self.primaries if cells is None else cells:
            key = (i, integer, self.component_cells(prep, i))
            if key in self.cache:
                out[i] = self.cache[key]
            else:
                todo.append((i, key))
        options = AuditOptions(time_limit=None, integer=integer, deadline=deadline)
        for (i, key), got in zip(todo, self.audit_map(prep, [i for i, _ in todo], options),
                                 strict=True):
            if got.verdict != "unknown":  # an unknown is not kept: more time may settle it
                self.cache[key] = got
            out[i] = got
        return prep, out

    def prepared(self, suppressed: frozenset[int]) -> Prepared:
        """The problem with the pattern ``suppressed`` hidden, prepared once per pattern."""
        if self.last is None or self.last[0] != suppressed:
            hidden = tuple(j in suppressed for j in range(self.problem.n_cells))
            self.last = (suppressed, prepare(_with_hidden(self.problem, hidden),
                                             checked=True))
        return self.last[1]

    def component_cells(self, prep: Prepared, i: int) -> frozenset[int]:
        """The cells of cell i's component in ``prep``, one frozenset per component: a key
        of the caches. Made afresh for each cell, 30,000 cells of one 40,000-cell component
        filled 24 GB (issue 28's scale run at 40 % primary cells)."""
        if self._components is None or self._components[0] is not prep:
            self._components = (prep, {})
        made = self._components[1]
        ci = prep.component_of[i]
        if ci not in made:
            made[ci] = frozenset(prep.components[ci].cells)
        return made[ci]

    def screen(self, suppressed: frozenset[int], cells: Sequence[int], deadline: Deadline
               ) -> tuple[Prepared, dict[int, Screened]]:
        """HiGHS's float LP interval of each of ``cells`` under the pattern (no proof, see
        :mod:`.screen`), cached like the audits."""
        prep = self.prepared(suppressed)
        out: dict[int, Screened] = {}
        todo = []
        for i in cells:
            key = (i, self.component_cells(prep, i))
            if key in self.screens:
                out[i] = self.screens[key]
            else:
                todo.append((i, key))
        for (i, key), got in zip(todo, screen_cells(prep, [i for i, _ in todo], deadline),
                                 strict=True):
            if got.solved:
                self.screens[key] = got
            out[i] = got
        return prep, out

    def screen_passes(self, s: Screened) -> bool:
        """Whether the float LP interval meets every requirement of the cell (a guess: the
        exact audit decides)."""
        v = self.problem.values[s.cell]
        return s.solved and all(
            meets(sum(float_gap(v, side, s.bounds[side]) for side in req.sides), req.level)
            for req in requirements(self.problem, s.cell))

    def cuts(self, prep: Prepared, audit: CellAudit, suppressed: frozenset[int]) -> list[Cut]:
        """Cuts that every protecting pattern satisfies and ``suppressed`` violates, for a
        primary cell the audit proved unprotected: LP cuts for the requirements its LP
        interval fails, and the neighbourhood cut."""
        bounds: dict[Side, Bound] = {"upper": audit.lp.upper, "lower": audit.lp.lower}
        values = {s: b.value for s, b in bounds.items() if _finite(b)}
        mults = {s: b.multipliers for s, b in bounds.items()}
        return self._cuts(prep, audit.cell, values, mults, suppressed)

    def screen_cuts(self, prep: Prepared, s: Screened, suppressed: frozenset[int]
                    ) -> list[Cut]:
        """The cuts of :meth:`cuts` from a float screen: the duals rounded to fractions are
        multipliers like any other, so the LP cuts stay valid (only perhaps weaker)."""
        values = {side: Fraction(b) for side, b in s.bounds.items() if b is not None}
        return self._cuts(prep, s.cell, values, s.multipliers, suppressed, lazy=True)

    def _cuts(self, prep: Prepared, i: int, values: Mapping[Side, Fraction | None],
              mults: Mapping[Side, Pairs],
              suppressed: frozenset[int], lazy: bool = False) -> list[Cut]:
        """The LP cuts, then the neighbourhood cut (``lazy``: only when no LP cut has a
        cell left to suppress, the one case a caller picking a cell needs it)."""
        out = []
        for req in requirements(self.problem, i):
            cut = self._lp_cut(i, req, values, mults)
            if cut is not None and cut.violated(suppressed):
                out.append(cut)
        if not lazy or not any(j not in suppressed for c in out for j in c.coefs):
            out.append(self.neighbourhood(prep, i, suppressed))
        return out

    def neighbourhood(self, prep: Prepared, i: int, suppressed: frozenset[int]) -> Cut:
        comp = prep.components[prep.component_of[i]]
        near: set[int] = set()
        A = self.A
        for k in comp.equations:
            near.update(int(c) for c in A.indices[A.indptr[k]:A.indptr[k + 1]])
        cells = sorted(j for j in near if j not in suppressed and self.candidates[j])
        return Cut(dict.fromkeys(cells, Fraction(1)), Fraction(1), i, "neighbourhood")

    def _lp_cut(self, i: int, req: Requirement, values: Mapping[Side, Fraction | None],
                mults: Mapping[Side, Pairs]) -> Cut | None:
        """The LP cut of one requirement from the bound ``values`` of each side (absent or
        None: unbounded or unknown, no multipliers to cut with) and their multipliers."""
        if not all(values.get(s) is not None for s in req.sides):
            return None
        gap = sum((self._gap(i, s, values[s]) for s in req.sides), Fraction(0))
        if gap >= req.level:
            return None  # the LP interval passes: only the integers fail
        w: dict[int, Fraction | None] = {}
        for s in req.sides:
            for j, wj in self.weights(i, s, mults[s]).items():
                old = w.get(j, Fraction(0))
                w[j] = None if wj is None or old is None else old + wj
        return self._as_cut(i, w, req.level)

    def _gap(self, i: int, side: Side, bound: Fraction | None) -> Fraction:
        v = self.problem.values[i]
        assert bound is not None
        return bound - v if side == "upper" else v - bound

    def weights(self, i: int, side: Side, multipliers: Pairs
                ) -> dict[int, Fraction | None]:
        """w_j of the module docstring for every cell with d_j != 0 (None: infinite, the
        cell has no upper bound in the direction that would need it)."""
        p, A = self.problem, self.A
        d: dict[int, Fraction] = {i: Fraction(1)}
        for k, g in multipliers:
            for c, a in zip(A.indices[A.indptr[k]:A.indptr[k + 1]],
                            A.data[A.indptr[k]:A.indptr[k + 1]], strict=True):
                d[int(c)] = d.get(int(c), Fraction(0)) - g * int(a)
        out: dict[int, Fraction | None] = {}
        for j, dj in d.items():
            if not dj:
                continue
            up = (dj > 0) == (side == "upper")  # x_j pushed to its upper bound
            hi = p.upper[j]
            if up:
                out[j] = None if hi is None else abs(dj) * (hi - p.values[j])
            else:
                out[j] = abs(dj) * (p.values[j] - p.lower[j])
        return out

    def _as_cut(self, i: int, w: dict[int, Fraction | None], level: Fraction) -> Cut:
        hidden = self.problem.hidden
        fixed = sum((v for j, v in w.items() if hidden[j] and v is not None), Fraction(0))
        if any(v is None for j, v in w.items() if hidden[j]):
            fixed = level  # a primary cell alone reaches infinity: the cut always holds
        rhs = level - fixed
        coefs = {j: rhs if v is None else min(v, rhs) for j, v in w.items()
                 if not hidden[j] and self.candidates[j] and (v is None or v > 0)}
        return Cut(dict(sorted(coefs.items())), rhs, i, "lp")


def _finite(b: Bound) -> bool:
    return b.proven and b.value is not None


def _with_hidden(p: IntervalProblem, hidden: tuple[bool, ...]) -> IntervalProblem:
    return IntervalProblem(matrix=p.matrix, rhs=p.rhs, values=p.values, hidden=hidden,
                           lower=p.lower, upper=p.upper, scale=p.scale,
                           cell_names=p.cell_names, equation_names=p.equation_names,
                           protection=p.protection, sliding=p.sliding)
