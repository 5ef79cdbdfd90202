"""How hard the exact engine looks (``ExactOptions``) and what it says while it looks
(``ExactProgress``): no solver here, so the linear route and the CLI make the options without
loading OR-Tools."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from statrecon.engines.exact.record_model import (
    DEFAULT_MAX_MODEL_SIZE,
    NOISE_MODES,
    NoiseMode,
    NoisePolicy,
)
from statrecon.errors import check_choice, check_count, check_time_limit

DEFAULT_TIME_LIMIT = 300.0  # seconds; past it the answer is "unknown", never a guess

Phase = Literal["building", "enumerating", "proving rows", "proving values", "proving cells",
                "explaining", "optimising"]


@dataclass(frozen=True)
class ExactProgress:
    """Where a long exact search stands, for a progress display (the engine prints nothing).

    ``phase``: building the model, enumerating datasets (``found`` so far), proving certain
    rows/values/cells (``done`` of ``total``), explaining an infeasibility, or optimising the
    likelihood (``found`` improving datasets). ``left``: seconds before the time limit (None:
    no limit)."""

    phase: Phase
    done: int = 0
    total: int | None = None
    found: int = 0
    left: float | None = None


@dataclass(frozen=True)
class ExactOptions:
    """How hard to look.

    ``limit`` caps the enumeration; ``time_limit`` (seconds) caps the whole call (by default
    ``DEFAULT_TIME_LIMIT``: no search runs unbounded unless asked with ``None``);
    ``keep_solutions`` caps how many enumerated datasets are returned (None: all).
    ``symmetry_breaking`` orders interchangeable rows so each dataset is found once
    (switch off only to measure what it saves). ``max_model_size`` refuses, before building,
    a model estimated over that many terms (None: no limit; see ``check_model_size``).
    ``noise_mode`` says what noisy answers do (``ignore``; ``bounds``: value ± ``noise_k``
    standard deviations, claims conditional on that event; ``ml``: a most likely dataset).
    ``on_progress`` is called with an ``ExactProgress`` as the search goes on (from the
    solver's thread too: keep it quick).

    Like every ``*Options``: ``time_limit`` None means no limit, the field's default
    (``ExactOptions.time_limit``) is the engine's; a value out of range raises
    ``OptionError`` when the options are made.
    """

    limit: int = 10_000
    time_limit: float | None = DEFAULT_TIME_LIMIT
    keep_solutions: int | None = 10
    symmetry_breaking: bool = True
    workers: int = 1
    seed: int = 0
    max_model_size: int | None = DEFAULT_MAX_MODEL_SIZE
    noise_mode: NoiseMode = "ignore"
    noise_k: float | None = None
    on_progress: Callable[[ExactProgress], None] | None = None

    def __post_init__(self) -> None:
        check_count(self, "limit")
        check_time_limit(self)
        check_count(self, "keep_solutions", 0, optional=True)
        check_count(self, "workers")
        check_count(self, "seed", 0)
        check_count(self, "max_model_size", optional=True)
        check_choice(self, "noise_mode", NOISE_MODES)
        NoisePolicy(self.noise_mode, self.noise_k)  # bounds need a K > 0: it checks that

    @property
    def noise(self) -> NoisePolicy:
        return NoisePolicy(self.noise_mode, self.noise_k)
