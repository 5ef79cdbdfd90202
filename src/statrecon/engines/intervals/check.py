"""Re-check a cell audit's proofs from the problem alone, in exact rationals, without the
components, the floats or any solver the audit used: what a reader of the certificates
would do. CP-SAT's INFEASIBLE (proof ``infeasible``) is a solver's word and is not redone
here; its witness is checked like every other."""

from __future__ import annotations

import math
import weakref
from fractions import Fraction
from typing import ClassVar

import scipy.sparse as sp

from statrecon.engines.intervals.exact import Side, implied_bound
from statrecon.engines.intervals.problem import IntervalProblem, first_failing_row
from statrecon.engines.intervals.results import Bound, CellAudit


def check_cell(problem: IntervalProblem, audit: CellAudit) -> list[str]:
    """What fails to check among the proven bounds of ``audit`` (empty: all hold)."""
    out = []
    for kind, iv in (("lp", audit.lp), ("integer", audit.integer)):
        if iv is None:
            continue
        sides: tuple[tuple[Side, Bound], ...] = (("lower", iv.lower), ("upper", iv.upper))
        for side, b in sides:
            why = check_bound(problem, audit.cell, side, b, lattice=kind == "integer")
            if why is not None:
                out.append(f"{kind} {side}: {why}")
    return out


def check_bound(problem: IntervalProblem, j: int, side: Side, bound: Bound,
                lattice: bool = False) -> str | None:
    """None when the bound's proof holds (or it claims nothing: unknown), else why not.
    ``lattice``: an integer bound (its witness must lie on the lattice 1/scale). A reached
    value (``reach``) is checked by its witness alone: a completion of the table (none: the
    true table) in which the cell takes that value."""
    if bound.status == "reached":
        return "a reached value without its value" if bound.value is None else \
            _witness(problem, j, bound, lattice)
    if not bound.proven:
        return None
    if bound.proof == "ray":
        return None if side == "upper" and bound.value is None and \
            ray_holds(problem, j, bound) else "the ray does not check"
    if bound.value is None:
        return "a finite proof for an infinite bound"
    why = _witness(problem, j, bound, lattice)
    if why is not None or bound.proof == "infeasible":
        return why
    implied = implied_by(problem, j, side, dict(bound.multipliers))
    if implied is None:
        return "the multipliers imply no bound"
    if lattice:
        s = problem.scale
        implied = Fraction(math.ceil(implied * s) if side == "lower"
                           else math.floor(implied * s), s)
    return None if implied == bound.value else \
        f"the multipliers imply {implied}, not {bound.value}"


def _witness(problem: IntervalProblem, j: int, bound: Bound, lattice: bool) -> str | None:
    """Why the witness (the published values with ``bound.witness``'s cells replaced) is not
    a table the attacker must allow, or None. The published values' own facts are read once
    per problem (``_Base``), so a witness costs what it changes, not the whole table."""
    base = _Base.of(problem)
    changed: dict[int, Fraction] = {}
    for i, v in bound.witness:
        if not problem.hidden[i]:
            return f"the witness changes published cell {problem.cell_names[i]!r}"
        changed[i] = Fraction(v)
    if changed.get(j, problem.values[j]) != bound.value:
        return f"the witness has {changed.get(j, problem.values[j])}, not {bound.value}"
    if lattice:
        off = [i for i, v in changed.items() if (v * problem.scale).denominator != 1]
        if off or any(i not in changed for i in base.off_lattice):
            return "the witness is off the lattice"
    broken = [i for i, v in changed.items() if not base.within(i, v)]
    broken += [i for i in base.out_of_bounds if i not in changed]
    if broken:
        return f"the witness breaks the bounds of {problem.cell_names[min(broken)]!r}"
    bad = base.first_failing_row(changed)
    return None if bad is None else \
        f"the witness breaks equation {problem.equation_names[bad]!r}"


