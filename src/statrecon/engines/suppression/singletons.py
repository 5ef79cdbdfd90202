"""Secondary suppression that also holds against each singleton (a respondent alone in a
suppressed cell, who knows its value: :mod:`statrecon.engines.intervals.singletons`).

An outer loop around ``protect``: protect as usual; audit every primary cell against every
suppressed singleton; for each singleton that still discloses a primary cell, protect those
cells in the singleton's problem (its cell's value known, the cells already suppressed free
to reuse) and add the cells that run chose. Suppressing more never undoes a protection, so
each round keeps what the earlier ones proved, and a round that adds nothing cannot happen
(the singleton's run would have found the pattern protecting already). The verdict is the
final audit's: protected against the stranger (the inner ``protect``'s integer audit) and
against every singleton (``audit_singletons``), each proven, or unknown. "Infeasible" comes
only from a singleton's run proving that no allowed cells protect a primary cell from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

from statrecon.engines.intervals import (
    AuditOptions,
    AuditResult,
    IntervalProblem,
    audit,
    prepare,
)
from statrecon.engines.intervals.singletons import SingletonAudit, audit_singletons
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression.entry import protect
from statrecon.engines.suppression.run import ProtectOptions, ProtectResult


def protect_against_singletons(problem: IntervalProblem, singletons: Sequence[int], *,
                               candidates: Sequence[bool] | None = None,
                               costs: Sequence[Fraction | int] | None = None,
                               options: ProtectOptions | None = None
                               ) -> tuple[ProtectResult, tuple[SingletonAudit, ...]]:
    """``protect``, then more cells until no singleton of ``singletons`` (cell indices)
    discloses or under-protects a primary cell. Returns the result and the final singleton
    audits (every one protected when the status is feasible)."""
    options = options or ProtectOptions()
    deadline = Deadline.after(options.time_limit)
    n = problem.n_cells
    allowed = tuple(not h for h in problem.hidden) if candidates is None else tuple(candidates)
    cost = (Fraction(1),) * n if costs is None else tuple(Fraction(c) for c in costs)
    primaries = [j for j in range(n) if problem.hidden[j]]
    result = protect(problem, candidates=allowed, costs=cost, options=options)
    audits: tuple[SingletonAudit, ...] = ()
    rounds = 0
    while result.status in ("optimal", "feasible"):
        hidden = result.hidden
        pattern = replace(problem, hidden=hidden)
        audits = audit_singletons(prepare(pattern, checked=True),
                                  [s for s in singletons if hidden[s]], primaries,
                                  AuditOptions(time_limit=None, deadline=deadline))
        failing = [a for a in audits if a.audit.verdict != "protected"]
        if not failing:
            status = "feasible" if rounds else result.status
            note = _note(result.note, rounds, len([s for s in singletons if hidden[s]]))
            return replace(result, status=status, note=note), audits
        if any(a.audit.verdict == "unknown" for a in failing) or deadline.expired:
            return _unknown(result, "a singleton's audit was not proven in time"), audits
        added: set[int] = set()
        for s in sorted({a.singleton for a in failing}):
            cells = sorted({a.audit.cell for a in failing if a.singleton == s})
            theirs = _singletons_problem(problem, hidden, s, cells)
            may = tuple((allowed[j] or hidden[j]) and j != s and j not in cells
                        for j in range(n))
            free = tuple(Fraction(0) if hidden[j] else cost[j] for j in range(n))
            run = protect(theirs, candidates=may, costs=free,
                          options=replace(options, time_limit=deadline.left()))
            if run.status == "infeasible":
                name = problem.cell_names[s]
                return replace(result, status="infeasible", note=(
                    f"the single contributor of {name} (who knows its value): {run.note}")
                    ), audits
            if run.status not in ("optimal", "feasible"):
                return _unknown(result, "protecting against a singleton ran out of time"), \
                    audits
            added |= {j for j in range(n) if run.hidden[j] and not hidden[j]}
        rounds += 1
        grown = tuple(h or j in added for j, h in enumerate(hidden))
        result = _grown(problem, result, grown, cost, options, deadline)
    return result, audits


def _singletons_problem(problem: IntervalProblem, hidden: Sequence[bool], singleton: int,
                        cells: Sequence[int]) -> IntervalProblem:
    """What singleton ``singleton`` sees, with only ``cells`` to protect: its own cell's
    bounds pinned to its value, the other cells published (those of the pattern are offered
    at no cost)."""
    lower, upper = list(problem.lower), list(problem.upper)
    lower[singleton] = upper[singleton] = problem.values[singleton]
    todo = set(cells)
    return replace(problem, lower=tuple(lower), upper=tuple(upper),
                   hidden=tuple(j in todo for j in range(problem.n_cells)))


def _grown(problem: IntervalProblem, before: ProtectResult, hidden: tuple[bool, ...],
           cost: Sequence[Fraction], options: ProtectOptions, deadline: Deadline
           ) -> ProtectResult:
    """The result for the larger pattern ``hidden``: its stranger's audit re-run (a superset
    keeps every protection, but the audit is what proves it)."""
    primaries = before.primary
    audited = audit(replace(problem, hidden=hidden), primaries,
                    AuditOptions(time_limit=None, deadline=deadline))
    ok = all(c.verdict == "protected" for c in audited.cells)
    secondary = (*before.secondary,
                 *sorted(j for j, h in enumerate(hidden) if h and j not in before.secondary
                         and j not in primaries))
    return replace(before, hidden=hidden, secondary=secondary,
                   cost=sum((cost[j] for j in secondary), Fraction(0)),
                   status="feasible" if ok else "unknown",
                   audit=AuditResult(audited.cells, audited.elapsed_s))


def _unknown(result: ProtectResult, why: str) -> ProtectResult:
    return replace(result, status="unknown", note=why)


def _note(note: str, rounds: int, singletons: int) -> str:
    said = f"protected against each of {singletons} singleton(s) knowing their own cell"
    if rounds:
        said += f" ({rounds} round(s) added cells for them)"
    return f"{note}; {said}" if note else said
