"""Cell key perturbation of tables from microdata (``tables perturb``): read the ptable and
the microdata, take or draw the record keys, tabulate every table asked for (linked: a cell
in two tables is one cell), perturb each cell once by its cell key; and the audit of the
release (``audit_perturbed``): what the published counts and the true tables' additivity
prove about every true count, by the interval audit of ``engines/intervals``.

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

from statrecon.engines.intervals import AuditOptions
from statrecon.errors import StatreconError, check_option
from statrecon.runs.known_cells import KnownCellsAudit, audit_known_cells
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
        check_option(self, "record_key", (self.record_key is None) != (self.seed is None),
                     "the record keys' column, or None with a seed to draw them (one of "
                     "the two, not both)")


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



# --------------------------------------------------------------- the audit of the release


@dataclass(frozen=True)
class PerturbedAudit(KnownCellsAudit):
    """What an attacker proves about the true counts of a perturbed release: the audit of
    cells known within sets (``runs/known_cells.py``), each cell's set the counts its
    published count allows under ``knowledge`` ((0, None) for a cell not published:
    ``published`` says which are), the true tables' additivity the equations. A cell whose
    interval has width 0 is pinned: ``disclosed``."""

    published: tuple[bool, ...] = ()


def published_keys(run: PerturbRun) -> tuple[bool, ...]:
    """Whether each cell (``keys()`` order) is in the publication: every cell with margins;
    else only a cell below every total of some table."""
    if run.options.margins:
        return (True,) * len(run.cells)
    inner = {t.key(c) for t in run.tables.tables for c in t.cells
             if len(t.key(c)) == len(t.variables)}
    order = run.tables.keys()
    return tuple(k in inner for k in order)


def cell_bounds(run: PerturbRun, knowledge: Knowledge) -> tuple[tuple[int, int | None], ...]:
    """Each cell's a-priori interval: from its published count, from the threshold when it
    is withheld, nothing beyond 0 when it is not published."""
    out: list[tuple[int, int | None]] = []
    for cell, shown in zip(run.cells, published_keys(run), strict=True):
        if not shown:
            out.append((0, None))
        elif cell.published is None:
            out.append(run.ptable.possible_below(run.threshold, knowledge))
        else:
            out.append(run.ptable.possible(cell.published, knowledge))
    return tuple(out)


def audit_perturbed(run: PerturbRun, options: AuditOptions | None = None,
                    knowledge: Knowledge | None = None) -> PerturbedAudit:
    """The proven intervals of every true count of ``run`` (:class:`PerturbedAudit`), the
    attacker knowing ``knowledge`` (default: the run's ``--attacker-knows``)."""
    knows = knowledge or run.options.knowledge
    checked = audit_known_cells(run.tables, cell_bounds(run, knows), knows, options)
    return PerturbedAudit(checked.result, checked.bounds, knows, published_keys(run))
