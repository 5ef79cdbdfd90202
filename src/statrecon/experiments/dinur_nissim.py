"""Dinur–Nissim reconstruction, measured: how much noise stops a linear attack (CS208 notes §2–3).

* :func:`phase_transition`: k = c·n random subset counts with Gaussian noise σ = f·√n; the
  attacks recover almost every secret bit while σ ≪ √n and fall to the baseline once σ ≫ √n.
* :func:`subsampling_defence`: answers from a random subsample (§2.4.2) are accurate to
  O(√(n log k)) yet the attack learns nothing about records outside the sample.
* :func:`runtime_scaling`: seconds per method as n grows.
* :func:`exhaustive_attack`: all 2^n subset counts with error at most αn and the brute-force
  attack of Figure 4; Theorem 2.4 says it gets at most 4αn bits wrong, and this checks it.
* :func:`diffix_attack`: the Cohen–Nissim attack on a Diffix-like interface (§3): short SQL
  predicates that look random get O(1) sticky noise, the query matrix is rebuilt by DuckDB from
  the SQL alone, and LP decoding reads the secret column back.

Everything returns a dataclass with ``to_json()`` (stable keys) and a baseline next to every
attack score: guessing the majority value of the true bits, what an attacker gets for free.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from statrecon import querygen
from statrecon.engines.linear import LinearOptions, reconstruct_linear
from statrecon.engines.linear.estimators import ESTIMATORS as LINEAR_ESTIMATORS
from statrecon.engines.linear.model import compile_linear
from statrecon.engines.linear.problem import Problem
from statrecon.errors import StatreconError
from statrecon.mechanisms import DiffixLike, Gaussian, Subsampling, count_conditions
from statrecon.outputs import dump_yaml
from statrecon.release.files import parse_release
from statrecon.release.known import PublicTable
from statrecon.report.figures import agg_figure

__all__ = [
    "ESTIMATORS",
    "DiffixResult",
    "ExhaustiveResult",
    "ExperimentError",
    "PhaseTransitionResult",
    "RuntimeResult",
    "SigmaRow",
    "SubsamplingResult",
    "SubsamplingRow",
    "diffix_attack",
    "exhaustive_attack",
    "phase_transition",
    "plot_phase_transition",
    "plot_runtime",
    "plot_subsampling",
    "runtime_scaling",
    "subsampling_defence",
]

ESTIMATORS = tuple(LINEAR_ESTIMATORS)  # the linear engine's registry: ls, lp-l1, lp-linf, ...
# The lecture's settings, not the engine's (see _estimate): seconds when no limit is given
# (LPs run to their end; integer decoding could run for hours) and passes of the iterative
# methods (kaczmarz 20, sgd ten times as many: its own default of 200)
_DEFAULT_TIME_LIMITS = {"ip": 60.0}
_EPOCHS = 20.0
EXHAUSTIVE_MAX_N = 16
_MAX_PRIME = 10**9  # trial division up to its square root: milliseconds
MAX_MATRIX_ENTRIES = 10**8  # queries × records of one instance (dense: 800 MB of float64)
Progress = Callable[[int, int, str], None]  # (units done, units in all, what just finished)
# Random streams are keyed [seed, tag, ...] with a distinct tag per purpose: numpy's SeedSequence
# treats [s, 0] like [s], so keys of different lengths must never differ by trailing zeros only.


class ExperimentError(StatreconError, ValueError):
    """A bad experiment parameter: a ``ValueError`` for callers, a one-line CLI error."""


# --------------------------------------------------------------------------- helpers


def _check_methods(methods: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(methods)
    if not chosen:
        raise ExperimentError(f"no method given (choose from {', '.join(ESTIMATORS)})")
    for m in chosen:
        if m not in ESTIMATORS:
            raise ExperimentError(f"unknown method {m!r} (choose from {', '.join(ESTIMATORS)})")
    if len(set(chosen)) != len(chosen):
        raise ExperimentError(f"a method is named twice in {', '.join(chosen)}")
    return chosen


def check_size(n: int, c: float) -> int:
    """k = round(c·n) queries; both must be positive."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ExperimentError(f"n must be an integer >= 2, got {n!r}")
    if not math.isfinite(c) or c <= 0:
        raise ExperimentError(f"c must be a number > 0, got {c!r}")
    k = max(1, round(c * n))
    _check_entries(k, int(n), f"n = {n}, c = {c:g}")
    return k


def _check_entries(k: int, n: int, what: str) -> None:
    """Refuse an instance whose query matrix would not fit in memory, before drawing it."""
    if k * n > MAX_MATRIX_ENTRIES:
        raise ExperimentError(f"{what}: {k:,} queries × {n:,} records is more than "
                              f"{MAX_MATRIX_ENTRIES:,} matrix entries")


