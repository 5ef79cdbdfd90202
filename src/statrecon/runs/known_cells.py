"""The audit of tables whose every cell is published only within a known set: cell key
perturbation (``runs/ckm.py``: the counts the ptable could publish as the value seen) and
rounding (``runs/rounding.py``: the values the method rounds to the published multiple).

Every cell of the true tables is hidden in the interval audit of ``engines/intervals``, with
its set as its a-priori bounds (each published value's interval; ``(0, None)``, only at
least 0, for a cell not published), and the true tables' additivity as the equations. Every
true value gets its LP and integer interval, each end proven (a dual certificate checked
exactly, a witness table plus CP-SAT's INFEASIBLE beyond it) or unknown, and the equations
that prove it. A cell whose interval has width 0 is *pinned* (the verdict ``disclosed``);
one whose interval is strictly inside its own set was *narrowed* by the equations; a cell
with protection levels (a primary cell of the input) is ``under-protected`` when its
interval does not cover them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from statrecon.engines.intervals import (
    AuditOptions,
    AuditResult,
    CellAudit,
    audit,
    problem_from_tables,
)
from statrecon.errors import StatreconError
from statrecon.tables import TableSet
from statrecon.tables.windows import windows

Number = int | Fraction
Bounds = tuple[tuple[Number, Number | None], ...]


@dataclass(frozen=True)
class KnownCellsAudit:
    """What an attacker proves about the true values of tables published within known sets:
    ``bounds`` (each cell's set as an interval, ``tables.keys()`` order), what the attacker
    is assumed to know (``knowledge``, stated in every output) and the engines' audit
    (``result``, one ``CellAudit`` per cell in that order)."""

    result: AuditResult
    bounds: Bounds
    knowledge: str

    @property
    def pinned(self) -> tuple[CellAudit, ...]:
        return tuple(c for c in self.result.cells if c.verdict == "disclosed")

    @property
    def under_protected(self) -> tuple[CellAudit, ...]:
        return tuple(c for c in self.result.cells if c.verdict == "under-protected")

    @property
    def unknown(self) -> tuple[CellAudit, ...]:
        return tuple(c for c in self.result.cells if c.verdict == "unknown")

    @property
    def narrowed(self) -> tuple[CellAudit, ...]:
        """Cells whose proven interval is strictly inside their a-priori one: the tables'
        equations told the attacker more than the cell's own published value."""
        out = []
        for cell in self.result.cells:
            best = cell.integer or cell.lp
            low, high = self.bounds[cell.cell]
            if best.proven and (best.lower.value != low or best.upper.value != high):
                out.append(cell)
        return tuple(out)


def audit_known_cells(tables: TableSet, bounds: Sequence[tuple[Number, Number | None]],
                      knowledge: str, options: AuditOptions | None = None
                      ) -> KnownCellsAudit:
    """The proven intervals of every true value of ``tables``, each cell known to lie
    within its ``bounds`` (module docstring)."""
    base = problem_from_tables(tables)
    if len(bounds) != base.n_cells:
        raise StatreconError(f"{len(bounds)} a-priori intervals for {base.n_cells} cells")
    problem = replace(base, hidden=(True,) * base.n_cells,
                      lower=tuple(Fraction(lo) for lo, _ in bounds),
                      upper=tuple(None if hi is None else Fraction(hi) for _, hi in bounds))
    given = options or AuditOptions()
    if not given.windows:  # where the moves look first (tables/windows.py)
        given = replace(given, windows=windows(tables))
    result = audit(problem, options=given)
    return KnownCellsAudit(result, tuple(bounds), knowledge)
