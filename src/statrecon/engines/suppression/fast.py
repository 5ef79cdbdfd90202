"""The fast method of secondary suppression. What both methods share (the options, the
result, the state of one run) is in :mod:`.run`; the public entry is
:func:`statrecon.engines.suppression.protect`.

Fast: the Gaussian-elimination pass (:mod:`.gauss`) suppresses cells until no
primary cell, nor any sum of primary cells that non-negativity would pin with it
(:mod:`.inner`), is determined by the equations alone; then a repair loop proves what
witness tables can, adds for each primary cell still short the cells of its routes
(:mod:`.routes`: the cheapest cells that let it move by its level, their change kept as a
witness once checked exactly), and only for what routes cannot settle screens in floats,
adds the cells of its cuts (:mod:`.cuts`) and audits exactly, until every primary cell
passes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from statrecon.engines.intervals.reach import Reached, protected_audit, targets
from statrecon.engines.intervals.witness_search import search
from statrecon.engines.suppression.cuts import Cut
from statrecon.engines.suppression.gauss import gauss_pattern
from statrecon.engines.suppression.inner import bound_sums
from statrecon.engines.suppression.prune import prune
from statrecon.engines.suppression.run import (
    ProtectResult,
    Repair,
    Run,
    by_witness,
    keep_met,
    suppress_order,
)

ONE_BY_ONE = 200  # cells of a component left by the witness batches that are moved singly


def gauss_secondaries(run: Run, order: Sequence[int] | None = None,
                      published: list[int] | None = None) -> list[int]:
    """The Gaussian pass of ``run`` (:mod:`.gauss`): the cells that may not be
    suppressed are published first, then the candidates in the reverse of ``order``
    (default :func:`.run.suppress_order`); no primary cell, nor any sum of primary cells at their
    bound (:func:`.inner.bound_sums`), is left determined by the equations.
    ``published``: filled with the candidates in the order the pass offered them.
    Unfinished when the run's deadline expires (the caller checks it)."""
    p = run.problem
    fixed = [j for j in range(p.n_cells) if not p.hidden[j] and not run.candidates[j]]
    first = suppress_order(run) if order is None else order
    offered = list(reversed(first))
    if published is not None:
        published[:] = offered
    secondary, _ = gauss_pattern(p.matrix, run.primaries, fixed, offered,
                                 lambda d, t: run.progress("gauss", d, t),
                                 expired=lambda: run.deadline.expired,
                                 sums=bound_sums(p, run.primaries, run.inner))
    return secondary


def fast(run: Run, order: Sequence[int] | None = None) -> ProtectResult:
    """Gaussian elimination, then the audit-driven repair loop (module docstring).
    ``order``: the candidate cells, those to suppress first first (default
    :func:`suppress_order`)."""
    offered: list[int] = []
    secondary = gauss_secondaries(run, order, offered)
    if run.deadline.expired:
        note = "time limit during the Gaussian elimination: no pattern audited"
        return run.result(frozenset(run.primaries), "unknown", {}, note=note)
    return repair(run, frozenset((*run.primaries, *secondary)), secondary, offered)


def repair(run: Run, suppressed: frozenset[int], order: Sequence[int],
           offered: Sequence[int] = ()) -> ProtectResult:
    """Until every primary cell is proven protected (or one is proven impossible to protect,
    or time runs out): prove what witness tables can (:func:`.run.by_witness`), then route
    each cell left (:func:`_by_route`: its route's cells added, its change a witness);
    once routes add nothing, screen the cells left in floats and, while some fails the
    screen, add for each such cell cells its cuts offer; once the floats have nothing to
    add, audit exactly (LP certificates and integer bounds) the primary cells not
    proven yet and repair the ones that fail the same way. A cell proven protected stays
    protected as the pattern grows (the attacker only loses information), so it is not
    audited again. Every round adds a cell or ends: the loop ends. ``order``: the secondary
    cells of the Gaussian pass that gave ``suppressed``, ``offered`` the order it offered
    the candidates in (:func:`settled`; empty: not from a Gaussian pass)."""
    state = Repair(suppressed, list(order), gauss=tuple(order), offered=tuple(offered))
    while True:
        if run.deadline.expired:
            return _unknown(run, state, next((i for i in run.primaries
                                              if i not in state.proven), run.primaries[0]))
        # a few cells left by the batches are moved one by one (no new cell, where routes
        # over a neighbourhood may add some: issue 28's levels-0 instance then pruned for
        # 94 s); many are left to the routes, cheaper per cell (18 s for 2,126 on its
        # instance with protection levels)
        left = by_witness(run, state, one_by_one=ONE_BY_ONE)
        todo, routed = _by_route(run, state, left)
        if not routed and todo:
            todo, routed = _by_route(run, state, todo, integer=True)
        if routed:
            continue
        prep, screens = run.oracle.screen(state.suppressed, todo, run.deadline)
        weak = [screens[i] for i in todo if not run.oracle.screen_passes(screens[i])]
        run.progress("screen", len(run.primaries) - len(weak), len(run.primaries))
        found = [(s.cell, run.oracle.screen_cuts(prep, s, state.suppressed))
                 for s in weak if s.solved]
        # only the LP cuts of a screen are valid (any multipliers give one); its
        # neighbourhood cut rests on a float verdict, so it only suggests a cell
        run.pool.extend(c for _, cuts in found for c in cuts if c.kind == "lp")
        stop, added = _grow(run, state, found, proven=False)
        if stop is not None or added:
            if stop is not None:
                return stop
            continue
        todo = _by_search(run, state, todo)
        prep, state.audits = run.oracle.audit(state.suppressed, run.deadline, True, todo)
        for i, a in state.audits.items():
            if a.verdict == "protected":
                state.proven[i], state.proven_at[i] = a, len(state.suppressed)
        run.progress("audit", len(state.proven), len(run.primaries))
        failing = [a for a in state.audits.values() if a.verdict != "protected"]
        if not failing:
            return _finish(run, state)
        unknown = [a for a in failing if a.verdict == "unknown"]
        if unknown:
            return _unknown(run, state, unknown[0].cell)
        found = [(a.cell, run.oracle.cuts(prep, a, state.suppressed)) for a in failing]
        run.pool.extend(c for _, cuts in found for c in cuts)
        stop, _ = _grow(run, state, found, proven=True)
        if stop is not None:
            return stop


