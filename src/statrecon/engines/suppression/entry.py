"""Secondary cell suppression: given the primary cells of a table (the cells hidden in an
``IntervalProblem``), suppress further cells so that every primary cell is protected under
the *integer* audit (its integer interval covers value - lower level .. value + upper level,
and is not a single point), at the least cost.

Two methods, both returning a pattern only after auditing it exactly:

- ``fast`` (large and linked tables): a Gaussian-elimination pass in the spirit of SSBtools'
  GaussSuppression (:mod:`.gauss`) removes every linear disclosure, then a repair
  loop audits the pattern and, for each primary cell still unprotected, suppresses the
  cheapest cell that the attack's certificate says would widen its interval
  (:mod:`.cuts`). Its status is ``feasible``, never ``optimal``.
- ``exact`` (small tables): a master problem over binary y (HiGHS's MIP, or CP-SAT where
  floats cannot hold its numbers exactly, :mod:`.exact`) minimising the cost under
  cuts that every protecting pattern satisfies, added lazily from failed audits
  (Fischetti-Salazar LP cuts and neighbourhood cuts, :mod:`.exact`). The first
  master optimum that passes the integer audit is optimal; ``optimal`` is said only then.

Statuses: ``optimal`` (proven), ``feasible`` (the pattern passed the integer audit),
``infeasible`` (proven by a cut no candidate cell can satisfy: the note names the cell), and
``unknown`` (a time limit, or an audit that could not be proven; ``hidden`` is then the last
pattern tried, not a safe one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from statrecon.engines.intervals import IntervalProblem
from statrecon.engines.intervals.problem import check_problem
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression.cuts import Oracle
from statrecon.engines.suppression.exact import exact
from statrecon.engines.suppression.fast import fast
from statrecon.engines.suppression.portfolio import portfolio
from statrecon.engines.suppression.run import (
    METHODS,
    Method,
    ProtectOptions,
    ProtectResult,
    Run,
)
from statrecon.errors import StatreconError

__all__ = ["REGISTRY", "prepare_run", "protect"]


def _fast(run: Run, options: ProtectOptions) -> ProtectResult:
    """The Gaussian pass and the repair loop, then what a quick run's saved time allows."""
    return portfolio(run)


def _exact(run: Run, options: ProtectOptions) -> ProtectResult:
    """The fast method's pattern and cuts first, then the master problem over lazy cuts."""
    return exact(run, fast(run), workers=options.workers)


# The methods by name, each a function of the checked run and the options. A new method is a
# module of this folder taking a ``Run``, its name in ``run.METHODS`` and its function here.
REGISTRY: dict[Method, Callable[[Run, ProtectOptions], ProtectResult]] = {
    "fast": _fast, "exact": _exact}


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
    return REGISTRY[options.method](run, options)


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
