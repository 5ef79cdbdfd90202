"""The integer interval of a cell: the least and greatest value it takes over completions on
the lattice 1/scale (every cell value times scale an integer).

Each bound is proven by a witness completion attaining it (checked exactly) and a proof that
nothing lies beyond it: either the LP certificate (no real point lies beyond the LP bound, so
no lattice point lies beyond its rounding to the lattice) or CP-SAT's INFEASIBLE on the model
with the cell pushed beyond the bound. CP-SAT's domains come from proven bounds only (the
cell's LP interval, the other cells' a-priori bounds and the component's LP box), so an
INFEASIBLE inside them is infeasible everywhere. When the LP optimum found is already on the
lattice (every 2-way table: its matrix is totally unimodular), no model is built at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ortools.sat.python import cp_model

from statrecon.engines.intervals.exact import Side, holds, on_lattice
from statrecon.engines.intervals.lp import BoundStatus, LpOutcome
from statrecon.engines.intervals.problem import Component
from statrecon.engines.solvers.cpsat import Deadline, found, new_solver

# how a proven bound is proven: "dual" LP multipliers + an exact optimal point; "ray" an
# exact unbounded direction; "lp-dual" (integer) the LP certificate rounded to the lattice +
# a witness; "infeasible" (integer) CP-SAT INFEASIBLE beyond + a witness; "none": unknown
ProofKind = Literal["dual", "ray", "lp-dual", "infeasible", "witness", "none"]
CPSAT_MAX = 2**50  # larger scaled values are left unknown rather than risk int64 overflow


@dataclass(frozen=True)
class IntOutcome:
    """One side of the integer interval over a component's local cells; ``witness`` is a
    completion of the component on the lattice attaining ``value``."""

    status: BoundStatus
    value: Fraction | None = None
    proof: ProofKind = "none"
    witness: tuple[Fraction, ...] = ()
    note: str = ""
    of_lp: bool = False  # the witness is the LP side's point, over that side's cells


def from_lp(lp: LpOutcome, scale: int) -> IntOutcome | None:
    """The integer bound read off a proven LP bound when no search is needed: unbounded by
    the same ray (truth + t·ray is on the lattice for suitable t), or an LP optimum already
    on the lattice. None: a search is needed."""
    if lp.status != "proven":
        return None
    if lp.value is None:
        return IntOutcome("proven", None, "ray", of_lp=True)
    if on_lattice(lp.point, scale):
        return IntOutcome("proven", lp.value, "lp-dual", lp.point, of_lp=True)
    return None


class ComponentModel:
    """The CP-SAT model of a component, built once and cloned per cell: z_i = scale·x_i
    integers within proven bounds (a-priori lower, the component's box above), every
    equation times scale, the true values as a hint."""

    def __init__(self, comp: Component, box_hi: tuple[Fraction, ...],
                 truth: tuple[Fraction, ...], scale: int) -> None:
        self.comp, self.scale = comp, scale
        self.model = cp_model.CpModel()
        self.lo = [math.ceil(v * scale) for v in comp.lo]
        self.hi = [math.floor(v * scale) for v in box_hi]
        self.z = [self.model.new_int_var(a, b, "") for a, b in zip(self.lo, self.hi,
                                                                   strict=True)]
        for k, row in enumerate(comp.rows):
            self.model.add(cp_model.LinearExpr.weighted_sum(
                [self.z[i] for i, _ in row], [a for _, a in row]) == int(comp.b[k] * scale))
        for var, v in zip(self.z, truth, strict=True):
            self.model.add_hint(var, int(v * scale))

    def cell(self, j: int, lp: tuple[LpOutcome, LpOutcome]) -> CellModel:
        return CellModel(self, j, lp)


class CellModel:
    """The component's model for cell j (a clone), z_j kept within its proven LP interval."""

    def __init__(self, base: ComponentModel, j: int, lp: tuple[LpOutcome, LpOutcome]) -> None:
        self.comp, self.j, self.scale, self.lp = base.comp, j, base.scale, lp
        self.model = base.model.clone()
        self.z = [self.model.get_int_var_from_proto_index(v.index) for v in base.z]
        lo, hi = base.lo[j], base.hi[j]
        low, high = lp
        if low.status == "proven" and low.value is not None:
            lo = max(lo, math.ceil(low.value * self.scale))
        if high.status == "proven" and high.value is not None:
            hi = min(hi, math.floor(high.value * self.scale))
        self.domain = (lo, hi)
        self.model.add(self.z[j] >= lo)
        self.model.add(self.z[j] <= hi)

    def bound(self, side: Side, deadline: Deadline, workers: int) -> IntOutcome:
        """Optimise z_j, check the witness, then prove that nothing lies beyond."""
        status, witness = self._optimise(side, deadline, workers)
        if witness is None:
            return IntOutcome("unknown", note=status)
        value = witness[self.j]
        z = int(value * self.scale)
        lp = self.lp[0 if side == "lower" else 1]
        edge = self.domain[0] if side == "lower" else self.domain[1]
        if lp.status == "proven" and lp.value is not None and z == edge:
            return IntOutcome("proven", value, "lp-dual", witness)
        if z == edge:
            return IntOutcome("unknown", value, note="at a bound no certificate records")
        verdict = self._refute(side, z, deadline, workers)
        if verdict != cp_model.INFEASIBLE:
            return IntOutcome("unknown", note="CP-SAT did not prove the bound in time")
        return IntOutcome("proven", value, "infeasible", witness)

    def _optimise(self, side: Side, deadline: Deadline, workers: int
                  ) -> tuple[str, tuple[Fraction, ...] | None]:
        left = deadline.left()
        if left is not None and left <= 0:
            return "time limit", None
        self.model.clear_objective()
        if side == "lower":
            self.model.minimize(self.z[self.j])
        else:
            self.model.maximize(self.z[self.j])
        solver = new_solver(left=left, workers=workers)
        status = solver.solve(self.model)
        if status != cp_model.OPTIMAL:
            why = "CP-SAT stopped before proving an optimum" if found(status) else \
                f"CP-SAT ended with {solver.status_name(status)}"
            return why, None
        witness = tuple(Fraction(solver.value(v), self.scale) for v in self.z)
        if not holds(self.comp.rows, self.comp.b, self.comp.lo, self.comp.hi, witness):
            return "CP-SAT's completion failed the exact check", None
        return "optimal", witness

    def _refute(self, side: Side, z: int, deadline: Deadline, workers: int) -> int:
        """CP-SAT's status on the model with z_j strictly beyond z (INFEASIBLE proves it)."""
        left = deadline.left()
        if left is not None and left <= 0:
            return int(cp_model.UNKNOWN)
        beyond = self.model.clone()
        beyond.clear_objective()
        var = beyond.get_int_var_from_proto_index(self.z[self.j].index)
        beyond.add(var <= z - 1 if side == "lower" else var >= z + 1)
        return int(new_solver(left=left, workers=workers).solve(beyond))


def model_problem(box_hi: tuple[Fraction | None, ...] | None, comp: Component, scale: int
                  ) -> str | None:
    """Why no CP-SAT model can be built (None: it can)."""
    if box_hi is None:
        return "no time left to bound the component"
    if any(h is None for h in box_hi):
        return "a cell of the component has no finite upper bound"
    big = max((abs(v) for v in (*comp.lo, *box_hi, *comp.b) if v is not None),
              default=Fraction(0))
    if big * scale > CPSAT_MAX:
        return "values too large for CP-SAT"
    return None
