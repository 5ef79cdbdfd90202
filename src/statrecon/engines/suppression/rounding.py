"""Controlled rounding: every cell of linked tables rounded to a multiple of the base next to
it (a multiple kept as it is: zero-restricted) so that the rounded tables still add up, with
the least total change. tau-Argus's other ``<SUPPRESS>`` method, ``RND`` (its "Rounder");
it sits beside secondary suppression as the second way to protect a whole table.

The integer programme, on whole numbers (values times ``scale``): a cell x that is not a
multiple of the base b becomes ``down(x) + b * u`` with one 0/1 variable u; every equation
``A r = 0`` of the tables becomes a linear equation in those variables; the objective is the
total change, ``sum |r - x|``. CP-SAT solves it (the one factory, ``solvers/cpsat``).

What is claimed, and from what: ``optimal`` only from CP-SAT's OPTIMAL status, ``feasible``
a rounding found within the time limit (checked exactly: it adds up and every cell is next
to its value) but not proven the least change, ``infeasible`` only from CP-SAT's INFEASIBLE
status (then ``core`` names equations that admit no rounding together, from a second solve
with one assumption per equation, shrunk one equation at a time while time remains: each
removal kept only on an INFEASIBLE status), ``unknown`` when the time ran out with none.
Two-way tables always have a controlled rounding (Cox, 1987); three-way tables may not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import scipy.sparse as sp
from ortools.sat.python import cp_model

from statrecon.engines.solvers.cpsat import Deadline, found, new_solver
from statrecon.errors import StatreconError

RoundingStatus = Literal["optimal", "feasible", "infeasible", "unknown"]
MAX_CORE_SHRINK = 200  # a core of more equations is reported as CP-SAT gives it


@dataclass(frozen=True, eq=False)
class RoundingProblem:
    """``matrix @ values == 0`` (the tables' additivity, integer coefficients, one row per
    equation named in ``equation_names``); ``values`` * ``scale`` are whole numbers and at
    least 0; ``base`` >= 2."""

    matrix: sp.csr_matrix
    values: tuple[Fraction, ...]
    base: int
    scale: int
    equation_names: tuple[str, ...]


@dataclass(frozen=True)
class ControlledRounding:
    """The rounded values (``keys()`` order; None unless optimal or feasible), their total
    change ``sum |r - x|``, and for ``infeasible`` the equations (indices into the problem's)
    that admit no rounding together; ``core_minimal``: no equation of it can be left out
    (each removal gave a solution)."""

    status: RoundingStatus
    rounded: tuple[Fraction, ...] | None
    change: Fraction | None
    core: tuple[int, ...] = ()
    core_minimal: bool = False
    variables: int = 0  # cells that are not multiples of the base: the programme's size
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class _Scaled:
    """The problem on whole numbers: each value's multiple below (``low``), its distance
    above it (``rest``), the base, and the cells that are free (not multiples)."""

    low: tuple[int, ...]
    rest: tuple[int, ...]
    base: int
    free: tuple[int, ...]


def _scaled(problem: RoundingProblem) -> _Scaled:
    base = problem.base * problem.scale
    low, rest = [], []
    for value in problem.values:
        whole = value * problem.scale
        if whole.denominator != 1 or whole < 0:
            raise StatreconError(f"value {value} is not a non-negative multiple of "
                                 f"1/{problem.scale}")
        low.append(whole.numerator // base * base)
        rest.append(whole.numerator % base)
    free = tuple(j for j, r in enumerate(rest) if r)
    return _Scaled(tuple(low), tuple(rest), base, free)


def _rows(problem: RoundingProblem, s: _Scaled) -> list[tuple[list[tuple[int, int]], int]]:
    """Each equation as (free cell, coefficient) pairs and the whole number they must sum to
    (the multiples below the values moved over, divided by the base); an equation the true
    values break is refused."""
    m = problem.matrix.tocsr()
    out = []
    for k in range(m.shape[0]):
        lo, hi = m.indptr[k], m.indptr[k + 1]
        fixed = truth = 0
        terms = []
        for j, a in zip(m.indices[lo:hi], m.data[lo:hi], strict=True):
            fixed += int(a) * s.low[j]
            truth += int(a) * (s.low[j] + s.rest[j])
            if s.rest[j]:
                terms.append((int(j), int(a)))
        if truth:
            raise StatreconError(f"the values do not add up: equation "
                                 f"{problem.equation_names[k]!r}",
                                 statistic=problem.equation_names[k])
        out.append((terms, -fixed // s.base))
    return out


def _model(rows: list[tuple[list[tuple[int, int]], int]], s: _Scaled,
           assume: bool) -> tuple[cp_model.CpModel, dict[int, Any], dict[int, int]]:
    """The programme: one 0/1 variable per free cell and each equation with a free cell (an
    equation of multiples alone holds already); with ``assume`` each equation is enforced
    by an assumption literal (returned: literal index -> equation) and nothing is
    minimised, else the total change is."""
    model = cp_model.CpModel()
    up = {j: model.new_bool_var(f"u{j}") for j in s.free}
    literals: dict[int, int] = {}
    assumed = []
    for k, (terms, rhs) in enumerate(rows):
        if not terms:
            continue
        constraint = model.add(_sum(up, terms) == rhs)
        if assume:
            literal = model.new_bool_var(f"e{k}")
            constraint.only_enforce_if(literal)
            literals[literal.index] = k
            assumed.append(literal)
    if assume:
        model.add_assumptions(assumed)
    else:
        model.minimize(_sum(up, [(j, s.base - 2 * s.rest[j]) for j in s.free]))
    return model, up, literals


def _sum(up: dict[int, Any], terms: list[tuple[int, int]]) -> Any:
    return cp_model.LinearExpr.weighted_sum([up[j] for j, _ in terms], [a for _, a in terms])


def controlled_round(problem: RoundingProblem, time_limit: float | None = None,
                     seed: int = 0, workers: int = 1, first: bool = False
                     ) -> ControlledRounding:
    """The controlled rounding of ``problem`` with the least total change (module
    docstring), within ``time_limit`` seconds (None: no limit), on ``workers`` CP-SAT search
    workers (one: the same rounding on every run; several, CP-SAT's portfolio with its
    feasibility-jump and local-search workers: a rounding of a large three-way table where
    one worker finds none, the least change the same when proven). The core of an
    infeasible problem is found on one worker (CP-SAT's assumptions). ``first``: stop at
    the first rounding found (tau-Argus's stopping rule "first feasible"): ``feasible``
    unless CP-SAT proved it the least change already."""
    start = time.perf_counter()
    deadline = Deadline.after(time_limit)
    s = _scaled(problem)
    rows = _rows(problem, s)
    model, up, _ = _model(rows, s, assume=False)
    solver = new_solver(left=deadline.left(), seed=seed, workers=workers)
    if first:
        solver.parameters.stop_after_first_solution = True
    status = solver.solve(model)
    if found(status):
        rounded = _rounded(problem, s, {j: solver.value(up[j]) for j in s.free})
        change = sum((abs(r - v) for r, v in zip(rounded, problem.values, strict=True)),
                     Fraction(0))
        label: RoundingStatus = "optimal" if status == cp_model.OPTIMAL else "feasible"
        return ControlledRounding(label, rounded, change, variables=len(s.free),
                                  elapsed_s=time.perf_counter() - start)
    if status != cp_model.INFEASIBLE:
        return ControlledRounding("unknown", None, None, variables=len(s.free),
                                  elapsed_s=time.perf_counter() - start)
    core, minimal = _core(rows, s, deadline, seed)
    return ControlledRounding("infeasible", None, None, core, minimal, len(s.free),
                              time.perf_counter() - start)


def _rounded(problem: RoundingProblem, s: _Scaled, up: dict[int, int]
             ) -> tuple[Fraction, ...]:
    """The rounded values (each the multiple below its value, or the one above where the
    solver says up), the tables checked exactly to add up: a solver's answer is never taken
    on trust."""
    whole = [s.low[j] + (s.base if up.get(j) else 0) for j in range(len(problem.values))]
    rounded = tuple(Fraction(w, problem.scale) for w in whole)
    m = problem.matrix.tocsr()
    for k in range(m.shape[0]):
        lo, hi = m.indptr[k], m.indptr[k + 1]
        if sum(int(a) * whole[j] for j, a in zip(m.indices[lo:hi], m.data[lo:hi],
                                                  strict=True)):
            raise RuntimeError(f"controlled rounding broke equation "
                               f"{problem.equation_names[k]!r}: a solver bug")
    return rounded


def _core(rows: list[tuple[list[tuple[int, int]], int]], s: _Scaled, deadline: Deadline,
          seed: int) -> tuple[tuple[int, ...], bool]:
    """Equations that admit no rounding together: CP-SAT's sufficient assumptions, then
    each left out in turn while time remains, kept out when the rest stay INFEASIBLE.
    Empty when no core came back in time (the infeasibility stands: it is the first
    solve's status)."""
    model, _, literals = _model(rows, s, assume=True)
    solver = new_solver(left=deadline.left(), seed=seed)
    if solver.solve(model) != cp_model.INFEASIBLE:
        return (), False
    core = sorted(literals[i] for i in solver.sufficient_assumptions_for_infeasibility())
    if len(core) > MAX_CORE_SHRINK:
        return tuple(core), False
    minimal = True
    for k in list(core):
        if deadline.expired:
            return tuple(core), False
        rest = [c for c in core if c != k]
        verdict = _feasible([rows[c] for c in rest], s, deadline, seed)
        if verdict is None:
            minimal = False
        elif not verdict:
            core = rest
    return tuple(core), minimal


def _feasible(rows: list[tuple[list[tuple[int, int]], int]], s: _Scaled, deadline: Deadline,
              seed: int) -> bool | None:
    """Whether these equations alone admit a rounding (None: not decided in time)."""
    model = cp_model.CpModel()
    up = {j: model.new_bool_var(f"u{j}") for j in s.free}
    for terms, rhs in rows:
        if terms:
            model.add(_sum(up, terms) == rhs)
    status = new_solver(left=deadline.left(), seed=seed).solve(model)
    if status == cp_model.INFEASIBLE:
        return False
    return True if found(status) else None
