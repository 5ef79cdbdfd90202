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

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any

from statrecon.engines.ckm.posterior import (
    CellPosterior,
    PosteriorOptions,
    posteriors,
    ranking,
)
from statrecon.engines.intervals import AuditOptions
from statrecon.errors import (
    InconsistentReleaseError,
    StatreconError,
    TimeLimitReached,
    check_option,
)
from statrecon.runs.known_cells import KnownCellsAudit, audit_known_cells
from statrecon.tables import TableSet
from statrecon.tables.box_moves import box_moves, record_moves
from statrecon.tables.ckm import (
    KEY_COLUMN,
    KNOWLEDGE,
    Knowledge,
    Perturbation,
    PTable,
    count_tables,
    ons_id_keys,
    perturb_tables,
    read_ptable,
    record_keys,
)
from statrecon.tables.published import (
    WITHHELD,
    Published,
    PublishedCells,
    read_hierarchy,
    read_published,
)

THRESHOLDS = {"ons": 10, "abs": 0}  # the default threshold of each ptable format
STAND_IN_LIMIT = 120.0  # seconds at least for the one table that fits (34 s at 93,462 cells)
POSTERIOR_LIMIT = 120.0  # seconds at least for the posteriors of every cell
RECORD_MOVES_SHARE = 0.05  # of the posteriors' time, at most, for drawing record moves


@dataclass(frozen=True)
class PerturbOptions:
    """``tables``: each table's variables; ``record_key``: the microdata's column of record
    keys, or ``ons_id``: its column of ids, each record's key the id modulo 4096 (as ONS's
    package makes them from ``ons_id``), or ``seed`` to draw them; ``threshold``: a
    published count below it is withheld (None: ONS's 10 with an ONS ptable, 0 with an ABS
    one); ``margins``: publish the totals
    too; ``knowledge``: what the attacker is assumed to know (:data:`KNOWLEDGE`)."""

    tables: tuple[tuple[str, ...], ...]
    record_key: str | None = None
    seed: int | None = None
    threshold: int | None = None
    margins: bool = True
    knowledge: Knowledge = "ptable"
    ons_id: str | None = None

    def __post_init__(self) -> None:
        check_option(self, "tables", bool(self.tables) and all(self.tables),
                     "at least one table, each of at least one variable")
        check_option(self, "knowledge", self.knowledge in KNOWLEDGE,
                     f"one of {', '.join(KNOWLEDGE)}")
        check_option(self, "threshold", self.threshold is None or self.threshold >= 0,
                     "at least 0")
        given = [g for g in (self.record_key, self.ons_id, self.seed) if g is not None]
        check_option(self, "record_key", len(given) == 1,
                     "the record keys' column, or None with a column of ids (ons_id) or "
                     "a seed to draw them (exactly one of the three)")


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
                                 "--record-key, or rename it to make new keys",
                                 where=str(microdata))
        if options.ons_id is not None:
            keys = ons_id_keys(frame, options.ons_id, Path(microdata), ptable)
        else:
            assert options.seed is not None
            keys = ptable.draw_keys(len(frame), options.seed)
            records = frame.assign(**{KEY_COLUMN: _column(keys)})
        frame = frame.assign(**{KEY_COLUMN: _column(keys)})
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


# ------------------------------------------- the audit of a publication someone else made


