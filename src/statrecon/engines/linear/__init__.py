"""Linear reconstruction: one secret column of known rows from statistics linear in it.

Two kinds of answer, kept apart:

* ``determine`` (:mod:`.determine`) proves, with exact rational arithmetic (FLINT), which
  unknowns every solution of the exact statistics shares, and gives for each the combination of
  statistics that yields it (a difference attack). Nothing there is floating point.
* The estimators (:mod:`.estimators`: ``ls``, ``lp-l1``, ``lp-linf``, ``ip``, ``kaczmarz``,
  ``sgd``) return the most plausible secret column under noise; they are estimates, never
  proofs, except ``ip`` whose optimum is proven by HiGHS (status OPTIMAL) or reported
  ``unknown``.

:func:`reconstruct_linear` runs one method on a compiled system (:mod:`.model`) and adds the
proven values. The numeric functions (:mod:`.solvers`) take a matrix and answers (no release,
no I/O), so experiments and benchmarks call them directly. Importing this package loads no
solver: the CLI reads the estimator registry at start-up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from statrecon.engines.linear.determine import Certificate, Determination, determine
from statrecon.engines.linear.estimators import (
    ESTIMATORS,
    Estimator,
    clipped_least_squares,
    estimators_help,
)
from statrecon.engines.linear.problem import (
    Estimate,
    Problem,
    SolverIncomplete,
    check_system,
)
from statrecon.release.statistic import number_out
from statrecon.result import Route, plain

if TYPE_CHECKING:
    from statrecon.engines.linear.model import LinearSystem

__all__ = [
    "ESTIMATORS",
    "METHODS",
    "Certificate",
    "Determination",
    "Estimate",
    "Estimator",
    "LinearOptions",
    "LinearResult",
    "Problem",
    "SolverIncomplete",
    "check_system",
    "determine",
    "estimators_help",
    "reconstruct_linear",
    "round_estimate",
]

METHODS = ("determine", *ESTIMATORS)


@dataclass(frozen=True)
class LinearOptions:
    method: str = "ls"
    time_limit: float | None = 60.0
    seed: int = 0
    epochs: float = 20.0
    # exact determinability is skipped (and nothing claimed) above these sizes: a dense
    # full-rank system's certificates are huge rationals that nobody could read anyway
    determine_max_rank: int = 600
    determine_max_entries: int = 5_000_000
    # statistics x public rows of the query matrix, refused before any predicate is evaluated
    # (None: no limit); 400 million booleans is about 0.4 GiB, and a dense float copy 3.2 GiB
    max_cells: int | None = 400_000_000


# determined/partial/infeasible: exact arithmetic; optimal: HiGHS proved the ip optimum;
# estimated: no proof; unknown: a limit cut the proof short
LinearStatus = Literal["determined", "partial", "estimated", "optimal", "infeasible", "unknown"]


@dataclass(frozen=True)
class LinearResult:
    """An estimate of the secret column plus the records proven exactly (``determined``)."""

    status: LinearStatus
    method: str
    estimate: np.ndarray  # raw (real-valued) estimate per record
    labels: list[Any]  # estimate in the secret column's own values
    determination: Determination | None
    residual: float
    system: LinearSystem
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    route: Route | None = None  # set by ``statrecon.reconstruct``: which engine and why

    def to_json(self) -> dict[str, Any]:
        """The stable JSON contract of ``statrecon reconstruct --json`` on the linear engine:
        ``{"status", "method", "estimate", "determined", "residual", "elapsed_s", ...}``."""
        system = self.system
        public = system.public
        names = list(public.columns) if public is not None else []
        estimate = []
        for i, label in enumerate(self.labels):
            row = {name: plain(public.columns[name][i]) for name in names} if public else {}
            row[system.secret.name] = label
            estimate.append(row)
        det = self.determination
        ids = system.stat_ids
        determined = [] if det is None else [
            {"index": c.index, "value": self._proven_value(c.value),
             "certificate": [{"statistic": ids[i], "coefficient": number_out(co)}
                             for i, co in c.terms]}
            for c in det.determined
        ]
        out: dict[str, Any] = {
            "status": self.status,
            "method": self.method,
            "secret": system.secret.name,
            "estimate": estimate,
            "determined": determined,
            "determined_checked": det is not None,
            "rank": det.rank if det is not None else None,
            "residual": round(self.residual, 9),
            "records": system.n,
            "statistics": system.k,
            "ignored_statistics": list(system.ignored),
            "route": None if self.route is None else self.route.to_json(),
            "elapsed_s": round(self.elapsed_s, 4),
        }
        if det is not None and not det.consistent:
            out["conflict"] = [ids[i] for i in det.conflict]
        if self.notes:
            out["notes"] = self.notes
        return out

    def _proven_value(self, value: Fraction) -> Any:
        """A proven value in the column's own terms (indicator -> category)."""
        if self.system.secret.kind == "indicator" and value in (0, 1):
            return self.system.secret.label(float(value))
        return number_out(value)


