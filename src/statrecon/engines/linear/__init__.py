"""Linear reconstruction: one secret column of known rows from statistics linear in it.

Two kinds of answer, kept apart:

* ``determine`` proves, with exact rational arithmetic (FLINT), which unknowns every solution of
  the exact statistics shares, and gives for each the combination of statistics that yields it
  (a difference attack). Nothing here is floating point.
* The estimators (``ls``, ``lp-l1``, ``lp-linf``, ``ip``, ``kaczmarz``, ``sgd``) return the most
  plausible secret column under noise; they are estimates, never proofs, except ``ip`` whose
  optimum is proven by HiGHS (status OPTIMAL) or reported ``unknown``.

The numeric functions take a matrix and answers (no release, no I/O), so experiments and
benchmarks call them directly.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from statrecon.engines.linear.model import LinearSystem

Matrix = Any  # numpy array or scipy.sparse matrix
CENTRE_MAX_RECORDS = 300  # above this, bounded ls returns the (interior) trust-region optimum
METHODS = ("determine", "ls", "lp-l1", "lp-linf", "ip", "kaczmarz", "sgd")


# --------------------------------------------------------------------------- estimators

def check_system(F: Matrix, a: Any, lower: Any = None, upper: Any = None) -> None:
    """One answer per statistic and one bound per record, or a clear error."""
    k, n = F.shape
    if np.ndim(a) != 1 or len(a) != k:
        raise ValueError(f"{np.size(a)} answers for {k} statistics (one answer per row of the "
                         "query matrix)")
    for name, b in (("lower", lower), ("upper", upper)):
        if b is not None and (np.ndim(b) != 1 or len(b) != n):
            raise ValueError(f"{np.size(b)} {name} bounds for {n} records")


def solve_ls(F: Matrix, a: np.ndarray, lower: np.ndarray | None = None,
             upper: np.ndarray | None = None, weights: np.ndarray | None = None) -> np.ndarray:
    """Least squares. Without bounds: the minimum-norm minimiser (normal equations when F has
    full column rank and is dense, LSQR when sparse, SVD otherwise). With bounds: the analytic
    centre of all bounded minimisers, i.e. the point of the optimal set farthest from every
    bound; a vertex would claim records sit on their bounds, which the data do not say."""
    check_system(F, a, lower, upper)
    a = np.asarray(a, dtype=float)
    if weights is not None:
        w = np.sqrt(np.asarray(weights, dtype=float))
        F = sp.diags(w) @ F if sp.issparse(F) else F * w[:, None]
        a = a * w
    n = F.shape[1]
    bounded = (lower is not None and np.isfinite(lower).any()) or (
        upper is not None and np.isfinite(upper).any())
    if not bounded:
        return _ls_unbounded(F, a)
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=float)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=float)
    if n > CENTRE_MAX_RECORDS:  # large: accelerated projected gradient, no centring LPs
        return box_least_squares(F, a, lo, hi)
    from scipy.optimize import lsq_linear

    first = lsq_linear(F, a, bounds=(lo, hi), method="trf", lsmr_tol="auto", tol=1e-12)
    x0 = np.clip(first.x, lo, hi)
    return analytic_centre(F, F @ x0, lo, hi, x0)


def box_least_squares(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      iterations: int = 1000, tol: float = 1e-7) -> np.ndarray:
    """min ||F x - a||² over the box by FISTA (accelerated projected gradient): two products
    with F per step, so it scales where active-set and trust-region solvers do not."""
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
    for _ in range(iterations):
        grad = Fr.T @ (Fr @ y - a)
        x_new = np.clip(y - grad / lipschitz, lo, hi)
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        y = x_new + ((t - 1) / t_new) * (x_new - x)
        if np.linalg.norm(x_new - x) <= tol * max(1.0, float(np.linalg.norm(x))):
            x = x_new
            break
        x, t = x_new, t_new
    return np.asarray(x)


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
    from scipy.linalg import null_space

    Fd = F.toarray() if sp.issparse(F) else np.asarray(F, dtype=float)
    free = _free_coordinates(Fd, target, lo, hi)
    x = start.copy()
    if not free.any():
        return x
    inner = _interior_point(Fd, target, lo, hi, free)
    if inner is None:
        return x
    x = inner
    fixed = ~free
    A = Fd[:, free]
    N = null_space(A) if A.shape[0] else np.eye(int(free.sum()))
    if N.shape[1] == 0:
        return x
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
    return x


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
            extra_bounds: tuple[np.ndarray, np.ndarray]) -> np.ndarray | None:
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
    x, status = _highs(c, A, row_lo, row_hi, lb, ub, None)
    return x if status == "optimal" else None


def _free_coordinates(F: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray
                      ) -> np.ndarray:
    """Coordinates that some point of {F x = target, lo <= x <= hi} keeps off both bounds."""
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
                    (np.zeros(m), np.minimum(1.0, span[idx] / 4)))
        if x is None:
            break
        newly = idx[x[n:] > 1e-9]
        if newly.size == 0:
            break
        free[newly] = True
        pending[newly] = False
    return free


def _interior_point(F: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                    free: np.ndarray) -> np.ndarray | None:
    """A point of the set strictly inside the bounds on every free coordinate."""
    n = F.shape[1]
    idx = np.flatnonzero(free)
    scale = np.where(np.isfinite(hi[idx] - lo[idx]), hi[idx] - lo[idx], 1.0)
    x = _box_lp(F, target, lo, hi, idx, 1, np.full(idx.size, n), scale,
                (np.zeros(1), np.full(1, 0.5)))
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


class SolverIncomplete(RuntimeError):
    """HiGHS stopped without an optimal point (time limit, numerical trouble)."""


def _highs_lp(c: np.ndarray, A: sp.csc_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
              lb: np.ndarray, ub: np.ndarray, n: int, time_limit: float | None) -> np.ndarray:
    """The LP's optimal x; anything short of OPTIMAL raises instead of returning a guess."""
    x, status = _highs(c, A, row_lo, row_hi, lb, ub, time_limit)
    if status != "optimal" or np.isnan(x[:n]).any():
        raise SolverIncomplete(f"HiGHS ended with status {status}")
    return x[:n]