@dataclass(frozen=True)
class PublicationOptions:
    """The audit of a perturbed publication whose true counts we do not have: its
    ``dimensions`` and ``value`` column, the hierarchies given as ``.hrc`` files (variable ->
    path; the others flat), the ``threshold`` it withheld below (None: the ptable format's,
    as ``tables perturb``), what the attacker is assumed to know, and whether to compute
    each true count's posterior (``posterior``: the attacker knows the ptable) within
    ``posterior_time_limit`` seconds (None: the audit's limit, at least POSTERIOR_LIMIT)."""

    dimensions: tuple[str, ...]
    value: str = "value"
    hierarchies: tuple[tuple[str, Path], ...] = ()
    threshold: int | None = None
    knowledge: Knowledge = "ptable"
    posterior: bool = False
    posterior_time_limit: float | None = None

    def __post_init__(self) -> None:
        check_option(self, "dimensions", bool(self.dimensions), "at least one variable")
        check_option(self, "posterior", not self.posterior or self.knowledge == "ptable",
                     "only when the attacker knows the ptable (its probabilities make the "
                     "posterior)")
        check_option(self, "knowledge", self.knowledge in KNOWLEDGE,
                     f"one of {', '.join(KNOWLEDGE)}")
        check_option(self, "threshold", self.threshold is None or self.threshold >= 0,
                     "at least 0")
        check_option(self, "posterior_time_limit", self.posterior_time_limit is None
                     or self.posterior_time_limit > 0, "more than 0 seconds, or None")


@dataclass(frozen=True)
class PublicationAudit(KnownCellsAudit):
    """What an attacker proves about the true counts behind a publication: the audit of
    cells known within sets, each cell's set the counts its published value allows under
    ``knowledge``. ``cells`` is the publication read back; ``stand_in`` one integer table
    that adds up inside the sets the ptable allows (found by CP-SAT and checked exactly: the
    proof that the release is consistent, and the point the audit starts from; never the
    truth, never reported as it); ``ptable`` and ``threshold`` as used."""

    cells: PublishedCells | None = None
    stand_in: tuple[int, ...] = ()
    ptable: PTable | None = None
    threshold: int = 0
    stand_in_s: float = 0.0
    posteriors: tuple[CellPosterior, ...] = ()  # empty unless asked for
    posterior_s: float = 0.0

    @cached_property
    def rankings(self) -> tuple[list[int], list[int]]:
        """The cells with a posterior by probability, and by what the linked tables add
        (``engines/ckm/posterior.ranking``): sorted once however often they are shown
        (100,000 fractions each at scale)."""
        return ranking(self.posteriors), ranking(self.posteriors, "added")

    def shown_value(self, cell: int) -> int | None:
        """The true count where the audit pins it (proven), else None: unknown to us."""
        audit = self.result.cells[cell]
        best = audit.integer or audit.lp
        if audit.verdict == "disclosed" and best.lower.value is not None:
            return int(best.lower.value)
        return None


def publication_bounds(cells: PublishedCells, ptable: PTable, threshold: int,
                       knowledge: Knowledge) -> tuple[tuple[int, int | None], ...]:
    """Each cell's a-priori interval from its published value under ``knowledge``; a value
    the ptable cannot publish from any count, or one shown below the threshold, is an
    :class:`InconsistentReleaseError` naming the cell and its row."""
    names = cells.tables.cell_names()
    out: list[tuple[int, int | None]] = []
    for name, shown, row in zip(names, cells.published, cells.rows, strict=True):
        if shown is None:
            out.append((0, None))
        elif shown == WITHHELD:
            if threshold == 0:
                raise StatreconError(f"{row}: cell {name} is withheld ({WITHHELD}) but the "
                                     "threshold is 0: give the --threshold it was withheld "
                                     "below", where=row)
            out.append(ptable.possible_below(threshold, knowledge))
        else:
            assert isinstance(shown, int)
            if shown < threshold or not ptable.sources(shown):
                why = (f"below the threshold {threshold}, which withholds it" if
                       shown < threshold else "which the ptable cannot publish from any "
                       f"count (D = {ptable.noise}, js = {ptable.blocked})")
                raise InconsistentReleaseError(
                    f"{row}: cell {name} is published as {shown}, {why}: the release is "
                    "inconsistent with its ptable", where=row, statistic=name)
            out.append(ptable.possible(shown, knowledge))
    return tuple(out)


