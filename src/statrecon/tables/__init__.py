"""Statistical tables: hierarchical tables with suppressed cells, linked tables, and their
inputs (tau-Argus files, data frames, microdata with primary suppression rules).

``model`` holds the types and the additivity equations every other part reads; ``tauargus``,
``frames`` and ``rules`` build tables. The audit (``engines.intervals``) and the protection
work on a :class:`TableSet`.
"""

from statrecon.tables.model import (
    Additivity,
    Cell,
    CellStatus,
    Hierarchy,
    Table,
    TableSet,
)

__all__ = ["Additivity", "Cell", "CellStatus", "Hierarchy", "Table", "TableSet"]