def _highs(c: np.ndarray, A: sp.csc_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
           lb: np.ndarray, ub: np.ndarray, time_limit: float | None,
           integrality: np.ndarray | None = None) -> tuple[np.ndarray, str]:
    """Solve with HiGHS through scipy. (highspy's own build clashes with the HiGHS inside
    OR-Tools when both load in one process, so scipy's copy is the one used.)"""
    from scipy.optimize import Bounds, LinearConstraint, milp

    if integrality is None or not integrality.any():
        return _highs_ipm(c, A, row_lo, row_hi, lb, ub, time_limit)
    options: dict[str, Any] = {"disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = milp(c, constraints=LinearConstraint(A, row_lo, row_hi),
               integrality=None if integrality is None else integrality.astype(int),
               bounds=Bounds(lb, ub), options=options)
    label = {0: "optimal", 2: "infeasible"}.get(res.status, "unknown")
    x = np.asarray(res.x, dtype=float) if res.x is not None else np.full(len(c), np.nan)
    return x, label


def _highs_ipm(c: np.ndarray, A: sp.csc_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
               lb: np.ndarray, ub: np.ndarray, time_limit: float | None
               ) -> tuple[np.ndarray, str]:
    """A pure LP with HiGHS's interior-point method: on dense query matrices it is ~20x faster
    than the simplex HiGHS picks inside its MIP driver (18 s against 344 s for lp-l1 at
    n = 1000, k = 4000). The time limit is passed on, but scipy's interior-point path does not
    always stop on it; whatever it returns is used only when HiGHS says OPTIMAL."""
    from scipy.optimize import linprog

    A = sp.csr_matrix(A)
    eq = np.isfinite(row_lo) & np.isfinite(row_hi) & (row_lo == row_hi)
    upper = ~eq & np.isfinite(row_hi)
    lower = ~eq & np.isfinite(row_lo)
    A_ub = sp.vstack([A[upper], -A[lower]], format="csr")
    b_ub = np.concatenate([row_hi[upper], -row_lo[lower]])
    options: dict[str, Any] = {"disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = linprog(c, A_ub=A_ub if A_ub.shape[0] else None, b_ub=b_ub if b_ub.size else None,
                  A_eq=A[eq] if eq.any() else None, b_eq=row_lo[eq] if eq.any() else None,
                  bounds=np.column_stack([np.where(np.isfinite(lb), lb, -np.inf),
                                          np.where(np.isfinite(ub), ub, np.inf)]),
                  method="highs-ipm", options=options)
    label = {0: "optimal", 2: "infeasible"}.get(res.status, "unknown")
    x = np.asarray(res.x, dtype=float) if res.x is not None else np.full(len(c), np.nan)
    return x, label


