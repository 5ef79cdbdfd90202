"""Exact reconstruction with CP-SAT: find, enumerate, certain facts, explain infeasibility.

Every conclusion here rests on a solver status: OPTIMAL/FEASIBLE with a witness for
existence, INFEASIBLE for impossibility. A time limit gives ``unknown``, never a guess.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ortools.sat.python import cp_model

from statrecon.engines.exact.options import (
    ExactOptions,
    ExactProgress,
    Phase,
)
from statrecon.engines.exact.record_model import (
    RecordModel,
    check_model_size,
    noise_within,
    row_count_bounds,
)
from statrecon.engines.solvers.cpsat import Deadline, OutOfTime, found, new_solver
from statrecon.release.known import KnownData
from statrecon.release.model import Release
from statrecon.release.schema import ColumnType
from statrecon.release.statistic import Noisy
from statrecon.result import (
    CertainCell,
    CertainRow,
    NoiseUse,
    ReconstructionResult,
    Row,
    Status,
)

Dataset = tuple[tuple[int, ...], ...]


def _tell(options: ExactOptions, deadline: Deadline, phase: Phase, done: int = 0,
          total: int | None = None, found: int = 0) -> None:
    if options.on_progress is not None:
        options.on_progress(ExactProgress(phase, done, total, found, deadline.left()))


# Enumeration keeps at most this many rows of datasets in memory (each row a tuple: about
# 100 bytes): past it, it stops as if --limit had been reached, and proofs take over.
MAX_ROWS_KEPT = 2_000_000

# Columns with more possible values than this get their smallest and largest value proven,
# not every value: listing a domain of 10^9 values would exhaust memory.
MAX_VALUES_PROVEN = 1_000


def _model(release: Release, known: KnownData, options: ExactOptions, deadline: Deadline,
           switches: bool = False) -> RecordModel:
    """Build the record model; raises OutOfTime when the deadline passes meanwhile."""
    deadline.check()
    return RecordModel(release, known, symmetry_breaking=options.symmetry_breaking,
                       switches=switches, check=deadline.check, noise=options.noise)


def _solver(options: ExactOptions, deadline: Deadline, workers: int | None = None
            ) -> cp_model.CpSolver:
    return new_solver(left=deadline.left(), workers=workers or options.workers,
                      seed=options.seed)


class _Collector(cp_model.CpSolverSolutionCallback):
    """Keeps distinct datasets; stops at ``limit`` of them or MAX_ROWS_KEPT rows in all."""

    def __init__(self, rm: RecordModel, limit: int,
                 tell: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self.rm = rm
        self.limit = limit
        self.tell = tell
        self.found: dict[Dataset, None] = {}
        self.rows = 0
        self.full = False

    def on_solution_callback(self) -> None:
        dataset = self.rm.indexed_dataset(self.SolutionIntegerValue, self.value)
        if dataset not in self.found:
            self.found[dataset] = None
            self.rows += len(dataset)
            if self.tell is not None:
                self.tell(len(self.found))
        if len(self.found) >= self.limit or self.rows >= MAX_ROWS_KEPT:
            self.full = True
            self.stop_search()


def enumerate_datasets(
    release: Release, known: KnownData, options: ExactOptions | None = None
) -> tuple[list[Dataset], bool, str]:
    """All distinct datasets up to ``limit``: (datasets, complete, cp-sat status name)."""
    options = options or ExactOptions()
    deadline = Deadline.after(options.time_limit)
    check_model_size(release, known, options.max_model_size, options.noise)
    try:
        rm = _model(release, known, options, deadline)
    except OutOfTime:
        return [], False, "UNKNOWN"
    return _enumerate(rm, options, deadline)


def _enumerate(rm: RecordModel, options: ExactOptions, deadline: Deadline
               ) -> tuple[list[Dataset], bool, str]:
    solver = _solver(options, deadline, workers=1)
    solver.parameters.enumerate_all_solutions = True
    # Enumeration cannot use symmetries, and detecting them on a large model takes seconds
    # that no time limit interrupts.
    solver.parameters.symmetry_level = 0
    _tell(options, deadline, "enumerating")
    collector = _Collector(rm, options.limit,
                           lambda k: _tell(options, deadline, "enumerating", found=k))
    status = solver.solve(rm.model, collector)
    datasets = list(collector.found)
    complete = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE) and not collector.full
    return datasets, complete, solver.status_name(status)


def _start(release: Release, known: KnownData, options: ExactOptions, deadline: Deadline
           ) -> tuple[NoiseUse, RecordModel | None]:
    """Size check, noise record and the model (None when the deadline passed meanwhile)."""
    check_model_size(release, known, options.max_model_size, options.noise)
    noise = _noise_use(release, options)
    _tell(options, deadline, "building")
    try:
        return noise, _model(release, known, options, deadline)
    except OutOfTime:
        return noise, None


def reconstruct_exact(
    release: Release, known: KnownData, options: ExactOptions | None = None
) -> ReconstructionResult:
    """Enumerate consistent datasets and prove what they all share (``ml`` noise mode: find a
    most likely dataset instead, see ``reconstruct_ml``)."""
    options = options or ExactOptions()
    if options.noise_mode == "ml":
        return reconstruct_ml(release, known, options)
    started = time.monotonic()
    deadline = Deadline.after(options.time_limit)
    noise, rm = _start(release, known, options, deadline)
    if rm is None:  # the time limit covers building the model too
        return _out_of_time(release, known, options, noise, started)
    columns = tuple(c.name for c in rm.columns)
    datasets, complete, status_name = _enumerate(rm, options, deadline)
    base: dict[str, Any] = {
        "columns": columns,
        "ignored": list(rm.ignored),
        "records": (rm.bounds.low, rm.bounds.high),
        "noise": noise,
    }

    if not datasets:
        if status_name == "INFEASIBLE":
            _tell(options, deadline, "explaining")
            conflict, minimal = explain_infeasibility(release, known, options, deadline)
            return ReconstructionResult(
                status="infeasible", complete=True, conflict=conflict, conflict_minimal=minimal,
                certain_complete=True, elapsed_s=time.monotonic() - started, **base,
            )
        return ReconstructionResult(status="unknown", elapsed_s=time.monotonic() - started,
                                    **base)

    status: Status
    cells = _cells_seen(datasets, rm)
    if complete:
        status = "unique" if len(datasets) == 1 else "multiple"
        certain = _intersection(datasets)
        values = _values_seen(datasets, rm)
        ranges: dict[str, tuple[int, int]] = {}
        certain_complete = True
    else:
        status = "multiple" if len(datasets) >= 2 else "unknown"
        certain, values, ranges, certain_complete = _prove_certain(
            release, known, options, deadline, datasets, rm)
        cells, cells_proven = _prove_cells(release, known, options, deadline, cells)
        certain_complete = certain_complete and cells_proven
    keep = datasets if options.keep_solutions is None else datasets[: options.keep_solutions]
    return ReconstructionResult(
        status=status,
        solution_count=len(datasets),
        complete=complete,
        solutions=[_decode(d, rm) for d in keep],
        certain_rows=[CertainRow(_decode_row(t, rm), k) for t, k in sorted(certain.items())],
        certain_cells=[
            CertainCell(_known_part(rm, r), name, rm.release.schema.column(name).decode(v))
            for (r, name), vs in sorted(cells.items()) if len(vs) == 1 for v in vs
        ],
        column_values={c: [rm.release.schema.column(c).decode(v) for v in sorted(vs)]
                       for c, vs in values.items()},
        column_ranges={c: (rm.release.schema.column(c).decode(lo),
                           rm.release.schema.column(c).decode(hi))
                       for c, (lo, hi) in ranges.items()},
        certain_complete=certain_complete,
        elapsed_s=time.monotonic() - started,
        **base,
    )


def _noisy(release: Release) -> list[Noisy]:
    return [s.answer for s in release.statistics if isinstance(s.answer, Noisy)]


def _noise_use(release: Release, options: ExactOptions) -> NoiseUse:
    """The noise record of a result: which statistics are noisy and, under ``bounds``, the
    probability of the event the claims rest on (independent noises)."""
    ids = tuple(s.id for s in release.statistics if isinstance(s.answer, Noisy))
    if options.noise_mode != "bounds":
        return NoiseUse(options.noise_mode, ids)
    assert options.noise_k is not None
    chance = math.prod(noise_within(a, options.noise_k) for a in _noisy(release))
    return NoiseUse("bounds", ids, options.noise_k, chance)


def _out_of_time(release: Release, known: KnownData, options: ExactOptions, noise: NoiseUse,
                 started: float) -> ReconstructionResult:
    """Unknown: the time limit passed while the model was being built."""
    bounds = row_count_bounds(release, known, options.noise)
    ignored = list(noise.statistics) if noise.mode == "ignore" else []
    return ReconstructionResult(
        status="unknown", columns=tuple(c.name for c in release.schema.columns),
        ignored=ignored, records=(bounds.low, bounds.high), noise=noise,
        elapsed_s=time.monotonic() - started)


class _Improving(cp_model.CpSolverSolutionCallback):
    """Counts the improving datasets of an optimisation, for progress."""

    def __init__(self, tell: Callable[[int], None]) -> None:
        super().__init__()
        self.tell = tell
        self.count = 0

    def on_solution_callback(self) -> None:
        self.count += 1
        self.tell(self.count)


def reconstruct_ml(release: Release, known: KnownData, options: ExactOptions
                   ) -> ReconstructionResult:
    """A most likely dataset: exact statistics (and uniform noise, bounded) as constraints,
    the other noisy answers weighed by their likelihood (``RecordModel._likelihood``).

    Status ``estimated`` when CP-SAT proved the objective optimal (no dataset is more likely;
    another may be as likely), ``unknown`` on a time limit (the best dataset found is still
    shown), ``infeasible`` when the constraints alone cannot hold. Nothing here is called
    unique or certain: the noise could have been anything."""
    started = time.monotonic()
    deadline = Deadline.after(options.time_limit)
    noise, rm = _start(release, known, options, deadline)
    if rm is None:  # the time limit covers building the model too
        return _out_of_time(release, known, options, noise, started)
    base: dict[str, Any] = {"columns": tuple(c.name for c in rm.columns), "ignored": [],
                            "records": (rm.bounds.low, rm.bounds.high)}
    if rm.objective is not None:
        rm.model.minimize(rm.objective.expr)
    solver = _solver(options, deadline)
    _tell(options, deadline, "optimising")
    status = solver.solve(rm.model, _Improving(
        lambda k: _tell(options, deadline, "optimising", found=k)))
    if status == cp_model.INFEASIBLE:
        _tell(options, deadline, "explaining")
        conflict, minimal = explain_infeasibility(release, known, options, deadline)
        return ReconstructionResult(
            status="infeasible", complete=True, conflict=conflict, conflict_minimal=minimal,
            certain_complete=True, noise=noise, elapsed_s=time.monotonic() - started, **base)
    if not found(status):
        return ReconstructionResult(status="unknown", noise=noise,
                                    elapsed_s=time.monotonic() - started, **base)
    optimal = status == cp_model.OPTIMAL
    scale = rm.objective.scale if rm.objective is not None else 1.0
    noise = replace(noise, objective=solver.objective_value / scale,
                    objective_bound=solver.best_objective_bound / scale, optimal=optimal)
    return ReconstructionResult(
        status="estimated" if optimal else "unknown", solution_count=1,
        solutions=[_decode(rm.dataset(solver.value), rm)], noise=noise,
        elapsed_s=time.monotonic() - started, **base)


def _decode_row(t: tuple[int, ...], rm: RecordModel) -> Row:
    return {c.name: v if c.type is ColumnType.REAL else c.decode(v)
            for c, v in zip(rm.columns, t, strict=True)}


def _decode(d: Dataset, rm: RecordModel) -> list[Row]:
    return [_decode_row(t, rm) for t in d]


def _identifiable_rows(rm: RecordModel) -> dict[tuple[Any, ...], int]:
    """Public rows whose known values appear once: an attacker can point at them."""
    if rm.known.public is None:
        return {}
    keys = [tuple(rm.x[r][c.name] for c in rm.columns if c.known) for r in range(rm.n)]
    counts = Counter(keys)
    return {k: r for r, k in enumerate(keys) if counts[k] == 1}


def _known_part(rm: RecordModel, r: int) -> Row:
    row = _decode_row(tuple(rm.x[r][c.name] if c.known else 0 for c in rm.columns), rm)
    return {c.name: row[c.name] for c in rm.columns if c.known}


def _cells_seen(datasets: list[Dataset], rm: RecordModel) -> dict[tuple[int, str], set[int]]:
    """For identifiable public rows: the values each unknown cell takes across datasets."""
    rows = _identifiable_rows(rm)
    known_pos = [i for i, c in enumerate(rm.columns) if c.known]
    unknown_pos = [(i, c.name) for i, c in enumerate(rm.columns) if not c.known]
    seen: dict[tuple[int, str], set[int]] = {}
    for d in datasets:
        for t in d:
            r = rows.get(tuple(t[i] for i in known_pos))
            if r is None:
                continue
            for i, name in unknown_pos:
                seen.setdefault((r, name), set()).add(t[i])
    return seen


def _prove_cells(
    release: Release, known: KnownData, options: ExactOptions, deadline: Deadline,
    cells: dict[tuple[int, str], set[int]],
) -> tuple[dict[tuple[int, str], set[int]], bool]:
    """Prove each cell that agreed in every found dataset: is any other value possible?"""
    proven = True
    out = dict(cells)
    todo = sum(1 for vs in cells.values() if len(vs) == 1)
    done = 0
    for (r, name), vs in sorted(cells.items()):
        if len(vs) != 1:
            continue
        _tell(options, deadline, "proving cells", done, todo)
        done += 1
        try:
            rm = _model(release, known, options, deadline)
        except OutOfTime:
            out[(r, name)] = vs | {-1}  # undecided: not reported as certain
            proven = False
            continue
        rm.model.add(rm.x[r][name] != next(iter(vs)))
        solver = _solver(options, deadline)
        status = solver.solve(rm.model)
        if status == cp_model.INFEASIBLE:
            continue
        if found(status):
            out[(r, name)] = vs | {int(solver.value(rm.x[r][name]))}
        else:
            out[(r, name)] = vs | {-1}  # undecided: not reported as certain
            proven = False
    return out, proven


def _intersection(datasets: list[Dataset]) -> Counter[tuple[int, ...]]:
    common = Counter(datasets[0])
    for d in datasets[1:]:
        common &= Counter(d)
    return common


def _values_seen(datasets: list[Dataset], rm: RecordModel) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {c.name: set() for c in rm.unknown}
    index = {c.name: i for i, c in enumerate(rm.columns)}
    for d in datasets:
        for t in d:
            for name in out:
                out[name].add(t[index[name]])
    return out


def _prove_certain(
    release: Release, known: KnownData, options: ExactOptions, deadline: Deadline,
    datasets: list[Dataset], rm0: RecordModel,
) -> tuple[Counter[tuple[int, ...]], dict[str, set[int]], dict[str, tuple[int, int]], bool]:
    """Certain rows, possible values and (for columns too wide to list) the proven range of
    values, by solver proofs, when enumeration did not finish."""
    proven = True
    certain: Counter[tuple[int, ...]] = Counter()
    common = sorted(_intersection(datasets).items())
    for i, (t, k) in enumerate(common):
        _tell(options, deadline, "proving rows", i, len(common))
        try:
            rm = _model(release, known, options, deadline)
        except OutOfTime:
            proven = False
            break
        copies = sum(rm._as_int(rm._and(rm.present[r], _row_equals(rm, r, t)))
                     for r in range(rm.n))
        rm.model.minimize(copies)
        solver = _solver(options, deadline)
        status = solver.solve(rm.model)
        if status == cp_model.OPTIMAL:
            least = round(solver.objective_value)
            if least > 0:
                certain[t] = min(k, least)
        else:
            proven = False
    values = _values_seen(datasets, rm0)
    ranges: dict[str, tuple[int, int]] = {}
    for i, name in enumerate(values):
        _tell(options, deadline, "proving values", i, len(values))
        lo, hi = rm0._domain(release.schema.column(name))
        if hi - lo + 1 <= MAX_VALUES_PROVEN:
            proven = _prove_values(release, known, options, deadline, name, values) and proven
            continue
        extremes = _prove_extremes(release, known, options, deadline, name, values)
        if extremes is None:
            proven = False
        else:  # the range is proven; the values listed are those seen, not every one
            ranges[name] = extremes
    return certain, values, ranges, proven


def _add_witness(rm: RecordModel, solver: cp_model.CpSolver, values: dict[str, set[int]]
                 ) -> None:
    """Every value of a dataset the solver found is possible."""
    index = {c.name: i for i, c in enumerate(rm.columns)}
    for row in rm.dataset(solver.value):
        for other in values:
            values[other].add(row[index[other]])


def _prove_values(release: Release, known: KnownData, options: ExactOptions,
                  deadline: Deadline, name: str, values: dict[str, set[int]]) -> bool:
    """Add every possible value of a small-domain column: solve for an unseen one until none is
    left (INFEASIBLE). False when the deadline cut it short."""
    col = release.schema.column(name)
    while True:
        try:
            rm = _model(release, known, options, deadline)
        except OutOfTime:
            return False
        lo, hi = rm._domain(col)
        unseen = [v for v in range(lo, hi + 1) if v not in values[name]]
        if not unseen:
            return True
        _some_row_value(rm, name, cp_model.Domain.from_values(unseen))
        solver = _solver(options, deadline)
        status = solver.solve(rm.model)
        if found(status):
            _add_witness(rm, solver, values)
        else:
            return status == cp_model.INFEASIBLE


def _some_row_value(rm: RecordModel, name: str, domain: cp_model.Domain) -> Any:
    """A variable equal to column ``name`` of some present row, restricted to ``domain``: one
    copy of the domain, not one per row."""
    y = rm.model.new_int_var_from_domain(domain, "")
    pick = [rm.model.new_bool_var("") for _ in range(rm.n)]
    rm.model.add_exactly_one(pick or [rm._false])
    for r, b in enumerate(pick):
        if rm.present[r] is not True:
            rm.model.add_implication(b, rm.present[r])
        rm.model.add(y == rm.x[r][name]).only_enforce_if(b)
    return y


def _prove_extremes(release: Release, known: KnownData, options: ExactOptions,
                    deadline: Deadline, name: str, values: dict[str, set[int]]
                    ) -> tuple[int, int] | None:
    """The smallest and largest possible value of a column, proven OPTIMAL without listing its
    domain (their witnesses join ``values``); None when a proof did not finish."""
    found: list[int] = []
    for maximize in (False, True):
        try:
            rm = _model(release, known, options, deadline)
        except OutOfTime:
            return None
        lo, hi = rm._domain(release.schema.column(name))
        y = _some_row_value(rm, name, cp_model.Domain(lo, hi))
        if maximize:
            rm.model.maximize(y)
        else:
            rm.model.minimize(y)
        solver = _solver(options, deadline)
        if solver.solve(rm.model) != cp_model.OPTIMAL:
            return None
        _add_witness(rm, solver, values)
        found.append(round(solver.objective_value))
    return found[0], found[1]


def _row_equals(rm: RecordModel, r: int, t: tuple[int, ...]) -> Any:
    lits = []
    for c, v in zip(rm.columns, t, strict=True):
        x = rm.x[r][c.name]
        if isinstance(x, int):
            if x != v:
                return False
            continue
        b = rm.model.new_bool_var("")
        rm.model.add(x == v).only_enforce_if(b)
        rm.model.add(x != v).only_enforce_if(~b)
        lits.append(b)
    return rm._conj(lits)


def explain_infeasibility(
    release: Release, known: KnownData, options: ExactOptions | None = None,
    deadline: Deadline | None = None,
) -> tuple[list[str], bool]:
    """A small set of statistics (and background facts) that cannot hold together.

    CP-SAT returns a sufficient set of assumptions for infeasibility; a deletion pass then
    drops every member whose removal keeps the set infeasible. The set is proven infeasible;
    ``minimal`` is True only when every deletion test was decided by the solver.
    """
    options = options or ExactOptions()
    deadline = deadline or Deadline.after(options.time_limit)
    check_model_size(release, known, options.max_model_size, options.noise)
    try:
        rm = _model(release, known, options, deadline, switches=True)
    except OutOfTime:
        return [], False
    labels = {v.index: k for k, v in rm.switches.items()}

    def check(active: list[str]) -> tuple[Any, list[str]]:
        rm.model.clear_assumptions()
        rm.model.add_assumptions([rm.switches[a] for a in active])
        solver = _solver(options, deadline, workers=1)
        status = solver.solve(rm.model)
        core: list[str] = []
        if status == cp_model.INFEASIBLE:
            core = [labels[i] for i in solver.sufficient_assumptions_for_infeasibility()]
        return status, core

    order = list(rm.switches)
    status, core = check(order)
    if status != cp_model.INFEASIBLE:
        return [], False
    conflict = [a for a in order if a in set(core)] or order
    minimal = True
    for label in list(conflict):
        if label not in conflict:
            continue
        trial = [a for a in conflict if a != label]
        status, core = check(trial)
        if status == cp_model.INFEASIBLE:
            keep = set(core) if core else set(trial)
            conflict = [a for a in trial if a in keep] or trial
        elif status != cp_model.FEASIBLE and status != cp_model.OPTIMAL:
            minimal = False
    # The model has at most bounds.high rows because of these facts: they belong to the conflict.
    for label in rm.bounds.source:
        if label != "public table" and label not in conflict:
            conflict.insert(0, label)
    return conflict, minimal
