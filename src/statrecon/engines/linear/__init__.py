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
no I/O), so experiments and benchmarks call them directly. Names are exported lazily: the CLI
reads the estimator registry at start-up, and an eager re-export would load sqlglot, the
release model and FLINT for ``statrecon --help``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# the function shares its module's name: bound here, or the first import of the module (by
# reconstruct, say) would leave the module, not the function, as this package's `determine`
from statrecon.engines.linear.determine import determine

if TYPE_CHECKING:
    from statrecon.engines.linear.determine import BlockProof, Certificate, Determination
    from statrecon.engines.linear.estimators import ESTIMATORS, Estimator, estimators_help
    from statrecon.engines.linear.problem import (
        Estimate,
        Problem,
        SolverIncomplete,
        check_system,
    )
    from statrecon.engines.linear.reconstruct import (
        METHODS,
        LinearOptions,
        LinearResult,
        RecordBound,
        reconstruct_linear,
        round_estimate,
    )
    from statrecon.engines.linear.route import compile_system, plan, secret

_WHERE = {
    **dict.fromkeys(("BlockProof", "Certificate", "Determination"),
                    "statrecon.engines.linear.determine"),
    **dict.fromkeys(("ESTIMATORS", "Estimator", "estimators_help"),
                    "statrecon.engines.linear.estimators"),
    **dict.fromkeys(("Estimate", "Problem", "SolverIncomplete", "check_system"),
                    "statrecon.engines.linear.problem"),
    **dict.fromkeys(("METHODS", "LinearOptions", "LinearResult", "RecordBound",
                     "reconstruct_linear", "round_estimate"),
                    "statrecon.engines.linear.reconstruct"),
    **dict.fromkeys(("compile_system", "plan", "secret"), "statrecon.engines.linear.route"),
}
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


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'statrecon.engines.linear' has no attribute {name!r}")
