"""Census persons reconstruction: ``tract`` (the tract model of exact tables and per-block
uniqueness certification, CP-SAT), ``rank`` (scores from K consistent datasets), ``topdown``
(noisy measurements: a noise-weighted fit of the tract, then its blocks; scores from re-drawn
noise), ``certain`` (persons certain within the noise bounds, per block).

``topdown`` is not re-exported: it loads scipy's LP solver and OR-Tools' min-cost flow, which
the exact tract model does not need; import it by its path.
"""

from statrecon.engines.census.certain import cell_bounds, certain_in_block, class_matrix
from statrecon.engines.census.tract import (
    DEFAULT_TRACT_TIME_LIMIT,
    MAX_TRACT_VARIABLES,
    BlockResult,
    CellMatrices,
    CensusOptions,
    TractResult,
    model_variables,
    reconstruct_tract,
)

__all__ = ["DEFAULT_TRACT_TIME_LIMIT", "MAX_TRACT_VARIABLES", "BlockResult", "CellMatrices",
           "CensusOptions", "TractResult", "cell_bounds", "certain_in_block", "class_matrix",
           "model_variables", "reconstruct_tract"]