def publication_posteriors(cells: PublishedCells, ptable: PTable, threshold: int,
                           options: PosteriorOptions | None = None,
                           known: Sequence[int] | None = None
                           ) -> tuple[CellPosterior, ...]:
    """Each true count's posterior behind the publication (``engines/ckm/posterior``: a
    flat prior over the tables that add up, the cells' perturbations independent);
    ``known``: a table that adds up within the published values' sets (the stand-in). The
    chains propose the tables' boxes and record moves (``tables/box_moves``), the record
    moves drawn in at most RECORD_MOVES_SHARE of the time."""
    by_value: dict[Published, dict[int, Fraction] | None] = {None: None}  # not published
    for shown in cells.published:
        if shown not in by_value:
            by_value[shown] = ptable.likelihood(  # a count, or withheld below threshold
                (shown,) if isinstance(shown, int) else range(threshold))
    likelihoods = [by_value[p] for p in cells.published]
    options = options or PosteriorOptions()
    start, limit = time.monotonic(), options.time_limit
    moves = box_moves(cells.tables) + record_moves(
        cells.tables, time_limit=None if limit is None else limit * RECORD_MOVES_SHARE)
    left = None if limit is None else max(0.0, limit - (time.monotonic() - start))
    return posteriors(cells.tables.equations().matrix, likelihoods,
                      replace(options, time_limit=left), known, moves)


FITTING = "a table that fits"  # the stage of the stand-in table, in progress reports
POSTERIOR = "posteriors"  # the stage of the posteriors, in progress reports


def audit_publication(publication: Path, ptable_path: Path, options: PublicationOptions,
                      audit: AuditOptions | None = None,
                      on_progress: Callable[[int, int, str], None] | None = None
                      ) -> PublicationAudit:
    """The proven intervals of every true count behind the perturbed ``publication``
    (``tables/published.py``), published with the ptable of ``ptable_path``: each cell
    within the counts its published value allows, the true tables adding up. The release
    is checked first: a value the ptable cannot publish, or no additive integer tables
    within what the ptable allows, is an :class:`InconsistentReleaseError`.
    ``on_progress(done, total, stage)``: the table that fits (0 of 1, then 1 of 1), then
    the cells audited, then (``options.posterior``) the cells whose posteriors are done."""
    tell = on_progress or (lambda done, total, stage: None)
    ptable = read_ptable(ptable_path)
    hierarchies = {v: read_hierarchy(p, v) for v, p in options.hierarchies}
    cells = read_published(publication, options.dimensions, options.value, hierarchies)
    threshold = THRESHOLDS[ptable.format] if options.threshold is None else options.threshold
    tight = publication_bounds(cells, ptable, threshold, "ptable")
    limit = (audit or AuditOptions()).time_limit
    start = time.perf_counter()
    hint = [p if isinstance(p, int) else lo for p, (lo, _) in zip(cells.published, tight,
                                                                   strict=True)]
    tell(0, 1, FITTING)
    values = stand_in(cells.tables, tight, hint,
                      None if limit is None else max(limit, STAND_IN_LIMIT))
    tell(1, 1, FITTING)
    found_s = time.perf_counter() - start
    bounds = tight if options.knowledge == "ptable" else publication_bounds(
        cells, ptable, threshold, options.knowledge)
    given = audit or AuditOptions()
    inner = given.on_progress

    def cells_done(done: int, total: int) -> None:
        tell(done, total, "cells audited")
        if inner is not None:
            inner(done, total)

    checked = audit_known_cells(cells.with_values(values), bounds, options.knowledge,
                                replace(given, on_progress=cells_done))
    found: tuple[CellPosterior, ...] = ()
    start = time.perf_counter()
    if options.posterior:
        tell(0, len(values), POSTERIOR)
        seconds = options.posterior_time_limit
        if seconds is None and limit is not None:
            seconds = max(limit, POSTERIOR_LIMIT)
        found = publication_posteriors(cells, ptable, threshold, PosteriorOptions(
            time_limit=seconds, on_progress=lambda done, total: tell(done, total, POSTERIOR)),
            values)
    return PublicationAudit(checked.result, checked.bounds, options.knowledge, cells,
                            tuple(values), ptable, threshold, found_s, found,
                            time.perf_counter() - start if options.posterior else 0.0)


