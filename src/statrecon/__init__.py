"""statrecon: what do these published numbers reveal about individuals?"""

from statrecon.api import reconstruct
from statrecon.engines.exact import ExactOptions
from statrecon.errors import ReleaseError, StatreconError
from statrecon.release import load_release, parse_release
from statrecon.result import CertainRow, ReconstructionResult

__all__ = [
    "CertainRow", "ExactOptions", "ReconstructionResult", "ReleaseError", "StatreconError",
    "load_release", "parse_release", "reconstruct",
]
__version__ = "0.1.0"
