"""Secondary cell suppression: ``protect`` (:mod:`.entry`) hides further cells of an
``IntervalProblem`` until every primary cell is protected under the integer audit. ``run``
holds what every method shares (options, result, the state of one run); the methods are
``fast`` (Gaussian pass and repair loop, :mod:`.fast` with :mod:`.portfolio`) and ``exact``
(a master problem over lazy cuts, :mod:`.exact`), registered by name in ``entry.REGISTRY``.
Beside them, tau-Argus's other ``<SUPPRESS>`` method, which publishes every cell:
controlled rounding (``controlled_round``, :mod:`.rounding`).
"""

from statrecon.engines.suppression.entry import REGISTRY, prepare_run, protect
from statrecon.engines.suppression.rounding import (
    ControlledRounding,
    RoundingProblem,
    RoundingStatus,
    controlled_round,
)
from statrecon.engines.suppression.run import (
    METHODS,
    Method,
    ProtectOptions,
    ProtectResult,
    ProtectStatus,
)

__all__ = ["METHODS", "REGISTRY", "ControlledRounding", "Method", "ProtectOptions",
           "ProtectResult", "ProtectStatus", "RoundingProblem", "RoundingStatus",
           "controlled_round", "prepare_run", "protect"]
