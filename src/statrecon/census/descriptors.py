"""The Bureau's 2010 SF1 data-field descriptors (package data), read once for every user.

Each row names a table (``TABLE NUMBER``), and either its title and universe (no field code)
or one published cell (``FIELD CODE``, e.g. ``P0120003``, with its ``FIELD NAME``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from functools import cache
from importlib import resources

DESCRIPTOR_FILE = "sf1_data_field_descriptors.csv"


@dataclass(frozen=True)
class Descriptor:
    """One row of the descriptor file: a table's title or universe row, or one of its cells."""

    table: str  # e.g. "P12"
    code: str  # the cell's field code; "" on title and universe rows
    name: str  # the cell's title, e.g. "Male:", or the table's title on its first row


@cache
def descriptors() -> tuple[Descriptor, ...]:
    """Every row of the SF1 descriptor file, in file order (one reader for every table)."""
    text = resources.files("statrecon").joinpath("data", DESCRIPTOR_FILE).read_text("utf-8")
    return tuple(Descriptor(table=(row["TABLE NUMBER"] or "").strip(),
                            code=(row["FIELD CODE"] or "").strip(),
                            name=(row["FIELD NAME"] or "").strip())
                 for row in csv.DictReader(io.StringIO(text)))
