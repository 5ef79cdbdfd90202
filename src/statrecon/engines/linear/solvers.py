"""The numeric estimators of the linear engine: least squares (with its analytic centre),
LP decoding (total or largest error, HiGHS), integer decoding (HiGHS MILP), randomized
Kaczmarz and SGD. Each takes a matrix, answers and bounds (no release, no I/O) and returns
the most plausible secret column under noise: estimates, never proofs, except ``solve_ip``
whose optimum is proven by HiGHS (status OPTIMAL) or reported ``unknown``.

The registry that names them for the engine and the CLI is :mod:`.estimators`.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from statrecon.engines.linear.problem import (
    HIGHS_STATUS,
    EstimateStatus,
    Matrix,
    SolverIncomplete,
    WorkerUnavailable,
    check_system,
)
from statrecon.engines.solvers import highs
from statrecon.engines.solvers.worker import _stop_idle as _stop_idle
from statrecon.engines.solvers.worker import bounded_call
from statrecon.engines.solvers.worker import prestart_worker as prestart_worker

CENTRE_MAX_RECORDS = 300  # above this, bounded ls returns the (interior) trust-region optimum
# A time-limited HiGHS solve runs in a worker process (:mod:`statrecon.engines.solvers.worker`,
# whose prestart_worker is re-exported above: the API starts one ahead through this module)
# that gets the limit plus a share of it plus a grace period to stop by itself and hand back
# what it found (the MILP: its best integer point, worth waiting for; an LP stopped short
# gives nothing); past that the worker is killed.
MIP_GRACE_S = 0.5
LP_GRACE_S = 0.1


def solve_ls(F: Matrix, a: np.ndarray, lower: np.ndarray | None = None,
             upper: np.ndarray | None = None, weights: np.ndarray | None = None) -> np.ndarray:
    """Least squares. Without bounds: the minimum-norm minimiser (normal equations when F has
    full column rank and is dense, LSQR when sparse, SVD otherwise). With bounds: the analytic
    centre of all bounded minimisers, i.e. the point of the optimal set farthest from every
    bound; a vertex would claim records sit on their bounds, which the data do not say."""
    return solve_ls_within(F, a, lower, upper, weights, None)[0]


def solve_ls_within(F: Matrix, a: np.ndarray, lower: np.ndarray | None,
                    upper: np.ndarray | None, weights: np.ndarray | None,
                    time_limit: float | None) -> tuple[np.ndarray, bool]:
    """``solve_ls`` within ``time_limit`` seconds: (x, finished). Past the limit the bounded
    case stops its centring or its gradient steps and returns the point reached (finished
    False); the unbounded case is one factorisation and always finishes."""
    check_system(F, a, lower, upper)
    end = None if time_limit is None else time.monotonic() + time_limit
    a = np.asarray(a, dtype=float)
    if weights is not None:
        w = np.sqrt(np.asarray(weights, dtype=float))
        F = sp.diags(w) @ F if sp.issparse(F) else F * w[:, None]
        a = a * w
    n = F.shape[1]
    bounded = (lower is not None and np.isfinite(lower).any()) or (
        upper is not None and np.isfinite(upper).any())
    if not bounded:
        return _ls_unbounded(F, a), True
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=float)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=float)
    if n > CENTRE_MAX_RECORDS:  # large: accelerated projected gradient, no centring LPs
        return _box_least_squares(F, a, lo, hi, end=end)
    if end is None:
        x0 = _box_lsq_here(F, a, lo, hi)
    else:  # seconds on a few hundred records, and scipy's trust region takes no time limit
        try:
            got = bounded_call(_box_lsq_here, (F, a, lo, hi), max(end - time.monotonic(), 0.0))
        except WorkerUnavailable:  # an estimate, not a proof: the plain one will do
            got = None
        if got is None:
            return np.clip(_ls_unbounded(F, a), lo, hi), False
        x0 = got
    if _past(end):
        return x0, False
    return _analytic_centre(F, F @ x0, lo, hi, x0, end=end)


def _box_lsq_here(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """A least-squares optimum in the box (scipy's trust region reflective), in the box."""
    from scipy.optimize import lsq_linear

    first = lsq_linear(F, a, bounds=(lo, hi), method="trf", lsmr_tol="auto", tol=1e-12)
    return np.clip(first.x, lo, hi)


def _past(end: float | None) -> bool:
    return end is not None and time.monotonic() >= end


def box_least_squares(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      iterations: int = 1000, tol: float = 1e-7) -> np.ndarray:
    """min ||F x - a||² over the box by FISTA (accelerated projected gradient): two products
    with F per step, so it scales where active-set and trust-region solvers do not."""
    return _box_least_squares(F, a, lo, hi, iterations, tol)[0]


def _box_least_squares(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                       iterations: int = 1000, tol: float = 1e-7, end: float | None = None
                       ) -> tuple[np.ndarray, bool]:
    """FISTA until converged, ``iterations`` or the moment ``end``: (x, finished)."""
    Fr = sp.csr_matrix(F) if sp.issparse(F) else np.asarray(F, dtype=float)
    n = Fr.shape[1]
    rng = np.random.default_rng(0)
    v = rng.standard_normal(n)
    for _ in range(30):  # power iteration for the Lipschitz constant ||F||²
        v = Fr.T @ (Fr @ v)
        v /= np.linalg.norm(v) or 1.0
    lipschitz = float(np.linalg.norm(Fr.T @ (Fr @ v))) * 1.01 or 1.0
    if Fr.shape[0] >= n:  # the unconstrained optimum, clipped, is usually close
        start = np.clip(_ls_unbounded(F, a), lo, hi)
    else:
        start = np.where(np.isfinite(lo) & np.isfinite(hi), (lo + hi) / 2,
                         np.where(np.isfinite(lo), lo, np.where(np.isfinite(hi), hi, 0.0)))
    x = y = start
    t = 1.0
    for i in range(iterations):
        if i % 16 == 0 and _past(end):
            return np.asarray(x), False
        grad = Fr.T @ (Fr @ y - a)
        x_new = np.clip(y - grad / lipschitz, lo, hi)
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        y = x_new + ((t - 1) / t_new) * (x_new - x)
        if np.linalg.norm(x_new - x) <= tol * max(1.0, float(np.linalg.norm(x))):
            x = x_new
            break
        x, t = x_new, t_new
    return np.asarray(x), True


def _ls_unbounded(F: Matrix, a: np.ndarray) -> np.ndarray:
    k, n = F.shape
    if sp.issparse(F):
        density = F.nnz / max(1, k * n)
        if density < 0.05 or k * n > 4e8:
            from scipy.sparse.linalg import lsqr

            return np.asarray(lsqr(F, a, atol=1e-12, btol=1e-12, iter_lim=20 * n)[0])
        F = F.toarray()
    F = np.asarray(F, dtype=float)
    if k >= n:
        import scipy.linalg as la

        G = F.T @ F
        try:
            c, low = la.cho_factor(G, check_finite=False)
            x = la.cho_solve((c, low), F.T @ a, check_finite=False)
            d = np.abs(np.diag(c))  # cond(FᵀF) is at least (max d / min d)², cheap to read
            if np.all(np.isfinite(x)) and d.min() > 0 and (d.max() / d.min()) ** 2 < 1e10:
                return np.asarray(x)
        except la.LinAlgError:
            pass
    return np.asarray(np.linalg.lstsq(F, a, rcond=None)[0])


def analytic_centre(F: Matrix, target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    start: np.ndarray, iterations: int = 80) -> np.ndarray:
    """The point maximising sum(log(x - lo) + log(hi - x)) subject to F x = target.

    Coordinates that every point of the set pins to a bound stay there; the rest move to the
    centre by Newton steps on the barrier restricted to the null space of F."""
    return _analytic_centre(F, target, lo, hi, start, iterations)[0]


def _analytic_centre(F: Matrix, target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     start: np.ndarray, iterations: int = 80, end: float | None = None
                     ) -> tuple[np.ndarray, bool]:
    """``analytic_centre`` until the moment ``end``: (x, finished); cut short, ``start`` (a
    point of the set) comes back."""
    from scipy.linalg import null_space

    Fd = F.toarray() if sp.issparse(F) else np.asarray(F, dtype=float)
    free = _free_coordinates(Fd, target, lo, hi, end)
    x = start.copy()
    if free is None:
        return x, False
    if not free.any():
        return x, True
    inner = _interior_point(Fd, target, lo, hi, free, end)
    if inner is None:
        return x, not _past(end)
    x = inner
    fixed = ~free
    A = Fd[:, free]
    N = null_space(A) if A.shape[0] else np.eye(int(free.sum()))
    if N.shape[1] == 0:
        return x, True
    lo_f, hi_f = lo[free], hi[free]
    y = x[free]
    finite_lo, finite_hi = np.isfinite(lo_f), np.isfinite(hi_f)
    for _ in range(iterations):
        g = np.where(finite_lo, 1 / (y - lo_f), 0) - np.where(finite_hi, 1 / (hi_f - y), 0)
        h = np.where(finite_lo, 1 / (y - lo_f) ** 2, 0) + np.where(finite_hi,
                                                                  1 / (hi_f - y) ** 2, 0)
        H = N.T @ (h[:, None] * N)
        gz = N.T @ g
        try:
            dz = np.linalg.solve(H + 1e-14 * np.eye(H.shape[0]), gz)
        except np.linalg.LinAlgError:
            break
        d = N @ dz
        step = 1.0
        while step > 1e-12:
            z = y + step * d
            if np.all(z > lo_f) and np.all(z < hi_f):
                break
            step *= 0.5
        y = y + 0.99 * step * d if step < 1 else y + d
        if float(gz @ dz) < 1e-16:
            break
    x[free] = y
    x[fixed] = inner[fixed]
    return x, True


def _slack_rows(n: int, idx: np.ndarray, lo: np.ndarray, hi: np.ndarray, width: int,
                col_of: np.ndarray, scale: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows ``scale*s - (x - lo) <= 0`` and ``scale*s + (x - hi) <= 0`` for coordinates idx,
    where s is the extra variable ``col_of[j]`` (sparse: n can be thousands)."""
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    rhs: list[float] = []
    r = 0
    for j, i in enumerate(idx):
        for sign, bound in ((-1.0, lo[i]), (1.0, hi[i])):
            if not np.isfinite(bound):
                continue
            rows += [r, r]
            cols += [int(i), int(col_of[j])]
            vals += [sign, float(scale[j])]
            rhs.append(sign * bound)
            r += 1
    return sp.csr_matrix((vals, (rows, cols)), shape=(r, width)), np.array(rhs, dtype=float)


def _box_lp(F: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            idx: np.ndarray, extra: int, slack_col: np.ndarray, scale: np.ndarray,
            extra_bounds: tuple[np.ndarray, np.ndarray], end: float | None = None
            ) -> np.ndarray | None:
    """Maximise the sum of the extra variables subject to F x = target, box, slack rows."""
    n = F.shape[1]
    width = n + extra
    A_ub, b_ub = _slack_rows(n, idx, lo, hi, width, slack_col, scale)
    A_eq = sp.hstack([sp.csr_matrix(F), sp.csr_matrix((F.shape[0], extra))], format="csr")
    c = np.concatenate([np.zeros(n), -np.ones(extra)])
    lb = np.concatenate([lo, extra_bounds[0]])
    ub = np.concatenate([hi, extra_bounds[1]])
    A = sp.vstack([A_eq, A_ub], format="csc")
    row_lo = np.concatenate([target, np.full(A_ub.shape[0], -np.inf)])
    row_hi = np.concatenate([target, b_ub])
    # Small LPs (at most CENTRE_MAX_RECORDS records), solved here: HiGHS's own limit is near
    # enough, and a worker process would cost more than the solve.
    left = None if end is None else max(end - time.monotonic(), 0.001)
    x, status = _highs_here(c, A, row_lo, row_hi, lb, ub, left)
    return x if status == "optimal" else None


def _free_coordinates(F: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      end: float | None = None) -> np.ndarray | None:
    """Coordinates that some point of {F x = target, lo <= x <= hi} keeps off both bounds;
    None when the moment ``end`` passed first."""
    n = F.shape[1]
    free = np.zeros(n, dtype=bool)
    pending = np.ones(n, dtype=bool)
    span = np.where(np.isfinite(hi - lo), hi - lo, 4.0)
    for _ in range(n + 1):
        idx = np.flatnonzero(pending)
        if idx.size == 0:
            break
        m = idx.size
        x = _box_lp(F, target, lo, hi, idx, m, n + np.arange(m), np.ones(m),
                    (np.zeros(m), np.minimum(1.0, span[idx] / 4)), end)
        if _past(end):
            return None
        if x is None:
            break
        newly = idx[x[n:] > 1e-9]
        if newly.size == 0:
            break
        free[newly] = True
        pending[newly] = False
    return free


def _interior_point(F: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    free: np.ndarray, end: float | None = None) -> np.ndarray | None:
    """A point of the set strictly inside the bounds on every free coordinate."""
    n = F.shape[1]
    idx = np.flatnonzero(free)
    scale = np.where(np.isfinite(hi[idx] - lo[idx]), hi[idx] - lo[idx], 1.0)
    x = _box_lp(F, target, lo, hi, idx, 1, np.full(idx.size, n), scale,
                (np.zeros(1), np.full(1, 0.5)), end)
    if x is None or x[-1] <= 1e-12:
        return None
    return np.asarray(x[:n])


def solve_lp_l1(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                weights: np.ndarray | None = None, time_limit: float | None = None
                ) -> np.ndarray:
    """Minimise the total (weighted) error sum_j w_j |a_j - F_j x| in the box (HiGHS)."""
    check_system(F, a, lower, upper)
    k, n = F.shape
    c, A_eq = _l1_model(F, weights)
    lb = np.concatenate([lower, np.zeros(2 * k)])
    ub = np.concatenate([upper, np.full(2 * k, np.inf)])
    return _highs_lp(c, A_eq, np.asarray(a, float), np.asarray(a, float), lb, ub, n,
                     time_limit)


def _l1_model(F: Matrix, weights: np.ndarray | None) -> tuple[np.ndarray, sp.csc_matrix]:
    """Variables (x, e+, e-) with F x + e+ - e- = a; cost sum w (e+ + e-): total error."""
    k, n = F.shape
    w = np.ones(k) if weights is None else np.asarray(weights, dtype=float)
    eye = sp.identity(k, format="csr")
    A = sp.hstack([sp.csr_matrix(F), eye, -eye], format="csc")
    return np.concatenate([np.zeros(n), w, w]), A


def solve_lp_linf(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                  time_limit: float | None = None) -> np.ndarray:
    """Minimise the largest error max_j |a_j - F_j x| in the box (Dinur–Nissim, HiGHS)."""
    check_system(F, a, lower, upper)
    k, n = F.shape
    Fs = sp.csr_matrix(F)
    eye = sp.identity(k, format="csr")
    ones = sp.csr_matrix(np.ones((k, 1)))
    # rows: F x + e = a ; e - t <= 0 ; -e - t <= 0  (variables x, e, t)
    top = sp.hstack([Fs, eye, sp.csr_matrix((k, 1))])
    up = sp.hstack([sp.csr_matrix((k, n)), eye, -ones])
    down = sp.hstack([sp.csr_matrix((k, n)), -eye, -ones])
    A = sp.vstack([top, up, down], format="csc")
    a = np.asarray(a, float)
    row_lo = np.concatenate([a, np.full(2 * k, -np.inf)])
    row_hi = np.concatenate([a, np.zeros(2 * k)])
    c = np.concatenate([np.zeros(n + k), [1.0]])
    lb = np.concatenate([lower, np.full(k, -np.inf), [0.0]])
    ub = np.concatenate([upper, np.full(k, np.inf), [np.inf]])
    return _highs_lp(c, A, row_lo, row_hi, lb, ub, n, time_limit)


def _highs_lp(c: np.ndarray, A: sp.csc_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
              lb: np.ndarray, ub: np.ndarray, n: int, time_limit: float | None) -> np.ndarray:
    """The LP's optimal x; anything short of OPTIMAL raises instead of returning a guess."""
    x, status = _highs(c, A, row_lo, row_hi, lb, ub, time_limit)
    if status == "unknown" and time_limit is not None:
        raise SolverIncomplete(f"HiGHS found no optimal point within the time limit "
                               f"({time_limit:g} s)")
    if status != "optimal" or np.isnan(x[:n]).any():
        raise SolverIncomplete(f"HiGHS ended with status {status}")
    return x[:n]


def _highs(c: np.ndarray, A: sp.csc_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
           lb: np.ndarray, ub: np.ndarray, time_limit: float | None,
           integrality: np.ndarray | None = None, worker: bool = True
           ) -> tuple[np.ndarray, EstimateStatus]:
    """Solve with HiGHS (:func:`statrecon.engines.solvers.highs.solve`), within
    ``time_limit`` seconds of wall time: an LP by interior point, a MIP by HiGHS's MIP driver.

    The interior point is ~20x faster on dense query matrices than the simplex HiGHS picks
    inside its MIP driver (18 s against 344 s for lp-l1 at n = 1000, k = 4000). HiGHS does not
    always keep its own limit, so with a limit (and ``worker``) the solve runs in a worker
    process that is killed when the limit and a grace period have passed: that gives
    ``unknown``, never a point called optimal."""
    mip = integrality is not None and bool(integrality.any())
    grace = (MIP_GRACE_S if mip else LP_GRACE_S) if worker else None
    got = highs.solve(c, A, row_lo, row_hi, lb, ub, time_limit=time_limit,
                      integrality=integrality, method="highs-ipm", kill_after=grace)
    return got.x, HIGHS_STATUS.get(got.status, "unknown")


def _highs_here(c: np.ndarray, A: sp.csc_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
                lb: np.ndarray, ub: np.ndarray, time_limit: float | None,
                integrality: np.ndarray | None = None) -> tuple[np.ndarray, EstimateStatus]:
    """One HiGHS solve in this process, with HiGHS's own time limit only."""
    return _highs(c, A, row_lo, row_hi, lb, ub, time_limit, integrality, worker=False)


def solve_ip(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
             errors: np.ndarray | None = None, time_limit: float | None = 60.0,
             weights: np.ndarray | None = None) -> tuple[np.ndarray, EstimateStatus]:
    """Exact integer decoding (HiGHS MILP): integer x in the box minimising the total error,
    with each statistic's error at most its bound when one is given. Status ``optimal`` is
    proven by HiGHS; a time-out gives ``unknown`` with the best point found (if any)."""
    check_system(F, a, lower, upper)
    k, n = F.shape
    c, A = _l1_model(F, weights)
    cap = np.full(k, np.inf) if errors is None else np.asarray(errors, dtype=float)
    lb = np.concatenate([np.ceil(lower - 1e-9), np.zeros(2 * k)])
    ub = np.concatenate([np.floor(upper + 1e-9), cap, cap])
    integrality = np.concatenate([np.ones(n, bool), np.zeros(2 * k, bool)])
    a = np.asarray(a, float)
    x, status = _highs(c, A, a, a, lb, ub, time_limit, integrality)
    return x[:n], status


def solve_kaczmarz(F: Matrix, a: np.ndarray, lower: np.ndarray | None = None,
                   upper: np.ndarray | None = None, epochs: float = 5.0, block: int = 32,
                   rng: np.random.Generator | None = None, x0: np.ndarray | None = None
                   ) -> np.ndarray:
    """Randomized (block) Kaczmarz over statistics drawn one block at a time, each step
    projecting onto the block's hyperplanes and then onto the box. Touches only the rows it
    draws, so it serves statistics that arrive as a stream."""
    return kaczmarz_within(F, a, lower, upper, epochs, block, rng, x0)[0]


def kaczmarz_within(F: Matrix, a: np.ndarray, lower: np.ndarray | None = None,
                    upper: np.ndarray | None = None, epochs: float = 5.0, block: int = 32,
                    rng: np.random.Generator | None = None, x0: np.ndarray | None = None,
                    time_limit: float | None = None) -> tuple[np.ndarray, float]:
    """``solve_kaczmarz`` within ``time_limit`` seconds: (x, share of the steps done)."""
    check_system(F, a, lower, upper)
    end = None if time_limit is None else time.monotonic() + time_limit
    rng = rng or np.random.default_rng(0)
    n = F.shape[1]
    Fr: Any
    if sp.issparse(F):
        Fr = sp.csr_matrix(F, dtype=float)
        norms = np.asarray(Fr.multiply(Fr).sum(axis=1)).ravel()
    else:
        Fr = np.asarray(F, dtype=float)
        norms = np.einsum("ij,ij->i", Fr, Fr)
    nonzero = np.flatnonzero(norms > 0)
    x = np.zeros(n) if x0 is None else np.array(x0, dtype=float)
    lo = None if lower is None else np.asarray(lower, float)
    hi = None if upper is None else np.asarray(upper, float)
    if lo is not None or hi is not None:
        x = np.clip(x, lo if lo is not None else -np.inf, hi if hi is not None else np.inf)
        x = np.where(np.isfinite(x), x, 0.0)
    steps = math.ceil(epochs * nonzero.size / block)
    p = norms[nonzero] / norms[nonzero].sum()
    a = np.asarray(a, float)
    for step in range(steps):
        if step % 64 == 0 and _past(end):
            return x, step / steps
        rows = rng.choice(nonzero, size=min(block, nonzero.size), replace=False, p=p)
        Fb = Fr[rows]
        resid = a[rows] - Fb @ x
        upd = (resid / norms[rows]) / rows.size
        x = x + Fb.T @ upd
        if lo is not None or hi is not None:
            np.clip(x, lo, hi, out=x)
    return x, 1.0


def solve_sgd(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
              epochs: int = 200, lr: float = 0.05, batch: int = 64,
              rng: np.random.Generator | None = None, backend: str = "auto") -> np.ndarray:
    """Adam on the mean squared residual with the sigmoid box reparametrisation
    x = lower + (upper - lower) * sigmoid(z). Uses torch when installed (``statrecon[torch]``)
    and asked for or ``auto``; numpy otherwise (same algorithm)."""
    return sgd_within(F, a, lower, upper, epochs, lr, batch, rng, backend)[0]


def sgd_within(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
               epochs: int = 200, lr: float = 0.05, batch: int = 64,
               rng: np.random.Generator | None = None, backend: str = "auto",
               time_limit: float | None = None) -> tuple[np.ndarray, float]:
    """``solve_sgd`` within ``time_limit`` seconds: (x, share of the epochs done)."""
    check_system(F, a, lower, upper)
    end = None if time_limit is None else time.monotonic() + time_limit
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError("sgd needs finite lower and upper bounds for every record")
    if backend in ("auto", "torch"):
        try:
            import torch  # noqa: F401
        except ImportError:
            if backend == "torch":
                raise
        else:
            return _sgd_torch(F, a, lo, hi, epochs, lr, batch, rng, end)
    return _sgd_numpy(F, a, lo, hi, epochs, lr, batch, rng, end)


def _sgd_numpy(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray, epochs: int,
               lr: float, batch: int, rng: np.random.Generator | None,
               end: float | None = None) -> tuple[np.ndarray, float]:
    rng = rng or np.random.default_rng(0)
    k, n = F.shape
    Fr = sp.csr_matrix(F, dtype=float) if sp.issparse(F) else np.asarray(F, dtype=float)
    a = np.asarray(a, float)
    z = np.zeros(n)
    m, v = np.zeros(n), np.zeros(n)
    b1, b2, eps, t = 0.9, 0.999, 1e-8, 0
    span = hi - lo
    for epoch in range(epochs):
        if _past(end):
            return np.asarray(lo + span / (1 + np.exp(-z))), epoch / epochs
        order = rng.permutation(k)
        for start in range(0, k, batch):
            rows = order[start:start + batch]
            s = 1 / (1 + np.exp(-z))
            x = lo + span * s
            Fb = Fr[rows]
            resid = Fb @ x - a[rows]
            grad_x = np.asarray(Fb.T @ resid).ravel() * (2 / rows.size)
            g = grad_x * span * s * (1 - s)
            t += 1
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            z -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return np.asarray(lo + span / (1 + np.exp(-z))), 1.0


def _sgd_torch(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray, epochs: int,
               lr: float, batch: int, rng: np.random.Generator | None,
               end: float | None = None) -> tuple[np.ndarray, float]:
    import torch

    gen = torch.Generator().manual_seed(int((rng or np.random.default_rng(0)).integers(2**31)))
    Fd = F.toarray() if sp.issparse(F) else np.asarray(F)
    Ft = torch.tensor(Fd, dtype=torch.float64)
    at = torch.tensor(np.asarray(a, float), dtype=torch.float64)
    lt, span = torch.tensor(lo), torch.tensor(hi - lo)
    z = torch.zeros(Fd.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([z], lr=lr)
    k = Fd.shape[0]
    done = 1.0
    for epoch in range(epochs):
        if _past(end):
            done = epoch / epochs
            break
        order = torch.randperm(k, generator=gen)
        for start in range(0, k, batch):
            rows = order[start:start + batch]
            x = lt + span * torch.sigmoid(z)
            loss = torch.mean((Ft[rows] @ x - at[rows]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        return np.asarray((lt + span * torch.sigmoid(z)).numpy()), done
