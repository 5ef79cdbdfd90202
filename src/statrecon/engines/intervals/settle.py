"""The cells of a large component decided without an LP over all of it: bounds by
propagation, reached by small moves inside windows.

Every cell of a perturbed or rounded release is hidden, so 102,786 linked cells are one
component, and an LP over it takes seconds (issue 30's CKM audit decided no cell in 600 s).
Most cells need none:

- **the bound**: exact bound propagation over every equation (``solvers/propagation``)
  bounds each cell from both sides in every solution; with unit coefficients no step
  rounds, so the bound holds for the LP too, and its derivation gives the multipliers of a
  dual certificate (empty where the bound is the cell's own);
- **a table attaining it**: the least-change moves of :mod:`.moves`, from the problem's own
  table, each checked exactly over every equation, run inside *windows* (sets of cells the
  caller knows to be loosely tied, e.g. one region of a hierarchy and the totals above it;
  the other cells held at their values, so a move there is a move of the whole table) and
  then, while time is left, over the whole component.

A side is proven when the two meet: no table goes further (the certificate) and one table
gets there (the witness); both intervals, LP and integer, are then that side's value. A
cell with a side left open is left to the per-cell audit, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals.check import implied_by
from statrecon.engines.intervals.exact import Side
from statrecon.engines.intervals.moves import move
from statrecon.engines.intervals.problem import IntervalProblem, Prepared, prepare
from statrecon.engines.intervals.reach import LIMIT, Reached, Step
from statrecon.engines.intervals.results import (
    Bound,
    CellAudit,
    Interval,
    Pairs,
    attack_of,
    verdict,
)
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.propagation import Derivations, Propagated, propagate

ROUNDS = 1_000  # propagation rounds (it stops earlier once nothing changes)
PROGRESS_S = 5.0  # seconds between progress reports


def applies(p: IntervalProblem) -> bool:
    """Counts on the unit lattice, unit coefficients, every hidden cell bounded above, and
    magnitudes that keep int64 sums exact: what propagation's certificates need."""
    A = sp.csr_matrix(p.matrix)
    if p.scale != 1 or (A.nnz and not np.isin(A.data, (-1, 1)).all()):
        return False
    if any(h and u is None for h, u in zip(p.hidden, p.upper, strict=True)):
        return False
    numbers = [*p.values, *p.lower, *(u for u in p.upper if u is not None)]
    if any(v.denominator != 1 for v in numbers):
        return False
    top = max((abs(int(v)) for v in numbers), default=0)
    return top * max(1, A.shape[1]) < LIMIT >> 8


def settle(prep: Prepared, cells: Sequence[int], deadline: Deadline,
           windows: Sequence[Sequence[int]] = (),
           on_progress: Callable[[int, int], None] | None = None) -> dict[int, CellAudit]:
    """The audits of the ``cells`` (hidden cells of ``prep``) whose two sides the module's
    pass proves; the others are absent. Nothing when the problem does not qualify
    (:func:`applies`). ``on_progress(reached, total)``: cells with both sides reached so
    far, every few seconds."""
    p = prep.problem
    if not cells or not applies(p):
        return {}
    A = sp.csr_matrix(p.matrix).astype(np.int64)
    rhs = np.asarray(p.rhs, dtype=np.int64)
    values = np.array([int(v) for v in p.values], dtype=np.int64)
    hidden = np.asarray(p.hidden, dtype=bool)
    lb = np.where(hidden, np.array([int(v) for v in p.lower], dtype=np.int64), values)
    ub = np.where(hidden, np.array([0 if u is None else int(u) for u in p.upper],
                                   dtype=np.int64), values)
    got = propagate(A, rhs, rhs, lb, ub, ROUNDS, explain=True)
    if not got.feasible:  # the problem's own table satisfies every row: cannot happen
        return {}
    derivations = Derivations(got, A, rhs, rhs)
    reached = {j: _target(j, p.values[j], got) for j in cells}
    step = None if on_progress is None else _every(PROGRESS_S, lambda out: on_progress(
        sum(r.met() for r in reached.values()), len(reached)))
    for window in windows:
        if deadline.expired:
            break
        inside = np.zeros(p.n_cells, dtype=bool)
        inside[np.asarray(window, dtype=np.int64)] = True
        open_ = {j: r for j, r in reached.items() if inside[j] and not r.met()}
        if open_:
            sub = replace(p, hidden=tuple((hidden & inside).tolist()))
            move(prepare(sub, checked=True), open_, deadline, step)
    left = {j: r for j, r in reached.items() if not r.met()}
    if left and not deadline.expired:
        move(prep, left, deadline, step)
    out: dict[int, CellAudit] = {}
    for j, r in reached.items():
        if r.met():
            audit = _audit(p, derivations, r)
            if audit is not None:
                out[j] = audit
    return out


def _every(seconds: float, call: Step) -> Step:
    """``call``, at most once every ``seconds`` (counting 100,000 cells after each LP would
    cost more than the LP)."""
    last = [time.monotonic()]

    def step(out: dict[int, Reached]) -> None:
        if time.monotonic() - last[0] >= seconds:
            last[0] = time.monotonic()
            call(out)
    return step


def _target(j: int, value: Fraction, got: Propagated) -> Reached:
    """Reach the propagated bounds; a side the table already sits on is reached by it."""
    low, high = Fraction(int(got.lb[j])), Fraction(int(got.ub[j]))
    r = Reached(j, value, high, low)
    if value == high:
        r.upper = (value, ())
    if value == low:
        r.lower = (value, ())
    return r


def _audit(p: IntervalProblem, derivations: Derivations, r: Reached) -> CellAudit | None:
    """Both sides proven, each certificate re-checked exactly from the problem alone
    (``check.implied_by``) against the value reached: a derivation that implied less would
    leave the cell to the per-cell audit."""
    sides: list[Bound] = []
    rows: set[int] = set()
    ends: tuple[tuple[Side, tuple[Fraction, Pairs] | None], ...] = (
        ("lower", r.lower), ("upper", r.upper))
    for side, reach in ends:
        assert reach is not None  # met
        value, witness = reach
        found = derivations.multipliers(r.cell, side)
        if found is None:
            return None
        mult = {k: Fraction(y) for k, y in found.items()}
        if implied_by(p, r.cell, side, mult) != value:
            return None
        rows.update(mult)
        sides.append(Bound(value, "proven", "dual", multipliers=tuple(sorted(mult.items())),
                           witness=witness))
    lp = Interval(sides[0], sides[1])
    integer = Interval(*(replace(b, proof="lp-dual") for b in sides))
    protection, sliding = p.protection_of(r.cell), p.sliding_of(r.cell)
    return CellAudit(cell=r.cell, name=p.cell_names[r.cell], value=r.value,
                     protection=protection, lp=lp, integer=integer, attack=attack_of(p, rows),
                     verdict=verdict(r.value, protection, lp, integer, sliding),
                     sliding=sliding)
