"""The audit of suppressed cells: per cell its LP interval and integer interval, each bound
proven or unknown, the attack in words and the verdict. Cells are independent:
``audit_cell`` is a module-level function of picklable arguments, so a process pool or Dask
can map it over the cells of one ``prepare``d problem; ``audit`` runs them in turn."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from statrecon.engines.intervals import local
from statrecon.engines.intervals.integer import (
    ComponentModel,
    IntOutcome,
    from_lp,
    model_problem,
)
from statrecon.engines.intervals.local import SIDES, local_sides
from statrecon.engines.intervals.lp import LpOutcome, component_box, lp_bound
from statrecon.engines.intervals.problem import Component, IntervalProblem, Prepared, prepare
from statrecon.engines.intervals.results import (
    Attack,
    AuditResult,
    Bound,
    CellAudit,
    Interval,
    attack_of,
    verdict,
)
from statrecon.engines.intervals.settle import settle
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.errors import StatreconError, check_count, check_option, check_time_limit

DEFAULT_TIME_LIMIT = 10.0  # seconds per cell, all its solves together


@dataclass(frozen=True)
class AuditOptions:
    """``time_limit``: seconds per cell for all its solves (LP both ways, then CP-SAT), None
    for none; a bound not proven in time is unknown, never guessed. ``integer``: also the
    integer interval (on the lattice 1/scale). ``workers``: CP-SAT search workers per solve
    (cells are the unit of parallelism, so 1). ``on_progress(done, total)`` is called by
    ``audit`` after each cell; ``audit_cell`` never calls it (drop it before pickling).
    ``deadline``: an end shared by a whole batch of cells (``time.monotonic``'s clock, so
    this machine's processes only): each cell stops at the earlier of it and its own limit,
    so a batch cannot take its time limit once per cell. Like every ``*Options``:
    ``time_limit`` None means no limit, the field's default (``AuditOptions.time_limit``) is
    the engine's; a value out of range raises ``OptionError`` when the options are made."""

    time_limit: float | None = DEFAULT_TIME_LIMIT
    integer: bool = True
    workers: int = 1
    on_progress: Callable[[int, int], None] | None = None
    deadline: Deadline | None = None
    whole: bool = True  # False: a side its neighbourhood leaves open stays unknown
    windows: tuple[tuple[int, ...], ...] = ()  # cells loosely tied (:mod:`.settle`)

    def __post_init__(self) -> None:
        check_time_limit(self)
        check_count(self, "workers")
        check_option(self, "windows", all(c >= 0 for w in self.windows for c in w),
                     "cell indices (at least 0)")


def audit(problem: IntervalProblem | Prepared, cells: Sequence[int] | None = None,
          options: AuditOptions | None = None) -> AuditResult:
    """Audit the given suppressed cells (default: every suppressed cell) one after another."""
    options = options or AuditOptions()
    start = time.perf_counter()
    prep = problem if isinstance(problem, Prepared) else prepare(problem)
    todo = list(cells) if cells is not None else [
        j for j, h in enumerate(prep.problem.hidden) if h]
    for j in todo:
        _check_cell(prep.problem, j)
    n = prep.problem.n_cells
    if any(c >= n for w in options.windows for c in w):
        raise StatreconError(f"a window names a cell beyond the problem's {n} cells")
    large = any(len(c.cells) >= local.LOCAL_FROM for c in prep.components)
    first = replace(options, whole=False) if large and options.whole else options
    out = _settled(prep, todo, options) if large else {}
    settled = len(out)  # counted as done: progress goes on from there
    if settled and options.on_progress is not None:
        options.on_progress(settled, len(todo))
    for done, j in enumerate((j for j in todo if j not in out), start=settled + 1):
        out[j] = audit_cell(prep, j, first)
        if options.on_progress is not None:
            options.on_progress(done, len(todo))
    expired = options.deadline is not None and options.deadline.expired
    if first is not options and not expired:  # then the sides no neighbourhood decided,
        # over the whole, each cell within what its time limit has left
        again = [j for j in todo if not _decided(out[j], options.integer)]
        for done, j in enumerate(again, start=len(todo) + 1):
            left = None if options.time_limit is None else \
                options.time_limit - out[j].elapsed_s
            if left is None or left > 0:
                whole = audit_cell(prep, j, replace(options, time_limit=left))
                out[j] = replace(whole, elapsed_s=whole.elapsed_s + out[j].elapsed_s)
            if options.on_progress is not None:
                options.on_progress(done, len(todo) + len(again))
    return AuditResult(tuple(out[j] for j in todo), time.perf_counter() - start)


def _settled(prep: Prepared, todo: Sequence[int], options: AuditOptions
             ) -> dict[int, CellAudit]:
    """The cells of large components that :mod:`.settle` decides, within the time their
    limits add up to (and the shared deadline)."""
    large = [j for j in todo
             if len(prep.components[prep.component_of[j]].cells) >= local.LOCAL_FROM]
    limit = None if options.time_limit is None else options.time_limit * len(large)
    start = time.perf_counter()
    found = settle(prep, large, _earlier(Deadline.after(limit), options.deadline),
                   options.windows, options.on_progress)
    share = (time.perf_counter() - start) / max(1, len(large))
    return {j: replace(a, elapsed_s=share) for j, a in found.items()}


def _decided(a: CellAudit, integer: bool) -> bool:
    sides = [a.lp] + ([a.integer] if integer and a.integer is not None else [])
    return all(iv.lower.proven and iv.upper.proven for iv in sides)


def _check_cell(p: IntervalProblem, j: int) -> None:
    if not 0 <= j < p.n_cells:
        raise StatreconError(f"cell {j} does not exist (the problem has {p.n_cells} cells)")
    if not p.hidden[j]:
        raise StatreconError(f"cell {p.cell_names[j]!r} is published, not suppressed: "
                             "nothing to audit", statistic=p.cell_names[j])


def audit_cell(problem: IntervalProblem | Prepared, j: int,
               options: AuditOptions | None = None) -> CellAudit:
    """One suppressed cell (pass a ``prepare``d problem when auditing several)."""
    options = options or AuditOptions()
    start = time.perf_counter()
    prep = problem if isinstance(problem, Prepared) else prepare(problem)
    p = prep.problem
    _check_cell(p, j)
    ci = prep.component_of[j]
    comp = prep.components[ci]
    jl = comp.local[j]
    deadline = _earlier(Deadline.after(options.time_limit), options.deadline)
    # past the deadline nothing is solved or set up (a batch of 100,000 cells past a shared
    # deadline took 1,075 s to say unknown, 5 ms a cell): each side unknown at once
    late = deadline.expired
    # each side with the problem its indices refer to: a neighbourhood (local.py) or comp
    found = (None, None) if late else local_sides(prep, ci, jl, deadline)
    open_side = LpOutcome("unknown", note="time limit" if late else
                          "not decided by the equations around the cell")
    low, high = (got if got is not None else
                 (lp_bound(prep.solver(ci), comp, {jl: 1}, side, deadline, p.scale)
                  if options.whole and not late else open_side, comp)
                 for got, side in zip(found, SIDES, strict=True))
    lp = Interval(_lp_bound(low[1], low[0]), _lp_bound(high[1], high[0]))
    integer = None
    if options.integer:
        sides = _integer(prep, ci, jl, (low[0], high[0]), deadline, options.workers,
                         options.whole)
        integer = Interval(*(_int_bound(space if o.of_lp else comp, o, lp_side, space)
                             for o, (lp_side, space) in zip(sides, (low, high), strict=True)))
    protection, sliding = p.protection_of(j), p.sliding_of(j)
    return CellAudit(cell=j, name=p.cell_names[j], value=p.values[j], protection=protection,
                     lp=lp, integer=integer, attack=_attack(p, (low, high)),
                     verdict=verdict(p.values[j], protection, lp, integer, sliding),
                     elapsed_s=time.perf_counter() - start, sliding=sliding)


def _earlier(own: Deadline, shared: Deadline | None) -> Deadline:
    if shared is None or shared.end is None:
        return own
    return shared if own.end is None or shared.end < own.end else own


def _integer(prep: Prepared, ci: int, jl: int, lp: tuple[LpOutcome, LpOutcome],
             deadline: Deadline, workers: int, whole: bool = True
             ) -> tuple[IntOutcome, IntOutcome]:
    """Both sides of the integer interval; the CP-SAT model is built once, if needed (never
    when not ``whole``: only what the LP sides give)."""
    scale, comp = prep.problem.scale, prep.components[ci]
    quick = [from_lp(side, scale) for side in lp]
    if all(q is not None for q in quick):
        return quick[0], quick[1]  # type: ignore[return-value]
    if not whole:
        later = IntOutcome("unknown", note="left to the whole component")
        return quick[0] or later, quick[1] or later
    if deadline.expired:  # the box alone costs an LP over the component, for each cell
        late = IntOutcome("unknown", note="time limit")
        return quick[0] or late, quick[1] or late
    if ("box", ci) not in prep.cache:
        box = component_box(prep.solver(ci), comp, deadline, scale)
        if box is not None:
            prep.cache["box", ci] = box
    box_hi = prep.cache.get(("box", ci))
    why = model_problem(box_hi, comp, scale)
    if why is not None or box_hi is None:
        unknown = IntOutcome("unknown", note=why or "")
        return quick[0] or unknown, quick[1] or unknown
    key = ("cpsat", ci, threading.get_ident())
    if key not in prep.cache:
        truth = tuple(prep.problem.values[c] for c in comp.cells)
        prep.cache[key] = ComponentModel(comp, box_hi, truth, scale)
    model = prep.cache[key].cell(jl, lp)
    return (quick[0] or model.bound("lower", deadline, workers),
            quick[1] or model.bound("upper", deadline, workers))


def _globals(comp: Component, local: tuple[Fraction, ...]) -> tuple[tuple[int, Fraction], ...]:
    return tuple((comp.cells[i], v) for i, v in enumerate(local))


def _lp_bound(comp: Component, o: LpOutcome) -> Bound:
    mult = tuple((comp.equations[k], y) for k, y in o.multipliers)
    if o.status != "proven":
        return Bound(None, "unknown", "none", note=o.note)
    if o.value is None:
        return Bound(None, "proven", "ray", ray=_globals(comp, o.ray))
    return Bound(o.value, "proven", "dual", multipliers=mult, witness=_globals(comp, o.point))


def _int_bound(comp: Component, o: IntOutcome, lp: LpOutcome, space: Component) -> Bound:
    """``comp``: the problem of the witness's indices; ``space``: that of the LP side's."""
    if o.status != "proven":
        return Bound(None, "unknown", "none", note=o.note)
    if o.proof == "ray":
        return Bound(None, "proven", "ray", ray=_globals(space, lp.ray))
    mult = tuple((space.equations[k], y) for k, y in lp.multipliers) \
        if o.proof == "lp-dual" else ()
    return Bound(o.value, "proven", o.proof, multipliers=mult,
                 witness=_globals(comp, o.witness))


def _attack(p: IntervalProblem, lp: tuple[tuple[LpOutcome, Component], ...]) -> Attack:
    """Equations with a non-zero multiplier in either LP certificate, and the published cells
    they hold."""
    return attack_of(p, (space.equations[k] for side, space in lp for k, y in side.multipliers
                         if y))