def _finish(run: Run, state: Repair) -> ProtectResult:
    """The protecting pattern found, pruned (when asked) of the secondary cells its
    witnesses do not need: the dearest first, then the largest."""
    state.audits = dict(state.proven)
    note = _proof_note(state)
    p, prim = run.problem, set(run.primaries)
    keep = settled(state)
    order = sorted((j for j in state.suppressed if j not in prim and j not in keep),
                   key=lambda j: (-run.costs[j], -p.values[j], -j))
    if run.prune and order and not run.deadline.expired:
        got = prune(run.oracle.prepared(state.suppressed), state.audits, order,
                    run.deadline)
        run.progress("prune", len(got.published), len(order))
        if got.published:
            state.suppressed, state.audits = got.suppressed, got.audits
            note = " ".join(filter(None, [note, (
                f"{len(got.published)} secondary cells were published again: the "
                "witnesses of every primary cell hold them at their true values")]))
    return run.result(state.suppressed, "feasible", state.audits, state.order, note=note)


def settled(state: Repair) -> frozenset[int]:
    """The secondary cells of the Gaussian pass that no pruning can publish again: those it
    chose before it offered any cell the repair loop then suppressed. When the pass chose
    such a cell s, publishing it would have let the cells published until then determine
    some primary cell (or a sum of primary cells at their bound, each then pinned); those
    cells are all still published, so publishing s now would do the same, and no witness
    can exist (modulo the pass's prime: a cell it wrongly thought needed is only kept,
    never published on a guess). Pruning tries the others: the cells the repair loop
    added, and the pass's cells chosen after the first of them (with that one suppressed
    the span they were measured against is smaller now)."""
    if not state.offered:
        return frozenset()
    position = {j: k for k, j in enumerate(state.offered)}
    gauss = set(state.gauss)
    added = [position[j] for j in state.order if j not in gauss and j in position]
    first = min(added, default=len(state.offered))
    return frozenset(j for j in state.gauss if position[j] < first)


def _by_search(run: Run, state: Repair, todo: list[int]) -> list[int]:
    """Before the full audit: CP-SAT witnesses (feasibility only, no optimum to prove) for
    the cells the LP vertices could not prove. Returns the primary cells left unproven."""
    prep = run.oracle.prepared(state.suppressed)
    reached = targets(prep, todo)
    search(prep, reached, run.deadline)
    return keep_met(run, state, prep, reached, todo)


def _grow(run: Run, state: Repair, found: list[tuple[int, list[Cut]]], proven: bool
          ) -> tuple[ProtectResult | None, int]:
    """Add, for each failing primary cell, cells meeting its first cut with open cells
    (:func:`_cover`). A violated cut whose cells are all suppressed already (or that has
    no cells) cannot be met by adding cells: no pattern protects that cell, proven when the
    cut is valid (an LP cut, or any cut from an exact audit: ``proven``). Returns that
    result, or None and how many cells were added."""
    for i, cuts in found:
        for cut in cuts:
            if not _open_cells(cut, state.suppressed) and (proven or cut.kind == "lp"):
                return _infeasible(run, state, i, cut), 0
    added: set[int] = set()
    for _, cuts in found:
        open_cuts = [c for c in cuts if _open_cells(c, state.suppressed | added)]
        if open_cuts:
            added |= _cover(run, open_cuts[0], state.suppressed | added)
    state.grow(run, added)
    return None, len(added)


