"""The discrete Gaussian N_Z(0, sigma^2): noise for counts under zero-concentrated DP, and
rigorous bounds on how far it strays.

P(Z = x) is proportional to exp(-x^2 / (2 sigma^2)) on the integers (Canonne, Kamath and
Steinke 2020); adding it to a vector of counts whose L2 sensitivity is D gives
rho = D^2 / (2 sigma^2) zCDP. The tail bounds are computed in ball arithmetic (FLINT's arb,
python-flint): every term carries a rigorous error radius, the infinite sums are closed with
an integral bound, and the result is the ball's upper end, so a threshold derived from it
holds with at least the stated probability, not approximately.
"""

from __future__ import annotations

import math

import numpy as np
from flint import arb

from statrecon.errors import StatreconError

# Terms of an infinite sum added one by one before it is closed by an integral bound.
MAX_TERMS = 200_000
# Support of the seeded sampler: beyond 40 sigma the mass is below exp(-800), under the
# smallest double.
SAMPLER_WIDTH = 40.0


def _mass(sigma: float, start: int, stop: int) -> arb:
    """sum of exp(-x^2 / (2 sigma^2)) for start <= x < stop, as a ball."""
    total = arb(0)
    two_var = 2 * arb(sigma) ** 2
    for x in range(start, stop):
        total += (-(arb(x) ** 2) / two_var).exp()
    return total


def _integral_from(sigma: float, k: int) -> arb:
    """The integral of exp(-u^2 / (2 sigma^2)) over u >= k: above the sum over x > k (the
    function falls on u > 0)."""
    s = arb(sigma)
    return s * (arb.pi() / 2).sqrt() * (arb(k) / (s * arb(2).sqrt())).erfc()


def tail_upper(sigma: float, t: int) -> float:
    """An upper bound on P(|Z| > t) for Z ~ N_Z(0, sigma^2), rigorous (see the module)."""
    if t < 0:
        return 1.0
    if sigma == 0:
        return 0.0
    if not math.isfinite(sigma) or sigma < 0:
        raise StatreconError(f"discrete Gaussian: sigma must be finite and >= 0, got {sigma}")
    reach = min(math.ceil(12 * sigma) + 2, MAX_TERMS)
    # numerator 2 * sum_{x > t} f(x): terms up to t + reach, then the integral from there
    numerator = 2 * (_mass(sigma, t + 1, t + reach + 1) + _integral_from(sigma, t + reach))
    # denominator 1 + 2 * sum_{x >= 1} f(x), cut short: a lower bound
    denominator = 1 + 2 * _mass(sigma, 1, min(reach, MAX_TERMS) + 1)
    bound = numerator / denominator
    high = float(bound.upper())
    return min(1.0, math.nextafter(high, math.inf))


def noise_bound(sigma: float, alpha: float) -> int:
    """The least whole t with P(|Z| > t) <= alpha (by ``tail_upper``): |noise| <= t except
    with probability at most alpha."""
    if not 0 < alpha < 1:
        raise StatreconError(f"discrete Gaussian: the failure probability must lie in (0, 1), "
                             f"got {alpha}")
    if sigma == 0:
        return 0
    low, high = 0, max(1, math.ceil(sigma * math.sqrt(2 * math.log(4 / alpha))) + 2)
    while tail_upper(sigma, high) > alpha:  # the Gaussian estimate was short: widen
        low, high = high, 2 * high
    while low < high:  # least t in [low, high] with the bound met
        mid = (low + high) // 2
        if tail_upper(sigma, mid) <= alpha:
            high = mid
        else:
            low = mid + 1
    return low


def sample(size: int, sigma: float, seed: int | None) -> tuple[np.ndarray, str]:
    """``size`` draws of N_Z(0, sigma^2) and the sampler that drew them.

    ``seed`` None: OpenDP's sampler (``statrecon[dp]``; exact, its own secure randomness, not
    reproducible), the one to protect real data with. A seed: numpy's generator choosing from
    the probabilities in floating point over +-40 sigma, reproducible for experiments but NOT a
    DP-hardened sampler.
    """
    if not math.isfinite(sigma) or sigma < 0:
        raise StatreconError(f"discrete Gaussian: sigma must be finite and >= 0, got {sigma}")
    if sigma == 0 or size == 0:
        return np.zeros(size, dtype=np.int64), "none" if sigma == 0 else "opendp"
    if seed is None:
        return _opendp(size, sigma), "opendp"
    rng = np.random.default_rng(seed)
    reach = math.ceil(SAMPLER_WIDTH * sigma) + 1
    support = np.arange(-reach, reach + 1)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma * sigma))
    return rng.choice(support, size=size, p=weights / weights.sum()).astype(np.int64), "numpy"


def _opendp(size: int, sigma: float) -> np.ndarray:
    try:  # lazy: OpenDP is the optional extra statrecon[dp]
        import opendp.prelude as dp
    except ImportError:
        raise StatreconError("drawing DP noise needs OpenDP: pip install 'statrecon[dp]' (or "
                             "give a seed for the reproducible sampler, which is not "
                             "DP-hardened)") from None
    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int),
                              scale=float(sigma))
    out = np.empty(size, dtype=np.int64)
    chunk = 1_000_000
    for start in range(0, size, chunk):
        n = min(chunk, size - start)
        out[start:start + n] = np.asarray(meas([0] * n), dtype=np.int64)
    return out
