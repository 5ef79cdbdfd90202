"""Perturbation tables for counts by maximum entropy, as sdcTools' ``ptable`` builds them
(``create_cnt_ptable(D, V, js)``; Giessing 2016, "Computational issues in the design of
transition probabilities and disclosure risk estimation for additive noise", PSD 2016).

For each true count ``i`` from 1 to ``ncat`` (``D`` when ``js`` is 0, else ``D + js + 1``; the
last row serves every larger count, and is symmetric) the published counts are ``j`` from
``max(i - D, 0)`` to ``i + D`` but for ``1..js`` (never published: a count of 1 to ``js``
would be a small count), the noise ``v = j - i``, and the probabilities ``p`` maximise the
entropy ``-sum p log p`` subject to

- ``sum p = 1`` and ``sum v p = 0`` (no bias),
- ``sum v^2 p <= V`` (the noise variance; it binds wherever the support allows),
- ``1e-8 <= p <= 1`` (every transition possible), and with ``mono`` (the default)
  ``p`` not decreasing from the largest negative noise up to the noise 0.

The problem is strictly concave, so its optimum is unique; it is solved here with scipy's
SLSQP (``ptable`` uses NLopt's SLSQP on the same problem) from analytic gradients (its
answers from different starts agree to about 1e-9).
As ``ptable`` does, each row's cumulative probabilities are then rounded to 8 decimals, the
key intervals ``[p_int_lb, p_int_ub)`` are those, and ``p`` their differences: exact
decimals, so the table read back is the table written. ``pstay`` (a fixed probability of
no change) and ``ptable``'s other objectives (``optim`` 2-4) are not implemented.

The published example (``ptable``'s vignette): D = 2, V = 1.08, js = 1 publishes a 1 as 0, 2
or 3 with probabilities 0.5133, 0.46, 0.0267 (tests/engines/ckm).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

import numpy as np

from statrecon.errors import OptionError, StatreconError, check_option
from statrecon.tables.ckm import IntervalPTable, Transition

EPSILON = 1e-8  # the least probability of a transition (ptable's p_lb)
DIGITS = 8  # ptable rounds the cumulative probabilities to this many decimals
TOLERANCE = 1e-6  # a constraint violated by more (the 1e-8 floor of every probability
# can make mean 0 unreachable by about 1e-8 D: ptable accepts that too): none satisfies them
MAX_D = 50
# SLSQP's exits at an optimum: converged (0), or no step left that improves it at a tolerance
# of 1e-15 (8: "positive directional derivative in the line search", reached at the optimum)
_CONVERGED = (0, 8)


@dataclass(frozen=True)
class PTableParams:
    """sdcTools ``ptable``'s parameters for counts: ``D`` the largest noise, ``V`` the noise
    variance, ``js`` the counts 1..js never published, ``mono`` the monotony condition."""

    D: int
    V: Fraction
    js: int = 0
    mono: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "V", Fraction(self.V))
        check_option(self, "D", isinstance(self.D, int) and 1 <= self.D <= MAX_D,
                     f"a whole number from 1 to {MAX_D}")
        check_option(self, "V", self.V > 0, "above 0")
        check_option(self, "js", isinstance(self.js, int) and 0 <= self.js <= MAX_D,
                     f"a whole number from 0 to {MAX_D}")

    @property
    def ncat(self) -> int:
        """The last row: it serves every count from it up."""
        return self.D if self.js == 0 else self.D + self.js + 1

    def targets(self, i: int) -> list[int]:
        """The published counts row ``i`` may reach."""
        return [j for j in range(max(i - self.D, 0), i + self.D + 1)
                if not 1 <= j <= self.js]


def maximum_entropy(v: np.ndarray, variance: float, mono: bool) -> np.ndarray:
    """The probabilities over the noises ``v`` (ascending) of greatest entropy with mean 0,
    variance at most ``variance``, each at least EPSILON and (``mono``) not decreasing up to
    the noise 0; a StatreconError when no distribution satisfies them."""
    # lazy: scipy's optimiser loads only when a ptable is built
    from scipy.optimize import minimize

    n = len(v)
    v2 = v * v
    constraints = [
        {"type": "eq", "fun": lambda p: np.array([p.sum() - 1.0, v @ p]),
         "jac": lambda p: np.vstack([np.ones(n), v])},
        {"type": "ineq", "fun": lambda p: np.array([variance - v2 @ p]),
         "jac": lambda p: -v2[None, :]},
    ]
    rising = _rising(v) if mono else np.zeros((0, n))
    if len(rising):
        constraints.append({"type": "ineq", "fun": lambda p: rising @ p,
                            "jac": lambda p: rising})
    start = _start(v, variance)
    answer = minimize(lambda p: float(p @ np.log(p)), start, jac=lambda p: np.log(p) + 1.0,
                      bounds=[(EPSILON, 1.0)] * n, constraints=constraints, method="SLSQP",
                      options={"ftol": 1e-15, "maxiter": 2000})
    p = np.clip(answer.x, EPSILON, 1.0)
    worst = max(abs(p.sum() - 1.0), abs(v @ p), max(v2 @ p - variance, 0.0),
                max((-(rising @ p)).max(initial=0.0), 0.0))
    if answer.status not in _CONVERGED or worst > TOLERANCE:
        raise StatreconError(f"no distribution over the noises {v.astype(int).tolist()} has "
                             f"mean 0 and variance at most {variance:g} (with every "
                             "probability at least 1e-8): choose a larger V or D, or a "
                             "smaller js")
    return p


def _rising(v: np.ndarray) -> np.ndarray:
    """Rows ``p[k+1] - p[k] >= 0`` for each pair of noises below and up to 0."""
    zero = int(np.searchsorted(v, 0))
    rows = np.zeros((max(zero, 0), len(v)))
    for k in range(zero):
        if k + 1 < len(v) and v[k + 1] <= 0:
            rows[k, k], rows[k, k + 1] = -1.0, 1.0
    return rows[np.any(rows != 0, axis=1)]


def _start(v: np.ndarray, variance: float) -> np.ndarray:
    """A start inside the bounds: weights falling with the noise's square."""
    weights = np.exp(-v * v / (2.0 * max(variance, 0.1)))
    return weights / weights.sum()


def _rounded(cumulative: float) -> Fraction:
    return Fraction(Decimal(repr(cumulative)).quantize(Decimal(1).scaleb(-DIGITS),
                                                       rounding=ROUND_HALF_EVEN))


def ptable_row(params: PTableParams, i: int) -> tuple[Transition, ...]:
    """Row ``i`` of the ptable: its transitions with exact key intervals (cumulative
    probabilities rounded to 8 decimals, the last one 1)."""
    targets = params.targets(i)
    v = np.array([j - i for j in targets], dtype=float)
    p = maximum_entropy(v, float(params.V), params.mono)
    cumulative = np.cumsum(p)
    uppers = [_rounded(float(c)) for c in cumulative[:-1]] + [Fraction(1)]
    out, lower = [], Fraction(0)
    for j, upper in zip(targets, uppers, strict=True):
        upper = max(upper, lower)
        out.append(Transition(i, j, upper - lower, lower, upper))
        lower = upper
    return tuple(out)


def build_ptable(params: PTableParams) -> IntervalPTable:
    """The ptable of ``params``: rows 1..ncat, each of greatest entropy (module docstring)."""
    if not isinstance(params, PTableParams):
        raise OptionError("build_ptable takes PTableParams", option="params")
    return IntervalPTable({i: ptable_row(params, i) for i in range(1, params.ncat + 1)})
