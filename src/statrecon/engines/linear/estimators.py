"""The estimators of the linear engine, by name: the most plausible secret column under noise.

An estimator is one small frozen dataclass with a ``name``, a one-line ``summary`` (the CLI
help is generated from them) and one verb, ``estimate(problem) -> Estimate``. A new method is
one class added to ``ESTIMATORS``; the engine, the API, the CLI and the Dinur–Nissim
experiments pick it up from there. Every estimator keeps ``problem.time_limit``: an LP that
stops short of its optimum raises :class:`~statrecon.engines.linear.problem.SolverIncomplete`
(the engine then falls back to least squares and says so); the integer programme and the
iterative methods return status ``unknown`` with the point reached and a note. The solvers
live in :mod:`.solvers`, imported only when an estimate is made, so the CLI can list the
estimators without loading scipy.

>>> import numpy as np
>>> F = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
>>> problem = Problem(F, F @ np.array([1.0, 0.0, 1.0]), np.zeros(3), np.ones(3))
>>> list(ESTIMATORS)
['ls', 'lp-l1', 'lp-linf', 'ip', 'kaczmarz', 'sgd']
>>> np.round(ESTIMATORS["ls"].estimate(problem).x).astype(int).tolist()
[1, 0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from statrecon.engines.linear.problem import Estimate, Problem, UnsuitableMethod

__all__ = ["ESTIMATORS", "Estimator", "clipped_least_squares", "estimators_help"]


class Estimator(Protocol):
    """Estimates the secret column of a linear system."""

    name: ClassVar[str]
    summary: ClassVar[str]
    # solves with HiGHS, so under a time limit in a worker process (started ahead by the API)
    highs: ClassVar[bool]

    def estimate(self, problem: Problem) -> Estimate: ...


def clipped_least_squares(problem: Problem) -> np.ndarray:
    """Unweighted minimum-norm least squares clipped to the box: the estimate given when a
    solver finds no point of its own."""
    # lazy: the CLI builds its --method help from this registry without loading scipy
    from statrecon.engines.linear.solvers import solve_ls

    return np.clip(solve_ls(problem.F, problem.a), problem.lo, problem.hi)


@dataclass(frozen=True)
class LeastSquares:
    """Least squares; in the box only when the box is background knowledge (``--bounds``)."""

    name: ClassVar[str] = "ls"
    highs: ClassVar[bool] = False
    summary: ClassVar[str] = "least squares, in the box only with --bounds"

    def estimate(self, problem: Problem) -> Estimate:
        # lazy: the CLI builds its --method help from this registry without loading scipy
        from statrecon.engines.linear.solvers import solve_ls_within

        known = problem.user_bounds
        x, finished = solve_ls_within(problem.F, problem.a, problem.lo if known else None,
                                      problem.hi if known else None, problem.weights,
                                      problem.time_limit)
        if finished:
            return Estimate(x)
        return Estimate(x, "unknown", (f"ls: stopped by the time limit "
                                       f"({problem.time_limit:g} s); the estimate is the point "
                                       "reached, not the centre of the least-squares optima",))


@dataclass(frozen=True)
class LpL1:
    """The smallest total (weighted) error in the box, by linear programming."""

    name: ClassVar[str] = "lp-l1"
    highs: ClassVar[bool] = True
    summary: ClassVar[str] = "LP decoding, least total error"

    def estimate(self, problem: Problem) -> Estimate:
        # lazy: the CLI builds its --method help from this registry without loading scipy
        from statrecon.engines.linear.solvers import solve_lp_l1

        return Estimate(solve_lp_l1(problem.F, problem.a, problem.lo, problem.hi,
                                    problem.weights, problem.time_limit))


@dataclass(frozen=True)
class LpLinf:
    """The smallest largest error in the box (Dinur–Nissim), by linear programming."""

    name: ClassVar[str] = "lp-linf"
    highs: ClassVar[bool] = True
    summary: ClassVar[str] = "LP decoding, least largest error"

    def estimate(self, problem: Problem) -> Estimate:
        # lazy: the CLI builds its --method help from this registry without loading scipy
        from statrecon.engines.linear.solvers import solve_lp_linf

        return Estimate(solve_lp_linf(problem.F, problem.a, problem.lo, problem.hi,
                                      problem.time_limit))


@dataclass(frozen=True)
class IntegerProgram:
    """Exact integer decoding; its status is HiGHS's (``optimal`` is proven). Without an
    integer point the estimate is clipped least squares, and a note says so."""

    name: ClassVar[str] = "ip"
    highs: ClassVar[bool] = True
    summary: ClassVar[str] = "integer decoding, optimum proven by HiGHS"

    def estimate(self, problem: Problem) -> Estimate:
        if problem.kind == "real":
            raise UnsuitableMethod("ip decodes integer or categorical secrets")
        # lazy: the CLI builds its --method help from this registry without loading scipy
        from statrecon.engines.linear.solvers import solve_ip

        x, status = solve_ip(problem.F, problem.a, problem.lo, problem.hi, problem.caps,
                             problem.time_limit, problem.weights)
        if np.isnan(x).any():
            return Estimate(clipped_least_squares(problem), status,
                            (f"ip: no integer point ({status}); the estimate is least squares",))
        return Estimate(x, status)


@dataclass(frozen=True)
class Kaczmarz:
    """Randomized block Kaczmarz in the box: reads statistics as a stream."""

    name: ClassVar[str] = "kaczmarz"
    highs: ClassVar[bool] = False
    summary: ClassVar[str] = "randomized Kaczmarz projections, statistics as a stream"

    def estimate(self, problem: Problem) -> Estimate:
        # lazy: the CLI builds its --method help from this registry without loading scipy
        from statrecon.engines.linear.solvers import kaczmarz_within

        x, done = kaczmarz_within(problem.F, problem.a, problem.lo, problem.hi,
                                  epochs=problem.epochs, rng=problem.rng,
                                  time_limit=problem.time_limit)
        return _iterated(self.name, x, done, problem)


@dataclass(frozen=True)
class Sgd:
    """Adam on the squared residual, ten passes per epoch of the other iterative methods."""

    name: ClassVar[str] = "sgd"
    highs: ClassVar[bool] = False
    summary: ClassVar[str] = "Adam gradient descent in the box"

    def estimate(self, problem: Problem) -> Estimate:
        # lazy: the CLI builds its --method help from this registry without loading scipy
        from statrecon.engines.linear.solvers import sgd_within

        if not (np.isfinite(problem.lo).all() and np.isfinite(problem.hi).all()):
            raise UnsuitableMethod("sgd needs finite lower and upper bounds for every record")
        x, done = sgd_within(problem.F, problem.a, problem.lo, problem.hi,
                             epochs=int(problem.epochs * 10), rng=problem.rng,
                             time_limit=problem.time_limit)
        return _iterated(self.name, x, done, problem)


def _iterated(name: str, x: np.ndarray, done: float, problem: Problem) -> Estimate:
    """An iterative method's estimate; cut short by the time limit it is ``unknown``, with the
    share of its passes it made."""
    if done >= 1.0:
        return Estimate(x)
    return Estimate(x, "unknown", (f"{name}: stopped by the time limit "
                                   f"({problem.time_limit:g} s) after {done:.0%} of its passes; "
                                   "the estimate is the point reached",))


ESTIMATORS: dict[str, Estimator] = {e.name: e for e in (
    LeastSquares(), LpL1(), LpLinf(), IntegerProgram(), Kaczmarz(), Sgd())}


def estimators_help() -> str:
    """One line naming every estimator with its summary, for the CLI's --method help."""
    return "; ".join(f"{e.name}: {e.summary}" for e in ESTIMATORS.values())
