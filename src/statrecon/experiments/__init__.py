"""Experiments: attacks run end to end on simulated data, with a baseline next to every score.

Functions here are pure (no printing, no files except the ``plot_*`` helpers, which write the
one image they are asked for) and return dataclasses with a ``to_json()`` of stable keys.
"""

from __future__ import annotations

from statrecon.experiments.dinur_nissim import (
    DiffixResult,
    ExhaustiveResult,
    ExperimentError,
    PhaseTransitionResult,
    RuntimeResult,
    SubsamplingResult,
    diffix_attack,
    exhaustive_attack,
    phase_transition,
    plot_phase_transition,
    plot_runtime,
    plot_subsampling,
    runtime_scaling,
    subsampling_defence,
)

__all__ = [
    "DiffixResult",
    "ExhaustiveResult",
    "ExperimentError",
    "PhaseTransitionResult",
    "RuntimeResult",
    "SubsamplingResult",
    "diffix_attack",
    "exhaustive_attack",
    "phase_transition",
    "plot_phase_transition",
    "plot_runtime",
    "plot_subsampling",
    "runtime_scaling",
    "subsampling_defence",
]
