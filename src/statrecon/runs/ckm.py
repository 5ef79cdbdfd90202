"""Cell key perturbation of tables from microdata (``tables perturb``): read the ptable and
the microdata, take or draw the record keys, tabulate every table asked for (linked: a cell
in two tables is one cell), perturb each cell once by its cell key.

Record keys come from a column of the microdata, or are drawn with a seed (ONS: whole
numbers 0..255, ``numpy.random.default_rng(seed).integers``; ABS/Destatis: 8-decimal
numbers in [0, 1)) and kept with the records (``PerturbRun.records``): the next table must
use the same keys, or the same cell would be perturbed another way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from statrecon.errors import OptionError, StatreconError, check_option
from statrecon.tables import TableSet
from statrecon.tables.ckm import (
    KEY_COLUMN,
    KNOWLEDGE,
    Knowledge,
    Perturbation,
    PTable,
    count_tables,
    perturb_tables,
    read_ptable,
    record_keys,
)

THRESHOLDS = {"ons": 10, "abs": 0}  # the default threshold of each ptable format


@dataclass(frozen=True)
class PerturbOptions:
    """``tables``: each table's variables; ``record_key``: the microdata's column of record
    keys, or ``seed`` to draw them; ``threshold``: a published count below it is withheld
    (None: ONS's 10 with an ONS ptable, 0 with an ABS one); ``margins``: publish the totals
    too; ``knowledge``: what the attacker is assumed to know (:data:`KNOWLEDGE`)."""

    tables: tuple[tuple[str, ...], ...]
    record_key: str | None = None
    seed: int | None = None
    threshold: int | None = None
    margins: bool = True
    knowledge: Knowledge = "ptable"

    def __post_init__(self) -> None:
        check_option(self, "tables", bool(self.tables) and all(self.tables),
                     "at least one table, each of at least one variable")
        check_option(self, "knowledge", self.knowledge in KNOWLEDGE,
                     f"one of {', '.join(KNOWLEDGE)}")
        check_option(self, "threshold", self.threshold is None or self.threshold >= 0,
                     "at least 0")
        if (self.record_key is None) == (self.seed is None):
            raise OptionError("give the record keys' column or a seed to draw them, not "
                              "both", option="PerturbOptions.record_key")


@dataclass(frozen=True)
class PerturbRun:
    """The perturbed tables: the true counts (``tables``), each cell's perturbation in
    ``tables.keys()`` order, the ptable, the threshold applied, and the records with their
    keys when the keys were drawn (``records``; None when the microdata had them)."""

    tables: TableSet
    cells: tuple[Perturbation, ...]
    ptable: PTable
    threshold: int
    options: PerturbOptions
    records: Any = field(default=None, repr=False)  # pandas DataFrame

    @property
    def key_column(self) -> str:
        return self.options.record_key or KEY_COLUMN

    def published(self, key: Any) -> Perturbation:
        return self.cells[self.tables.column(key)]


def perturb_microdata(microdata: Path, ptable_path: Path, options: PerturbOptions
                      ) -> PerturbRun:
    """The tables of ``options`` over the records of ``microdata``, perturbed with the
    ptable of ``ptable_path`` (module docstring)."""
    # lazy: pandas loads only when microdata is read
    from statrecon.tables.frames import load_frame

    ptable = read_ptable(ptable_path)
    frame = load_frame(Path(microdata), "microdata")
    records = None
    if options.record_key is not None:
        keys = record_keys(frame, options.record_key, Path(microdata), ptable)
        frame = frame.assign(**{options.record_key: _column(keys)})
    else:
        if KEY_COLUMN in frame.columns:
            raise StatreconError(f"{microdata}: it has a column {KEY_COLUMN!r}: give it as "
                                 "--record-key, or rename it to draw new keys",
                                 where=str(microdata))
        assert options.seed is not None
        keys = ptable.draw_keys(len(frame), options.seed)
        frame = frame.assign(**{KEY_COLUMN: _column(keys)})
        records = frame
    tables, sums = count_tables(frame, options.tables, options.record_key or KEY_COLUMN,
                                str(microdata))
    threshold = THRESHOLDS[ptable.format] if options.threshold is None else options.threshold
    cells = perturb_tables(tables, sums, ptable, threshold)
    return PerturbRun(tables, cells, ptable, threshold, options, records)


def _column(keys: list[Fraction]) -> list[Any]:
    """Keys as a column ``tabulate`` sums exactly: whole numbers as ints, others Fractions."""
    if all(k.denominator == 1 for k in keys):
        return [int(k) for k in keys]
    return list(keys)

