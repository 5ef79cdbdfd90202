"""One CP-SAT solver factory, one deadline clock, one reading of solver statuses.

Every engine that calls CP-SAT (exact, census, claims, the paper's formulation) gets its
solver here (``Solver``), so all of them stop on Ctrl-C/SIGTERM (``statrecon.interrupt``), measure
time limits on the same monotonic clock, and read statuses the same way: a proof is an
INFEASIBLE (or OPTIMAL) status, never a time-out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from ortools.sat.python import cp_model

from statrecon import interrupt

Verdict = Literal["proven", "refuted", "unknown"]


class Solver(cp_model.CpSolver):
    """A CpSolver that Ctrl-C and SIGTERM stop at once (see ``statrecon.interrupt``)."""

    def __init__(self) -> None:
        super().__init__()
        if interrupt.installed():
            self.parameters.catch_sigint_signal = False

    def solve(self, model: cp_model.CpModel,
              solution_callback: cp_model.CpSolverSolutionCallback | None = None) -> Any:
        with interrupt.stoppable(self):
            return super().solve(model, solution_callback)


class OutOfTime(Exception):
    """The deadline passed (while a model was being built, or between solves)."""


@dataclass(frozen=True)
class Deadline:
    """A moment on ``time.monotonic()``'s clock (``end``), or none (``end is None``).

    >>> Deadline.after(None).left() is None
    True
    >>> Deadline(time.monotonic() - 1).expired
    True
    """

    end: float | None = None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        return cls(None if seconds is None else time.monotonic() + seconds)

    def left(self) -> float | None:
        """Seconds left (never negative), or None without a deadline."""
        return None if self.end is None else max(0.0, self.end - time.monotonic())

    @property
    def expired(self) -> bool:
        left = self.left()
        return left is not None and left <= 0.0

    def check(self) -> None:
        if self.expired:
            raise OutOfTime


def new_solver(*, left: float | None = None, workers: int = 1, seed: int = 0,
               floor: float = 0.001) -> Solver:
    """A CP-SAT solver that stops on Ctrl-C/SIGTERM, with ``workers`` search workers, a fixed
    seed and at most ``left`` seconds (at least ``floor``: CP-SAT refuses a zero limit)."""
    solver = Solver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if left is not None:
        solver.parameters.max_time_in_seconds = max(left, floor)
    return solver


def found(status: cp_model.CpSolverStatus | int) -> bool:
    """The solver returned a solution (OPTIMAL or FEASIBLE)."""
    return status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def refutation(status: cp_model.CpSolverStatus | int) -> Verdict:
    """The verdict on a fact from the status of its *refutation* model (the fact negated):
    INFEASIBLE proves the fact, a solution refutes it, anything else (a time limit, an
    interrupt) decides nothing."""
    if status == cp_model.INFEASIBLE:
        return "proven"
    return "refuted" if found(status) else "unknown"