def solve_ip(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
             errors: np.ndarray | None = None, time_limit: float | None = 60.0,
             weights: np.ndarray | None = None) -> tuple[np.ndarray, str]:
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
    check_system(F, a, lower, upper)
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
    for _ in range(steps):
        rows = rng.choice(nonzero, size=min(block, nonzero.size), replace=False, p=p)
        Fb = Fr[rows]
        resid = a[rows] - Fb @ x
        upd = (resid / norms[rows]) / rows.size
        x = x + Fb.T @ upd
        if lo is not None or hi is not None:
            np.clip(x, lo, hi, out=x)
    return x


def solve_sgd(F: Matrix, a: np.ndarray, lower: np.ndarray, upper: np.ndarray,
              epochs: int = 200, lr: float = 0.05, batch: int = 64,
              rng: np.random.Generator | None = None, backend: str = "auto") -> np.ndarray:
    """Adam on the mean squared residual with the sigmoid box reparametrisation
    x = lower + (upper - lower) * sigmoid(z). Uses torch when installed (``statrecon[torch]``)
    and asked for or ``auto``; numpy otherwise (same algorithm)."""
    check_system(F, a, lower, upper)
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
            return _sgd_torch(F, a, lo, hi, epochs, lr, batch, rng)
    return _sgd_numpy(F, a, lo, hi, epochs, lr, batch, rng)


def _sgd_numpy(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray, epochs: int,
               lr: float, batch: int, rng: np.random.Generator | None) -> np.ndarray:
    rng = rng or np.random.default_rng(0)
    k, n = F.shape
    Fr = sp.csr_matrix(F, dtype=float) if sp.issparse(F) else np.asarray(F, dtype=float)
    a = np.asarray(a, float)
    z = np.zeros(n)
    m, v = np.zeros(n), np.zeros(n)
    b1, b2, eps, t = 0.9, 0.999, 1e-8, 0
    span = hi - lo
    for _ in range(epochs):
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
    return np.asarray(lo + span / (1 + np.exp(-z)))