def check_primes(primes: Sequence[int]) -> None:
    for m in primes:
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or not _is_prime(int(m)):
            raise ExperimentError(f"primes must be prime numbers below {_MAX_PRIME:,}, got {m!r}")
    if len(set(primes)) != len(primes):
        raise ExperimentError(f"a prime is named twice in {', '.join(map(str, primes))}")


def _is_prime(m: int) -> bool:
    """Trial division: Cohen–Nissim primes are small (2, 3, 5, 7, 11 by default)."""
    if m < 2 or m > _MAX_PRIME:
        return False
    return all(m % d for d in range(2, math.isqrt(m) + 1))


def check_positive(name: str, values: Sequence[float]) -> None:
    for v in values:
        if isinstance(v, bool) or not math.isfinite(v) or v <= 0:
            raise ExperimentError(f"{name} must be finite numbers > 0, got {v!r}")
    if len(set(values)) != len(values):
        raise ExperimentError(f"a value is named twice in {name}: "
                              f"{', '.join(f'{v:g}' for v in values)}")


def _random_matrix(n: int, k: int, rng: np.random.Generator, p: float = 0.5) -> np.ndarray:
    """k uniformly random subsets of n records as a dense 0/1 float matrix.

    Dense on purpose: with p = 1/2 half the entries are ones, so sparse storage only costs.
    The SQL text of :func:`statrecon.querygen.random_subsets` is not needed here (Gaussian
    noise does not read it) and would cost k strings of ~n/2 ids each.
    """
    return (rng.random((k, n)) < p).astype(np.float64)


def _baseline(s: np.ndarray) -> float:
    """Accuracy of guessing the majority value for every record."""
    ones = float(np.mean(s))
    return max(ones, 1.0 - ones)


def _estimate(method: str, F: Any, a: np.ndarray, rng: np.random.Generator,
              time_limit: float | None) -> np.ndarray:
    """One estimator of the secret bits in [0, 1]; a real vector, rounded by the caller.

    The classic attack, as in the lecture: every statistic weighs the same, and least squares
    is unconstrained (the box [0, 1] is the domain, not background knowledge). An LP that stops
    short raises :class:`~statrecon.engines.linear.problem.SolverIncomplete`; integer decoding
    without an integer point gives clipped least squares."""
    if method not in ESTIMATORS:
        raise ExperimentError(f"unknown method {method!r} (choose from "
                              f"{', '.join(ESTIMATORS)})")
    n = F.shape[1]
    limit = _DEFAULT_TIME_LIMITS.get(method) if time_limit is None else time_limit
    problem = Problem(F, a, np.zeros(n), np.ones(n), user_bounds=False, time_limit=limit,
                      epochs=_EPOCHS, rng=rng)
    return LINEAR_ESTIMATORS[method].estimate(problem).x


def _bits(x: np.ndarray) -> np.ndarray:
    """Round an estimate to bits (NaN, from a failed solve, reads as 0)."""
    return np.nan_to_num(np.asarray(x, dtype=float), nan=0.0) >= 0.5


def _accuracy(x: np.ndarray, s: np.ndarray, where: np.ndarray | None = None) -> float | None:
    right = _bits(x) == (np.asarray(s) >= 0.5)
    if where is not None:
        right = right[where]
    return float(np.mean(right)) if right.size else None


def _tick(progress: Progress | None, done: int, total: int, label: str) -> None:
    if progress is not None:
        progress(done, total, label)


def _check_factor(name: str, value: float) -> float:
    x = float(value)
    if not math.isfinite(x) or x < 0:
        raise ExperimentError(f"{name} must be finite numbers >= 0, got {value!r}")
    return x


# --------------------------------------------------------------------------- phase transition


@dataclass(frozen=True)
class SigmaRow:
    """One noise level: mean accuracy and seconds per method over the trials."""

    sigma_in_sqrt_n: float
    sigma: float
    baseline: float
    accuracy: dict[str, float]
    seconds: dict[str, float]
    trial_accuracy: dict[str, list[float]]

    def to_json(self) -> dict[str, Any]:
        return {"sigma_in_sqrt_n": self.sigma_in_sqrt_n, "sigma": self.sigma,
                "baseline": self.baseline, "accuracy": dict(self.accuracy),
                "seconds": dict(self.seconds),
                "trial_accuracy": {m: list(v) for m, v in self.trial_accuracy.items()}}


