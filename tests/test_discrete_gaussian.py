"""The discrete Gaussian's tail bounds (rigorous, ball arithmetic) against an independent
float computation, and against draws from OpenDP's sampler and the seeded one."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from statrecon.discrete_gaussian import (
    MAX_SIGMA,
    MIN_ALPHA,
    MIN_SIGMA,
    BoundOutOfTime,
    noise_bound,
    sample,
    scale_problem,
    tail_upper,
)
from statrecon.errors import StatreconError


def float_tail(sigma: float, t: int) -> float:
    """P(|Z| > t) summed in floats over +-60 sigma (the sum the bound encloses)."""
    reach = int(60 * sigma) + 60
    x = np.arange(-reach, reach + 1, dtype=float)
    w = np.exp(-(x * x) / (2 * sigma * sigma))
    return float(w[np.abs(x) > t].sum() / w.sum())


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.5, 7.0, 40.0])
def test_the_tail_bound_encloses_the_tail_tightly(sigma: float) -> None:
    for t in sorted({0, 1, 2, int(sigma), int(3 * sigma), int(6 * sigma)}):
        exact = float_tail(sigma, t)
        bound = tail_upper(sigma, t)
        assert bound >= exact * (1 - 1e-12)
        assert bound <= exact * (1 + 1e-9) + 1e-300


@pytest.mark.parametrize("sigma,alpha", [(1.0, 0.05), (3.0, 1e-6), (12.5, 1e-9), (0.2, 0.01)])
def test_the_noise_bound_is_the_least_that_meets_alpha(sigma: float, alpha: float) -> None:
    t = noise_bound(sigma, alpha)
    assert tail_upper(sigma, t) <= alpha
    assert t == 0 or tail_upper(sigma, t - 1) > alpha
    assert float_tail(sigma, t) <= alpha


def test_no_noise_and_bad_arguments() -> None:
    assert noise_bound(0.0, 0.01) == 0 and tail_upper(0.0, 0) == 0.0
    assert tail_upper(1.0, -1) == 1.0
    with pytest.raises(StatreconError, match="failure probability"):
        noise_bound(1.0, 0.0)
    with pytest.raises(StatreconError, match="sigma"):
        tail_upper(-1.0, 2)


def test_scales_beyond_the_samplers_are_refused_and_bounds_keep_a_deadline() -> None:
    """Issue 27: sigma above MAX_SIGMA allocated exabytes (the seeded sampler) or ran for
    hours (the bound); the bound's sums stop at ``end``."""
    assert scale_problem(0.0) is None and scale_problem(MAX_SIGMA) is None
    assert "largest sigma" in str(scale_problem(1e300))
    assert "least sigma" in str(scale_problem(MIN_SIGMA / 2))
    assert scale_problem(math.inf) is not None and scale_problem(math.nan) is not None
    for call in (lambda: sample(10, 2 * MAX_SIGMA, 0), lambda: noise_bound(1e300, 0.01),
                 lambda: tail_upper(2 * MAX_SIGMA, 3)):
        with pytest.raises(StatreconError, match="at most 10,000"):
            call()
    with pytest.raises(StatreconError, match="failure probability"):
        noise_bound(1.0, MIN_ALPHA / 10)
    t0 = time.monotonic()
    with pytest.raises(BoundOutOfTime):
        noise_bound(MAX_SIGMA, 1e-9, end=t0 + 0.05)
    assert time.monotonic() - t0 < 0.5
    assert noise_bound(3.0, 1e-6, end=time.monotonic() + 60) == noise_bound(3.0, 1e-6)


def _check_draws(draws: np.ndarray, sigma: float) -> None:
    """Tail frequencies within 6 binomial standard deviations of the computed tails (a false
    alarm has probability about 2e-9 per check), and the variance within 3%."""
    n = len(draws)
    assert draws.dtype == np.int64
    for t in (0, int(sigma), int(2 * sigma), int(3 * sigma)):
        p = tail_upper(sigma, t)
        seen = int((np.abs(draws) > t).sum())
        assert abs(seen - n * p) <= 6 * math.sqrt(n * p * (1 - p)) + 1, (t, seen, n * p)
    variance = float_tail_variance(sigma)
    assert abs(draws.var() / variance - 1) < 0.03


def float_tail_variance(sigma: float) -> float:
    reach = int(60 * sigma) + 60
    x = np.arange(-reach, reach + 1, dtype=float)
    w = np.exp(-(x * x) / (2 * sigma * sigma))
    return float((w * x * x).sum() / w.sum())


def test_opendp_draws_follow_the_computed_tails() -> None:
    pytest.importorskip("opendp")
    draws, sampler = sample(200_000, 2.5, None)
    assert sampler == "opendp"
    _check_draws(draws, 2.5)


def test_seeded_draws_follow_the_computed_tails_and_repeat() -> None:
    draws, sampler = sample(200_000, 4.0, 7)
    assert sampler == "numpy"
    _check_draws(draws, 4.0)
    assert np.array_equal(draws, sample(200_000, 4.0, 7)[0])
    assert not np.array_equal(draws, sample(200_000, 4.0, 8)[0])
