"""A float screen of a suppression pattern: HiGHS's LP interval of each primary cell and the
duals behind it, with no proof. The fast method's repair loop uses it to find the primary
cells a pattern leaves exposed and the cells that would widen their intervals, so that the
exact audit (certificates, integer bounds) runs only on patterns the floats already pass.

Nothing here is a claim. A float that misjudges a cell only changes which cell is tried next:
every pattern is still returned on the strength of the exact audit. The multipliers are the
duals rounded to simple fractions; any multipliers at all give a valid cut (weak duality, see
:mod:`.cuts`), so rounding can weaken a cut, never make it wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from statrecon.engines.intervals.exact import DENOMINATORS, Side, near_fraction
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.solvers.cpsat import Deadline

SLACK = 1e-7  # relative: a float gap this close to the level counts as meeting it


@dataclass(frozen=True)
class Screened:
    """HiGHS's LP interval of one primary cell under a pattern. ``bounds[side]``: the float
    optimum (None: unbounded upward); ``multipliers[side]``: (equation, g) rounded from its
    duals. ``solved`` False: HiGHS stopped (time limit) or failed, nothing is known."""

    cell: int
    solved: bool
    bounds: dict[Side, float | None]
    multipliers: dict[Side, tuple[tuple[int, Fraction], ...]]


def screen_cells(prep: Prepared, cells: Sequence[int], deadline: Deadline) -> list[Screened]:
    """Both LP bounds of each cell (a suppressed cell of ``prep``), in floats; past the
    deadline the rest come back unsolved."""
    return [Screened(j, False, {}, {}) if deadline.expired else _screen_cell(prep, j, deadline)
            for j in cells]


def _screen_cell(prep: Prepared, j: int, deadline: Deadline) -> Screened:
    ci = prep.component_of[j]
    comp, solver = prep.components[ci], prep.solver(ci)
    jl = comp.local[j]
    bounds: dict[Side, float | None] = {}
    mults: dict[Side, tuple[tuple[int, Fraction], ...]] = {}
    sides: tuple[tuple[Side, float], ...] = (("lower", 1.0), ("upper", -1.0))
    for side, sign in sides:
        got = solver.solve({jl: sign}, deadline.left())
        if got.status == "unbounded" and side == "upper":
            bounds[side], mults[side] = None, ()
            continue
        if got.status != "optimal":
            return Screened(j, False, {}, {})
        bounds[side] = float(got.x[jl])
        mults[side] = tuple((comp.equations[k], q) for k, q in simple_fractions(sign * got.y))
    return Screened(j, True, bounds, mults)


def simple_fractions(y: np.ndarray) -> list[tuple[int, Fraction]]:
    """(k, simple fraction near y[k]) for the entries that are not ~0: integers when y[k]
    is one to 1e-12, else the nearest fraction with a denominator up to 10**6 (as
    ``exact.near_fraction``, without its cost on the many zeros and integers of a table)."""
    nz = np.flatnonzero(np.isfinite(y) & (np.abs(y) > 0))
    v = y[nz]
    r = np.rint(v)
    near = np.abs(v - r) <= 1e-12 * np.maximum(1.0, np.abs(v))
    out = []
    for k, value, whole, is_int in zip(nz.tolist(), v.tolist(), r.tolist(), near.tolist(),
                                       strict=True):
        q = Fraction(int(whole)) if is_int else near_fraction(value, DENOMINATORS[-1])
        if q:
            out.append((k, q))
    return out


def float_gap(value: Fraction, side: Side, bound: float | None) -> float:
    """How far the attacker's float LP bound lies from the true value on one side."""
    if bound is None:
        return float("inf")
    return bound - float(value) if side == "upper" else float(value) - bound


def meets(gap: float, level: Fraction) -> bool:
    return gap >= float(level) - SLACK * max(1.0, float(level))
