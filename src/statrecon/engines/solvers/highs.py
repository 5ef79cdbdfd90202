"""HiGHS over one component, built once: each solve changes only the cost, and the simplex
starts from the previous basis (hot start), ~16x faster than a fresh ``linprog`` per solve at
40 cells, ~3x at 600 (measured; see the report of issue 15).

The hot start needs a HiGHS object, which scipy ships as ``scipy.optimize._highspy._core``
(scipy >= 1.15; highspy's own wheel clashes with the HiGHS inside OR-Tools, see
``linear/solvers.py``). Where that private module is missing or changed, every solve goes
through ``linprog`` (same HiGHS, same answers, no hot start). Either way the floats only
propose: :mod:`statrecon.engines.intervals.exact` proves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

LpStatus = Literal["optimal", "unbounded", "limit", "infeasible", "error"]


def highs_core() -> Any:
    try:
        from scipy.optimize._highspy import _core  # lazy: private, may be absent
    except ImportError:
        return None
    return _core if hasattr(_core, "_Highs") and hasattr(_core, "HighsLp") else None


HOT_START = highs_core() is not None


@dataclass(frozen=True)
class LpAnswer:
    """HiGHS's floats: x and the equations' duals y (for min c·x: c - Aᵀy is the reduced
    cost), meaningful when ``status`` is optimal."""

    status: LpStatus
    x: np.ndarray
    y: np.ndarray
    message: str = ""


class ComponentLp:
    """min c·x subject to A x = b and the box ``bounds`` (n x 2, inf for none)."""

    def __init__(self, A: sp.csc_matrix, b: np.ndarray, bounds: np.ndarray,
                 hot: bool | None = None) -> None:
        self.A, self.b, self.bounds = sp.csc_matrix(A), b, bounds
        self.n = A.shape[1]
        self.highs = build_highs(self.A, b, bounds) if (HOT_START if hot is None else hot) \
            else None

    def solve(self, cost: Mapping[int, float], time_limit: float | None) -> LpAnswer:
        if self.highs is None:
            return self._linprog(cost, time_limit)
        core, h = highs_core(), self.highs
        # HiGHS's clock runs on across solves of one object: the limit is a moment on it
        h.setOptionValue("time_limit", float("inf") if time_limit is None else
                         h.getRunTime() + float(time_limit))
        idx = np.array(sorted(cost), dtype=np.int32)
        h.changeColsCost(len(idx), idx, np.array([cost[i] for i in idx], dtype=float))
        try:
            h.run()
            status = h.getModelStatus()
            sol = h.getSolution()
            x = np.asarray(sol.col_value, dtype=float)
            y = np.asarray(sol.row_dual, dtype=float)
        finally:
            h.changeColsCost(len(idx), idx, np.zeros(len(idx)))
        S = core.HighsModelStatus
        label: LpStatus = (
            "optimal" if status == S.kOptimal else
            "unbounded" if status in (S.kUnbounded, S.kUnboundedOrInfeasible) else
            "limit" if status in (S.kTimeLimit, S.kIterationLimit) else
            "infeasible" if status == S.kInfeasible else "error")
        return LpAnswer(label, x, y, h.modelStatusToString(status))

    def _linprog(self, cost: Mapping[int, float], time_limit: float | None) -> LpAnswer:
        from scipy.optimize import linprog  # lazy: only without scipy's HiGHS object

        c = np.zeros(self.n)
        for i, v in cost.items():
            c[i] = v
        options: dict[str, Any] = {} if time_limit is None else {"time_limit": time_limit}
        rows = self.A.shape[0] > 0
        res = linprog(c, A_eq=self.A if rows else None, b_eq=self.b if rows else None,
                      bounds=self.bounds, method="highs-ds", options=options)
        labels: dict[int, LpStatus] = {0: "optimal", 1: "limit", 2: "infeasible",
                                       3: "unbounded"}
        label = labels.get(res.status, "error")
        x = np.asarray(res.x if res.x is not None else np.full(self.n, np.nan), dtype=float)
        y = np.asarray(res.eqlin.marginals, dtype=float) if rows and label == "optimal" \
            else np.zeros(self.A.shape[0])
        return LpAnswer(label, x, y, str(res.message))


def build_highs(A: sp.csc_matrix, b: np.ndarray, bounds: np.ndarray, dual: bool = False
                ) -> Any:
    """A HiGHS object for min 0·x, A x = b within ``bounds``. Primal simplex by default:
    when each solve changes only the cost, the last basis stays primal feasible and the
    primal simplex goes on from it (~12x faster than HiGHS's default dual simplex on a
    linked table of 1,922 suppressed cells, measured). ``dual``: for solves that change
    bounds from a dual feasible basis instead (no presolve: the basis is set by hand)."""
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
    lp.row_upper_ = np.asarray(b, dtype=float)
    lp.a_matrix_.format_ = core.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    h.passModel(lp)
    return h
