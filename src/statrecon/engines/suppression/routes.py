"""Routes: the cells to suppress so that one primary cell can move by its protection level.

A primary cell i is protected upwards by ``u`` when some completion of the table puts it at
``v_i + u`` or beyond: a change d with ``A d = 0``, ``d_i >= u``, within the a-priori bounds,
moving only suppressed cells. So the cheapest cells to add for that side are read from one
LP over the published candidate cells too: minimise ``Σ_j price_j |d_j|`` where a candidate
costs its suppression cost per unit of the level (``cost_j |d_j| / u``: a circuit moves its
cells as far as the cell it protects) and a cell already suppressed almost nothing; the
candidates the optimal d moves are the route. This is the classic LP heuristic of secondary
suppression (Kelly; Fischetti and Salazar's "attacker subproblem" with the suppression costs
as prices), one side of one cell at a time.

A route only proposes cells; what it proves is checked exactly. Its change d, rounded to the
lattice (or a small whole multiple of it, as :func:`.intervals.moves` does), is checked in
integers against every equation it touches and every bound: once the route's cells are
suppressed, the true table plus d is a completion that takes the cell that far (a witness,
:mod:`.intervals.reach`), valid under every larger pattern.

Each LP is over the cell's neighbourhood only: the cells within ``RADIUS`` equations of it
and every equation they are in, the other cells held at their true values (so any change
found keeps every equation of the whole table). On issue 28's scale instance (97,236 cells,
37,830 equations) the radius-3 LP of 1,200 columns found the same optimum as the LP over the
whole table for each of 100 cells tried, in 2.5 ms instead of 36 ms; radius 2 never did.
A cell with no route in its neighbourhood gets None (the caller falls back on its cuts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals.moves import whole_multiple
from statrecon.engines.intervals.problem import IntervalProblem
from statrecon.engines.intervals.reach import LIMIT, fits_int64
from statrecon.engines.intervals.results import ScaledPairs
from statrecon.engines.solvers import highs

RADII = (3, 4, 5)  # equations between the cell and the furthest cell its LP may move: tried in turn
EPS = 1e-9
MIP_S = 2.0  # seconds for one least integer change
TINY = 1e-3  # what a suppressed cell's unit of change costs, times the cheapest candidate


@dataclass(frozen=True)
class Route:
    """``cells``: the candidate cells to suppress (none: the pattern already lets the cell
    move that far in floats). ``witness``: the completion that moves it, checked exactly
    (None: the change was off the lattice), reaching ``value``."""

    cells: tuple[int, ...]
    witness: ScaledPairs | None = None
    value: Fraction | None = None


class Routes:
    """The table's equations over the cells that may move (suppressed or candidate), their
    room up and down, what a unit of change of each costs, and the table in integers times
    its scale for the exact check of a change (None where a number does not fit int64)."""

    def __init__(self, problem: IntervalProblem, movable: np.ndarray, costs: list[float]
                 ) -> None:
        """``movable``: the cells that are suppressed or may be (the others are held at their
        true values); ``costs``: each cell's suppression cost (>= 0)."""
        p = problem
        self.cols = np.asarray(movable, dtype=np.int64)
        self.local = {int(j): k for k, j in enumerate(self.cols.tolist())}
        A = sp.csr_matrix(p.matrix).astype(float)[:, self.cols]
        self.by_row, self.by_col = A.tocsr(), A.tocsc()
        # room in lattice steps (changes are found in steps: whole steps are completions)
        v = np.array([float(p.values[j] * p.scale) for j in self.cols.tolist()])
        hi = np.array([np.inf if p.upper[j] is None else float(p.upper[j] * p.scale)
                       for j in self.cols.tolist()])
        self.room_up = hi - v
        self.room_down = v - np.array([float(p.lower[j] * p.scale)
                                       for j in self.cols.tolist()])
        cost = np.asarray(costs, dtype=float)[self.cols]
        positive = cost[cost > 0]
        self.tiny = TINY * (float(positive.min()) if positive.size else 1.0)
        self.price = cost + self.tiny
        self.scale = p.scale
        self.exact = _Exact.of(p)

    def route(self, suppressed: np.ndarray, cell: int, up: bool, level: Fraction,
              time_limit: float | None = None, integer: bool = False) -> Route | None:
        """The cheapest change moving ``cell`` by ``level`` (up or down; rounded up to whole
        steps of the lattice, where a completion's values lie): the candidate cells it moves
        (not in the boolean mask ``suppressed``, indexed by cell) and its witness. None when
        no change within the largest neighbourhood does (or HiGHS did not solve it).
        ``integer``: where the LP's change is off the lattice (and no small multiple of it
        is a completion), HiGHS's least integer change (a MIP, at most MIP_S seconds)."""
        steps = math.ceil(level * self.scale)
        k = self.local.get(cell)
        if k is None or (self.room_up if up else self.room_down)[k] < steps:
            return None
        for radius in RADII:
            got = self._route(suppressed, k, up, steps, radius, time_limit, integer)
            if got is not None:
                return got
        return None

    def _route(self, suppressed: np.ndarray, k: int, up: bool, steps: int, radius: int,
               time_limit: float | None, integer: bool) -> Route | None:
        """One LP over the neighbourhood of ``radius``, in lattice steps."""
        cols, rows = self.neighbourhood(k, radius)
        n = len(cols)
        sub = self.by_col[:, cols][rows]
        at = int(np.searchsorted(cols, k))
        lo = np.zeros(2 * n)
        hi = np.concatenate([self.room_up[cols], self.room_down[cols]])
        lo[at if up else n + at], hi[n + at if up else at] = float(steps), 0.0
        unit = np.where(suppressed[self.cols[cols]], self.tiny, self.price[cols])
        M = sp.hstack([sub, -sub], format="csc")
        cost = np.concatenate([unit, unit])
        got = highs.solve_small(cost, M, np.zeros(M.shape[0]), lo, hi, time_limit=time_limit)
        if got.status != "optimal":
            return None
        x = got.x
        route = self._checked(suppressed, cols, k, x[:n] - x[n:])
        if route.witness is None and integer:
            # any integer change over the cells the LP's route leaves suppressed: a
            # feasibility MIP (no cost: on issue 28's scale instance, 0.3 s at radius 5
            # where the least-cost MIP found nothing in 7 s)
            closed = ~suppressed[self.cols[cols]]
            closed[np.isin(self.cols[cols], route.cells)] = False
            shut = np.concatenate([closed, closed])
            limit = MIP_S if time_limit is None else min(MIP_S, time_limit)
            got = highs.solve(np.zeros(2 * n), M, np.zeros(M.shape[0]), np.zeros(M.shape[0]),
                              lo, np.where(shut, 0.0, hi), time_limit=limit,
                              integrality=np.ones(2 * n, dtype=bool))
            if got.status in ("optimal", "limit") and np.all(np.isfinite(got.x)):
                whole = self._checked(suppressed, cols, k, got.x[:n] - got.x[n:])
                if whole.witness is not None:
                    return whole
        return route

    def _checked(self, suppressed: np.ndarray, cols: np.ndarray, k: int, d: np.ndarray
                 ) -> Route:
        """The route of the change ``d`` (lattice steps over ``cols``), with its witness
        when d, or a small whole multiple of it, is a completion (checked exactly)."""
        moved = np.flatnonzero(np.abs(d) > EPS)
        cells = self.cols[cols[moved]]
        new = tuple(int(j) for j in cells if not suppressed[j])
        step = None if self.exact is None else whole_multiple(d[moved])
        checked = None if step is None or self.exact is None \
            else self.exact.completion(cells, step)
        if checked is None:
            return Route(new)
        mine = int(np.searchsorted(cells, self.cols[k]))
        return Route(new, ScaledPairs(cells, checked, self.scale),
                     Fraction(int(checked[mine]), self.scale))

    def neighbourhood(self, k: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
        """The local cells within ``radius`` equations of local cell k, and their
        equations."""
        cols = np.array([k], dtype=np.int64)
        for _ in range(radius):
            rows = _gather(self.by_col.indptr, self.by_col.indices, cols)
            cols = _gather(self.by_row.indptr, self.by_row.indices, rows)
        return cols, _gather(self.by_col.indptr, self.by_col.indices, cols)


@dataclass(frozen=True)
class _Exact:
    """The table in integers times its scale: equations by column, true values, bounds."""

    by_col: sp.csc_matrix
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray  # no upper bound: the largest int64
    amax: int

    @staticmethod
    def of(p: IntervalProblem) -> _Exact | None:
        scaled = [v * p.scale for v in (*p.values, *p.lower,
                                        *(h for h in p.upper if h is not None))]
        if any(v.denominator != 1 for v in scaled) or not fits_int64(scaled):
            return None
        A = sp.csc_matrix(p.matrix).astype(np.int64)
        big = np.iinfo(np.int64).max
        return _Exact(A, np.array([int(v * p.scale) for v in p.values], dtype=np.int64),
                      np.array([int(v * p.scale) for v in p.lower], dtype=np.int64),
                      np.array([big if h is None else int(h * p.scale) for h in p.upper],
                               dtype=np.int64),
                      int(np.abs(A.data).max()) if A.nnz else 1)

    def completion(self, cells: np.ndarray, change: np.ndarray) -> np.ndarray | None:
        """The new values (times the scale) of ``cells`` (sorted) when the true table
        changed by ``change`` there (integers times the scale) keeps every bound and every
        equation exactly; None otherwise."""
        if change.size and int(np.abs(change).max()) * self.amax * change.size >= LIMIT:
            return None  # a sum could overflow int64: not checked here
        new = self.values[cells] + change
        if np.any(new < self.lower[cells]) or np.any(new > self.upper[cells]):
            return None
        sub = self.by_col[:, cells]
        return new if not np.any(sub @ change) else None


def _gather(indptr: np.ndarray, indices: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """The sorted distinct indices of the rows (or columns) ``sel`` of a compressed matrix."""
    starts = indptr[sel]
    lens = indptr[sel + 1] - starts
    offsets = np.repeat(starts - np.cumsum(np.r_[0, lens[:-1]]), lens)
    return np.unique(indices[offsets + np.arange(int(lens.sum()))])
