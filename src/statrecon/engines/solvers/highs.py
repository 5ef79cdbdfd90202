"""The one HiGHS wrapper: every LP and MIP of the engines goes through here.

* :func:`solve`: one LP or MIP from sparse arrays (``row_lo <= A x <= row_hi``, a box, some
  columns integer), through scipy's ``linprog`` or ``milp``, within a time limit; with
  ``kill_after`` the solve runs in the killable worker process of :mod:`.worker`, since HiGHS
  alone does not always keep its limit.
* :class:`ComponentLp` and :func:`build_highs`: HiGHS over one component, built once: each
  solve changes only the cost (or the bounds), and the simplex starts from the previous basis
  (hot start), ~16x faster than a fresh ``linprog`` per solve at 40 cells, ~3x at 600
  (measured; see the report of issue 15). :func:`read` reads such an object after ``run()``.
* Either way the answer is one small :class:`LpAnswer`: HiGHS's status read once into
  :data:`LpStatus`, its x and its row duals.

The hot start needs a HiGHS object, which scipy ships as ``scipy.optimize._highspy._core``
(scipy >= 1.15; highspy's own wheel clashes with the HiGHS inside OR-Tools when both load in
one process, so scipy's copy is the one used). Where that private module is missing or
changed, every solve goes through ``linprog`` (same HiGHS, same answers, no hot start).
Either way the floats only propose: what the engines claim is proven exactly
(:mod:`statrecon.engines.intervals.exact`) or is an estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from statrecon.engines.solvers.worker import bounded_call

LpStatus = Literal["optimal", "unbounded", "limit", "infeasible", "error"]
# scipy's status codes (linprog and milp alike); any other code is an error
SCIPY_STATUS: dict[int, LpStatus] = {0: "optimal", 1: "limit", 2: "infeasible",
                                     3: "unbounded"}


def highs_core() -> Any:
    try:
        from scipy.optimize._highspy import _core  # lazy: private, may be absent
    except ImportError:
        return None
    return _core if hasattr(_core, "_Highs") and hasattr(_core, "HighsLp") else None


HOT_START = highs_core() is not None


@dataclass(frozen=True)
class LpAnswer:
    """HiGHS's floats: x and the rows' duals y (for min c·x: c - Aᵀy is the reduced cost;
    zeros from a MIP), meaningful when ``status`` is optimal. ``status`` limit: a time or
    iteration limit stopped it (x is NaN when nothing came back)."""

    status: LpStatus
    x: np.ndarray
    y: np.ndarray
    message: str = ""


class ComponentLp:
    """min c·x subject to A x = b (with ``b_hi``: b <= A x <= b_hi) and the box ``bounds``
    (n x 2, inf for none). ``dual``: HiGHS's dual simplex without presolve (12 ms against
    80-140 ms for the primal's first solve of a 9,576-column census block, measured; the
    primal default suits many cost changes from one basis on large components)."""

    def __init__(self, A: sp.csc_matrix, b: np.ndarray, bounds: np.ndarray,
                 hot: bool | None = None, b_hi: np.ndarray | None = None,
                 dual: bool = False) -> None:
        self.A, self.b, self.bounds = sp.csc_matrix(A), b, bounds
        self.b_hi = b if b_hi is None else b_hi
        self.n = A.shape[1]
        self.highs = build_highs(self.A, b, bounds, dual=dual, b_hi=b_hi) \
            if (HOT_START if hot is None else hot) else None

    def solve(self, cost: Mapping[int, float], time_limit: float | None,
              duals: bool = True) -> LpAnswer:
        if self.highs is None:
            return self._linprog(cost, time_limit)
        h = self.highs
        # HiGHS's clock runs on across solves of one object: the limit is a moment on it
        h.setOptionValue("time_limit", float("inf") if time_limit is None else
                         h.getRunTime() + float(time_limit))
        idx = np.array(sorted(cost), dtype=np.int32)
        h.changeColsCost(len(idx), idx, np.array([cost[i] for i in idx], dtype=float))
        try:
            h.run()
            return read(h, duals)
        finally:
            h.changeColsCost(len(idx), idx, np.zeros(len(idx)))

    def _linprog(self, cost: Mapping[int, float], time_limit: float | None) -> LpAnswer:
        c = np.zeros(self.n)
        for i, v in cost.items():
            c[i] = v
        return solve(c, self.A, self.b, self.b_hi, self.bounds[:, 0], self.bounds[:, 1],
                     time_limit=time_limit)


def read(h: Any, duals: bool = True) -> LpAnswer:
    """A HiGHS object's answer after ``run()``: its model status as :data:`LpStatus`, the
    solution's x and, with ``duals``, its row duals (else y is empty: reading them costs
    ~0.1 ms per thousand rows, a few per cent of a hot-started solve)."""
    S = highs_core().HighsModelStatus
    status = h.getModelStatus()
    sol = h.getSolution()
    label: LpStatus = (
        "optimal" if status == S.kOptimal else
        "unbounded" if status in (S.kUnbounded, S.kUnboundedOrInfeasible) else
        "limit" if status in (S.kTimeLimit, S.kIterationLimit) else
        "infeasible" if status == S.kInfeasible else "error")
    return LpAnswer(label, np.asarray(sol.col_value, dtype=float),
                    np.asarray(sol.row_dual, dtype=float) if duals else np.zeros(0),
                    h.modelStatusToString(status))


def solve(c: np.ndarray, A: sp.spmatrix, row_lo: np.ndarray, row_hi: np.ndarray,
          lb: np.ndarray, ub: np.ndarray, *, time_limit: float | None = None,
          integrality: np.ndarray | None = None, method: str = "highs-ds",
          mip_rel_gap: float | None = None, kill_after: float | None = None) -> LpAnswer:
    """min c·x subject to row_lo <= A x <= row_hi (equal ends: an equation; infinite: none)
    and lb <= x <= ub, x_j integer where ``integrality`` is true: one HiGHS solve, built
    afresh (scipy's ``milp`` when some column is integer, else ``linprog`` with ``method``:
    HiGHS's dual simplex ``highs-ds``, or its interior point ``highs-ipm``). ``mip_rel_gap``:
    the MIP's relative gap (None: HiGHS's default).

    ``time_limit`` seconds go to HiGHS, which does not always keep them: its interior point
    takes a limit already used up by presolve as "no limit" (4 s with a 0.05 s limit,
    measured), and crossover and the MIP driver check the clock only now and then. With
    ``kill_after`` seconds of grace the solve runs in a worker process that is killed once
    the limit, GRACE_SHARE of it and the grace have passed (:func:`.worker.bounded_call`):
    status ``limit``, never a point called optimal; a worker that cannot start raises
    :class:`.worker.WorkerUnavailable`."""
    args = (c, A, row_lo, row_hi, lb, ub, time_limit, integrality, method, mip_rel_gap)
    if time_limit is None or kill_after is None:
        return _solve_here(*args)
    got = bounded_call(_solve_here, args, time_limit, kill_after)
    if got is None:
        return LpAnswer("limit", np.full(len(c), np.nan), np.zeros(A.shape[0]),
                        "stopped: past the time limit")
    return got


def solve_small(c: np.ndarray, A: sp.csc_matrix, b: np.ndarray, lb: np.ndarray,
                ub: np.ndarray, *, time_limit: float | None = None) -> LpAnswer:
    """min c·x subject to A x = b and lb <= x <= ub, an LP of a few thousand columns solved
    once: built directly on HiGHS's object (dual simplex, no presolve), without linprog's
    checks and conversions, which cost more than such an LP (1 ms of 2.5 ms at 1,200
    columns, measured on issue 28's routes); through :func:`solve` where the object is
    missing. No duals (y is empty)."""
    if highs_core() is None:
        got = solve(c, A, b, b, lb, ub, time_limit=time_limit)
        return LpAnswer(got.status, got.x, np.zeros(0), got.message)
    h = build_highs(sp.csc_matrix(A), b, np.column_stack([lb, ub]), dual=True)
    h.changeColsCost(len(c), np.arange(len(c), dtype=np.int32), np.asarray(c, dtype=float))
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    h.run()
    return read(h, duals=False)


def _solve_here(c: np.ndarray, A: sp.spmatrix, row_lo: np.ndarray, row_hi: np.ndarray,
                lb: np.ndarray, ub: np.ndarray, time_limit: float | None,
                integrality: np.ndarray | None, method: str, mip_rel_gap: float | None
                ) -> LpAnswer:
    """:func:`solve` in this process (what the worker runs)."""
    options: dict[str, Any] = {"disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    if integrality is not None and integrality.any():
        if mip_rel_gap is not None:
            options["mip_rel_gap"] = mip_rel_gap
        return _milp(c, A, row_lo, row_hi, lb, ub, integrality, options)
    return _linprog(c, A, row_lo, row_hi, lb, ub, method, options)


def _milp(c: np.ndarray, A: sp.spmatrix, row_lo: np.ndarray, row_hi: np.ndarray,
          lb: np.ndarray, ub: np.ndarray, integrality: np.ndarray, options: dict[str, Any]
          ) -> LpAnswer:
    from scipy.optimize import Bounds, LinearConstraint, milp  # lazy: scipy.optimize's MIP

    res = milp(c, constraints=LinearConstraint(A, row_lo, row_hi) if A.shape[0] else None,
               integrality=integrality.astype(int), bounds=Bounds(lb, ub), options=options)
    x = np.asarray(res.x, dtype=float) if res.x is not None else np.full(len(c), np.nan)
    return LpAnswer(SCIPY_STATUS.get(res.status, "error"), x, np.zeros(A.shape[0]),
                    str(res.message))


def _linprog(c: np.ndarray, A: sp.spmatrix, row_lo: np.ndarray, row_hi: np.ndarray,
             lb: np.ndarray, ub: np.ndarray, method: str, options: dict[str, Any]
             ) -> LpAnswer:
    """linprog takes equations and upper bounds: each row goes to one or two of them."""
    from scipy.optimize import linprog  # lazy: scipy.optimize's LP

    A = sp.csr_matrix(A)
    eq = np.isfinite(row_lo) & np.isfinite(row_hi) & (row_lo == row_hi)
    upper = ~eq & np.isfinite(row_hi)
    lower = ~eq & np.isfinite(row_lo)
    A_ub = sp.vstack([A[upper], -A[lower]], format="csr")
    b_ub = np.concatenate([row_hi[upper], -row_lo[lower]])
    res = linprog(c, A_ub=A_ub if A_ub.shape[0] else None, b_ub=b_ub if b_ub.size else None,
                  A_eq=A[eq] if eq.any() else None, b_eq=row_lo[eq] if eq.any() else None,
                  bounds=np.column_stack([np.where(np.isfinite(lb), lb, -np.inf),
                                          np.where(np.isfinite(ub), ub, np.inf)]),
                  method=method, options=options)
    label = SCIPY_STATUS.get(res.status, "error")
    x = np.asarray(res.x, dtype=float) if res.x is not None else np.full(len(c), np.nan)
    y = np.zeros(A.shape[0])
    if label == "optimal":  # HiGHS's row duals, as scipy hands them back per kind of row
        y[eq] = res.eqlin.marginals
        up = int(upper.sum())
        y[upper] += res.ineqlin.marginals[:up]
        y[lower] -= res.ineqlin.marginals[up:]
    return LpAnswer(label, x, y, str(res.message))


def build_highs(A: sp.csc_matrix, b: np.ndarray, bounds: np.ndarray, dual: bool = False,
                b_hi: np.ndarray | None = None) -> Any:
    """A HiGHS object for min 0·x, A x = b within ``bounds`` (with ``b_hi``: b <= A x <=
    b_hi). Primal simplex by default: when each solve changes only the cost, the last basis
    stays primal feasible and the primal simplex goes on from it (~12x faster than HiGHS's
    default dual simplex on a linked table of 1,922 suppressed cells, measured). ``dual``:
    for solves that change bounds from a dual feasible basis instead (no presolve: the
    basis is set by hand), and for LPs solved from scratch a few times (a census block)."""
    core = highs_core()
    h = core._Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("simplex_strategy", 1 if dual else 4)
    if dual:
        h.setOptionValue("presolve", "off")
    lp = core.HighsLp()
    m, n = A.shape
    inf = core.kHighsInf
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.zeros(n)
    lp.col_lower_ = np.where(np.isfinite(bounds[:, 0]), bounds[:, 0], -inf)
    lp.col_upper_ = np.where(np.isfinite(bounds[:, 1]), bounds[:, 1], inf)
    lp.row_lower_ = np.asarray(b, dtype=float)
    lp.row_upper_ = np.asarray(b if b_hi is None else b_hi, dtype=float)
    lp.a_matrix_.format_ = core.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    h.passModel(lp)
    return h
