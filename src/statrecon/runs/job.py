"""A tau-Argus batch job carried out: its tables built (``tables/job.py``), its steps taken
in order (``<RECODE>``, ``<SUPPRESS>``, ``<WRITETABLE>``), and what ``<WRITETABLE>`` asks for
written (``tables/writetable.py``) once every step has succeeded: a job that cannot protect
a table writes nothing.

Secondary suppression is statrecon's (``protect_tables``): every pattern is proven under the
integer audit before it is written. A ``<SUPPRESS>`` protects the tables it names; tables of
one response that publish the same cells (a margin two tables share) are protected together
as linked tables, whatever the job says, since a cell suppressed in one table and published
in the other would be no secret. A job without ``<SUPPRESS>`` has every table protected (the
command asks for protection), linked where they can be. ``<SUPPRESS> RND`` rounds one table
instead (``runs/job_round.py``); its ``<WRITETABLE>`` writes the rounded values.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Literal, cast

from statrecon.engines.intervals import APRIORI, Apriori, AuditOptions, Interval
from statrecon.engines.suppression import METHODS, Method, ProtectOptions
from statrecon.engines.suppression.costs import parse_cost_function
from statrecon.errors import StatreconError, check_choice, check_option
from statrecon.outputs import atomic_outputs, check_writable
from statrecon.runs.job_round import Rounded, round_job_table
from statrecon.runs.tables import COSTS, Cost, TableProtection, audit_tables, protect_tables
from statrecon.tables import CellStatus, TableSet
from statrecon.tables.job import (
    ROUNDING,
    AprioriStep,
    Job,
    JobTable,
    MicroJob,
    Recode,
    Specified,
    Step,
    Suppress,
    WriteTable,
    link,
    table_input,
)
from statrecon.tables.safety import PRule
from statrecon.tables.writetable import Bounds, Output, texts, working_path

JobStatus = Literal["written", "infeasible", "unknown"]


@dataclass(frozen=True)
class Protected:
    """One group of tables protected together (1-based table numbers) and its result."""

    tables: tuple[int, ...]
    method: str
    protection: TableProtection


@dataclass(frozen=True)
class JobRun:
    """A job carried out: its tables at the end, each protection, the files written (or, when
    a protection failed, none), and notes on what was set aside."""

    job: Job
    tables: tuple[JobTable, ...]
    protected: tuple[Protected, ...]
    written: tuple[Path, ...]
    status: JobStatus
    notes: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    rounded: tuple[Rounded, ...] = ()

    def linked(self) -> TableSet:
        """Every table at the end, linked (one response): the last protection's own tables
        when it protected them all together (linking them again took 1.4 s of issue 28's
        97,236 cells, past the job's time limit)."""
        last = self.protected[-1].protection if self.protected else None
        every = tuple(range(1, len(self.tables) + 1))
        if last is not None and tuple(sorted(self.protected[-1].tables)) == every \
                and not self.rounded:
            return last.tables
        return link(self.tables)


@dataclass
class _State:
    job: Job
    micro: MicroJob | None
    tables: list[JobTable]
    stale: set[int] = field(default_factory=set)
    protected: set[int] = field(default_factory=set)
    rounded: dict[int, Rounded] = field(default_factory=dict)

    def get(self, number: int) -> JobTable:
        if number in self.stale:
            assert self.micro is not None
            self.tables[number - 1] = self.micro.table(self.job.tables[number - 1])
            self.stale.discard(number)
        return self.tables[number - 1]


@dataclass(frozen=True)
class JobOptions:
    """How a job's protection runs: ``method`` and ``cost`` override the job's own (None:
    as the job says: OPT is exact, the others fast; the cost function of each
    ``<SPECIFYTABLE>``), and the rest as for ``protect_tables``."""

    options: ProtectOptions = field(default_factory=ProtectOptions)
    method: str | None = None
    cost: Cost | None = None
    cost_lambda: Fraction | None = None
    apriori: Apriori = "nonnegative"
    suppress_empty: bool = False
    singletons: bool = False
    audit: AuditOptions = field(default_factory=AuditOptions)

    def __post_init__(self) -> None:
        if self.method is not None:
            check_choice(self, "method", METHODS)
        if self.cost is not None:
            check_choice(self, "cost", COSTS)
        check_option(self, "cost_lambda", self.cost_lambda is None or self.cost_lambda >= 0,
                     "at least 0 (or None: the job's own)")
        check_choice(self, "apriori", APRIORI)


def open_job(job: Job) -> tuple[MicroJob | None, list[JobTable]]:
    """The job's data read and its tables built as they stand before any step."""
    if job.microdata is None:
        return None, table_input(job)
    micro = MicroJob(job)
    return micro, [micro.table(spec) for spec in job.tables]


def check_outputs(job: Job, inputs: Sequence[tuple[str, Path | None]] = ()) -> None:
    """Every file the job's ``<WRITETABLE>`` commands write can be written and is none of
    its inputs (the batch file, its data, metadata and recode files): checked before any
    work (and again as each file is written)."""
    named = [("<OPENMICRODATA>", job.microdata), ("<OPENMETADATA>", job.metadata),
             *(("<RECODE>", s.file) for s in job.steps if isinstance(s, Recode)),
             *(("<APRIORI>", s.command.file) for s in job.steps if isinstance(s, AprioriStep))]
    inputs = [*inputs, *named]
    for step in job.writes:
        for path in _paths(step, job):
            check_writable(path, f"<WRITETABLE> of line {step.line}", inputs_given=inputs)


def _paths(step: WriteTable, job: Job) -> list[Path]:
    spec = job.tables[step.table - 1]
    paths = [step.path]
    if (step.kind in (2, 3) and step.option("AS")) or step.kind == 4:
        paths.append(working_path(step.path))
    if step.kind == 5:
        working = working_path(step.path)
        paths = [working, working.with_suffix(".rda")]
        paths += [working.with_name(f"{working.stem}_{v}.hrc") for v in spec.explanatory]
    return paths


def run_job(job: Job, how: JobOptions = JobOptions()) -> JobRun:
    """Carry out ``job`` (module docstring)."""
    start = time.monotonic()
    for spec in job.tables:  # its cost fields understood before any data is read
        cost_function(job, spec)
    micro, tables = open_job(job)
    state = _State(job, micro, tables)
    notes = list(job.set_aside)
    protected: list[Protected] = []
    pending: dict[Path, str] = {}
    steps: list[Step] = list(job.steps)
    status: JobStatus
    if not job.suppresses:  # every table, once recoded, before the first write
        notes.append(f"{job.path}: no <SUPPRESS>: every table is protected")
        first = next((i for i, s in enumerate(steps) if isinstance(s, WriteTable)),
                     len(steps))
        steps.insert(first, Suppress(0, "MOD", 0))
    for step in steps:
        if isinstance(step, Recode):
            _recode(state, step)
        elif isinstance(step, AprioriStep):
            _apriori(state, step)
        elif isinstance(step, Suppress) and step.method == ROUNDING:
            notes.extend(step.notes)
            done = _round(state, step, how, start)
            if not done.found:
                status = "infeasible" if done.answer.status == "infeasible" else "unknown"
                return JobRun(job, tuple(state.tables), tuple(protected), (), status,
                              tuple(notes), time.monotonic() - start,
                              tuple(state.rounded.values()))
        elif isinstance(step, Suppress):
            notes.extend(step.notes)
            found = _suppress(state, step, how, start, notes)
            protected += found
            if any(not p.protection.protected for p in found):
                failed = next(p for p in found if not p.protection.protected)
                status = ("infeasible" if failed.protection.result.status ==
                          "infeasible" else "unknown")
                return JobRun(job, tuple(state.tables), tuple(protected), (), status,
                              tuple(notes), time.monotonic() - start,
                              tuple(state.rounded.values()))
        else:
            pending.update(_write(state, step, how, protected))
    written = _write_all(pending)
    return JobRun(job, tuple(state.get(n) for n in range(1, len(job.tables) + 1)),
                  tuple(protected), written, "written", tuple(notes),
                  time.monotonic() - start, tuple(state.rounded.values()))


def _recode(state: _State, step: Recode) -> None:
    assert state.micro is not None
    where = state.job.where(step.line)
    touched = [spec.number for spec in state.job.tables
               if step.variable.lower() in (v.lower() for v in spec.explanatory)]
    done = [n for n in touched if n in state.protected]
    if done:
        raise StatreconError(f"{where}: <RECODE> of {step.variable} after table {done[0]} "
                             "was protected (tau-Argus refuses to recode a protected table)",
                             where=where)
    state.micro.recode(step)
    state.stale.update(touched)


def _apriori(state: _State, step: AprioriStep) -> None:
    assert state.micro is not None
    number = step.command.table
    if number in state.protected:
        where = state.job.where(step.line)
        raise StatreconError(f"{where}: <APRIORI> for table {number} after it was protected "
                             "(an a-priori file comes before <SUPPRESS>)", where=where)
    state.micro.apriori(step)
    state.stale.add(number)


def _round(state: _State, step: Suppress, how: JobOptions, start: float) -> Rounded:
    """Controlled rounding of one table (``runs/job_round.py``), within the job's time."""
    left = how.options.time_limit
    if left is not None:
        left = max(0.001, left - (time.monotonic() - start))
    done = round_job_table(state.get(step.table), step, state.job.where(step.line), left)
    state.rounded[step.table] = done
    state.protected.add(step.table)
    return done


def _groups(state: _State, numbers: Sequence[int]) -> list[list[int]]:
    """The tables to protect together: one response (and kind) and a shared cell."""
    groups: list[list[int]] = []
    for n in numbers:
        table = state.get(n).table
        keys = {table.key(c) for c in table.cells}
        for group in groups:
            first = state.get(group[0]).table
            same = (first.response, first.kind) == (table.response, table.kind)
            if same and any(keys & {t.key(c) for c in t.cells}
                            for t in (state.get(m).table for m in group)):
                group.append(n)
                break
        else:
            groups.append([n])
    return groups


def _suppress(state: _State, step: Suppress, how: JobOptions, start: float,
              notes: list[str]) -> list[Protected]:
    numbers = [step.table] if step.table else list(range(1, len(state.job.tables) + 1))
    done = []
    for group in _groups(state, numbers):
        linked = [n for n in group if n not in numbers]
        if linked:
            notes.append(f"tables {', '.join(map(str, linked))} protected with table "
                         f"{step.table}: they share cells")
        method = how.method or step.statrecon_method
        tables = [state.get(n) for n in group]
        if not any(c.status is CellStatus.PRIMARY for t in tables for c in t.table.cells):
            notes.append(f"table{'s' if len(group) > 1 else ''} "
                         f"{', '.join(map(str, group))}: no primary cell, nothing to protect")
            state.protected.update(group)
            continue
        cost, lam = _cost(state.job, tables, how)
        left = how.options.time_limit
        if left is not None:
            left = max(0.001, left - (time.monotonic() - start))
        options = replace(how.options, method=cast(Method, method), time_limit=left)
        result = protect_tables(link(tables), options, cost=cost, apriori=how.apriori,
                                suppress_empty=how.suppress_empty, singletons=how.singletons,
                                cost_lambda=lam)
        done.append(Protected(tuple(group), method, result))
        if not result.protected:
            break
        for n, table in zip(group, result.tables.tables, strict=True):
            state.tables[n - 1] = replace(state.tables[n - 1], table=table)
            state.protected.add(n)
    return done


def cost_function(job: Job, spec: Specified) -> tuple[Cost, Fraction]:
    """A ``<SPECIFYTABLE>``'s cost function and lambda (a variable's costs are the cells'
    ``cost``, tabulated with the table)."""
    kind, _variable, lam = parse_cost_function(spec.cost, spec.lam, job.where(spec.line))
    return kind, lam


def _cost(job: Job, tables: Sequence[JobTable], how: JobOptions) -> tuple[Cost, Fraction]:
    if how.cost is not None:
        return how.cost, how.cost_lambda if how.cost_lambda is not None else Fraction(1)
    cost, lam = cost_function(job, tables[0].spec)
    if cost == "value" and any(c.cost is not None for t in tables for c in t.table.cells):
        cost = "cost"  # a table file's own cost column (tau-Argus's COSTVAR)
    return cost, how.cost_lambda if how.cost_lambda is not None else lam


def _write(state: _State, step: WriteTable, how: JobOptions,
           protected: Sequence[Protected]) -> dict[Path, str]:
    jt = state.get(step.table)
    bounds = None
    if step.kind == 5 and step.option("AR"):
        group = next((p.tables for p in reversed(protected) if step.table in p.tables),
                     (step.table,))
        bounds = _bounds(state, group, step.table, how)
    rounded = state.rounded.get(step.table)
    return write_texts(jt, step, bounds,
                       rounded.answer.rounded if rounded is not None else None)


def write_texts(jt: JobTable, step: WriteTable, bounds: Mapping[int, Bounds] | None = None,
                rounded: Sequence[Fraction] | None = None) -> dict[Path, str]:
    """The files one ``<WRITETABLE>`` writes of a job's table as it stands (path -> text);
    ``rounded``: the values it publishes, by cell, where the job rounded it."""
    rules = jt.spec.rules
    # as many largest contributions as tau-Argus keeps: what the rules read
    tops = (rules.individual.tops if rules is not None else
            max((len(c.top) for c in jt.table.cells), default=0))
    p_rule = rules is not None and any(isinstance(r, PRule)
                                       for r in rules.individual.magnitude)
    output = Output(jt.table, [jt.status_number(i) for i in range(len(jt.table.cells))],
                    jt.decimals, tops, p_rule, bounds, jt.hierarchical, rounded)
    return texts(output, step.kind, step.options, step.path)


def _bounds(state: _State, group: Sequence[int], number: int, how: JobOptions
            ) -> dict[int, Bounds]:
    """The audit's LP and integer interval of each suppressed cell of table ``number``,
    audited with the tables it was protected with."""
    tables = link([state.get(n) for n in group])
    audit = audit_tables(tables, how.audit, apriori=how.apriori)
    by_key = dict(zip(audit.keys, audit.result.cells, strict=True))
    table = tables.tables[list(group).index(number)]
    found = {}
    for i, cell in enumerate(table.cells):
        if not cell.status.suppressed or cell.status is CellStatus.EMPTY:
            continue
        audited = by_key.get(table.key(cell))
        if audited is None:
            continue
        found[i] = (*_ends(audited.lp), *_ends(audited.integer))
    return found


def _ends(interval: Interval | None) -> tuple[Fraction | None, Fraction | None]:
    """An interval's proven ends (None: not proven, or unbounded)."""
    if interval is None:
        return None, None
    return tuple(b.value if b.proven else None  # type: ignore[return-value]
                 for b in (interval.lower, interval.upper))


def _write_all(pending: dict[Path, str]) -> tuple[Path, ...]:
    paths = tuple(pending)
    if not paths:
        return ()
    with atomic_outputs(*paths) as temporary:
        for tmp, final in zip(temporary, paths, strict=True):
            tmp.write_text(pending[final], encoding="utf-8")
    return paths
