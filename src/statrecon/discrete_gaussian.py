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
import time

import numpy as np
from flint import arb

from statrecon.errors import StatreconError

# Terms of an infinite sum added one by one before it is closed by an integral bound.
MAX_TERMS = 200_000
# Support of the seeded sampler: beyond 40 sigma the mass is below exp(-800), under the
# smallest double.
SAMPLER_WIDTH = 40.0
# The scales a run can use. Above MAX_SIGMA the seeded sampler's table (80 sigma entries)
# and ``noise_bound``'s sums (12 sigma terms in ball arithmetic, about 1.5 s at 10,000) stop
# being small, and the noise hides any count a geography holds. Below MIN_SIGMA no draw ever
# differs from 0 (P(Z != 0) < exp(-5000)) while the noise-aware models weigh cells by
# 1 / sigma and 1 / sigma^2: such tables are exact and are published as exact (rho = inf).
MAX_SIGMA = 10_000.0
MIN_SIGMA = 0.01
# The least failure probability ``noise_bound`` takes: a double with room above underflow.
MIN_ALPHA = 1e-300


class BoundOutOfTime(Exception):
    """``noise_bound``'s end passed before the bound was found (no bound: nothing proven)."""


def scale_problem(sigma: float) -> str | None:
    """Why a noise scale cannot be used (module constants), as words that follow the value
    ("sigma 2e+05, ..."), or None: 0 (no noise) or MIN_SIGMA <= sigma <= MAX_SIGMA."""
    if math.isnan(sigma) or sigma < 0:
        return "not a number >= 0"
    if sigma > MAX_SIGMA:
        return (f"more than {MAX_SIGMA:,.0f}, the largest sigma the samplers draw and the "
                "noise bounds compute")
    if 0 < sigma < MIN_SIGMA:
        return (f"less than {MIN_SIGMA:g}, the least sigma the noise-aware models weigh "
                "(noise that small is never drawn: such tables are exact, rho = inf)")
    return None


def sampler_reach(sigma: float) -> int:
    """The largest |draw| of the seeded sampler at scale ``sigma`` (OpenDP's goes beyond it
    with probability below exp(-800)): a published value further than this from every
    count is not a draw of the stated noise."""
    return math.ceil(SAMPLER_WIDTH * sigma) + 1 if sigma > 0 else 0


# Terms summed between two looks at the clock.
_CLOCK_EVERY = 4096


def _mass(sigma: float, start: int, stop: int, end: float | None = None) -> arb:
    """sum of exp(-x^2 / (2 sigma^2)) for start <= x < stop, as a ball; ``BoundOutOfTime``
    once the monotonic clock passes ``end``."""
    total = arb(0)
    two_var = 2 * arb(sigma) ** 2
    for x in range(start, stop):
        if end is not None and (x - start) % _CLOCK_EVERY == 0 and time.monotonic() > end:
            raise BoundOutOfTime
        total += (-(arb(x) ** 2) / two_var).exp()
    return total


def _integral_from(sigma: float, k: int) -> arb:
    """The integral of exp(-u^2 / (2 sigma^2)) over u >= k: above the sum over x > k (the
    function falls on u > 0)."""
    s = arb(sigma)
    return s * (arb.pi() / 2).sqrt() * (arb(k) / (s * arb(2).sqrt())).erfc()


def _reach(sigma: float) -> int:
    """Terms summed one by one (from t + 1 up, and from 1 in the denominator)."""
    return min(math.ceil(12 * sigma) + 2, MAX_TERMS)


def _denominator(sigma: float, end: float | None = None) -> arb:
    """1 + 2 * sum_{x >= 1} f(x), cut short: a lower bound (the same for every t)."""
    return 1 + 2 * _mass(sigma, 1, _reach(sigma) + 1, end)


def _tail(sigma: float, t: int, denominator: arb, end: float | None = None) -> float:
    """``tail_upper`` over a denominator already summed."""
    reach = _reach(sigma)
    # numerator 2 * sum_{x > t} f(x): terms up to t + reach, then the integral from there
    numerator = 2 * (_mass(sigma, t + 1, t + reach + 1, end) + _integral_from(sigma, t + reach))
    bound = numerator / denominator
    high = float(bound.upper())
    return min(1.0, math.nextafter(high, math.inf))


def _check_sigma(sigma: float) -> None:
    if not math.isfinite(sigma) or sigma < 0 or sigma > MAX_SIGMA:
        raise StatreconError(f"discrete Gaussian: sigma must be finite, >= 0 and at most "
                             f"{MAX_SIGMA:,.0f}, got {sigma}")


def tail_upper(sigma: float, t: int) -> float:
    """An upper bound on P(|Z| > t) for Z ~ N_Z(0, sigma^2), rigorous (see the module)."""
    if t < 0:
        return 1.0
    if sigma == 0:
        return 0.0
    _check_sigma(sigma)
    return _tail(sigma, t, _denominator(sigma))


def noise_bound(sigma: float, alpha: float, end: float | None = None) -> int:
    """The least whole t with P(|Z| > t) <= alpha (by ``tail_upper``): |noise| <= t except
    with probability at most alpha. ``end``: a moment on ``time.monotonic()``'s clock past
    which it raises ``BoundOutOfTime`` (its sums take seconds at the largest sigma)."""
    if not MIN_ALPHA <= alpha < 1:
        raise StatreconError(f"discrete Gaussian: the failure probability must lie in "
                             f"[{MIN_ALPHA:g}, 1), got {alpha}")
    if sigma == 0:
        return 0
    _check_sigma(sigma)
    denominator = _denominator(sigma, end)

    def met(t: int) -> bool:
        return _tail(sigma, t, denominator, end) <= alpha

    low, high = 0, max(1, math.ceil(sigma * math.sqrt(2 * math.log(4 / alpha))) + 2)
    while not met(high):  # the Gaussian estimate was short: widen
        low, high = high, 2 * high
    while low < high:  # least t in [low, high] with the bound met
        mid = (low + high) // 2
        if met(mid):
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
    _check_sigma(sigma)
    if sigma == 0 or size == 0:
        return np.zeros(size, dtype=np.int64), "none" if sigma == 0 else "opendp"
    if seed is None:
        return _opendp(size, sigma), "opendp"
    rng = np.random.default_rng(seed)
    reach = sampler_reach(sigma)
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
