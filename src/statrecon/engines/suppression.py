"""Secondary cell suppression: given the primary cells of a table (the cells hidden in an
``IntervalProblem``), suppress further cells so that every primary cell is protected under
the *integer* audit (its integer interval covers value - lower level .. value + upper level,
and is not a single point), at the least cost.

Two methods, both returning a pattern only after auditing it exactly:

- ``fast`` (large and linked tables): a Gaussian-elimination pass in the spirit of SSBtools'
  GaussSuppression (:mod:`.suppression_gauss`) removes every linear disclosure, then a repair
  loop audits the pattern and, for each primary cell still unprotected, suppresses the
  cheapest cell that the attack's certificate says would widen its interval
  (:mod:`.suppression_cuts`). Its status is ``feasible``, never ``optimal``.
- ``exact`` (small tables): a master problem over binary y (HiGHS's MIP, or CP-SAT where
  floats cannot hold its numbers exactly, :mod:`.suppression_exact`) minimising the cost under
  cuts that every protecting pattern satisfies, added lazily from failed audits
  (Fischetti-Salazar LP cuts and neighbourhood cuts, :mod:`.suppression_exact`). The first
  master optimum that passes the integer audit is optimal; ``optimal`` is said only then.

Statuses: ``optimal`` (proven), ``feasible`` (the pattern passed the integer audit),
``infeasible`` (proven by a cut no candidate cell can satisfy: the note names the cell), and
``unknown`` (a time limit, or an audit that could not be proven; ``hidden`` is then the last
pattern tried, not a safe one).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from statrecon.engines.cpsat import Deadline
from statrecon.engines.intervals import IntervalProblem
from statrecon.engines.intervals.problem import check_problem
from statrecon.engines.suppression_cuts import Oracle
from statrecon.engines.suppression_exact import exact
from statrecon.engines.suppression_fast import (
    METHODS,
    ProtectOptions,
    ProtectResult,
    ProtectStatus,
    Run,
)
from statrecon.engines.suppression_portfolio import portfolio
from statrecon.errors import StatreconError

__all__ = ["METHODS", "ProtectOptions", "ProtectResult", "ProtectStatus", "protect"]


def protect(problem: IntervalProblem, *, candidates: Sequence[bool] | None = None,
            costs: Sequence[Fraction | int] | None = None,
            options: ProtectOptions | None = None) -> ProtectResult:
    """Suppress further cells of ``problem`` so that its hidden (primary) cells are protected.

    ``candidates[j]`` False: cell j may not be suppressed (default: every published cell;
    "infeasible" is proven over exactly the cells allowed). ``costs``: the cost of
    suppressing each cell (default 1: the number of cells), >= 0."""
    options = options or ProtectOptions()
    deadline = Deadline.after(options.time_limit)  # from the call: checks count too
    if options.method not in METHODS:
        raise StatreconError(f"suppression method {options.method!r}: choose from "
                             f"{', '.join(METHODS)}")
    run = prepare_run(problem, candidates, costs, options, deadline)
    if not run.primaries:
        return run.result(frozenset(), "optimal", {}, note="no primary cells")
    if options.method == "exact":
        return exact(run, workers=options.workers)
    return portfolio(run)


def prepare_run(problem: IntervalProblem, candidates: Sequence[bool] | None,
                costs: Sequence[Fraction | int] | None, options: ProtectOptions,
                deadline: Deadline | None = None) -> Run:
    """The checked state of one protection run (what both methods start from; benchmarks
    use it to run the Gaussian pass alone)."""
    check_problem(problem)
    n = problem.n_cells
    if candidates is None:
        cand = tuple(not h for h in problem.hidden)
    elif len(candidates) != n:
        raise StatreconError(f"candidates has {len(candidates)} entries for {n} cells")
    else:
        cand = tuple(bool(c) and not h for c, h in zip(candidates, problem.hidden,
                                                        strict=True))
    if costs is None:
        cost = (Fraction(1),) * n
    elif len(costs) != n:
        raise StatreconError(f"costs has {len(costs)} entries for {n} cells")
    else:
        cost = tuple(Fraction(c) for c in costs)
        bad = [j for j in range(n) if cost[j] < 0]
        if bad:
            raise StatreconError(f"cell {problem.cell_names[bad[0]]!r}: negative cost "
                                 f"{cost[bad[0]]}", statistic=problem.cell_names[bad[0]])
    return Run(problem, cand, cost, Oracle(problem, cand, options.audit_map),
               deadline or Deadline.after(options.time_limit), options.on_progress,
               prune=options.prune)
