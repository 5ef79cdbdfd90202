"""Re-check a cell audit's proofs from the problem alone, in exact rationals, without the
components, the floats or any solver the audit used: what a reader of the certificates
would do. CP-SAT's INFEASIBLE (proof ``infeasible``) is a solver's word and is not redone
here; its witness is checked like every other."""

from __future__ import annotations

import math
from fractions import Fraction

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
    x = list(problem.values)
    for i, v in bound.witness:
        if not problem.hidden[i]:
            return f"the witness changes published cell {problem.cell_names[i]!r}"
        x[i] = v
    if x[j] != bound.value:
        return f"the witness has {x[j]}, not {bound.value}"
    if lattice and any((v * problem.scale).denominator != 1 for v in x):
        return "the witness is off the lattice"
    for i, v in enumerate(x):
        hi = problem.upper[i]
        if v < problem.lower[i] or (hi is not None and v > hi):
            return f"the witness breaks the bounds of {problem.cell_names[i]!r}"
    bad = first_failing_row(problem.matrix, x, [Fraction(r) for r in problem.rhs])
    return None if bad is None else \
        f"the witness breaks equation {problem.equation_names[bad]!r}"


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
