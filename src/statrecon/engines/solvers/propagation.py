"""Bound propagation over integer rows: the bounds every integer solution of
``lo <= A y <= hi``, ``lb <= y <= ub`` keeps, in exact integer arithmetic.

Why: a row's activity without one of its variables is bounded by the others' bounds, so the
row bounds that variable (with ``a > 0``: ``a y_j <= hi - (least activity of the rest)``,
rounded down, and the like). Each step is an implication that holds for every integer
solution, so the bounds are proofs, however few rounds run; a variable whose bounds cross
proves that no integer solution exists. This is what CP-SAT's presolve does first, here
vectorised over a sparse matrix, so a caller can settle what it proves without building a
model (the census certain proof closes most blocks that way).

With ``explain``, each tightening keeps the row that made it, so a bound can be turned into
LP multipliers (:class:`Derivations`): the rows of its derivation, each weighed so that their
combination implies the bound by weak duality (every step of a row with unit coefficients is
exact, so the bound then holds for every real solution too). A reader checks it with the
multipliers alone, as any dual certificate (``engines/intervals/check``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp

MAX_ROUNDS = 100
Side = Literal["lower", "upper"]


@dataclass(frozen=True)
class Propagated:
    """The tightened bounds (``lb <= y <= ub`` in every integer solution), or ``feasible``
    False: no integer solution exists. ``changes`` (with ``explain``): per side, per
    variable, the (round, row) of each tightening, in round order."""

    feasible: bool
    lb: np.ndarray
    ub: np.ndarray
    changes: dict[Side, dict[int, list[tuple[int, int]]]] = field(
        default_factory=lambda: {"lower": {}, "upper": {}})


def propagate(a: sp.csr_matrix, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray,
              ub: np.ndarray, max_rounds: int = MAX_ROUNDS, explain: bool = False
              ) -> Propagated:
    """Tighten ``lb``/``ub`` (finite int64, as are ``lo``/``hi`` and ``a``'s entries) by
    every row in turn, all rows at once per round, until nothing changes or ``max_rounds``.
    Magnitudes must keep the rows' activities within int64 (the caller's caps do).
    ``explain``: keep the row of each tightening (``Propagated.changes``)."""
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

    # each row's sum of its entries' values: exact, an int64 sparse product with the
    # structure built once (only the values change from round to round)
    summer = sp.csr_matrix((np.ones(len(rows), dtype=np.int64),
                            (rows, np.arange(len(rows)))), shape=(n_rows, len(rows)))

    def row_sums(values: np.ndarray) -> np.ndarray:
        return summer @ values

    unit = bool((np.abs(coef) == 1).all())  # then dividing by a coefficient multiplies

    changes: dict[Side, dict[int, list[tuple[int, int]]]] = {"lower": {}, "upper": {}}
    for round_ in range(1, max_rounds + 1):
        least = np.where(pos, coef * lb[cols], coef * ub[cols])  # each entry's least part
        most = np.where(pos, coef * ub[cols], coef * lb[cols])
        act_lo = row_sums(least)
        act_hi = row_sums(most)
        if (act_lo > hi).any() or (act_hi < lo).any():
            return Propagated(False, lb, ub)
        # the entry's room: what the row leaves it once the rest takes its least (most)
        room_up = hi[rows] - (act_lo[rows] - least)  # bound on coef * y_j from above
        room_dn = lo[rows] - (act_hi[rows] - most)  # bound on coef * y_j from below
        if unit:
            upper = np.where(pos, room_up, -room_dn)
            lower = np.where(pos, room_dn, -room_up)
        else:
            upper = np.where(pos, _floor_div(room_up, coef), _floor_div(room_dn, coef))
            lower = np.where(pos, _ceil_div(room_dn, coef), _ceil_div(room_up, coef))
        new_ub = ub.copy()
        new_lb = lb.copy()
        least_up = np.minimum.reduceat(upper, starts)
        most_dn = np.maximum.reduceat(lower, starts)
        new_ub[held] = np.minimum(ub[held], least_up)
        new_lb[held] = np.maximum(lb[held], most_dn)
        if (new_lb > new_ub).any():
            return Propagated(False, new_lb, new_ub)
        if np.array_equal(new_lb, lb) and np.array_equal(new_ub, ub):
            break
        if explain:
            _record(changes["upper"], round_, held, new_ub[held] < ub[held],
                    upper == np.repeat(least_up, np.diff(np.r_[starts, len(cols)])),
                    starts, rows)
            _record(changes["lower"], round_, held, new_lb[held] > lb[held],
                    lower == np.repeat(most_dn, np.diff(np.r_[starts, len(cols)])),
                    starts, rows)
        lb, ub = new_lb, new_ub
    return Propagated(True, lb, ub, changes)


def _record(into: dict[int, list[tuple[int, int]]], round_: int, held: np.ndarray,
            improved: np.ndarray, attains: np.ndarray, starts: np.ndarray,
            rows: np.ndarray) -> None:
    """For each variable tightened this round, the first row (entry order) attaining it."""
    if not improved.any():
        return
    entry = np.where(attains, np.arange(len(attains)), len(attains))
    first = np.minimum.reduceat(entry, starts)
    for var, e in zip(held[improved].tolist(), first[improved].tolist(), strict=True):
        into.setdefault(var, []).append((round_, int(rows[e])))


class Derivations:
    """Bounds of one propagation (made with ``explain``) turned into row multipliers: the
    rows as integers and the derivations already made, kept across the variables asked
    (a release asks for each of 100,000 cells' two bounds)."""

    def __init__(self, got: Propagated, a: sp.csr_matrix, lo: np.ndarray,
                 hi: np.ndarray) -> None:
        self.got, self.lo, self.hi = got, lo, hi
        self.csr = sp.csr_matrix(a, dtype=np.int64)
        self.csr.sum_duplicates()
        self.memo: dict[tuple[int, Side, int], dict[int, int] | None] = {}

    def multipliers(self, var: int, side: Side) -> dict[int, int] | None:
        """Row multipliers ``y`` whose weak-duality bound on ``var`` (the least, or
        greatest, of ``y·b + (e_var - yA)·x`` over the variables' own bounds) is at least as
        tight as the propagated bound: the row of the last tightening, each other
        variable's bound it used replaced by that bound's own derivation, recursively,
        round before round. Empty: the bound is the variable's own. None where a step
        divides by a coefficient other than 1 or -1 (rounded: no LP certificate), or a row
        is not an equation (its side would matter): the bound then holds for integers
        only."""
        found = self._derive(var, side, 1 << 30)
        return None if found is None else {r: y for r, y in found.items() if y}

    def _derive(self, k: int, s: Side, before: int) -> dict[int, int] | None:
        steps = [c for c in self.got.changes[s].get(k, ()) if c[0] <= before]
        if not steps:
            return {}
        when, row = steps[-1]
        key = (k, s, when)
        if key in self.memo:
            return self.memo[key]
        csr = self.csr
        start, end = csr.indptr[row], csr.indptr[row + 1]
        idx, coef = csr.indices[start:end].tolist(), csr.data[start:end].tolist()
        a_k = sum(c for i, c in zip(idx, coef, strict=True) if i == k)
        out: dict[int, int] | None = None
        if a_k in (1, -1) and self.lo[row] == self.hi[row]:
            out = {row: a_k}
            for i, c in zip(idx, coef, strict=True):
                if i == k:
                    continue
                d = -a_k * c  # the reduced cost of i once row is weighed by a_k
                need: Side = s if d > 0 else ("upper" if s == "lower" else "lower")
                sub = self._derive(i, need, when - 1)
                if sub is None:
                    out = None
                    break
                for r, y in sub.items():
                    out[r] = out.get(r, 0) + d * y
        self.memo[key] = out
        return out


def _floor_div(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.floor_divide(x, d)


def _ceil_div(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    return -np.floor_divide(-x, d)
