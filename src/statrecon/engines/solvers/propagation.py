"""Bound propagation over integer rows: the bounds every integer solution of
``lo <= A y <= hi``, ``lb <= y <= ub`` keeps, in exact integer arithmetic.

Why: a row's activity without one of its variables is bounded by the others' bounds, so the
row bounds that variable (with ``a > 0``: ``a y_j <= hi - (least activity of the rest)``,
rounded down, and the like). Each step is an implication that holds for every integer
solution, so the bounds are proofs, however few rounds run; a variable whose bounds cross
proves that no integer solution exists. This is what CP-SAT's presolve does first, here
vectorised over a sparse matrix, so a caller can settle what it proves without building a
model (the census certain proof closes most blocks that way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

MAX_ROUNDS = 100


@dataclass(frozen=True)
class Propagated:
    """The tightened bounds (``lb <= y <= ub`` in every integer solution), or ``feasible``
    False: no integer solution exists."""

    feasible: bool
    lb: np.ndarray
    ub: np.ndarray


def propagate(a: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray,
              ub: np.ndarray, max_rounds: int = MAX_ROUNDS) -> Propagated:
    """Tighten ``lb``/``ub`` (finite int64, as are ``lo``/``hi`` and ``a``'s entries) by
    every row in turn, all rows at once per round, until nothing changes or ``max_rounds``.
    Magnitudes must keep the rows' activities within int64 (the caller's caps do)."""
    lb = np.asarray(lb, dtype=np.int64).copy()
    ub = np.asarray(ub, dtype=np.int64).copy()
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if (lb > ub).any():
        return Propagated(False, lb, ub)
    coo = a.tocoo()
    rows, cols = coo.row.astype(np.int64), coo.col.astype(np.int64)
    coef = coo.data.astype(np.int64)
    keep = coef != 0
    rows, cols, coef = rows[keep], cols[keep], coef[keep]
    order = np.argsort(cols, kind="stable")
    rows, cols, coef = rows[order], cols[order], coef[order]
    held, starts = np.unique(cols, return_index=True)
    pos = coef > 0
    by_row = _RowSums(rows, a.shape[0])
    if not len(held):  # no entries: only the rows' own bounds on 0 to check
        return Propagated(bool((lo <= 0).all() and (hi >= 0).all()), lb, ub)
    for _ in range(max_rounds):
        least = np.where(pos, coef * lb[cols], coef * ub[cols])  # each entry's least part
        most = np.where(pos, coef * ub[cols], coef * lb[cols])
        act_lo = by_row.sums(least)
        act_hi = by_row.sums(most)
        if (act_lo > hi).any() or (act_hi < lo).any():
            return Propagated(False, lb, ub)
        # the entry's room: what the row leaves it once the rest takes its least (most)
        room_up = hi[rows] - (act_lo[rows] - least)  # bound on coef * y_j from above
        room_dn = lo[rows] - (act_hi[rows] - most)  # bound on coef * y_j from below
        upper = np.where(pos, _floor_div(room_up, coef), _floor_div(room_dn, coef))
        lower = np.where(pos, _ceil_div(room_dn, coef), _ceil_div(room_up, coef))
        new_ub = ub.copy()
        new_lb = lb.copy()
        new_ub[held] = np.minimum(ub[held], np.minimum.reduceat(upper, starts))
        new_lb[held] = np.maximum(lb[held], np.maximum.reduceat(lower, starts))
        if (new_lb > new_ub).any():
            return Propagated(False, new_lb, new_ub)
        if np.array_equal(new_lb, lb) and np.array_equal(new_ub, ub):
            break
        lb, ub = new_lb, new_ub
    return Propagated(True, lb, ub)


class _RowSums:
    """Per row, the exact int64 sum of its entries' values (``bincount`` would go through
    float64, ``add.at`` is slow): the entries sorted by row once, then ``add.reduceat``."""

    def __init__(self, rows: np.ndarray, n_rows: int) -> None:
        self.order = np.argsort(rows, kind="stable")
        self.held, self.starts = np.unique(rows[self.order], return_index=True)
        self.n_rows = n_rows

    def sums(self, values: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_rows, dtype=np.int64)
        if len(self.held):
            out[self.held] = np.add.reduceat(values[self.order], self.starts)
        return out


def _floor_div(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.floor_divide(x, d)


def _ceil_div(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    return -np.floor_divide(-x, d)
