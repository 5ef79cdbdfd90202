"""Witness tables by small moves: the true table plus an integer change that keeps every
equation.

An LP vertex pushed to the ends of a linked table is often off the lattice, so rounding it
proves nothing (:mod:`.reach`). A *small* change usually is on it: the least total change
``d`` (min Σ|d|, with d = d⁺ - d⁻) that moves the cell by what its protection asks is a
circuit of the equations, and a table's circuits are mostly ±1 moves. Every change found is
checked exactly over the whole component, in integers, and kept for every cell it moves
(one change proves five cells on average on easySdcTable's linked sosialFiktiv). In a linked
3-way table the least change is often a circuit of halves or thirds: twice or three times it
is a whole change, tried next; where no small multiple is whole, HiGHS's least *integer*
change (a MIP) over the cells near the fractional one. On issue 28's scale instance (17,254
primary cells) 126 cells had a fractional least change: multiples proved 109, and one MIP
of 0.7 s the other 17, which otherwise waited on CP-SAT over a component of 11,877 cells.

Each LP starts from the basis of d = 0 (optimal when nothing is asked, and still dual
feasible once a cell is asked to move): the dual simplex then finds the circuit in a few
pivots, ~4 ms on 3,792 suppressed cells, where going on from the previous circuit's basis
takes ~0.2 s (measured side by side; see the report of issue 15).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.intervals.reach import Board, Lattice, Reached, Step, completes
from statrecon.engines.solvers import highs
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.highs import build_highs, highs_core

EPS = 1e-7
MULTIPLES = 6  # a fractional least change is tried at up to this many times its size
MIP_S = 2.0  # then HiGHS's least integer change near it, for at most this many seconds,
MIP_MISSES = 3  # until this many of a component's MIPs have found nothing
BATCH = 16  # cells asked to move by one least-change LP (no two in one equation)
REWARD = 1000.0  # what moving an asked cell one unit towards its goal is worth to that LP


def move(prep: Prepared, reached: dict[int, Reached], deadline: Deadline,
         on_step: Step | None = None, one_by_one: int | None = None) -> None:
    """Extend ``reached`` (from :func:`.reach.reach`) with small integer moves for the cells
    still short of their protection. ``on_step(reached)`` after each cell or batch.
    ``one_by_one``: after the batches, each cell left is moved on its own only where at
    most this many are left in its component (None: always); a caller with a cheaper way
    for many (:mod:`statrecon.engines.suppression.routes`) passes a bound."""
    by_comp: dict[int, list[Reached]] = {}
    for r in reached.values():
        by_comp.setdefault(prep.component_of[r.cell], []).append(r)
    for ci, cells in by_comp.items():
        if deadline.expired:
            return
        if all(r.met() for r in cells):
            continue
        board = Board(prep, ci, cells)
        if board.lattice is not None:
            mover = Mover(board, board.lattice)
            if on_step is not None:
                mover.on_step = lambda: on_step(reached)
            mover.batched(cells, deadline)
            left = [r for r in cells if not r.met()]
            if one_by_one is None or len(left) <= one_by_one:
                mover.run(left, deadline)


class Mover:
    """One component's least-change LP over (d⁺, d⁻), each cell's room to move (lattice
    units) and the basis of d = 0. Cells can be *fixed* (held at their true values, as if
    published): what pruning a pattern asks (:mod:`statrecon.engines.suppression.prune`)."""

    def __init__(self, board: Board, lat: Lattice) -> None:
        self.board, self.comp, self.lat, self.scale = board, board.comp, lat, board.scale
        self.truth = board.truth
        n = len(self.truth)
        self.n = n
        big = np.iinfo(np.int64).max
        room_up = np.where(lat.hi == big, np.inf, (lat.hi - self.truth).astype(float))
        self.room_down = (self.truth - lat.lo).astype(float)
        self.upper = np.concatenate([room_up, self.room_down])
        self.free_upper = self.upper.copy()
        self.fixed: set[int] = set()
        self.on_step: Callable[[], None] | None = None  # after each cell or batch
        A = lat.A.astype(float)
        self.M = sp.hstack([A, -A]).tocsc()
        self.rows = A.shape[0]
        self.csc: sp.csc_matrix | None = None  # the equations by column and by row, built
        self.csr: sp.csr_matrix | None = None  # for the first integer change (a MIP)
        self.misses = 0  # MIPs that found no change
        self.highs: Any = None
        self.zero: Any = None
        if highs_core() is not None:
            bounds = np.column_stack([np.zeros(2 * n), self.upper])
            self.highs = build_highs(self.M, np.zeros(self.rows), bounds, dual=True)
            self.highs.changeColsCost(2 * n, np.arange(2 * n, dtype=np.int32),
                                      np.ones(2 * n))
            self.highs.run()
            self.zero = self.highs.getBasis()

    def fix(self, local: int) -> None:
        """Hold local cell ``local`` at its true value in every later move."""
        self.fixed.add(local)
        self._set_room(local, 0.0, 0.0)

    def free(self, local: int) -> None:
        """Undo :meth:`fix`."""
        self.fixed.discard(local)
        self._set_room(local, self.free_upper[local], self.free_upper[self.n + local])

    def _set_room(self, local: int, up: float, down: float) -> None:
        self.upper[local], self.upper[self.n + local] = up, down
        if self.highs is not None:
            self.highs.changeColBounds(local, 0.0, float(up))
            self.highs.changeColBounds(self.n + local, 0.0, float(down))

    def prove(self, cells: Sequence[Reached], deadline: Deadline, stop_early: bool = True
              ) -> None:
        """Look for moves for ``cells`` alone (the board's other cells are left as they
        are): each move is recorded for every one of them it takes further.
        ``stop_early``: stop at the first cell left short."""
        self.board.index = {self.comp.local[r.cell]: r for r in cells}
        self.run(cells, deadline, stop_early)

    def run(self, cells: Sequence[Reached], deadline: Deadline, stop_early: bool = False
            ) -> None:
        for r in cells:
            self._move(r, deadline)
            if self.on_step is not None:
                self.on_step()
            if stop_early and not r.met():
                return

    def batched(self, cells: Sequence[Reached], deadline: Deadline) -> None:
        """Before one cell at a time: one least-change LP asks up to BATCH cells that share
        no equation to move at once (each on its first side wanted), each as far as it can
        towards its goal (:meth:`_batch`), and each connected piece of the change (cells
        linked through equations it changes; a piece keeps every equation by itself) is a
        witness of its own, checked exactly. Each cell is asked once per side here; what is
        left goes one at a time (:meth:`run`). On issue 28's scale instance: 231 LPs
        instead of 2,169, 3.4 s instead of 13.7 s, the same cells proven (levels 0); with
        protection levels, asking each batch in one rewarded LP (:meth:`_batch`) took the
        first witness round from 90.2 s to 30.3 s."""
        if self.csc is None or self.csr is None:
            self.csc, self.csr = self.lat.A.tocsc(), self.lat.A.tocsr()
        by_col = self.csc
        pending = [(r, up) for r in cells if not r.met() for up in self._sides(r)]
        while pending and not deadline.expired:
            batch: list[tuple[Reached, bool]] = []
            used: set[int] = set()
            kept: list[tuple[Reached, bool]] = []  # scanned, not taken, still wanted
            scanned = 0
            for r, up in pending:
                if len(batch) >= BATCH:
                    break
                scanned += 1
                if not r.wants()[0 if up else 1]:
                    continue
                j = self.comp.local[r.cell]
                rows = by_col.indices[by_col.indptr[j]:by_col.indptr[j + 1]].tolist()
                if used.intersection(rows):
                    kept.append((r, up))
                    continue
                batch.append((r, up))
                used.update(rows)
            if not batch:
                return
            pending = kept + pending[scanned:]
            self._batch(batch, deadline)
            if self.on_step is not None:
                self.on_step()

    def _batch(self, batch: list[tuple[Reached, bool]], deadline: Deadline) -> None:
        """One LP for the whole batch: each cell's move towards its goal is rewarded (REWARD
        a unit, capped at the goal) and every change costs 1 a unit, so the LP is feasible
        (d = 0) however many of the asks clash or cannot be met, and moves each cell as far
        as a change worth its reward takes it. A cell short of its goal is left to
        :meth:`run`. Before: a hard ask per cell, and halving the batch whenever one of them
        could not be met (10,889 LPs for 821 batches on issue 28's scale instance)."""
        reward: dict[int, float] = {}
        upper: dict[int, float] = {}
        for r, up in batch:
            j = self.comp.local[r.cell]
            steps = self._steps(r, up)
            if self.upper[j if up else self.n + j] >= 1:
                col = j if up else self.n + j
                reward[col] = 1.0 - REWARD
                upper[col] = min(float(steps), float(self.upper[col]))
                upper[self.n + j if up else j] = 0.0
        if deadline.expired or not reward:
            return
        d = self._least_change({}, upper, deadline, reward)
        if d is None:
            return
        for piece in self._pieces(d):
            rounded = whole_multiple(piece)
            if rounded is None:
                continue
            xi = self.truth + rounded
            if not any(xi[c] != self.truth[c] for c in self.fixed) \
                    and completes(self.lat, xi):
                self.board.record(xi)

    def _pieces(self, d: np.ndarray) -> list[np.ndarray]:
        """d cut into its connected pieces: cells it changes, linked when they share an
        equation. Every equation's changed cells lie in one piece, so each piece alone
        keeps every equation d keeps."""
        assert self.csr is not None
        moved = np.flatnonzero(np.abs(d) > EPS)
        if moved.size == 0:
            return []
        sub = self.csr[:, moved]
        count, labels = connected_components(sp.csr_matrix(sub.T @ sub), directed=False)
        out = []
        for k in range(count):
            piece = np.zeros_like(d)
            cols = moved[labels == k]
            piece[cols] = d[cols]
            out.append(piece)
        return out

    def _steps(self, r: Reached, up: bool) -> Fraction:
        """Whole lattice steps cell r must move on one side."""
        need = (r.goal(True) - r.value) if up else (r.value - r.goal(False))
        return Fraction(math.ceil(need * self.scale))

    def _move(self, r: Reached, deadline: Deadline) -> None:
        for up in self._sides(r):
            if deadline.expired:
                return
            if not (r.wants()[0] if up else r.wants()[1]):
                continue
            steps = self._steps(r, up)
            xi = self._find(self.comp.local[r.cell], up, steps, deadline)
            if xi is not None:
                self.board.record(xi)
                if r.met():
                    return

    def _sides(self, r: Reached) -> tuple[bool, ...]:
        """Up, down, or both; for a cell that needs only one, the roomier side first."""
        up, down = r.wants()
        if r.either:
            return (False, True) if self.room_down[self.comp.local[r.cell]] >= 1 \
                else (True, False)
        return tuple(s for s, w in ((True, up), (False, down)) if w)

    def _find(self, j: int, up: bool, need: Fraction, deadline: Deadline
              ) -> np.ndarray | None:
        """The true table plus the least change moving cell j by ``need`` lattice units,
        when HiGHS's optimum is integral and the result checks exactly; else None."""
        if self.upper[j if up else self.n + j] < need:
            return None
        lower = {j if up else self.n + j: float(need)}
        upper = {self.n + j if up else j: 0.0}
        d = self._least_change(lower, upper, deadline)
        if d is None:
            return None
        rounded = whole_multiple(d)
        if rounded is None:
            rounded = self._integer_change(j, up, need, d, deadline)
        if rounded is None:
            return None
        xi = self.truth + rounded
        if any(xi[c] != self.truth[c] for c in self.fixed):
            return None
        return xi if xi[j] != self.truth[j] and completes(self.lat, xi) else None

    def _integer_change(self, j: int, up: bool, need: Fraction, d: np.ndarray,
                        deadline: Deadline) -> np.ndarray | None:
        """HiGHS's least integer change (a MIP) moving cell j by ``need`` lattice units,
        over the cells the fractional change ``d`` moves and the cells sharing an equation
        with them, the others held still (any change found there is a change of the whole
        component); at most MIP_S seconds, its best change when time runs out. None: none
        found, or MIP_MISSES MIPs of this component found none already (a table whose
        cells are barely protected, where each would take its MIP_S: 58 MIPs, 116 s for
        nothing on a small sparse instance of issue 28's tables)."""
        left = deadline.left()
        limit = MIP_S if left is None else min(MIP_S, left)
        if limit <= 0 or self.misses >= MIP_MISSES:
            return None
        change = self._mip(j, up, need, d, limit)
        self.misses += change is None
        return change

    def _mip(self, j: int, up: bool, need: Fraction, d: np.ndarray, limit: float
             ) -> np.ndarray | None:
        if self.csc is None or self.csr is None:
            self.csc, self.csr = self.lat.A.tocsc(), self.lat.A.tocsr()
        by_col, by_row = self.csc, self.csr
        moved = np.flatnonzero(np.abs(d) > EPS)
        cols = np.unique(by_row[np.unique(by_col[:, moved].tocoo().row)].tocoo().col)
        rows = np.unique(by_col[:, cols].tocoo().row)  # every equation they are in
        sub = by_row[rows][:, cols].astype(float)
        n = len(cols)
        k = int(np.searchsorted(cols, j))
        lo = np.zeros(2 * n)
        hi = np.concatenate([self.upper[cols], self.upper[self.n + cols]])
        lo[k if up else n + k], hi[n + k if up else k] = float(need), 0.0
        zero = np.zeros(len(rows))
        got = highs.solve(np.ones(2 * n), sp.hstack([sub, -sub]).tocsr(), zero, zero, lo, hi,
                          time_limit=limit, integrality=np.ones(2 * n, dtype=bool))
        x = got.x[:n] - got.x[n:]
        if got.status not in ("optimal", "limit") or not np.all(np.isfinite(x)):
            return None
        whole = np.rint(x)
        if np.abs(x - whole).max() > EPS:
            return None
        change = np.zeros(self.n, dtype=np.int64)
        change[cols] = whole.astype(np.int64)
        return change

    def _least_change(self, lower: dict[int, float], upper: dict[int, float],
                      deadline: Deadline, cost: dict[int, float] | None = None
                      ) -> np.ndarray | None:
        """The least change d (min Σ|d|) with the column bounds ``lower``/``upper`` changed
        for this LP only; ``cost``: columns whose unit cost is not 1 (also this LP only)."""
        cost = cost or {}
        if self.highs is None:
            return self._linprog(lower, upper, deadline, cost)
        h = self.highs
        left = deadline.left()
        h.setOptionValue("time_limit", float("inf") if left is None else
                         h.getRunTime() + left)
        changed = sorted({*lower, *upper})
        priced = np.array(sorted(cost), dtype=np.int32)
        for c in changed:
            h.changeColBounds(c, lower.get(c, 0.0), upper.get(c, float(self.upper[c])))
        if priced.size:
            h.changeColsCost(priced.size, priced, np.array([cost[c] for c in priced.tolist()]))
        try:
            h.setBasis(self.zero)
            h.run()
            got = highs.read(h, duals=False)
        finally:
            for c in changed:
                h.changeColBounds(c, 0.0, float(self.upper[c]))
            if priced.size:
                h.changeColsCost(priced.size, priced, np.ones(priced.size))
        return got.x[:self.n] - got.x[self.n:] if got.status == "optimal" else None

    def _linprog(self, lower: dict[int, float], upper: dict[int, float],
                 deadline: Deadline, cost: dict[int, float]) -> np.ndarray | None:
        """The same LP built afresh (without scipy's HiGHS object)."""
        lo, hi = np.zeros(2 * self.n), self.upper.copy()
        for c, v in lower.items():
            lo[c] = v
        for c, v in upper.items():
            hi[c] = v
        unit = np.ones(2 * self.n)
        for c, v in cost.items():
            unit[c] = v
        zero = np.zeros(self.rows)
        got = highs.solve(unit, self.M, zero, zero, lo, hi, time_limit=deadline.left())
        return got.x[:self.n] - got.x[self.n:] if got.status == "optimal" else None


def whole_multiple(d: np.ndarray) -> np.ndarray | None:
    """The least whole multiple k·d, k = 1 .. MULTIPLES, whose every entry is an integer (to
    EPS), rounded; None when there is none. A linked 3-way table's least change is often a
    circuit of halves or thirds (no integral vertex there), and a change that keeps every
    equation keeps them at any multiple, moving the cell k times as far: the caller checks
    the bounds and equations exactly, as for any change."""
    for k in range(1, MULTIPLES + 1):
        kd = k * d
        rounded = np.rint(kd)
        if np.abs(kd - rounded).max() <= EPS:
            return rounded.astype(np.int64)
    return None
