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

from statrecon.engines.linear.determine import BlockProof, Certificate, Determination, determine
from statrecon.engines.linear.estimators import ESTIMATORS, Estimator, estimators_help
from statrecon.engines.linear.problem import Estimate, Problem, SolverIncomplete, check_system
from statrecon.engines.linear.reconstruct import (
    METHODS,
    LinearOptions,
    LinearResult,
    RecordBound,
    reconstruct_linear,
    round_estimate,
)
from statrecon.engines.linear.route import compile_system, plan, secret

__all__ = [
    "ESTIMATORS",
    "METHODS",
    "BlockProof",
    "Certificate",
    "Determination",
    "Estimate",
    "Estimator",
    "LinearOptions",
    "LinearResult",
    "Problem",
    "RecordBound",
    "SolverIncomplete",
    "check_system",
    "compile_system",
    "determine",
    "estimators_help",
    "plan",
    "reconstruct_linear",
    "round_estimate",
    "secret",
]