@dataclass(frozen=True)
class PhaseTransitionResult:
    """Accuracy of each attack against Gaussian noise σ = f·√n, next to the baseline."""

    n: int
    c: float
    k: int
    seed: int
    trials: int
    methods: tuple[str, ...]
    rows: tuple[SigmaRow, ...]
    elapsed_s: float

    def accuracy(self, method: str, sigma_in_sqrt_n: float) -> float:
        for row in self.rows:
            if math.isclose(row.sigma_in_sqrt_n, sigma_in_sqrt_n):
                return row.accuracy[method]
        raise KeyError(sigma_in_sqrt_n)

    def baseline(self, sigma_in_sqrt_n: float) -> float:
        for row in self.rows:
            if math.isclose(row.sigma_in_sqrt_n, sigma_in_sqrt_n):
                return row.baseline
        raise KeyError(sigma_in_sqrt_n)

    def to_json(self) -> dict[str, Any]:
        return {"experiment": "dinur-nissim", "n": self.n, "c": self.c, "k": self.k,
                "seed": self.seed, "trials": self.trials, "methods": list(self.methods),
                "rows": [r.to_json() for r in self.rows], "elapsed_s": self.elapsed_s}


def phase_transition(n: int = 1000, c: float = 4,
                     sigmas_in_sqrt_n: Sequence[float] = (0, 0.05, 0.1, 0.25, 0.5, 1, 2, 4),
                     methods: Sequence[str] = ("ls", "lp-l1", "lp-linf"), seed: int = 0,
                     trials: int = 1, progress: Progress | None = None,
                     time_limit: float | None = None) -> PhaseTransitionResult:
    """Uniform secret bits, k = c·n random subset counts (p = 1/2), Gaussian noise σ = f·√n.

    Each trial draws one secret and one query matrix, shared by every noise level and method
    (common random numbers keep the curve smooth); noise is drawn afresh per level. Accuracy
    is the fraction of bits right after rounding at 1/2; the baseline guesses the majority.
    """
    start = time.perf_counter()
    k = check_size(n, c)
    chosen = _check_methods(methods)
    factors = [_check_factor("sigmas", f) for f in sigmas_in_sqrt_n]
    if not factors:
        raise ExperimentError("no noise level given (sigmas)")
    if trials < 1:
        raise ExperimentError(f"trials must be >= 1, got {trials}")
    acc: dict[tuple[int, str], list[float]] = {
        (i, m): [] for i in range(len(factors)) for m in chosen}
    secs: dict[tuple[int, str], list[float]] = {
        (i, m): [] for i in range(len(factors)) for m in chosen}
    baselines: list[float] = []
    total, done = trials * len(factors) * len(chosen), 0
    for t in range(trials):
        rng = np.random.default_rng([seed, 1, t])
        s = (rng.random(n) < 0.5).astype(np.float64)
        F = _random_matrix(n, k, rng)
        baselines.append(_baseline(s))
        for i, f in enumerate(factors):
            out = Gaussian(f * math.sqrt(n)).answer(F, s, rng)
            for j, m in enumerate(chosen):
                tic = time.perf_counter()
                x = _estimate(m, F, out.answers, np.random.default_rng([seed, 2, t, i, j]),
                              time_limit)
                secs[i, m].append(time.perf_counter() - tic)
                acc[i, m].append(_accuracy(x, s) or 0.0)
                done += 1
                _tick(progress, done, total, f"σ = {f:g}·√n, {m}")
    rows = tuple(
        SigmaRow(sigma_in_sqrt_n=f, sigma=f * math.sqrt(n), baseline=float(np.mean(baselines)),
                 accuracy={m: float(np.mean(acc[i, m])) for m in chosen},
                 seconds={m: float(np.mean(secs[i, m])) for m in chosen},
                 trial_accuracy={m: list(acc[i, m]) for m in chosen})
        for i, f in enumerate(factors))
    return PhaseTransitionResult(n, float(c), k, seed, trials, chosen, rows,
                                 time.perf_counter() - start)


# --------------------------------------------------------------------------- subsampling


@dataclass(frozen=True)
class SubsamplingRow:
    """One sampling rate: the attack's accuracy split by sampled/unsampled, and answer error."""

    rate: float
    sampled_fraction: float
    accuracy: float
    accuracy_sampled: float | None
    accuracy_unsampled: float | None
    ceiling: float  # every sampled record right, the others at the baseline
    mean_abs_error: float
    max_abs_error: float
    noise_std: float  # mean over answers of each answer's standard deviation
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"rate": self.rate, "sampled_fraction": self.sampled_fraction,
                "accuracy": self.accuracy, "accuracy_sampled": self.accuracy_sampled,
                "accuracy_unsampled": self.accuracy_unsampled, "ceiling": self.ceiling,
                "mean_abs_error": self.mean_abs_error, "max_abs_error": self.max_abs_error,
                "noise_std": self.noise_std, "seconds": self.seconds}