def _sgd_torch(F: Matrix, a: np.ndarray, lo: np.ndarray, hi: np.ndarray, epochs: int,
               lr: float, batch: int, rng: np.random.Generator | None) -> np.ndarray:
    import torch

    gen = torch.Generator().manual_seed(int((rng or np.random.default_rng(0)).integers(2**31)))
    Fd = F.toarray() if sp.issparse(F) else np.asarray(F)
    Ft = torch.tensor(Fd, dtype=torch.float64)
    at = torch.tensor(np.asarray(a, float), dtype=torch.float64)
    lt, span = torch.tensor(lo), torch.tensor(hi - lo)
    z = torch.zeros(Fd.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([z], lr=lr)
    k = Fd.shape[0]
    for _ in range(epochs):
        order = torch.randperm(k, generator=gen)
        for start in range(0, k, batch):
            rows = order[start:start + batch]
            x = lt + span * torch.sigmoid(z)
            loss = torch.mean((Ft[rows] @ x - at[rows]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        return np.asarray((lt + span * torch.sigmoid(z)).numpy())


# --------------------------------------------------------------------------- determinability

@dataclass(frozen=True)
class Certificate:
    """x[index] = sum(coefficient * answer of statistic): proof that the record is pinned."""

    index: int
    value: Fraction
    terms: tuple[tuple[int, Fraction], ...]  # (statistic row, coefficient)


@dataclass(frozen=True)
class Determination:
    """Exact determinability of every unknown from the exact statistics (FLINT, rationals)."""

    consistent: bool
    rank: int
    determined: tuple[Certificate, ...]
    conflict: tuple[int, ...] = ()  # statistic rows whose combination contradicts (if any)
    elapsed_s: float = 0.0


def determine(F: Matrix, answers: list[Fraction] | tuple[Fraction, ...],
              algorithm: str = "auto") -> Determination:
    """Which unknowns every real solution of ``F x = answers`` shares, proven exactly.

    x_j is shared by all solutions iff e_j lies in the row space of F, i.e. iff the reduced row
    echelon form of F (computed over the rationals) has a row equal to e_j. The certificate y
    (with F^T y = e_j) comes from the same elimination run on [F | I]; it is checked again with
    exact arithmetic before being reported. Identical columns (records no statistic tells apart)
    are never determined and are collapsed first.

    ``auto`` first reduces to statistics independent modulo a prime (each step proven exactly,
    see ``_independent_rows``), which avoids the huge rationals of a full elimination;
    ``rref`` runs the full exact elimination of [F | I] (the fallback, kept for testing)."""
    check_system(F, list(answers))
    import flint

    start = time.perf_counter()
    Fs = sp.csr_matrix(F)
    k, n = Fs.shape
    if k == 0 or n == 0:
        return Determination(True, 0, (), elapsed_s=time.perf_counter() - start)
    dense = Fs.toarray()
    if not np.allclose(dense, np.round(dense)):
        raise ValueError("determine needs integer coefficients")
    dense = np.round(dense).astype(np.int64)
    # Collapse identical columns: a record shares its column with another -> not determined.
    uniq, first, counts = np.unique(dense.T, axis=0, return_index=True, return_counts=True)
    candidates = np.sort(first[(counts == 1) & np.any(uniq != 0, axis=1)])
    sub = dense[:, candidates]
    # Rows that touch no candidate still matter (they constrain duplicated columns), but they
    # cannot help pin a candidate: y may use them only with coefficient 0 on candidate columns.
    # Keep the full row set: F restricted to the other columns is part of F^T y = e_j.
    others = np.setdiff1d(np.arange(n), candidates)
    oth = dense[:, others]
    # Distinct columns among the others are enough for the condition F_others^T y = 0.
    oth_u = np.unique(oth.T, axis=0).T if oth.size else np.zeros((k, 0), dtype=np.int64)
    oth_u = oth_u[:, np.any(oth_u != 0, axis=0)] if oth_u.size else oth_u
    b = [Fraction(v) for v in answers]
    D = np.hstack([sub, oth_u]) if oth_u.size else sub
    reduced = _independent_rows(D, b) if algorithm == "auto" else None
    if reduced is not None:
        rows_i, conflict_rows = reduced
        if conflict_rows:
            return Determination(False, len(rows_i), (), conflict_rows,
                                 time.perf_counter() - start)
        fast = _determine_full_row_rank(Fs, D[rows_i], sub.shape[1], candidates, b, rows_i)
        if fast is not None:
            return Determination(True, len(rows_i), tuple(fast), (),
                                 time.perf_counter() - start)
    m = sub.shape[1]
    # Column order: candidates, then other distinct columns, then the identity (certificates).
    block = np.hstack([sub, oth_u, np.eye(k, dtype=np.int64)])
    R, den, rank_aug = flint.fmpz_mat(block.tolist()).rref()
    width = sub.shape[1] + oth_u.shape[1]
    rows = R.tolist()
    certs = []
    rank = 0
    conflict: tuple[int, ...] = ()
    consistent = True
    den_i = int(den)
    for r in range(rank_aug):
        row = [int(v) for v in rows[r]]
        nz = [c for c in range(width) if row[c] != 0]
        if not nz:
            # A combination y of statistics with F^T y = 0: its answers must combine to 0.
            y = [Fraction(row[width + i], den_i) for i in range(k)]
            total = sum((yi * bi for yi, bi in zip(y, b, strict=True) if yi), Fraction(0))
            if total != 0 and consistent:
                consistent = False
                conflict = tuple(i for i in range(k) if y[i] != 0)
            continue
        rank += 1
        if len(nz) == 1 and nz[0] < m:
            j = nz[0]
            y = [Fraction(row[width + i], row[j]) for i in range(k)]
            terms = tuple((i, yi) for i, yi in enumerate(y) if yi != 0)
            col = int(candidates[j])
            _verify_certificate(Fs, col, terms)
            value = sum((c * b[i] for i, c in terms), Fraction(0))
            certs.append(Certificate(col, value, terms))
    certs.sort(key=lambda c: c.index)
    return Determination(consistent, rank, tuple(certs) if consistent else (), conflict,
                         time.perf_counter() - start)


_PRIME = 2_147_483_629  # a prime below 2^31: products of two residues fit in int64


def _rref_mod_p(M: np.ndarray, p: int = _PRIME) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form modulo a prime (FLINT nmod_mat), as int64 rows + pivots."""
    import flint

    R, rank = flint.nmod_mat(np.mod(M, p).astype(np.int64).tolist(), p).rref()
    if rank == 0:
        return np.zeros((0, M.shape[1]), dtype=np.int64), []
    values = np.fromiter((int(v) for v in R.entries()), dtype=np.int64,
                         count=M.shape[0] * M.shape[1]).reshape(M.shape)[:rank]
    pivots = [int(np.flatnonzero(row)[0]) for row in values]
    return values, pivots


def _independent_rows(D: np.ndarray, b: list[Fraction]
                      ) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """Statistics independent mod p (so over the rationals too), with an exact proof that each
    other statistic is a combination of them, and a check that its answer is the same
    combination of theirs (else the release is inconsistent: that row and the rows it combines
    are returned as the conflict). None when a dropped row turns out independent over the
    rationals (an unlucky prime); the caller then uses the exact elimination."""
    import flint

    k = D.shape[0]
    _, independent = _rref_mod_p(D.T)
    rows_i = np.array(independent, dtype=int)
    dropped = np.setdiff1d(np.arange(k), rows_i)
    if dropped.size == 0:
        return rows_i, ()
    if rows_i.size == 0:
        bad = [int(i) for i in dropped if b[i] != 0]
        return rows_i, ((bad[0],) if bad else ())
    DI = D[rows_i]
    _, pivots = _rref_mod_p(DI)
    C = flint.fmpq_mat(flint.fmpz_mat(DI[:, pivots].tolist()))
    L = flint.fmpq_mat(flint.fmpz_mat(D[dropped][:, pivots].tolist())) * C.inv()
    if L * flint.fmpq_mat(flint.fmpz_mat(DI.tolist())) != flint.fmpq_mat(
            flint.fmpz_mat(D[dropped].tolist())):
        return None
    bI = flint.fmpq_mat([[flint.fmpq(v.numerator, v.denominator)] for v in
                         (b[int(i)] for i in rows_i)])
    combined = L * bI
    for t, i in enumerate(dropped):
        got = combined[t, 0]
        if Fraction(int(got.p), int(got.q)) != b[int(i)]:
            support = [int(rows_i[j]) for j in range(rows_i.size) if L[t, j] != 0]
            return rows_i, tuple(sorted([int(i), *support]))
    return rows_i, ()


def _determine_full_row_rank(Fs: sp.csr_matrix, D: np.ndarray, m: int,
                             candidates: np.ndarray, b: list[Fraction], rows: np.ndarray
                             ) -> list[Certificate] | None:
    """Determinability when the statistics ``rows`` (rows of D) are independent.

    Independent modulo a prime p means independent over the rationals (a k×k minor is non-zero
    mod p, hence non-zero), so the pivot columns C span everything. Then for a pivot record j:
    * a non-zero entry of row j of C^-1 D mod p is non-zero over the rationals too
      (p does not divide det C, the common denominator), so another column uses x_j and
      j is provably not determined;
    * otherwise the only possible certificate is y = row j of C^-1; it is computed exactly and
      checked exactly (F^T y = e_j): verified -> determined, refuted -> not determined.
    Non-pivot records are never determined (their column is a combination of the pivots).
    The first ``m`` columns of D are the candidate records (``candidates``)."""
    import flint

    k = D.shape[0]
    if k == 0:
        return []
    R, pivots = _rref_mod_p(D)
    if len(pivots) < k:
        return None
    pos = {c: i for i, c in enumerate(pivots)}
    suspects = [c for c in pivots if c < m and np.count_nonzero(R[pos[c]]) == 1]
    certs: list[Certificate] = []
    if suspects:
        inverse = flint.fmpz_mat(D[:, pivots].tolist()).inv()  # exact rationals
        for c in suspects:
            y = [Fraction(int(v.p), int(v.q)) for v in
                 (inverse[pos[c], i] for i in range(k))]
            terms = tuple((int(rows[i]), yi) for i, yi in enumerate(y) if yi != 0)
            col = int(candidates[c])
            if _certificate_holds(Fs, col, terms):
                value = sum((co * b[i] for i, co in terms), Fraction(0))
                certs.append(Certificate(col, value, terms))
    certs.sort(key=lambda c: c.index)
    return certs


def _certificate_holds(F: sp.csr_matrix, col: int, terms: tuple[tuple[int, Fraction], ...]
                       ) -> bool:
    acc: dict[int, Fraction] = {}
    for i, c in terms:
        start, end = F.indptr[i], F.indptr[i + 1]
        for j, v in zip(F.indices[start:end], F.data[start:end], strict=True):
            acc[int(j)] = acc.get(int(j), Fraction(0)) + c * round(float(v))
    return acc.get(col, Fraction(0)) == 1 and all(
        v == 0 for j, v in acc.items() if j != col)


def _verify_certificate(F: sp.csr_matrix, col: int, terms: tuple[tuple[int, Fraction], ...]
                        ) -> None:
    """Exact check that sum_i y_i F_i = e_col; a failure is a bug, never a result."""
    if not _certificate_holds(F, col, terms):
        raise AssertionError(f"certificate for record {col} does not verify")


# --------------------------------------------------------------------------- the engine

@dataclass(frozen=True)
class LinearOptions:
    method: str = "ls"
    time_limit: float | None = 60.0
    seed: int = 0
    epochs: float = 20.0
    # exact determinability is skipped (and nothing claimed) above these sizes: a dense
    # full-rank system's certificates are huge rationals that nobody could read anyway
    determine_max_rank: int = 600
    determine_max_entries: int = 5_000_000
    # statistics x public rows of the query matrix, refused before any predicate is evaluated
    # (None: no limit); 400 million booleans is about 0.4 GiB, and a dense float copy 3.2 GiB
    max_cells: int | None = 400_000_000


@dataclass(frozen=True)
class LinearResult:
    """An estimate of the secret column plus the records proven exactly (``determined``)."""

    status: str  # "determined" | "partial" | "estimated" | "optimal" | "infeasible" | "unknown"
    method: str
    estimate: np.ndarray  # raw (real-valued) estimate per record
    labels: list[Any]  # estimate in the secret column's own values
    determination: Determination | None
    residual: float
    system: LinearSystem
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def round_estimate(x: np.ndarray, system: LinearSystem) -> np.ndarray:
    """Rounding for binary/integer secrets, clipped to each record's bounds."""
    if system.secret.kind == "real":
        return np.clip(x, system.lower, system.upper)
    return np.clip(np.round(x), np.ceil(system.lower - 1e-9), np.floor(system.upper + 1e-9))


def reconstruct_linear(system: LinearSystem, options: LinearOptions) -> LinearResult:
    """Run one method on a compiled system; determinability is added when affordable."""
    start = time.perf_counter()
    F, a = system.matrix, system.answers
    lo, hi = system.lower, system.upper
    notes: list[str] = []
    weights = _weights(system)
    det: Determination | None = None
    exact_rows = system.exact_rows()
    if exact_rows.size and min(exact_rows.size, system.n) <= options.determine_max_rank and (
            exact_rows.size * system.n <= options.determine_max_entries):
        det = determine(F[exact_rows], [system.exact_answers[i] for i in exact_rows])
        det = _reindex(det, exact_rows)
    elif exact_rows.size:
        notes.append("exact determinability skipped (system too large); none claimed")
    method = options.method
    status = "estimated"
    rng = np.random.default_rng(options.seed)
    # Least squares uses the box only when the user gave bounds as background knowledge;
    # otherwise it is the classic minimum-norm estimate, clipped to the domain afterwards.
    bounded = system.user_bounds
    if method == "determine":
        x = solve_ls(F, a, lo if bounded else None, hi if bounded else None, weights)
        if det is None:
            status = "unknown"
        elif not det.consistent:
            status = "infeasible"
        else:  # "partial" claims nothing about the rest: bounds may still pin them
            status = "determined" if len(det.determined) == system.n else "partial"
    elif method == "ls":
        x = solve_ls(F, a, lo if bounded else None, hi if bounded else None, weights)
    elif method in ("lp-l1", "lp-linf"):
        try:
            x = (solve_lp_l1(F, a, lo, hi, weights, options.time_limit) if method == "lp-l1"
                 else solve_lp_linf(F, a, lo, hi, options.time_limit))
        except SolverIncomplete as e:
            status = "unknown"
            x = np.clip(solve_ls(F, a), lo, hi)
            notes.append(f"{method}: {e} (time limit?); the estimate is least squares")
    elif method == "ip":
        if system.secret.kind == "real":
            raise ValueError("ip decodes integer or categorical secrets")
        caps = np.where(np.isfinite(system.errors), system.errors, np.inf)
        x, status = solve_ip(F, a, lo, hi, caps, options.time_limit, weights)
        if np.isnan(x).any():
            x = np.clip(solve_ls(F, a), lo, hi)
            notes.append(f"ip: no integer point ({status}); the estimate is least squares")
    elif method == "kaczmarz":
        x = solve_kaczmarz(F, a, lo, hi, epochs=options.epochs, rng=rng)
    elif method == "sgd":
        x = solve_sgd(F, a, lo, hi, epochs=int(options.epochs * 10), rng=rng)
    else:
        raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    if det is not None and det.consistent:
        det = _check_domain(det, system)
    if det is not None and not det.consistent:
        status = "infeasible"  # whatever the method: the exact statistics cannot all hold
    if det is not None and det.consistent:
        for c in det.determined:  # a proven value beats any estimate
            x[c.index] = float(c.value)
    rounded = round_estimate(x, system)
    residual = float(np.linalg.norm(F @ rounded - a)) if system.k else 0.0
    labels = [system.secret.label(v) for v in rounded]
    return LinearResult(status, method, x, labels, det, residual, system,
                        time.perf_counter() - start, notes)


def _check_domain(det: Determination, system: LinearSystem) -> Determination:
    """A proven value outside the record's bounds (or a fraction for a count or an integer
    column) means no dataset fits: the release is inconsistent, and the certificate's
    statistics are the conflict."""
    discrete = system.secret.kind != "real"
    for c in det.determined:
        lo, hi = system.lower[c.index], system.upper[c.index]
        outside = (np.isfinite(lo) and c.value < Fraction(float(lo))) or (
            np.isfinite(hi) and c.value > Fraction(float(hi)))
        if outside or (discrete and c.value.denominator != 1):
            return Determination(False, det.rank, (), tuple(sorted(i for i, _ in c.terms)),
                                 det.elapsed_s)
    return det


def _weights(system: LinearSystem) -> np.ndarray | None:
    """Exact statistics weigh most; bounded and noisy ones by the inverse of their scale."""
    if all(kind == "exact" for kind in system.kinds):
        return None
    scales = np.where(system.scales > 0, system.scales, 0.0)
    positive = scales[scales > 0]
    floor = positive.min() / 10 if positive.size else 1.0
    return np.asarray(1.0 / np.maximum(scales, floor) ** 2)


def _reindex(det: Determination, rows: np.ndarray) -> Determination:
    certs = tuple(Certificate(c.index, c.value, tuple((int(rows[i]), v) for i, v in c.terms))
                  for c in det.determined)
    return Determination(det.consistent, det.rank, certs,
                         tuple(int(rows[i]) for i in det.conflict), det.elapsed_s)
