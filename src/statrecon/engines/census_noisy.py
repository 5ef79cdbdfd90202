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
rounded LP solution, over the LP's support; when the LP optimum is already integral it is
the answer, optimal over every dataset. The gap to the LP bound is reported. It is an
estimate: nothing here is called certain.

Status: a prototype, not behind a command: ``census reconstruct`` gives noisy releases the
top-down estimate of ``census_topdown``, which scales; this joint model is kept as the
reference that is optimal over every dataset where it finishes. Measured on the 3-tract
slice (seeded noise): exact tables are met exactly; at rho = 100 the LP optimum is integral
in all three tracts, 0.06-0.4 s for the small tracts and 19 s for the 211-block one (15
rounds, 32,541 columns); at rho = 10 the 211-block tract's LP does not finish in 120 s
(62,275 columns), and the L1 fit adds persons (197 for 105 true in the 5-block tract): the
top-down model fixes the totals first for that reason.
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
ADD_PER_ROUND = 30000  # columns added per round, the most negative reduced costs first
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
    status: str  # "optimal": an integral LP optimum over all columns (deviation = LP bound);
    #              "feasible": integer counts over the LP's support; "unknown": none found
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
    offset = n_blocks * n_block_cells
    parts = []
    for matrix, shift in ((mb, block.astype(np.int64) * n_block_cells),
                          (mt, np.full(len(cell), offset, dtype=np.int64))):
        sub = matrix[:, cell].tocsc()
        sub.sort_indices()
        rows = sub.indices.astype(np.int64) + np.repeat(shift, np.diff(sub.indptr))
        cols = np.repeat(np.arange(len(cell)), np.diff(sub.indptr))
        parts.append((rows, cols))
    rows = np.concatenate([r for r, _ in parts])
    cols = np.concatenate([c for _, c in parts])
    return sp.csc_matrix((np.ones(len(rows)), (rows, cols)),
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
    columns = len(block)
    x_lp = solved[0] if solved is not None and len(solved[0]) == columns else None
    if x_lp is not None:  # the integer model keeps the LP's support
        support = np.flatnonzero(x_lp > 1e-9)
        block, cell, x_lp = block[support], cell[support], x_lp[support]
    a = _column_rows(block, cell, mb, mt, nc, nb)
    if x_lp is not None and bound is not None and np.allclose(x_lp, np.rint(x_lp), atol=1e-9):
        counts_out = np.rint(x_lp).astype(np.int64)  # an integral LP optimum: optimal
        deviation, status = _deviation(a, rows, counts_out), "optimal"
    else:
        counts_out, deviation, status = _integer(a, rows, x_lp, deadline, seed)
    keep = counts_out > 0
    return NoisyTract(tables.tract, block[keep], cell[keep], counts_out[keep], deviation,
                      bound, status, columns, rows.n, rounds, time.perf_counter() - t0)


def _deviation(a: sp.csc_matrix, rows: _Rows, counts: np.ndarray) -> float:
    """The weighted deviation the counts leave, over every row."""
    return float((rows.weights * np.abs(a @ counts - rows.values)).sum())


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
    return values, _deviation(a, rows, values), "feasible"