@dataclass(frozen=True)
class SubsamplingResult:
    """The subsampling "defence": accurate answers, yet unsampled records stay at the baseline."""

    n: int
    c: float
    k: int
    method: str
    seed: int
    with_replacement: bool
    baseline: float
    reference_error: float  # √(n ln k), the order of the answers' worst error (Exercise 2.8)
    rows: tuple[SubsamplingRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {"experiment": "subsampling", "n": self.n, "c": self.c, "k": self.k,
                "method": self.method, "seed": self.seed,
                "with_replacement": self.with_replacement, "baseline": self.baseline,
                "reference_error": self.reference_error,
                "rows": [r.to_json() for r in self.rows]}


def subsampling_defence(n: int = 1000, c: float = 4,
                        rates: Sequence[float] = (1, 0.5, 0.2, 0.1, 0.05), method: str = "ls",
                        seed: int = 0, with_replacement: bool = False,
                        progress: Progress | None = None,
                        time_limit: float | None = None) -> SubsamplingResult:
    """Answers from :class:`~statrecon.mechanisms.Subsampling` at each rate, then the attack.

    The answers depend only on sampled records, so the attacker can at best learn those and
    guess the rest: accuracy on unsampled records stays near the baseline whatever the method,
    while each answer is still within O(√(n log k)) of the truth.
    """
    k = check_size(n, c)
    (chosen,) = _check_methods([method])
    if not rates:
        raise ExperimentError("no sampling rate given")
    mechanisms = [Subsampling(float(r), with_replacement) for r in rates]  # validates rates
    rng = np.random.default_rng([seed, 1])
    s = (rng.random(n) < 0.5).astype(np.float64)
    F = _random_matrix(n, k, rng)
    base = _baseline(s)
    rows: list[SubsamplingRow] = []
    for i, mech in enumerate(mechanisms):
        out = mech.answer(F, s, np.random.default_rng([seed, 2, i]))
        mask = np.asarray(out.sample_mask, dtype=bool)
        tic = time.perf_counter()
        x = _estimate(chosen, F, out.answers, np.random.default_rng([seed, 3, i]), time_limit)
        seconds = time.perf_counter() - tic
        err = np.abs(out.answers - out.true_answers)
        frac = float(np.mean(mask))
        rows.append(SubsamplingRow(
            rate=mech.rate, sampled_fraction=frac, accuracy=_accuracy(x, s) or 0.0,
            accuracy_sampled=_accuracy(x, s, mask), accuracy_unsampled=_accuracy(x, s, ~mask),
            ceiling=frac + (1 - frac) * base, mean_abs_error=float(err.mean()),
            max_abs_error=float(err.max()), noise_std=float(np.mean(out.noise_scale)),
            seconds=seconds))
        _tick(progress, i + 1, len(mechanisms), f"rate {mech.rate:g}")
    return SubsamplingResult(n, float(c), k, chosen, seed, with_replacement, base,
                             math.sqrt(n * math.log(k)) if k > 1 else math.sqrt(n),
                             tuple(rows))


# --------------------------------------------------------------------------- runtime


@dataclass(frozen=True)
class RuntimeResult:
    """Seconds (and accuracy) per method per n, all at one relative noise level."""

    c: float
    sigma_in_sqrt_n: float
    seed: int
    methods: tuple[str, ...]
    rows: tuple[dict[str, Any], ...]  # {"n", "k", "seconds": {m: s}, "accuracy": {m: a}}

    def to_json(self) -> dict[str, Any]:
        return {"experiment": "runtime", "c": self.c, "sigma_in_sqrt_n": self.sigma_in_sqrt_n,
                "seed": self.seed, "methods": list(self.methods),
                "rows": [dict(r) for r in self.rows]}


def runtime_scaling(ns: Sequence[int] = (100, 200, 500, 1000), c: float = 4,
                    methods: Sequence[str] = ("ls", "lp-l1", "lp-linf"), seed: int = 0,
                    sigma_in_sqrt_n: float = 0.05, progress: Progress | None = None,
                    time_limit: float | None = None) -> RuntimeResult:
    """Wall-clock seconds of each method on one instance per n (low noise, k = c·n)."""
    chosen = _check_methods(methods)
    f = _check_factor("sigma_in_sqrt_n", sigma_in_sqrt_n)
    if not ns:
        raise ExperimentError("no n given")
    rows: list[dict[str, Any]] = []
    total, done = len(ns) * len(chosen), 0
    for n in ns:
        k = check_size(n, c)
        rng = np.random.default_rng([seed, 1, n])
        s = (rng.random(n) < 0.5).astype(np.float64)
        F = _random_matrix(n, k, rng)
        a = Gaussian(f * math.sqrt(n)).answer(F, s, rng).answers
        seconds: dict[str, float] = {}
        accuracy: dict[str, float] = {}
        for j, m in enumerate(chosen):
            tic = time.perf_counter()
            x = _estimate(m, F, a, np.random.default_rng([seed, 2, n, j]), time_limit)
            seconds[m] = time.perf_counter() - tic
            accuracy[m] = _accuracy(x, s) or 0.0
            done += 1
            _tick(progress, done, total, f"n = {n}, {m}")
        rows.append({"n": int(n), "k": k, "seconds": seconds, "accuracy": accuracy})
    return RuntimeResult(float(c), f, seed, chosen, tuple(rows))


# --------------------------------------------------------------------------- exhaustive attack


@dataclass(frozen=True)
class ExhaustiveResult:
    """The all-2^n-queries attack (Figure 4) against Theorem 2.4's bound of 4αn wrong bits.

    ``wrong_bits`` is the attack's output (the lowest-numbered minimiser of the largest error);
    the theorem bounds every candidate whose largest error is at most αn, so
    ``worst_consistent_wrong_bits`` (the worst of them, ties and all) is what ``bound_holds``
    checks.
    """

    n: int
    alpha: float
    noise: str
    seed: int
    queries: int
    error_bound: float  # αn: every published answer is within this of the truth
    bound: float  # 4αn
    wrong_bits: int
    max_error_of_output: float
    max_error_of_truth: float
    minimisers: int
    consistent: int  # candidates whose largest error is <= αn
    worst_consistent_wrong_bits: int
    decoy_wrong_bits: int | None  # adversarial noise: how far the decoy is from the truth
    bound_holds: bool
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"experiment": "exhaustive", "n": self.n, "alpha": self.alpha,
                "noise": self.noise, "seed": self.seed, "queries": self.queries,
                "error_bound": self.error_bound, "bound": self.bound,
                "wrong_bits": self.wrong_bits, "max_error_of_output": self.max_error_of_output,
                "max_error_of_truth": self.max_error_of_truth, "minimisers": self.minimisers,
                "consistent": self.consistent,
                "worst_consistent_wrong_bits": self.worst_consistent_wrong_bits,
                "decoy_wrong_bits": self.decoy_wrong_bits, "bound_holds": self.bound_holds,
                "seconds": self.seconds}


