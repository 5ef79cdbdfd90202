"""Statistical tables: hierarchical tables with suppressed cells, linked tables, and their
inputs (tau-Argus files, data frames, microdata with primary suppression rules).

``model`` holds the types and the additivity equations every other part reads; ``tauargus``,
``frames``, ``rules`` and ``spec`` build tables, and ``load`` (:func:`load` of a
:class:`TableSource`) is the one entry that reads whatever a user names. The audit
(``engines.intervals``) and the protection work on a :class:`TableSet`.
"""

from statrecon.tables.load import MicrodataRules, TableSource, load, parse_nk
from statrecon.tables.model import (
    Additivity,
    Cell,
    CellStatus,
    Hierarchy,
    Table,
    TableSet,
)

__all__ = ["Additivity", "Cell", "CellStatus", "Hierarchy", "MicrodataRules", "Table",
           "TableSet", "TableSource", "load", "parse_nk"]