class _Base:
    """The published values' facts, once per problem: which cells lie off the lattice or
    out of their bounds, and each equation's gap ``A x - rhs`` at a common denominator, so
    a witness that changes a few cells is checked through those cells' columns alone,
    in exact integers."""

    _known: ClassVar[weakref.WeakKeyDictionary[IntervalProblem, _Base]] = \
        weakref.WeakKeyDictionary()

    def __init__(self, problem: IntervalProblem) -> None:
        self.problem = problem
        values = problem.values
        self.off_lattice = [i for i, v in enumerate(values)
                            if (v * problem.scale).denominator != 1]
        self.out_of_bounds = [i for i, v in enumerate(values) if not self.within(i, v)]
        self.den = math.lcm(*(v.denominator for v in values), 1)
        self.scaled = [int(v * self.den) for v in values]
        self.csc = sp.csc_matrix(problem.matrix)
        lhs = [0] * self.csc.shape[0]
        indptr, rows, data = self.csc.indptr, self.csc.indices.tolist(), \
            self.csc.data.tolist()
        for c, x in enumerate(self.scaled):
            if x:
                for k in range(int(indptr[c]), int(indptr[c + 1])):
                    lhs[rows[k]] += int(data[k]) * x
        gaps = (total - int(rhs) * self.den for total, rhs in zip(lhs, problem.rhs,
                                                                  strict=True))
        self.gap = {r: g for r, g in enumerate(gaps) if g}  # the equations x breaks

    @classmethod
    def of(cls, problem: IntervalProblem) -> _Base:
        base = cls._known.get(problem)
        if base is None:
            base = cls._known[problem] = cls(problem)
        return base

    def within(self, i: int, v: Fraction) -> bool:
        hi = self.problem.upper[i]
        return not (v < self.problem.lower[i] or (hi is not None and v > hi))

    def first_failing_row(self, changed: dict[int, Fraction]) -> int | None:
        """The first equation the values with ``changed`` break, exactly (None: all hold)."""
        den = math.lcm(self.den, *(v.denominator for v in changed.values()))
        f = den // self.den
        gap = {r: f * g for r, g in self.gap.items()}
        indptr, rows, data = self.csc.indptr, self.csc.indices, self.csc.data
        for c, v in changed.items():
            d = int(v * den) - f * self.scaled[c]
            if d:
                for k in range(int(indptr[c]), int(indptr[c + 1])):
                    r = int(rows[k])
                    gap[r] = gap.get(r, 0) + int(data[k]) * d
        failing = [r for r, g in gap.items() if g]
        return min(failing) if failing else None


def _hidden_rows(problem: IntervalProblem, eqs: list[int]
                 ) -> tuple[list[tuple[tuple[int, int], ...]], list[Fraction], list[int]]:
    """The given equations over the suppressed cells (local indices), their right-hand
    sides with the published cells moved over, and the local -> cell map."""
    A = sp.csr_matrix(problem.matrix)
    cells: dict[int, int] = {}
    rows, b = [], []
    for i in eqs:
        s, e = A.indptr[i], A.indptr[i + 1]
        acc, row = Fraction(problem.rhs[i]), []
        for c, a in zip(A.indices[s:e], A.data[s:e], strict=True):
            c, a = int(c), int(a)
            if problem.hidden[c]:
                row.append((cells.setdefault(c, len(cells)), a))
            else:
                acc -= a * problem.values[c]
        rows.append(tuple(row))
        b.append(acc)
    return rows, b, list(cells)


def implied_by(problem: IntervalProblem, j: int, side: Side, mult: dict[int, Fraction]
               ) -> Fraction | None:
    """The bound on cell ``j`` that the equation multipliers ``mult`` prove by weak duality,
    exactly, from the problem alone (None: out of range, or it would need an upper bound a
    cell does not have)."""
    eqs = sorted(mult)
    if any(not 0 <= k < len(problem.rhs) for k in eqs):
        return None
    rows, b, cells = _hidden_rows(problem, eqs)
    if j not in cells:
        cells.append(j)
    lo = [problem.lower[c] for c in cells]
    hi = [problem.upper[c] for c in cells]
    local = {k: mult[e] for k, e in enumerate(eqs)}
    return implied_bound(rows, b, lo, hi, {cells.index(j): 1}, local, side)


def ray_holds(problem: IntervalProblem, j: int, bound: Bound) -> bool:
    """A r = 0 over the suppressed cells, r >= 0, r = 0 where an upper bound exists, r_j > 0
    (the true values are feasible, so x_j is unbounded above)."""
    r = dict(bound.ray)
    if r.get(j, Fraction(0)) <= 0 or any(
            not problem.hidden[i] or v < 0 or (v and problem.upper[i] is not None)
            for i, v in r.items()):
        return False
    x = [Fraction(0)] * problem.n_cells
    for i, v in r.items():
        x[i] = v
    return first_failing_row(problem.matrix, x, [Fraction(0)] * len(problem.rhs)) is None
