"""The options of Generate-then-Verify (:class:`ClaimsOptions`) and a block's default time
limit. They check a formulation's name against the registry (``formulations``), so they sit
above it: the formulations load ``model`` when they run, and neither imports this module but
for annotations (a runtime import back would close a circle).
"""

from __future__ import annotations

from dataclasses import dataclass

from statrecon.engines.claims.formulations import FORMULATIONS
from statrecon.errors import check_choice, check_count, check_time_limit

# Seconds per block by default (generate and verify together): the default formulation's
# slowest block of the benchmark takes about 14 s, so only a runaway search meets it; None
# (``--time-limit inf``) lifts it.
DEFAULT_BLOCK_TIME_LIMIT = 300.0


@dataclass(frozen=True)
class ClaimsOptions:
    """``formulation``: a name in ``FORMULATIONS`` (read when the options are made, so a
    registered one counts). ``time_limit``, like in every ``*Options``: seconds (per block),
    None for no limit, the field's default (``ClaimsOptions.time_limit``) the engine's. A value
    out of range raises ``OptionError`` when the options are made."""

    formulation: str = "fast"  # "fast" (default) or "paper"
    k_solutions: int = 100  # K consistent blocks to generate candidates from (at most)
    patience: int | None = 10  # stop generating after this many blocks that change nothing
    time_limit: float | None = DEFAULT_BLOCK_TIME_LIMIT  # seconds for the whole block
    seed: int = 0
    negative: bool = True  # also prove "at least one unit matches" for undetermined claims
    # Work for them per block, in CP-SAT deterministic seconds (best effort): unlike wall
    # seconds, the same input proves the same negative claims however loaded the machine is.
    negative_work_limit: float | None = 10.0
    workers: int = 1  # CP-SAT search workers per solve

    def __post_init__(self) -> None:
        check_choice(self, "formulation", FORMULATIONS)
        check_count(self, "k_solutions")
        check_count(self, "patience", optional=True)
        check_time_limit(self)
        check_count(self, "seed", 0)
        check_time_limit(self, "negative_work_limit")
        check_count(self, "workers")
