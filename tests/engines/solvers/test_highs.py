"""The one HiGHS wrapper (engines/solvers/highs.py) reads HiGHS's status into one
``LpAnswer`` the same way on every path: a fresh LP (dual simplex or interior point), a MIP,
the hot-started HiGHS object and its ``linprog`` stand-in; a time limit gives ``limit``, from
HiGHS's own clock or from the worker process killed past it, never ``optimal``."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

from statrecon.engines.solvers import highs

A = sp.csr_matrix(np.array([[1.0, 1.0]]))
# name: (cost, right-hand side of x + y = b, lower, upper)
TINY = {
    "optimal": ([1.0, 0.0], 1.0, [0.0, 0.0], [1.0, 1.0]),
    "infeasible": ([1.0, 0.0], 3.0, [0.0, 0.0], [1.0, 1.0]),
    "unbounded": ([-1.0, 0.0], 0.0, [0.0, -np.inf], [np.inf, 0.0]),
}
WAYS = ["highs-ds", "highs-ipm", "mip", "hot", "cold", "small"]
TINY_ARGS = (np.array([1.0, 0.0]), A, np.array([1.0]), np.array([1.0]), np.zeros(2),
             np.ones(2))


def _solve(way: str, name: str) -> highs.LpAnswer:
    cost, rhs, lower, upper = TINY[name]
    c, b = np.array(cost), np.array([rhs])
    lo, hi = np.array(lower), np.array(upper)
    if way in ("hot", "cold"):
        if way == "hot" and not highs.HOT_START:
            pytest.skip("this scipy has no HiGHS object")
        lp = highs.ComponentLp(A, b, np.column_stack([lo, hi]), hot=way == "hot")
        return lp.solve({0: c[0], 1: c[1]}, None)
    if way == "small":
        return highs.solve_small(c, sp.csc_matrix(A), b, lo, hi)
    integer = np.ones(2, dtype=bool) if way == "mip" else None
    return highs.solve(c, A, b, b, lo, hi, integrality=integer,
                       method="highs-ds" if way == "mip" else way)


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("name", list(TINY))
def test_every_way_reads_the_status_the_same(way: str, name: str) -> None:
    got = _solve(way, name)
    if way == "mip" and name == "unbounded":  # HiGHS's MIP: "unbounded or infeasible"
        assert got.status not in ("optimal", "infeasible")
        return
    assert got.status == name
    if name == "optimal":
        assert np.allclose(got.x, [0.0, 1.0])
        # the dual: c - Aᵀy is the reduced cost, 0 on the basic y (no duals from a MIP or
        # from solve_small)
        if way not in ("mip", "small"):
            assert np.allclose(np.array(TINY[name][0]) - A.T @ got.y, [1.0, 0.0])


def test_a_lp_with_inequalities_and_its_duals() -> None:
    """min -x - y over x + 2y <= 4, 3x + y <= 6, x - y >= -10 (not binding), x, y >= 0:
    the vertex (8/5, 6/5) with duals (-2/5, -1/5) on the two binding rows."""
    M = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 1.0], [1.0, -1.0]]))
    lo, hi = np.array([-np.inf, -np.inf, -10.0]), np.array([4.0, 6.0, np.inf])
    for method in ("highs-ds", "highs-ipm"):
        got = highs.solve(np.array([-1.0, -1.0]), M, lo, hi, np.zeros(2), np.full(2, np.inf),
                          method=method)
        assert got.status == "optimal"
        assert np.allclose(got.x, [1.6, 1.2]) and np.allclose(got.y, [-0.4, -0.2, 0.0])


def test_a_mip_keeps_its_columns_integer() -> None:
    """max x + y over 2x + 2y <= 3: 1 in integers (1.5 in reals)."""
    M = sp.csr_matrix(np.array([[2.0, 2.0]]))
    args = (np.array([-1.0, -1.0]), M, np.array([-np.inf]), np.array([3.0]), np.zeros(2),
            np.full(2, 5.0))
    assert np.isclose(highs.solve(*args).x.sum(), 1.5)
    got = highs.solve(*args, integrality=np.ones(2, dtype=bool), mip_rel_gap=0.0)
    assert got.status == "optimal" and np.isclose(got.x.sum(), 1.0)


def _hard(n: int = 600) -> tuple[np.ndarray, sp.csc_matrix, np.ndarray, np.ndarray,
                                 np.ndarray, np.ndarray]:
    """Dense noisy subset sums as an L1 fit: seconds of interior point at n = 600."""
    rng = np.random.default_rng(0)
    F = (rng.random((4 * n, n)) < 0.5).astype(float)
    a = F @ (rng.random(n) < 0.5) + rng.normal(0, 2.0, 4 * n)
    k = F.shape[0]
    eye = sp.identity(k, format="csr")
    M = sp.hstack([sp.csr_matrix(F), eye, -eye], format="csc")
    c = np.concatenate([np.zeros(n), np.ones(2 * k)])
    lb = np.zeros(n + 2 * k)
    ub = np.concatenate([np.ones(n), np.full(2 * k, np.inf)])
    return c, M, a, a, lb, ub


def test_past_the_time_limit_the_worker_is_killed_and_the_status_is_limit() -> None:
    assert highs.solve(*TINY_ARGS, time_limit=30.0, kill_after=0.1).status == "optimal"
    tic = time.perf_counter()  # the worker has started: what follows is the solve alone
    got = highs.solve(*_hard(), time_limit=0.1, kill_after=0.1, method="highs-ipm")
    assert got.status == "limit" and np.isnan(got.x).all()
    assert time.perf_counter() - tic < 6.0


def test_highs_own_limit_on_the_hot_object_gives_limit_then_optimal() -> None:
    rng = np.random.default_rng(0)
    M = sp.csr_matrix((rng.random((300, 600)) < 0.3).astype(float))
    lp = highs.ComponentLp(M, M @ rng.random(600),
                           np.column_stack([np.zeros(600), np.ones(600)]))
    cost = {i: float(rng.normal()) for i in range(600)}
    assert lp.solve(cost, 0.0).status == "limit"
    assert lp.solve(cost, None).status == "optimal"
