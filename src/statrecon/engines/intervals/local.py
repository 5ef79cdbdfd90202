"""A cell's LP bounds from the equations around it, before an LP over its whole component.

A cell of a large component (every cell of a perturbed release is hidden, so 102,786 linked
cells form one component: issue 30's CKM audit decided no cell in 600 s, each LP running over
all of it) is often decided by the equations near it. Two LPs over the equations within
``radius`` steps of the cell (cell, equation, cell, ...) decide it:

- **outer**: every cell those equations hold, each within its own bounds, the other
  equations dropped. A relaxation, so its optimum bounds the cell's interval, and its
  multipliers (zero on every dropped equation) certify that bound on the whole problem.
- **inner**: the same, with the cells that also lie in a dropped equation held at their
  values (the problem's table, a completion). Its optimum, every other cell at its value,
  is a completion of the whole table.

When the two optima are equal the bound is proven, with the outer's multipliers and the
inner's point as witness (listing the neighbourhood's cells; the others keep their values),
and both are checked exactly as any other (``lp._certify``, ``check.check_cell``). When
they differ the side goes on over the whole component, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals.exact import Side
from statrecon.engines.intervals.lp import LpOutcome, lp_bound
from statrecon.engines.intervals.problem import Component, Prepared, float_bounds
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.highs import ComponentLp

RADII = (1, 2, 4)  # the cell's own equations, then within 2 steps, then 4
LOCAL_FROM = 1_000  # cells of a component below which it is solved whole at once
LOCAL_MAX = 2_000  # cells of a neighbourhood beyond which its LPs cost what the whole's do
LOCAL_ENTRIES = 12_000  # (cell, equation) entries of a neighbourhood's equations: a cheaper
                        # count first (a total's equations are long: 7 -> 36 cells a second
                        # on issue 30's 102,786-cell release)
SIDES: tuple[Side, Side] = ("lower", "upper")

Found = tuple[LpOutcome, Component] | None  # a side proven locally, and its neighbourhood


def local_sides(prep: Prepared, ci: int, jl: int, deadline: Deadline,
                radii: Sequence[int] = RADII) -> tuple[Found, Found]:
    """Each side of local cell ``jl``'s LP interval proven from a neighbourhood (module
    docstring), or None for a side left to the whole component."""
    comp = prep.components[ci]
    found: list[Found] = [None, None]
    if len(comp.cells) < LOCAL_FROM or deadline.expired:
        return None, None
    rows_of = _rows_of(prep, ci)
    values = prep.problem.values
    for radius in radii:
        if deadline.expired:
            break
        eqs = _ball(comp, rows_of, jl, radius)
        if len(eqs) == len(comp.rows):
            break  # nothing dropped: the whole component's LP is the same LP
        if sum(len(comp.rows[k]) for k in eqs) > LOCAL_ENTRIES:
            break  # too large to be worth it (counted before anything is built)
        outer, inner = _neighbourhood(comp, rows_of, eqs, values)
        if len(outer.cells) > LOCAL_MAX:
            break
        j = outer.local[comp.cells[jl]]
        solvers = [_solver(outer), _solver(inner)]  # each HiGHS object built once
        for k, side in enumerate(SIDES):
            if found[k] is not None or deadline.expired:
                continue
            bound = lp_bound(solvers[0], outer, {j: 1}, side, deadline, prep.problem.scale)
            if bound.status != "proven" or bound.value is None:
                continue
            reached = lp_bound(solvers[1], inner, {j: 1}, side, deadline, prep.problem.scale)
            if reached.status == "proven" and reached.value == bound.value:
                found[k] = (replace(bound, point=reached.point), outer)
        if all(f is not None for f in found):
            break
    return found[0], found[1]


def _rows_of(prep: Prepared, ci: int) -> list[list[int]]:
    """Each local cell's equations (component-local), built once per component."""
    key = ("rows_of", ci)
    if key not in prep.cache:
        comp = prep.components[ci]
        rows_of: list[list[int]] = [[] for _ in comp.cells]
        for k, row in enumerate(comp.rows):
            for i, _ in row:
                rows_of[i].append(k)
        prep.cache[key] = rows_of
    got: list[list[int]] = prep.cache[key]
    return got


def _ball(comp: Component, rows_of: list[list[int]], jl: int, radius: int) -> list[int]:
    """The equations within ``radius`` steps of local cell ``jl`` (its own are step 1)."""
    seen_rows: set[int] = set()
    seen_cells = {jl}
    frontier = [jl]
    for _ in range(radius):
        new_rows = {k for i in frontier for k in rows_of[i]} - seen_rows
        if not new_rows:
            break
        seen_rows |= new_rows
        frontier = [i for k in new_rows for i, _ in comp.rows[k] if i not in seen_cells]
        seen_cells.update(frontier)
    return sorted(seen_rows)


def _neighbourhood(comp: Component, rows_of: list[list[int]], eqs: list[int],
                   values: Sequence[Fraction]) -> tuple[Component, Component]:
    """The outer and inner problems over equations ``eqs`` (component-local)."""
    kept = set(eqs)
    cells = sorted({i for k in eqs for i, _ in comp.rows[k]})
    index = {i: n for n, i in enumerate(cells)}
    rows = tuple(tuple((index[i], a) for i, a in comp.rows[k]) for k in eqs)
    b = tuple(comp.b[k] for k in eqs)
    lo = tuple(comp.lo[i] for i in cells)
    hi = tuple(comp.hi[i] for i in cells)
    n = len(cells)
    data = [(r, c, a) for r, row in enumerate(rows) for c, a in row]
    A = sp.csr_matrix(([float(a) for _, _, a in data], ([r for r, _, _ in data],
                                                        [c for _, c, _ in data])),
                      shape=(len(rows), n)).tocsc()
    outer = Component(cells=tuple(comp.cells[i] for i in cells),
                      equations=tuple(comp.equations[k] for k in eqs), rows=rows, b=b,
                      lo=lo, hi=hi, a_float=A, b_float=np.array([float(v) for v in b]),
                      bounds_float=float_bounds(lo, hi),
                      local={comp.cells[i]: n for n, i in enumerate(cells)})
    edge = [n for n, i in enumerate(cells) if any(k not in kept for k in rows_of[i])]
    held = {n: values[comp.cells[cells[n]]] for n in edge}
    inner_lo = tuple(held.get(n, v) for n, v in enumerate(lo))
    inner_hi = tuple(held.get(n, v) for n, v in enumerate(hi))
    inner = replace(outer, lo=inner_lo, hi=inner_hi, bounds_float=float_bounds(inner_lo, inner_hi))
    return outer, inner


def _solver(comp: Component) -> ComponentLp:
    return ComponentLp(comp.a_float, comp.b_float, comp.bounds_float)