def _by_route(run: Run, state: Repair, todo: list[int], integer: bool = False
              ) -> tuple[list[int], int]:
    """For each primary cell of ``todo`` (not proven by the witnesses of this pattern), on
    each side still short, its route (:mod:`.routes`): the cheapest cells to add so that it
    can move that far, and the change that moves it, kept as a witness once checked
    exactly (valid under the grown pattern: it moves only suppressed cells and the route's
    cells). A cell whose witnesses then meet its protection is proven. Returns the cells
    left and how many cells were added. One LP per side of a short cell, over its
    neighbourhood: on issue 28's scale instance with protection levels, the cells of one
    round of routes left 35 of 17,254 primary cells short where the cuts of float screens,
    one cell per short primary cell and round, still left 150 after 20 rounds.
    ``integer``: a route whose LP change is off the lattice looks for an integer one (a MIP
    each: for the few cells left once the LP routes add nothing)."""
    mask = np.zeros(run.problem.n_cells, dtype=bool)
    mask[list(state.suppressed)] = True
    prep = run.oracle.prepared(state.suppressed)
    added: set[int] = set()
    reached = {i: state.reached[i] if i in state.reached else targets(prep, [i])[i]
               for i in todo}
    for i in todo:
        r = reached[i]
        for up in _asks(r):
            if run.deadline.expired or r.met():
                break
            if not r.wants()[0 if up else 1]:
                continue
            need = r.goal(True) - r.value if up else r.value - r.goal(False)
            got = run.routes.route(mask, i, up, need, run.deadline.left(), integer)
            if got is None:
                continue
            mask[list(got.cells)] = True
            added.update(got.cells)
            if got.witness is not None and got.value is not None:
                r.offer(up, got.value, got.witness)
    state.grow(run, added)
    for i in todo:
        if reached[i].met():
            state.proven[i] = protected_audit(prep, reached[i])
            state.proven_at[i] = len(state.suppressed)
    state.reached = reached
    run.progress("route", len(state.proven), len(run.primaries))
    return [i for i in todo if i not in state.proven], len(added)


def _asks(r: Reached) -> tuple[bool, ...]:
    """The sides to route, up (True) or down: those short, or for a cell that needs one
    side only (levels 0), down, then up."""
    if r.either:
        return (False, True)
    up, down = r.wants()
    return tuple(side for side, short in ((True, up), (False, down)) if short)


def _cover(run: Run, cut: Cut, suppressed: frozenset[int]) -> set[int]:
    """Cells that meet ``cut`` once added to ``suppressed``, the cheapest per unit of what
    is still short first (:func:`_cheapest`); all its open cells when they cannot. A cut
    is only what every protecting pattern needs, so the cell may still fail and its next
    cut add more; but one cell a round took a round per cell (on issue 28's scale instance
    with protection levels, 20 rounds of 10-30 s each adding 20-400 proven cells). Cells
    the witnesses do not need are published again at the end (:mod:`.prune`)."""
    chosen: set[int] = set()
    while _open_cells(cut, suppressed | chosen) and cut.violated(suppressed | chosen):
        chosen.add(_cheapest(run, cut, frozenset(suppressed | chosen)))
    return chosen


def _proof_note(state: Repair) -> str:
    """Say how many primary cells were proven protected under a part of the pattern."""
    size = len(state.suppressed)
    earlier = sum(1 for n in state.proven_at.values() if n < size)
    if not earlier:
        return ""
    return (f"{earlier} of {len(state.proven)} primary cells were proven protected under a "
            "part of the returned pattern (suppressing more cells only widens an interval); "
            "their intervals under the returned pattern contain the ones shown")


def _open_cells(cut: Cut, suppressed: frozenset[int]) -> list[int]:
    """The cells of ``cut`` not suppressed yet: adding one of them is what can meet it."""
    return [j for j in cut.coefs if j not in suppressed]


def _cheapest(run: Run, cut: Cut, suppressed: frozenset[int]) -> int:
    """The cell, not suppressed yet, with the least cost per unit of the cut's shortfall it
    covers (the callers pass an LP cut first when there is one, else the neighbourhood cut).
    Never a suppressed cell: each round of the repair loop grows the pattern."""
    short = cut.rhs - cut.lhs(suppressed)
    return min(_open_cells(cut, suppressed),
               key=lambda j: (run.costs[j] / min(cut.coefs[j], short),
                              run.problem.values[j], j))


def _infeasible(run: Run, state: Repair, cell: int, cut: Cut) -> ProtectResult:
    why = "its LP interval" if cut.kind == "lp" else "its interval"
    note = (f"cell {run.problem.cell_names[cell]!r} cannot be protected: no cell that may "
            f"be suppressed widens {why} enough (proven over every cell that may be "
            "suppressed)")
    return run.result(state.suppressed, "infeasible", state.audits, state.order, note)


def _unknown(run: Run, state: Repair, cell: int) -> ProtectResult:
    why = "time limit" if run.deadline.expired else "the audit could not prove its bounds"
    note = f"cell {run.problem.cell_names[cell]!r}: protection not established ({why})"
    audits = {**state.audits, **state.proven}
    return run.result(state.suppressed, "unknown", audits, state.order, note)
