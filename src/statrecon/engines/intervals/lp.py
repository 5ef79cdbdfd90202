"""The LP interval of a cost over one component: HiGHS (scipy's dual simplex) proposes an
optimal vertex and its duals, and a bound counts as proven only once :mod:`.exact` has
checked, in rationals, multipliers implying it (weak duality) and a point attaining it.
An unbounded maximum is proven by an exact ray (a direction keeping every equation and bound
that increases the cost) from the true values, which are a feasible point.

HiGHS's own time limit is passed on (the dual simplex checks its clock; these LPs are small,
one component each), so a solve can overrun the limit a little but never yields a bound that
was not checked. HiGHS is built once per component and hot-started
(:mod:`statrecon.engines.solvers.highs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals.exact import (
    Side,
    implied_bound,
    multiplier_candidates,
    objective,
    point_candidates,
)
from statrecon.engines.intervals.problem import Component
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.highs import ComponentLp

# reached: a witness attains the value, so the true end lies at least that far out
# (``reach``); proven: the value is the end itself
BoundStatus = Literal["proven", "reached", "unknown"]
HIGHS_SAYS = {"limit": "HiGHS stopped at its time or iteration limit",
              "infeasible": "HiGHS found no point", "unbounded": "HiGHS found no lower bound"}


@dataclass(frozen=True)
class LpOutcome:
    """One side of an LP interval, over a component's local cells and equations.

    ``value``: the optimum, proven when ``status`` is proven (None then: unbounded, see
    ``ray``). ``valid``: the best bound the ``multipliers`` prove (also when no point attains
    it, so still usable as a bound). ``point``: an optimal point, exact."""

    status: BoundStatus
    value: Fraction | None = None
    valid: Fraction | None = None
    multipliers: tuple[tuple[int, Fraction], ...] = ()
    point: tuple[Fraction, ...] = ()
    ray: tuple[Fraction, ...] = ()
    note: str = ""


def lp_bound(solver: ComponentLp, comp: Component, cost: Mapping[int, int], side: Side,
             deadline: Deadline, scale: int) -> LpOutcome:
    """min (side lower) or max (side upper) of cost·x over the component, proven or unknown.
    ``solver``: HiGHS over this component (built once, see
    :mod:`statrecon.engines.solvers.highs`)."""
    left = deadline.left()
    if left is not None and left <= 0:
        return LpOutcome("unknown", note="time limit")
    sign = 1.0 if side == "lower" else -1.0
    got = solver.solve({i: sign * v for i, v in cost.items()}, left)
    if got.status == "unbounded" and side == "upper":
        return _unbounded(comp, cost, deadline, scale)
    if got.status != "optimal":
        return LpOutcome("unknown", note=HIGHS_SAYS.get(got.status, got.message))
    y = got.y if comp.rows else np.zeros(0)
    return _certify(comp, cost, side, got.x, sign * y, scale)


def _certify(comp: Component, cost: Mapping[int, int], side: Side, x: np.ndarray,
             u: np.ndarray, scale: int) -> LpOutcome:
    """Exact point and multipliers from HiGHS's floats; proven when their values meet."""
    better = (lambda a, b: a > b) if side == "lower" else (lambda a, b: a < b)
    points = point_candidates(comp.rows, comp.b, comp.lo, comp.hi, x, scale)
    point = next(points, None)
    best: tuple[Fraction, dict[int, Fraction]] | None = None
    for mult in multiplier_candidates(comp.rows, len(comp.cells), cost, u, x, comp.lo,
                                      comp.hi):
        v = implied_bound(comp.rows, comp.b, comp.lo, comp.hi, cost, mult, side)
        if v is not None and (best is None or better(v, best[0])):
            best = (v, mult)
        if best is not None and point is not None and objective(cost, point) == best[0]:
            break
    if best is None:
        return LpOutcome("unknown", note="no exact multipliers prove a bound")
    valid, mult = best
    while point is not None and objective(cost, point) != valid:
        point = next(points, None)
    pairs = tuple(sorted(mult.items()))
    if point is None:
        return LpOutcome("unknown", valid=valid, multipliers=pairs,
                         note="no exact point attains the bound the multipliers prove")
    return LpOutcome("proven", value=valid, valid=valid, multipliers=pairs,
                     point=tuple(point))


def _unbounded(comp: Component, cost: Mapping[int, int], deadline: Deadline,
               scale: int) -> LpOutcome:
    """A ray r: equations' left sides unchanged (A r = 0), r >= 0, r = 0 on cells with an
    upper bound, cost·r = 1; the truth plus t·r is then feasible for every t >= 0."""
    free = [i for i in range(len(comp.cells)) if comp.hi[i] is None]
    where = {i: t for t, i in enumerate(free)}
    rows = [tuple((where[i], a) for i, a in row if i in where) for row in comp.rows]
    rows.append(tuple((where[i], int(v)) for i, v in cost.items() if i in where and v))
    b = [Fraction(0)] * len(comp.rows) + [Fraction(1)]
    left = deadline.left()
    if left is not None and left <= 0:
        return LpOutcome("unknown", note="time limit")
    box = np.array([[0.0, np.inf]] * len(free)).reshape(len(free), 2)
    got = ComponentLp(_sparse(rows, len(free)), np.array([float(v) for v in b]), box).solve(
        dict.fromkeys(range(len(free)), 1.0), left)
    if got.status != "optimal":
        return LpOutcome("unknown", note="unbounded, but no ray found: "
                         + HIGHS_SAYS.get(got.status, got.message))
    zero, none = [Fraction(0)] * len(free), [None] * len(free)
    r = next(point_candidates(rows, b, zero, none, got.x, scale), None)
    if r is None:
        return LpOutcome("unknown", note="unbounded, but no exact ray")
    ray = [Fraction(0)] * len(comp.cells)
    for t, i in enumerate(free):
        ray[i] = r[t]
    return LpOutcome("proven", value=None, ray=tuple(ray))


def _sparse(rows: list[tuple[tuple[int, int], ...]], n: int) -> sp.csc_matrix:
    k = [t for t, row in enumerate(rows) for _ in row]
    i = [c for row in rows for c, _ in row]
    a = [float(v) for row in rows for _, v in row]
    return sp.csc_matrix((a, (k, i)), shape=(len(rows), n))


def component_box(solver: ComponentLp, comp: Component, deadline: Deadline, scale: int
                  ) -> tuple[Fraction | None, ...] | None:
    """A proven upper bound on every cell of the component (None where there is none): the
    a-priori bound, else what the largest possible sum of the component leaves once every
    other cell is at its lower bound, else the cell's own LP maximum. None: out of time."""
    hi = list(comp.hi)
    if all(h is not None for h in hi):
        return tuple(hi)
    total = lp_bound(solver, comp, dict.fromkeys(range(len(hi)), 1), "upper", deadline, scale)
    if total.valid is not None:
        floor = sum(comp.lo, Fraction(0))
        return tuple(h if h is not None else total.valid - floor + comp.lo[i]
                     for i, h in enumerate(hi))
    for i, h in enumerate(hi):
        if h is None:
            one = lp_bound(solver, comp, {i: 1}, "upper", deadline, scale)
            if one.valid is None and not (one.status == "proven" and one.value is None):
                return None
            hi[i] = one.valid
    return tuple(hi)
