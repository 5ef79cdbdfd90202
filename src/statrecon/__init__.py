"""statrecon: what do these published numbers reveal about individuals?

The public names are imported lazily, so that ``statrecon --help`` and error paths start fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statrecon.api import reconstruct
    from statrecon.engines.census import BlockResult, CensusOptions, TractResult
    from statrecon.engines.claims.model import BlockClaims
    from statrecon.engines.claims.options import ClaimsOptions
    from statrecon.engines.exact import ExactOptions
    from statrecon.engines.linear import LinearOptions, LinearResult
    from statrecon.errors import ReleaseError, StatreconError
    from statrecon.release import load_release, parse_release
    from statrecon.result import CertainRow, ReconstructionResult

_WHERE = {
    "reconstruct": "statrecon.api",
    "ExactOptions": "statrecon.engines.exact",
    "LinearOptions": "statrecon.engines.linear",
    "LinearResult": "statrecon.engines.linear",
    "CensusOptions": "statrecon.engines.census",
    "TractResult": "statrecon.engines.census",
    "BlockResult": "statrecon.engines.census",
    "ClaimsOptions": "statrecon.engines.claims.options",
    "BlockClaims": "statrecon.engines.claims.model",
    "ReleaseError": "statrecon.errors",
    "StatreconError": "statrecon.errors",
    "load_release": "statrecon.release",
    "parse_release": "statrecon.release",
    "CertainRow": "statrecon.result",
    "ReconstructionResult": "statrecon.result",
}
__all__ = [
    "BlockClaims", "BlockResult", "CensusOptions", "CertainRow", "ClaimsOptions", "ExactOptions",
    "LinearOptions", "LinearResult", "ReconstructionResult", "ReleaseError", "StatreconError",
    "TractResult", "load_release", "parse_release", "reconstruct",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'statrecon' has no attribute {name!r}")