def round_estimate(x: np.ndarray, system: LinearSystem) -> np.ndarray:
    """Rounding for binary/integer secrets, clipped to each record's bounds."""
    if system.secret.kind == "real":
        return np.clip(x, system.lower, system.upper)
    return np.clip(np.round(x), np.ceil(system.lower - 1e-9), np.floor(system.upper + 1e-9))


def reconstruct_linear(system: LinearSystem, options: LinearOptions) -> LinearResult:
    """Run one method on a compiled system; determinability is added when affordable."""
    start = time.perf_counter()
    F, a = system.matrix, system.answers
    lo, hi = system.lower, system.upper
    notes: list[str] = []
    weights = _weights(system)
    det: Determination | None = None
    exact_rows = system.exact_rows()
    if exact_rows.size and min(exact_rows.size, system.n) <= options.determine_max_rank and (
            exact_rows.size * system.n <= options.determine_max_entries):
        det = determine(F[exact_rows], [system.exact_answers[i] for i in exact_rows])
        det = _reindex(det, exact_rows)
    elif exact_rows.size:
        notes.append("exact determinability skipped (system too large); none claimed")
    method = options.method
    status: LinearStatus = "estimated"
    # Least squares uses the box only when the user gave bounds as background knowledge;
    # otherwise it is the classic minimum-norm estimate, clipped to the domain afterwards.
    problem = Problem(F, a, lo, hi, user_bounds=system.user_bounds, weights=weights,
                      caps=np.where(np.isfinite(system.errors), system.errors, np.inf),
                      time_limit=options.time_limit, epochs=options.epochs,
                      rng=np.random.default_rng(options.seed), kind=system.secret.kind)
    if method == "determine":
        x = ESTIMATORS["ls"].estimate(problem).x
        if det is None:
            status = "unknown"
        elif not det.consistent:
            status = "infeasible"
        else:  # "partial" claims nothing about the rest: bounds may still pin them
            status = "determined" if len(det.determined) == system.n else "partial"
    elif method in ESTIMATORS:
        try:
            estimate = ESTIMATORS[method].estimate(problem)
            x, status = estimate.x, estimate.status
            notes.extend(estimate.notes)
        except SolverIncomplete as e:
            status = "unknown"
            x = clipped_least_squares(problem)
            notes.append(f"{method}: {e} (time limit?); the estimate is least squares")
    else:
        raise ValueError(f"unknown method {method!r} (choose from "
                         f"{', '.join(('determine', *ESTIMATORS))})")
    if det is not None and det.consistent:
        det = _check_domain(det, system)
    if det is not None and not det.consistent:
        status = "infeasible"  # whatever the method: the exact statistics cannot all hold
    if det is not None and det.consistent:
        for c in det.determined:  # a proven value beats any estimate
            x[c.index] = float(c.value)
    rounded = round_estimate(x, system)
    residual = float(np.linalg.norm(F @ rounded - a)) if system.k else 0.0
    labels = [system.secret.label(v) for v in rounded]
    return LinearResult(status, method, x, labels, det, residual, system,
                        time.perf_counter() - start, notes)


def _check_domain(det: Determination, system: LinearSystem) -> Determination:
    """A proven value outside the record's bounds (or a fraction for a count or an integer
    column) means no dataset fits: the release is inconsistent, and the certificate's
    statistics are the conflict."""
    discrete = system.secret.kind != "real"
    for c in det.determined:
        lo, hi = system.lower[c.index], system.upper[c.index]
        outside = (np.isfinite(lo) and c.value < Fraction(float(lo))) or (
            np.isfinite(hi) and c.value > Fraction(float(hi)))
        if outside or (discrete and c.value.denominator != 1):
            return Determination(False, det.rank, (), tuple(sorted(i for i, _ in c.terms)),
                                 det.elapsed_s)
    return det


def _weights(system: LinearSystem) -> np.ndarray | None:
    """Exact statistics weigh most; bounded and noisy ones by the inverse of their scale."""
    if all(kind == "exact" for kind in system.kinds):
        return None
    scales = np.where(system.scales > 0, system.scales, 0.0)
    positive = scales[scales > 0]
    floor = positive.min() / 10 if positive.size else 1.0
    return np.asarray(1.0 / np.maximum(scales, floor) ** 2)


def _reindex(det: Determination, rows: np.ndarray) -> Determination:
    certs = tuple(Certificate(c.index, c.value, tuple((int(rows[i]), v) for i, v in c.terms))
                  for c in det.determined)
    return Determination(det.consistent, det.rank, certs,
                         tuple(int(rows[i]) for i in det.conflict), det.elapsed_s)