def _all_vectors(n: int) -> np.ndarray:
    """Every 0/1 vector of length n, row v = the bits of the integer v (float64, exact)."""
    v = np.arange(2**n, dtype=np.int64)
    return ((v[:, None] >> np.arange(n)) & 1).astype(np.float64)


def exhaustive_attack(n: int = 12, alpha: float = 0.05, seed: int = 0,
                      noise: str = "uniform") -> ExhaustiveResult:
    """All 2^n subset counts answered within ±αn, decoded by brute force over all 2^n secrets.

    ``noise="uniform"``: independent errors uniform in [-αn, αn]. ``noise="adversarial"``: the
    publisher pulls every answer halfway towards a decoy secret that differs from the truth in
    ⌊2αn⌋ ones and ⌊2αn⌋ zeros, which keeps every error within αn and makes the decoy exactly
    as consistent as the truth, so Theorem 2.4's bound is nearly met.

    The search is exact but pruned: queries are scanned in a random order, block by block,
    and a candidate is dropped once some query's error exceeds αn. That loses nothing, since
    the truth has error at most αn, so the minimiser and every consistent candidate do too.
    n = 16 (4.3·10⁹ candidate-query pairs without pruning) takes about a second or two.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 1 <= n <= \
            EXHAUSTIVE_MAX_N:
        raise ExperimentError(f"exhaustive attack: n must be an integer in 1..{EXHAUSTIVE_MAX_N}"
                              f" (2^n queries × 2^n candidates), got {n!r}")
    alpha = _check_factor("alpha", alpha)
    if noise not in ("uniform", "adversarial"):
        raise ExperimentError(f"exhaustive attack: noise must be 'uniform' or 'adversarial', "
                              f"got {noise!r}")
    start = time.perf_counter()
    rng = np.random.default_rng([seed, n])
    V = _all_vectors(n)  # queries and candidates alike
    size = V.shape[0]
    s = (rng.random(n) < 0.5).astype(np.float64)
    truth = V @ s
    bound_err = alpha * n
    decoy_wrong: int | None = None
    if noise == "uniform":
        answers = truth + rng.uniform(-bound_err, bound_err, size=size)
    else:
        flips = math.floor(2 * alpha * n + 1e-9)
        ones, zeros = np.flatnonzero(s == 1), np.flatnonzero(s == 0)
        decoy = s.copy()
        decoy[rng.permutation(ones)[:flips]] = 0
        decoy[rng.permutation(zeros)[:flips]] = 1
        decoy_wrong = int(np.sum(decoy != s))
        answers = (truth + V @ decoy) / 2
    tol = 1e-9 * max(1.0, n)
    order = rng.permutation(size)
    alive = np.arange(size)
    worst = np.zeros(size)
    q_block = 1024
    c_block = max(1, 2**22 // q_block)
    for q0 in range(0, size, q_block):
        rows = order[q0:q0 + q_block]
        Q, a = V[rows], answers[rows]
        for c0 in range(0, alive.size, c_block):
            cand = alive[c0:c0 + c_block]
            err = np.abs(Q @ V[cand].T - a[:, None]).max(axis=0)
            worst[cand] = np.maximum(worst[cand], err)
        alive = alive[worst[alive] <= bound_err + tol]
    s_index = int(np.sum(s.astype(np.int64) << np.arange(n)))
    if s_index not in set(alive.tolist()):  # a bug, never a result
        raise AssertionError("the true secret was pruned: its error exceeds αn")
    best = float(worst[alive].min())
    minimisers = alive[worst[alive] <= best + tol]
    output = int(minimisers.min())
    wrong = (V[alive] != s).sum(axis=1)
    worst_wrong = int(wrong.max())
    return ExhaustiveResult(
        n=n, alpha=alpha, noise=noise, seed=seed, queries=size, error_bound=bound_err,
        bound=4 * bound_err, wrong_bits=int(np.sum(V[output] != s)),
        max_error_of_output=float(worst[output]), max_error_of_truth=float(worst[s_index]),
        minimisers=int(minimisers.size), consistent=int(alive.size),
        worst_consistent_wrong_bits=worst_wrong, decoy_wrong_bits=decoy_wrong,
        bound_holds=bool(worst_wrong <= 4 * bound_err + tol),
        seconds=time.perf_counter() - start)


# --------------------------------------------------------------------------- Diffix


@dataclass(frozen=True)
class DiffixResult:
    """The Cohen–Nissim attack on a Diffix-like interface, scored against the baseline."""

    n_ids: int
    n_queries: int
    primes: tuple[int, ...]
    offsets: tuple[float, ...]
    exponents: tuple[float, ...]
    base_sigma: float
    seed: int
    method: str
    accuracy: float
    baseline: float
    noise_std: float  # the standard deviation of each answer's sticky noise (mean over queries)
    conditions_per_query: float  # mean, as the mechanism counts them
    max_abs_error: float  # of the published answers
    matrix_matches_generator: bool  # DuckDB's matrix from the SQL == the generator's matrix
    compile_s: float
    solve_s: float
    example_sql: str

    def to_json(self) -> dict[str, Any]:
        return {"experiment": "diffix", "n_ids": self.n_ids, "n_queries": self.n_queries,
                "primes": list(self.primes), "offsets": list(self.offsets),
                "exponents": list(self.exponents), "base_sigma": self.base_sigma,
                "seed": self.seed, "method": self.method, "accuracy": self.accuracy,
                "baseline": self.baseline, "noise_std": self.noise_std,
                "conditions_per_query": self.conditions_per_query,
                "max_abs_error": self.max_abs_error,
                "matrix_matches_generator": self.matrix_matches_generator,
                "compile_s": self.compile_s, "solve_s": self.solve_s,
                "example_sql": self.example_sql}


DIFFIX_TABLE, DIFFIX_ID, DIFFIX_SECRET = "loans", "client_id", "loan_status"


def diffix_release_yaml(sql: Sequence[str], answers: np.ndarray, stds: np.ndarray,
                        n_ids: int) -> str:
    """A release file (YAML, version 1) publishing the noisy answers, noise declared."""
    doc = {
        "version": 1,
        "name": "diffix-cohen-nissim",
        "description": "Noisy answers of a Diffix-like interface to Cohen–Nissim queries.",
        "table": DIFFIX_TABLE,
        "records": int(n_ids),
        "columns": {
            DIFFIX_ID: {"type": "integer", "known": True},
            DIFFIX_SECRET: {"type": "categorical", "values": ["C", "other"]},
        },
        "statistics": [
            {"id": f"q{i + 1}", "sql": text, "value": float(v), "noise": {"gaussian": float(sd)}}
            for i, (text, v, sd) in enumerate(zip(sql, answers, stds, strict=True))
        ],
    }
    return dump_yaml(doc, width=10_000)


def diffix_attack(n_ids: int = 200, primes: Sequence[int] | None = None,
                  offsets: Sequence[float] | None = None,
                  exponents: Sequence[float] | None = None, base_sigma: float = 1.0,
                  seed: int = 0, method: str = "lp-l1",
                  time_limit: float | None = LinearOptions.time_limit) -> DiffixResult:
    """Cohen–Nissim queries against sticky noise, decoded from the published SQL alone.

    A public table of ids 1..n_ids; a secret ``loan_status`` that is 'C' with probability 1/2,
    else 'other'. The attacker's statistics are ``SELECT COUNT(*) FROM loans WHERE <Cohen–Nissim
    predicate on client_id> AND loan_status = 'C'`` (one per prime × offset × exponent, the
    defaults of :func:`statrecon.querygen.cohen_nissim`: 5 × 10 × 5 = 250). Answers come from
    :class:`~statrecon.mechanisms.DiffixLike`: noise std base_sigma·√(conditions), 2 conditions
    here, sticky per SQL text. The answers are written as a release file, parsed, and compiled
    by the linear engine, so DuckDB evaluates every public predicate to rebuild the matrix;
    then the engine decodes with ``method``.
    """
    if isinstance(n_ids, bool) or not isinstance(n_ids, int | np.integer) or n_ids < 2:
        raise ExperimentError(f"n_ids must be an integer >= 2, got {n_ids!r}")
    (chosen,) = _check_methods([method])
    p = tuple(querygen.DEFAULT_PRIMES if primes is None else primes)
    o = tuple(querygen.DEFAULT_OFFSETS if offsets is None else offsets)
    e = tuple(querygen.DEFAULT_EXPONENTS if exponents is None else exponents)
    if not (p and o and e):
        raise ExperimentError("primes, offsets and exponents must each hold at least one value")
    check_primes(p)
    check_positive("offsets", o)
    check_positive("exponents", e)
    _check_entries(len(p) * len(o) * len(e), int(n_ids), f"n_ids = {n_ids}")
    ids = np.arange(1, n_ids + 1, dtype=np.int64)
    rng = np.random.default_rng([seed, n_ids])
    secret = rng.random(n_ids) < 0.5
    truth = ["C" if b else "other" for b in secret]
    queries = querygen.cohen_nissim(ids, p, o, e, table=DIFFIX_TABLE, id_column=DIFFIX_ID,
                                    secret_condition=f"{DIFFIX_SECRET} = 'C'")
    out = DiffixLike(base_sigma, seed=seed).answer(queries.matrix, secret.astype(np.float64),
                                                   rng, queries=queries.sql)
    stds = np.broadcast_to(np.asarray(out.noise_scale, dtype=float), out.answers.shape)
    tic = time.perf_counter()
    release = parse_release(diffix_release_yaml(queries.sql, out.answers, stds, n_ids))
    public = PublicTable(source="<diffix public ids>", rows=n_ids,
                         columns={DIFFIX_ID: tuple(int(i) for i in ids)})
    system = compile_linear(release, public)
    compile_s = time.perf_counter() - tic
    same = system.matrix.shape == queries.matrix.shape and (
        system.matrix != queries.matrix).nnz == 0
    tic = time.perf_counter()
    result = reconstruct_linear(system, LinearOptions(method=chosen, seed=seed,
                                                      time_limit=time_limit))
    solve_s = time.perf_counter() - tic
    accuracy = float(np.mean([a == b for a, b in zip(result.labels, truth, strict=True)]))
    conditions = [max(count_conditions(q), 1) for q in queries.sql]
    return DiffixResult(
        n_ids=int(n_ids), n_queries=len(queries), primes=tuple(int(v) for v in p),
        offsets=tuple(float(v) for v in o), exponents=tuple(float(v) for v in e),
        base_sigma=float(base_sigma), seed=seed, method=chosen, accuracy=accuracy,
        baseline=_baseline(secret.astype(float)), noise_std=float(np.mean(stds)),
        conditions_per_query=float(np.mean(conditions)),
        max_abs_error=float(np.max(np.abs(out.answers - out.true_answers))),
        matrix_matches_generator=bool(same), compile_s=compile_s, solve_s=solve_s,
        example_sql=queries.sql[0])


# --------------------------------------------------------------------------- plots


def _data(result: Any) -> Mapping[str, Any]:
    """A result dataclass or its JSON (as written by the CLI) -> the JSON mapping."""
    if hasattr(result, "to_json"):
        data = result.to_json()
    elif isinstance(result, Mapping):
        data = result
    else:
        raise ExperimentError(f"cannot plot a {type(result).__name__}")
    return data


def _save(fig: Any, path: str | Path) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, format="png", dpi=120)
    return target


def plot_phase_transition(result: PhaseTransitionResult | Mapping[str, Any],
                          path: str | Path) -> Path:
    """Accuracy against σ/√n per method; dashed baseline; a vertical line at σ = √n."""
    data = _data(result)
    rows = data["rows"]
    xs = [r["sigma_in_sqrt_n"] for r in rows]
    fig, (ax,) = agg_figure(1, 6.4, 4.4)
    for m in data["methods"]:
        ax.plot(xs, [r["accuracy"][m] for r in rows], marker="o", label=m)
    ax.plot(xs, [r["baseline"] for r in rows], linestyle="--", color="grey",
            label="baseline (majority guess)")
    ax.axvline(1.0, color="black", linewidth=0.8, linestyle=":")
    ax.annotate("σ = √n", xy=(1.0, 0.02), xycoords=("data", "axes fraction"),
                xytext=(4, 0), textcoords="offset points", fontsize=9)
    positive = [x for x in xs if x > 0]
    if positive and min(xs) <= 0 < max(xs):
        ax.set_xscale("symlog", linthresh=min(positive))
        ax.set_xlim(left=0, right=max(xs) * 1.2)  # no negative noise levels on the axis
    elif positive and len(positive) == len(xs) and max(xs) / min(xs) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("noise σ / √n")
    ax.set_ylabel("fraction of secret bits recovered")
    ax.set_ylim(0.4, 1.02)
    ax.set_title(f"Dinur–Nissim: n = {data['n']}, k = {data['k']} random subset counts")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left")
    return _save(fig, path)


def plot_subsampling(result: SubsamplingResult | Mapping[str, Any], path: str | Path) -> Path:
    """Left: accuracy (all, sampled, unsampled) per rate. Right: answer error vs √(n ln k)."""
    data = _data(result)
    rows = data["rows"]
    rates = [r["rate"] for r in rows]
    fig, (left, right) = agg_figure(2, 6.4, 4.4)

    def series(key: str) -> list[float]:
        return [np.nan if r[key] is None else r[key] for r in rows]

    left.plot(rates, series("accuracy"), marker="o", label="all records")
    left.plot(rates, series("accuracy_sampled"), marker="s", label="sampled records")
    left.plot(rates, series("accuracy_unsampled"), marker="^", label="unsampled records")
    left.plot(rates, series("ceiling"), linestyle=":", color="black",
              label="ceiling (sampled right, rest guessed)")
    left.axhline(data["baseline"], linestyle="--", color="grey", label="baseline")
    left.set_xscale("log")
    left.set_xlabel("sampling rate")
    left.set_ylabel(f"fraction of bits recovered ({data['method']})")
    left.set_ylim(0.3, 1.02)
    left.grid(alpha=0.3)
    left.legend(loc="lower right", fontsize=8)
    right.plot(rates, series("max_abs_error"), marker="o", label="max |answer − truth|")
    right.plot(rates, series("mean_abs_error"), marker="s", label="mean |answer − truth|")
    right.axhline(data["reference_error"], linestyle="--", color="grey", label="√(n ln k)")
    right.axhline(math.sqrt(data["n"]), linestyle=":", color="black", label="√n")
    right.set_xscale("log")
    right.set_xlabel("sampling rate")
    right.set_ylabel("answer error")
    right.grid(alpha=0.3)
    right.legend(fontsize=8)
    fig.suptitle(f"Subsampling: n = {data['n']}, k = {data['k']}")
    return _save(fig, path)


def plot_runtime(result: RuntimeResult | Mapping[str, Any], path: str | Path) -> Path:
    """Seconds per method against n (log-log)."""
    data = _data(result)
    rows = data["rows"]
    ns = [r["n"] for r in rows]
    fig, (ax,) = agg_figure(1, 6.4, 4.4)
    for m in data["methods"]:
        ax.plot(ns, [max(r["seconds"][m], 1e-4) for r in rows], marker="o", label=m)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("records n (k = c·n queries)")
    ax.set_ylabel("seconds")
    ax.set_title(f"Run time, c = {data['c']:g}, σ = {data['sigma_in_sqrt_n']:g}·√n")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    return _save(fig, path)
