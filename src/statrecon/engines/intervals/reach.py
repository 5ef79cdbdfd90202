"""Protection proven by witness tables: for a suppressed cell with protection levels (l, u),
an attacker's integer interval covers ``[v - l, v + u]`` and is more than a point exactly
when completions of the table exist that put the cell at or beyond each end (the true table
itself is one completion). So a few exact completions can prove many cells protected at
once, with no optimum and no dual certificate: each is an integer (lattice) point checked
equation by equation in exact integer arithmetic.

The completions come from HiGHS: each LP pushes the cells that still need a witness towards
the side they need (random weights, a fixed seed: runs repeat), and its optimal vertex,
rounded to the lattice, counts only if it satisfies every equation and bound exactly. A
vertex off the lattice proves nothing here; such cells keep their full audit
(:func:`statrecon.engines.intervals.audit_cell`). What a witness proves is a *reached*
value: the interval extends at least that far (``Bound`` status ``reached``), not its end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals.problem import Component, Prepared
from statrecon.engines.intervals.results import (
    Attack,
    Bound,
    CellAudit,
    Interval,
    Pairs,
    ScaledPairs,
)
from statrecon.engines.solvers.cpsat import Deadline

ROUNDS = 6  # LPs per component without new witnesses before the sweep gives up
LIMIT = 2**62  # int64 sums stay exact below this


@dataclass
class Reached:
    """The furthest exact completions found so far for one cell: ``upper``/``lower`` are
    (value, witness) with the witness as (cell, value) pairs over its component."""

    cell: int
    value: Fraction
    up: Fraction  # value + upper protection level (one lattice step when both levels are 0)
    down: Fraction  # value - lower protection level (likewise)
    upper: tuple[Fraction, Pairs] | None = None
    lower: tuple[Fraction, Pairs] | None = None
    either: bool = False  # levels (0, 0): one side beyond the value is enough
    sliding: Fraction = Fraction(0)  # the values reached must also be this far apart

    def keep(self, other: Reached) -> None:
        """Take ``other``'s witnesses (the same cell's) where they reach further."""
        if other.upper is not None and (self.upper is None or other.upper[0] > self.upper[0]):
            self.upper = other.upper
        if other.lower is not None and (self.lower is None or other.lower[0] < self.lower[0]):
            self.lower = other.lower

    def offer(self, up: bool, value: Fraction, witness: Pairs) -> None:
        """Keep a completion (checked by the caller) that puts the cell at ``value``, on
        the side ``up``, where it reaches further than the one kept."""
        if up and value > self.value and (self.upper is None or value > self.upper[0]):
            self.upper = (value, witness)
        elif not up and value < self.value and (self.lower is None or value < self.lower[0]):
            self.lower = (value, witness)

    def ends(self) -> tuple[Fraction, Fraction]:
        """The lowest and highest values reached (the true value where none)."""
        return (self.value if self.lower is None else self.lower[0],
                self.value if self.upper is None else self.upper[0])

    def _levels_met(self) -> bool:
        hi = self.upper is not None and self.upper[0] >= self.up
        lo = self.lower is not None and self.lower[0] <= self.down
        return (hi or lo) if self.either else (hi and lo)

    def met(self) -> bool:
        low, high = self.ends()
        return self._levels_met() and high - low >= self.sliding

    def wants(self) -> tuple[bool, bool]:
        """(up, down): the sides still without a witness (both, once the levels are met,
        while the values reached are closer than the sliding level)."""
        if self._levels_met():
            short = not self.met()
            return short, short
        hi = self.upper is None or self.upper[0] < self.up
        lo = self.lower is None or self.lower[0] > self.down
        if self.either:
            return (hi and lo, hi and lo)
        return hi, lo

    def goal(self, up: bool) -> Fraction:
        """The value to reach on one side: its level, or further where the sliding level
        asks more of the values reached so far."""
        low, high = self.ends()
        if up:
            return max(self.up, low + self.sliding)
        return min(self.down, high - self.sliding)


@dataclass
class Lattice:
    """A component's equations and bounds times its scale, in integers (None: some
    right-hand side is off the lattice, so no lattice point exists)."""

    A: sp.csr_matrix
    b: np.ndarray
    lo: np.ndarray
    hi: np.ndarray  # no upper bound: the largest int64
    amax: int = field(default=1)


def lattice_of(comp: Component, scale: int) -> Lattice | None:
    """None also when a number times scale does not fit int64 with room for sums: the
    witness search is then skipped and the exact audit (Fractions) proves every bound."""
    b = [v * scale for v in comp.b]
    if any(v.denominator != 1 for v in b) or any((v * scale).denominator != 1
                                                 for v in comp.lo):
        return None
    if not fits_int64([*b, *(v * scale for v in comp.lo),
                       *(h * scale for h in comp.hi if h is not None)]):
        return None
    A = sp.csr_matrix(comp.a_float).astype(np.int64)
    hi = [np.iinfo(np.int64).max if h is None else math.floor(h * scale)
          for h in comp.hi]
    return Lattice(A, np.array([int(v) for v in b], dtype=np.int64),
                    np.array([int(v * scale) for v in comp.lo], dtype=np.int64),
                    np.array(hi, dtype=np.int64),
                    int(np.abs(A.data).max()) if A.nnz else 1)


def fits_int64(values: Sequence[Fraction]) -> bool:
    """Every value well inside int64 (a sum of a component's cells may not overflow)."""
    return all(abs(v) < LIMIT >> 8 for v in values)


def lattice_point(lat: Lattice, x: np.ndarray, scale: int) -> np.ndarray | None:
    """x rounded to the lattice (as integers times scale) when it satisfies every equation
    and bound exactly; None otherwise."""
    if not np.all(np.isfinite(x)):
        return None
    xi = np.rint(x * scale).astype(np.int64)
    return xi if completes(lat, xi) else None


def completes(lat: Lattice, xi: np.ndarray) -> bool:
    """xi (integers times scale) satisfies every bound and equation exactly."""
    if np.any(xi < lat.lo) or np.any(xi > lat.hi):
        return False
    if xi.size and int(np.abs(xi).max()) * lat.amax * max(1, lat.A.shape[1]) >= LIMIT:
        return False  # an int64 sum could overflow: not checked here
    return bool(np.array_equal(lat.A @ xi, lat.b))


Step = Callable[[dict[int, "Reached"]], None]


def reach(prep: Prepared, cells: Sequence[int], deadline: Deadline, seed: int = 0,
          on_step: Step | None = None, start: Mapping[int, Reached] | None = None
          ) -> dict[int, Reached]:
    """Exact completions pushing each of ``cells`` (suppressed cells of ``prep``) to the
    ends its protection asks for. Each cell's entry says how far they reached.
    ``on_step(entries)`` after each LP (a progress report may count the cells met).
    ``start``: witnesses found under a part of this pattern (still completions here: they
    move only cells suppressed then, so suppressed now), each cell's kept where further."""
    out = targets(prep, cells)
    for j, old in (start or {}).items():
        if j in out:
            out[j].keep(old)
    by_comp: dict[int, list[int]] = {}
    for j in cells:
        by_comp.setdefault(prep.component_of[j], []).append(j)
    rng = np.random.default_rng(seed)
    step = None if on_step is None else (lambda: on_step(out))
    for ci, members in by_comp.items():
        _sweep(prep, ci, [out[j] for j in members], deadline, rng, step)
    return out


def targets(prep: Prepared, cells: Sequence[int]) -> dict[int, Reached]:
    """Each cell's ends to reach, nothing reached yet beyond the true value."""
    p = prep.problem
    step = Fraction(1, p.scale)
    out: dict[int, Reached] = {}
    for j in cells:
        low, up = p.protection_of(j)
        v = p.values[j]
        either = low == 0 and up == 0
        out[j] = Reached(j, v, v + step if either else v + up,
                         v - step if either else v - low, either=either,
                         sliding=p.sliding_of(j))
        if low == 0 and not either:
            out[j].lower = (v, ())  # the true table reaches the value itself
        if up == 0 and not either:
            out[j].upper = (v, ())
    return out


def _sweep(prep: Prepared, ci: int, cells: list[Reached], deadline: Deadline,
           rng: np.random.Generator, step: Callable[[], None] | None) -> None:
    board = Board(prep, ci, cells)
    lat = board.lattice
    if lat is None:
        return
    comp, scale = board.comp, board.scale
    idle = 0
    while idle < ROUNDS and not deadline.expired:
        cost: dict[int, float] = {}
        for r in cells:
            up, down = r.wants()
            if not (up or down):
                continue
            sign = -1.0 if up and (not down or rng.random() < 0.5) else 1.0
            cost[comp.local[r.cell]] = sign * (1.0 + rng.random())
        if not cost:
            return
        got = prep.solver(ci).solve(cost, deadline.left())
        xi = lattice_point(lat, got.x, scale) if got.status == "optimal" else None
        if xi is None or not board.record(xi):
            idle += 1
        if step is not None:
            step()


class Board:
    """The cells of one component being proven (by local index), the true table and the
    component's lattice (None: off the lattice, nothing to find) in integers times scale."""

    def __init__(self, prep: Prepared, ci: int, cells: Sequence[Reached]) -> None:
        self.comp, self.scale = prep.components[ci], prep.problem.scale
        self.index = {self.comp.local[r.cell]: r for r in cells}
        self.lattice = lattice_of(self.comp, self.scale)
        self._cells: np.ndarray | None = None
        self.truth = np.zeros(len(self.comp.cells), dtype=np.int64)
        if not fits_int64([prep.problem.values[c] * self.scale for c in self.comp.cells]):
            self.lattice = None
        if self.lattice is not None:
            self.truth = np.array([int(prep.problem.values[c] * self.scale)
                                   for c in self.comp.cells], dtype=np.int64)

    def record(self, xi: np.ndarray) -> bool:
        """Keep the completion xi (integers times scale, checked by the caller) for every
        cell it takes further. The witness lists the cells it changes; the others keep
        their true values (as ``check_cell`` reads a witness)."""
        moved = np.flatnonzero(xi != self.truth)
        witness: Pairs | None = None
        better = False
        for c in moved:
            r = self.index.get(int(c))
            if r is None:
                continue
            v = Fraction(int(xi[c]), self.scale)
            up, down = r.wants()
            if up and v > r.value and (r.upper is None or v > r.upper[0]):
                witness = self._pairs(xi, moved) if witness is None else witness
                r.upper, better = (v, witness), True
            elif down and v < r.value and (r.lower is None or v < r.lower[0]):
                witness = self._pairs(xi, moved) if witness is None else witness
                r.lower, better = (v, witness), True
        return better

    def _pairs(self, xi: np.ndarray, moved: np.ndarray) -> Pairs:
        if self._cells is None:
            self._cells = np.asarray(self.comp.cells, dtype=np.int64)
        return ScaledPairs(self._cells[moved], xi[moved], self.scale)


def protected_audit(prep: Prepared, r: Reached) -> CellAudit:
    """The audit of a cell whose witnesses meet its protection: both intervals given by the
    values reached (status ``reached``: the true ends lie at least that far out)."""
    p = prep.problem
    sides = []
    for got in (r.lower, r.upper):
        value, witness = got if got is not None else (r.value, ())
        sides.append(Bound(value, "reached", "witness", witness=witness))
    interval = Interval(sides[0], sides[1])
    return CellAudit(cell=r.cell, name=p.cell_names[r.cell], value=r.value,
                     protection=p.protection_of(r.cell), lp=interval, integer=interval,
                     attack=Attack((), ()), verdict="protected", sliding=r.sliding)
