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
    given = sp.csc_matrix(a)
    csc = sp.csc_matrix(given, dtype=np.int64)
    if not np.array_equal(csc.data, given.data):  # a fraction would be cut silently
        raise ValueError("propagate takes integer coefficients only")
    csc.sum_duplicates()  # one entry per (row, variable): the rooms below rely on it
    csc.eliminate_zeros()
    n_rows, n_cols = csc.shape
    indptr, rows, coef = csc.indptr, csc.indices, csc.data
    cols = np.repeat(np.arange(n_cols), np.diff(indptr))  # entries in column order
    held = np.flatnonzero(np.diff(indptr) > 0)
    starts = indptr[:-1][held]
    pos = coef > 0
    if not len(held):  # no entries: only the rows' own bounds on 0 to check
        return Propagated(bool((lo <= 0).all() and (hi >= 0).all()), lb, ub)

    def row_sums(values: np.ndarray) -> np.ndarray:  # exact: an int64 sparse product
        return sp.csc_matrix((values, rows, indptr), shape=(n_rows, n_cols)) @ np.ones(
            n_cols, dtype=np.int64)

    for _ in range(max_rounds):
        least = np.where(pos, coef * lb[cols], coef * ub[cols])  # each entry's least part
        most = np.where(pos, coef * ub[cols], coef * lb[cols])
        act_lo = row_sums(least)
        act_hi = row_sums(most)
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


def _floor_div(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.floor_divide(x, d)


def _ceil_div(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    return -np.floor_divide(-x, d)
