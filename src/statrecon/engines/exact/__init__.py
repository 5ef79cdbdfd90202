"""Exact reconstruction over the CP-SAT record model: ``record_model`` (the release as one
CP-SAT model of its records; noisy answers left out, read as ± K sd bounds, or weighed by
likelihood; its size estimated before it is built), ``options`` (``ExactOptions``,
``ExactProgress``) and ``reconstruct`` (find, enumerate, certain facts, explain infeasibility).
Names are exported lazily: the CLI makes ``ExactOptions`` for every ``reconstruct`` and the
linear route checks the exact route's size, and neither loads OR-Tools.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statrecon.engines.exact.options import DEFAULT_TIME_LIMIT, ExactOptions, ExactProgress
    from statrecon.engines.exact.reconstruct import enumerate_datasets, reconstruct_exact
    from statrecon.engines.exact.record_model import (
        DEFAULT_MAX_MODEL_SIZE,
        check_model_size,
        model_size,
    )

_WHERE = {
    **dict.fromkeys(("DEFAULT_TIME_LIMIT", "ExactOptions", "ExactProgress"),
                    "statrecon.engines.exact.options"),
    **dict.fromkeys(("enumerate_datasets", "reconstruct_exact"),
                    "statrecon.engines.exact.reconstruct"),
    **dict.fromkeys(("DEFAULT_MAX_MODEL_SIZE", "check_model_size", "model_size"),
                    "statrecon.engines.exact.record_model"),
}
__all__ = ["DEFAULT_MAX_MODEL_SIZE", "DEFAULT_TIME_LIMIT", "ExactOptions", "ExactProgress",
           "check_model_size", "enumerate_datasets", "model_size", "reconstruct_exact"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'statrecon.engines.exact' has no attribute {name!r}")
