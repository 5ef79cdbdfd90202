"""Exact reconstruction over the CP-SAT record model: ``record_model`` (the release as one
CP-SAT model of its records; noisy answers left out, read as ± K sd bounds, or weighed by
likelihood; its size estimated before it is built) and ``reconstruct`` (find, enumerate,
certain facts, explain infeasibility)."""

from statrecon.engines.exact.reconstruct import (
    DEFAULT_TIME_LIMIT,
    ExactOptions,
    ExactProgress,
    enumerate_datasets,
    reconstruct_exact,
)
from statrecon.engines.exact.record_model import (
    DEFAULT_MAX_MODEL_SIZE,
    check_model_size,
    model_size,
)

__all__ = ["DEFAULT_MAX_MODEL_SIZE", "DEFAULT_TIME_LIMIT", "ExactOptions", "ExactProgress",
           "check_model_size", "enumerate_datasets", "model_size", "reconstruct_exact"]
