"""Results of a reconstruction: what is proven, kept apart from anything estimated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# estimated: a most likely dataset (noisy answers weighed by their likelihood), never a proof
Status = Literal["unique", "multiple", "infeasible", "unknown", "estimated"]
Row = dict[str, Any]


def plain(value: Any) -> Any:
    """A value fit for JSON and Python callers: numpy scalars become Python ones, NaN None."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


@dataclass(frozen=True)
class CertainRow:
    """A row present in every consistent dataset, at least ``multiplicity`` times (proven)."""

    row: Row
    multiplicity: int


@dataclass(frozen=True)
class CertainCell:
    """An unknown value of an identifiable public row (its known values are unique),
    equal in every consistent dataset (proven)."""

    row: Row  # the known columns that identify the row
    column: str
    value: Any


@dataclass(frozen=True)
class Route:
    """Which engine answered and why: ``statrecon.reconstruct`` chooses under ``auto``, and a
    reader must know whether a "proven" came from CP-SAT or from exact linear algebra."""

    engine: Literal["exact", "linear"]
    method: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"engine": self.engine, "method": self.method, "reason": self.reason}


@dataclass(frozen=True)
class NoiseUse:
    """What the exact engine did with the noisy statistics (``statistics``).

    ``ignore``: left out; the claims hold for every dataset the other statistics allow.
    ``bounds``: each answer read as ± ``k`` standard deviations: every claim holds *on the
    event that every noise lies within k sd* (``event_probability`` of it if the noises are
    independent), not unconditionally. ``ml``: the dataset maximising the likelihood of the
    noisy answers among those the exact statistics allow; ``objective`` is its negative
    log-likelihood (up to a constant), ``optimal`` True when CP-SAT proved no dataset scores
    lower (``objective_bound``: the best lower bound proven).
    """

    mode: Literal["ignore", "bounds", "ml"]
    statistics: tuple[str, ...] = ()
    k: float | None = None
    event_probability: float | None = None
    objective: float | None = None
    objective_bound: float | None = None
    optimal: bool = False

    @property
    def condition(self) -> str | None:
        """The event the claims are conditional on (None: no condition)."""
        if self.mode == "bounds" and self.statistics and (
                self.event_probability is None or self.event_probability < 1):
            return f"every noise lies within {self.k:g} standard deviations"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "statistics": list(self.statistics), "k": self.k,
                "claims_hold": self.claims_hold(), "event_probability": self.event_probability,
                "objective": self.objective, "objective_bound": self.objective_bound,
                "optimal": self.optimal}

    def claims_hold(self) -> str:
        """In words: when what is called unique/certain is true."""
        if self.mode == "ml":
            return "never proven: the result is a most likely dataset, an estimate"
        condition = self.condition
        return "for the event that " + condition if condition else "always"


@dataclass(frozen=True)
class ReconstructionResult:
    """Everything the exact engine proved about the hidden table.

    ``solutions`` are datasets (lists of rows) consistent with the release. ``complete`` says
    the enumeration finished, so ``solution_count`` is exact. ``certain_rows`` and
    ``column_values`` are proven facts; ``certain_complete`` is False when a time limit cut the
    proofs short (then more rows may be certain and more values possible than listed proven).
    """

    status: Status
    columns: tuple[str, ...]
    solution_count: int = 0
    complete: bool = False
    solutions: list[list[Row]] = field(default_factory=list)
    certain_rows: list[CertainRow] = field(default_factory=list)
    certain_cells: list[CertainCell] = field(default_factory=list)
    column_values: dict[str, list[Any]] = field(default_factory=dict)
    # Columns whose domain is too wide to list every possible value: their proven smallest and
    # largest value (``column_values`` then lists only values seen in proofs).
    column_ranges: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    certain_complete: bool = False
    conflict: list[str] = field(default_factory=list)
    conflict_minimal: bool = False
    ignored: list[str] = field(default_factory=list)
    records: tuple[int, int] = (0, 0)
    elapsed_s: float = 0.0
    method: str = "exact"
    route: Route | None = None
    noise: NoiseUse = field(default_factory=lambda: NoiseUse("ignore"))

    def to_json(self) -> dict[str, Any]:
        """The stable JSON contract of ``statrecon reconstruct --json``."""
        return {
            "status": self.status,
            "method": self.method,
            "solution_count": self.solution_count,
            "complete": self.complete,
            "solutions": self.solutions,
            "certain_rows": [
                {"row": c.row, "multiplicity": c.multiplicity} for c in self.certain_rows
            ],
            "certain_cells": [
                {"row": c.row, "column": c.column, "value": c.value} for c in self.certain_cells
            ],
            "column_values": self.column_values,
            "column_ranges": {c: list(r) for c, r in self.column_ranges.items()},
            "certain_complete": self.certain_complete,
            "conflict": self.conflict,
            "conflict_minimal": self.conflict_minimal,
            "ignored_statistics": self.ignored,
            "route": None if self.route is None else self.route.to_json(),
            "noise": self.noise.to_json(),
            "elapsed_s": round(self.elapsed_s, 4),
        }
