"""Noise-aware tract reconstruction: integer persons whose tables come closest to noisy
measurements, each cell's deviation weighted by 1 / sigma of its table (weighted L1).

Noisy cells prune nothing (a published 0 may hide persons, a 3 may hide none), so the model
cannot list its (block, person type) counts in advance: a tract has blocks x 27,972 of them.
The LP relaxation is solved by column generation instead: start from the types every
containing cell shows as present, solve the LP over those columns and the rows they touch
(HiGHS), price every other (block, type) with the duals (a rowless cell's dual is its weight
times the sign of its measurement, the price of leaving it unexplained), add the cheapest,
repeat until no column prices below zero. The LP optimum over *all* columns is then a lower
bound on any dataset's deviation. CP-SAT then finds integer counts over the generated
columns, minimising the same deviation (weights scaled to integers), starting from the
rounded LP solution; the gap to the LP bound is reported. It is an estimate: nothing here is
called certain.

Status: a prototype, not yet behind a command (``census reconstruct`` refuses noisy
releases). Measured on the 3-tract slice: exact tables are met exactly; at rho = 100 the
5-block and 1-block tracts solve to the LP bound in 1-3 s, but the 211-block tract runs out
of a 60 s limit (22 LP rounds), and at rho <= 10 the L1 fit adds persons (197 for 105 true):
it needs warm-started LP rounds, more columns per round and the optional invariants.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model
from scipy.optimize import linprog

from statrecon.census.persons.cells import GRID_SIZE
from statrecon.census.persons.release import TractTables
from statrecon.engines.census import CellMatrices
from statrecon.engines.cpsat import Deadline, found, new_solver

WEIGHT_SCALE = 1000  # CP-SAT weights: round(WEIGHT_SCALE * w / max w), at least 1
MAX_ROUNDS = 60  # column generation rounds before the LP bound is reported as not proven
ADD_PER_ROUND = 4000  # columns added per round, the most negative reduced costs first
PRICE_TOL = 1e-7


@dataclass(frozen=True)
class NoisyTract:
    """The estimate for one tract: counts per (block position, attribute cell), the weighted
    deviation it leaves, the LP lower bound over all datasets (None: column generation did
    not finish), and how it was found."""

    tract: str
    block_of: np.ndarray
    cell_of: np.ndarray
    counts: np.ndarray
    deviation: float
    lp_bound: float | None
    status: str  # "optimal" (over the generated columns), "feasible", "unknown"
    columns: int
    rows: int
    rounds: int
    seconds: float


@dataclass
class _Rows:
    """Every count cell of the tract as a row: block cells (block-major) then tract cells."""

    values: np.ndarray  # measured
    weights: np.ndarray  # 1 / sigma

    @property
    def n(self) -> int:
        return len(self.values)


def _rows(tables: TractTables, mats: CellMatrices, sigma_block: np.ndarray,
          sigma_tract: np.ndarray) -> tuple[_Rows, np.ndarray]:
    counts = np.flatnonzero(mats.is_count)
    vb = tables.block_values[:, counts].astype(float)
    values = np.concatenate([vb.ravel(), tables.tract_values.astype(float)])
    wb = np.broadcast_to(1.0 / sigma_block[counts], vb.shape).ravel()
    weights = np.concatenate([wb, 1.0 / sigma_tract])
    return _Rows(values, weights), counts


def _column_rows(block: np.ndarray, cell: np.ndarray, mb: sp.csc_matrix, mt: sp.csc_matrix,
                 n_block_cells: int, n_blocks: int) -> sp.csc_matrix:
    """The rows (cells) each column (block, attribute cell) counts in."""
    indptr = [0]
    indices: list[np.ndarray] = []
    offset = n_blocks * n_block_cells
    for b, a in zip(block.tolist(), cell.tolist(), strict=True):
        rb = mb.indices[mb.indptr[a]:mb.indptr[a + 1]] + b * n_block_cells
        rt = mt.indices[mt.indptr[a]:mt.indptr[a + 1]] + offset
        indices.append(np.concatenate([rb, rt]))
        indptr.append(indptr[-1] + len(rb) + len(rt))
    idx = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
    return sp.csc_matrix((np.ones(len(idx)), idx, np.array(indptr)),
                         shape=(offset + mt.shape[0], len(block)))


def _start(tables: TractTables, mats: CellMatrices, counts: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """Columns every containing cell measures as present (>= 0.5)."""
    absent = (tables.block_values[:, counts] < 0.5).astype(np.int32)
    forbidden = (sp.csr_matrix(absent) @ mats.block[counts]).toarray() > 0
    gone = (tables.tract_values < 0.5).astype(np.int32)
    forbidden |= (sp.csr_matrix(gone[None, :]) @ mats.tract).toarray() > 0
    block, cell = np.nonzero(~forbidden)
    return block.astype(np.int64), cell.astype(np.int64)


def _lp(a: sp.csc_matrix, rows: _Rows, deadline: Deadline
        ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray] | None:
    """LP over the columns of ``a`` and the rows they touch: (x, duals of all rows, value,
    touched rows); None when HiGHS stops short."""
    touched = np.flatnonzero(np.asarray(abs(a).sum(axis=1)).ravel() > 0)
    sub = a[touched]
    m = rows.values[touched]
    w = rows.weights[touched]
    k, n = sub.shape
    eye = sp.identity(k, format="csc")
    cost = np.concatenate([np.zeros(n), w, w])
    left = deadline.left()
    res = linprog(cost, A_eq=sp.hstack([sub, -eye, eye], format="csc"), b_eq=m,
                  bounds=(0, None), method="highs-ds",
                  options={} if left is None else {"time_limit": max(left, 0.01)})
    if res.status != 0:
        return None
    y = _untouched_duals(rows)
    y[touched] = res.eqlin.marginals
    untouched = np.ones(rows.n, dtype=bool)
    untouched[touched] = False
    value = float(res.fun) + float((rows.weights * np.abs(rows.values))[untouched].sum())
    return res.x[:n], y, value, touched


def _untouched_duals(rows: _Rows) -> np.ndarray:
    """The dual of a row no column touches: its deviation is its measurement, priced at
    +w for a positive one, -w otherwise (the least a person placed there can gain)."""
    return np.where(rows.values > 0, rows.weights, -rows.weights)


def _price(y: np.ndarray, tables: TractTables, mats: CellMatrices, counts: np.ndarray
           ) -> np.ndarray:
    """Reduced cost of every (block, attribute cell): -(sum of the duals of its rows)."""
    nb, nc = len(tables.blocks), len(counts)
    yb = y[:nb * nc].reshape(nb, nc)
    yt = y[nb * nc:]
    gain = (mats.block[counts].T @ yb.T).T + (mats.tract.T @ yt)[None, :]
    return -np.asarray(gain)


def reconstruct_noisy_tract(tables: TractTables, mats: CellMatrices, sigma_block: np.ndarray,
                            sigma_tract: np.ndarray, time_limit: float | None = 600.0,
                            seed: int = 0) -> NoisyTract:
    """The weighted-L1 estimate of one tract (module docstring). ``sigma_block[k]`` is the
    noise scale of block cell k (all block cells, medians ignored), ``sigma_tract`` of each
    tract cell; all must be > 0."""
    t0 = time.perf_counter()
    deadline = Deadline.after(time_limit)
    rows, counts = _rows(tables, mats, sigma_block, sigma_tract)
    mb = mats.block[counts].tocsc()
    mt = mats.tract.tocsc()
    nb, nc = len(tables.blocks), len(counts)
    block, cell = _start(tables, mats, counts)
    known = set((block.astype(np.int64) * GRID_SIZE + cell).tolist())
    bound: float | None = None
    rounds = 0
    solved = None
    while rounds < MAX_ROUNDS and not deadline.expired:
        rounds += 1
        a = _column_rows(block, cell, mb, mt, nc, nb)
        solved = _lp(a, rows, deadline)
        if solved is None:
            break
        _, y, value, _ = solved
        reduced = _price(y, tables, mats, counts)
        flat = reduced.ravel()
        # flat index = block * GRID_SIZE + cell, as ``reduced`` is blocks x GRID_SIZE
        candidates = np.flatnonzero(flat < -PRICE_TOL)
        new = np.array([k for k in candidates.tolist() if k not in known], dtype=np.int64)
        if not len(new):
            bound = value
            break
        new = new[np.argsort(flat[new], kind="stable")[:ADD_PER_ROUND]]
        known.update(new.tolist())
        block = np.concatenate([block, new // GRID_SIZE])
        cell = np.concatenate([cell, new % GRID_SIZE])
    a = _column_rows(block, cell, mb, mt, nc, nb)
    x_lp = solved[0] if solved is not None and len(solved[0]) == a.shape[1] else None
    counts_out, deviation, status = _integer(a, rows, x_lp, deadline, seed)
    keep = counts_out > 0
    return NoisyTract(tables.tract, block[keep], cell[keep], counts_out[keep], deviation,
                      bound, status, a.shape[1], rows.n, rounds, time.perf_counter() - t0)


def _integer(a: sp.csc_matrix, rows: _Rows, x_lp: np.ndarray | None, deadline: Deadline,
             seed: int) -> tuple[np.ndarray, float, str]:
    """Integer counts over the columns of ``a`` minimising the weighted deviation (CP-SAT,
    weights scaled to integers); the deviation is reported with the true weights."""
    touched = np.flatnonzero(np.asarray(abs(a).sum(axis=1)).ravel() > 0)
    sub = a[touched].tocsr()
    m = np.rint(rows.values[touched]).astype(np.int64)
    w = rows.weights[touched]
    scaled = np.maximum(1, np.rint(WEIGHT_SCALE * w / w.max())).astype(np.int64) \
        if len(w) else w.astype(np.int64)
    model = cp_model.CpModel()
    top = int(max(1, np.abs(m).max(initial=1)) * 4 + 10)
    x = [model.new_int_var(0, top, "") for _ in range(a.shape[1])]
    dev = []
    for r in range(sub.shape[0]):
        cols = sub.indices[sub.indptr[r]:sub.indptr[r + 1]]
        d = model.new_int_var(0, top + abs(int(m[r])), "")
        total = cp_model.LinearExpr.sum([x[j] for j in cols])
        model.add(total - int(m[r]) <= d)
        model.add(int(m[r]) - total <= d)
        dev.append(d)
    model.minimize(cp_model.LinearExpr.weighted_sum(dev, scaled.tolist()))
    if x_lp is not None:
        for v, value in zip(x, np.rint(x_lp).astype(np.int64).tolist(), strict=True):
            model.add_hint(v, max(0, value))
    solver = new_solver(left=deadline.left(), seed=seed)
    status = solver.solve(model)
    if not found(status):
        return np.zeros(a.shape[1], dtype=np.int64), float("nan"), "unknown"
    values = np.array([solver.value(v) for v in x], dtype=np.int64)
    untouched = np.ones(rows.n, dtype=bool)
    untouched[touched] = False
    deviation = float((w * np.abs(sub @ values - rows.values[touched])).sum()
                      + (rows.weights * np.abs(rows.values))[untouched].sum())
    return values, deviation, "optimal" if status == cp_model.OPTIMAL else "feasible"
