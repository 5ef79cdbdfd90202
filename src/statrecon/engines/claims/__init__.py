"""Generate-then-Verify engines (reference 003): claims R(a, m) every consistent block satisfies.

``model`` builds one block's histogram model and its candidate claims; a registered
formulation (``formulations.FORMULATIONS``: ``fast``, ``paper``) proves or refutes them;
``verify.verify_block`` runs one block end to end with ``options.ClaimsOptions``. Names are
exported lazily, so that the CLI can read the formulation registry without loading CP-SAT.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statrecon.census.households.schema import Claim
    from statrecon.census.households.tables import BlockRelease
    from statrecon.engines.claims.fast import binomial_baseline
    from statrecon.engines.claims.formulations import (
        FORMULATIONS,
        Formulation,
        formulation,
        formulations_help,
    )
    from statrecon.engines.claims.model import N_COLS, BlockClaims, BlockModel, compile_block
    from statrecon.engines.claims.options import ClaimsOptions
    from statrecon.engines.claims.verify import verify_block

_WHERE = {
    "Claim": "statrecon.census.households.schema",
    "BlockRelease": "statrecon.census.households.tables",
    "binomial_baseline": "statrecon.engines.claims.fast",
    "FORMULATIONS": "statrecon.engines.claims.formulations",
    "Formulation": "statrecon.engines.claims.formulations",
    "formulation": "statrecon.engines.claims.formulations",
    "formulations_help": "statrecon.engines.claims.formulations",
    "N_COLS": "statrecon.engines.claims.model",
    "BlockClaims": "statrecon.engines.claims.model",
    "BlockModel": "statrecon.engines.claims.model",
    "ClaimsOptions": "statrecon.engines.claims.options",
    "compile_block": "statrecon.engines.claims.model",
    "verify_block": "statrecon.engines.claims.verify",
}
__all__ = ["FORMULATIONS", "N_COLS", "BlockClaims", "BlockModel", "BlockRelease", "Claim",
           "ClaimsOptions", "Formulation", "binomial_baseline", "compile_block", "formulation",
           "formulations_help", "verify_block"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'statrecon.engines.claims' has no attribute {name!r}")