def stand_in(tables: TableSet, bounds: Sequence[tuple[int, int | None]],
             hint: Sequence[int], time_limit: float | None, workers: int = 2) -> list[int]:
    """One integer table that adds up with every cell within its bounds: CP-SAT over the
    cells, the published values (``hint``) as its hint, the found table checked exactly.
    None exists (CP-SAT's INFEASIBLE, every cell bounded): :class:`InconsistentReleaseError`;
    none found within ``time_limit``, or none within the cap put on cells without an upper
    bound: :class:`TimeLimitReached` (unknown, never a proof either way). (HiGHS's
    LP alone took 98 s, interior point, with 10,251 fractional cells left, on the 93,462
    cells of benchmarks/bench_ckm_audit.py, and its dual simplex over 300 s; CP-SAT from
    the hint 34 s.)"""
    # lazy: OR-Tools loads only when a publication is audited
    from ortools.sat.python import cp_model

    # lazy: as above, the project's one CP-SAT factory
    from statrecon.engines.solvers.cpsat import new_solver

    matrix = tables.equations().matrix.tocsr()
    top = max((hi for _, hi in bounds if hi is not None), default=0)
    free = 2 * (top + sum(hint)) + 1  # a cap on the cells without an upper bound
    model = cp_model.CpModel()
    cells = [model.new_int_var(int(lo), int(free if hi is None else hi), "")
             for lo, hi in bounds]
    for i in range(matrix.shape[0]):
        s, e = matrix.indptr[i], matrix.indptr[i + 1]
        model.add(sum(int(a) * cells[int(j)] for j, a in
                      zip(matrix.indices[s:e], matrix.data[s:e], strict=True)) == 0)
    for cell, start, (lo, hi) in zip(cells, hint, bounds, strict=True):
        model.add_hint(cell, min(max(start, lo), free if hi is None else hi))
    solver = new_solver(left=time_limit, workers=workers)
    # not repair_hint: OR-Tools 9.15 aborts the whole process with it now and then ("Check
    # failed: heuristics.fixed_search != nullptr", google/or-tools#5025): 2 runs in 6 of
    # test_tables_audit_perturbed here. The hint still guides the search.
    status = solver.solve(model)
    capped = any(hi is None for _, hi in bounds)  # then INFEASIBLE proves nothing
    if status == cp_model.INFEASIBLE and not capped:
        raise InconsistentReleaseError(
            "no tables that add up lie within the counts the published values allow "
            f"under the ptable ({len(cells):,} cells, {matrix.shape[0]:,} equations): the "
            "release is inconsistent with its ptable")
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise TimeLimitReached("no table that adds up within the published values' sets "
                               f"found ({solver.status_name(status)} within {time_limit} s"
                               f"{', cells not published capped at ' + str(free) if capped else ''}"
                               "): unknown")
    point = [int(solver.value(c)) for c in cells]
    if not _fits(matrix, point, bounds):
        raise TimeLimitReached("CP-SAT's table does not check exactly: unknown")
    return point


def _fits(matrix: Any, point: Sequence[int], bounds: Sequence[tuple[int, int | None]]) -> bool:
    """``point`` is within ``bounds`` and ``matrix @ point == 0``, in exact integers."""
    import numpy as np  # lazy: as stand_in

    if any(v < lo or (hi is not None and v > hi) for v, (lo, hi) in zip(point, bounds,
                                                                       strict=True)):
        return False
    if max(point, default=0) >= 2**40:
        return False
    return not np.any(matrix.astype(np.int64) @ np.array(point, dtype=np.int64))
