"""What every linear method reads and returns: a query matrix, answers and a box in, an
estimate out. Kept apart from the solvers (and from scipy) so that the estimator registry and
the exact determinability can check a system without loading any solver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

# HiGHS stopped short, or its worker process did not run: the errors of the worker that holds
# a solve to its limit, re-exported here (no scipy: the CLI loads this module at start-up)
from statrecon.engines.solvers.worker import SolverIncomplete as SolverIncomplete
from statrecon.engines.solvers.worker import WorkerUnavailable as WorkerUnavailable
from statrecon.errors import StatreconError

if TYPE_CHECKING:
    from statrecon.engines.linear.model import SecretKind

Matrix = Any  # numpy array or scipy.sparse matrix


def check_system(F: Matrix, a: Any, lower: Any = None, upper: Any = None) -> None:
    """One answer per statistic and one bound per record, or a clear error."""
    k, n = F.shape
    if np.ndim(a) != 1 or len(a) != k:
        raise ValueError(f"{np.size(a)} answers for {k} statistics (one answer per row of the "
                         "query matrix)")
    for name, b in (("lower", lower), ("upper", upper)):
        if b is not None and (np.ndim(b) != 1 or len(b) != n):
            raise ValueError(f"{np.size(b)} {name} bounds for {n} records")


class UnsuitableMethod(StatreconError):
    """The chosen method cannot decode this release (ip on a real secret, sgd without finite
    bounds): the user's choice, so a one-line error, unlike a bug in the engine."""


@dataclass(frozen=True)
class Problem:
    """``F x ≈ a`` with ``lo <= x <= hi``, plus what each method may use of the context.

    ``user_bounds``: the box is background knowledge (``--bounds``), so least squares keeps to
    it; otherwise the box is only the secret's domain and least squares is the classic
    minimum-norm estimate. ``weights`` per statistic (None: all equal), ``caps`` the largest
    error each statistic may have (None: any), ``epochs`` passes of the iterative methods,
    ``kind`` the secret column's kind (``real`` refuses integer decoding)."""

    F: Matrix
    a: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    user_bounds: bool = False
    weights: np.ndarray | None = None
    caps: np.ndarray | None = None
    time_limit: float | None = None
    epochs: float = 20.0
    rng: np.random.Generator | None = None
    kind: SecretKind = "indicator"


# optimal: HiGHS proved the integer optimum; estimated: no proof; infeasible: HiGHS proved
# no point fits; unknown: a limit stopped it
EstimateStatus = Literal["estimated", "optimal", "infeasible", "unknown"]
HIGHS_STATUS: dict[str, EstimateStatus] = {"optimal": "optimal", "infeasible": "infeasible"}


@dataclass(frozen=True)
class Estimate:
    """A real-valued estimate per record; ``status`` as the engine reports it."""

    x: np.ndarray
    status: EstimateStatus = "estimated"
    notes: tuple[str, ...] = ()
