"""A table (or linked tables) as the audit engine's ``IntervalProblem``.

What the attacker knows: every published cell, the additivity equations the hierarchies imply
(``TableSet.equations``), and a-priori bounds. ``apriori="nonnegative"`` (the default): for a
table of counts or of non-negative magnitudes, each cell is at least 0, with no upper bound
beyond what the published cells imply (with the grand total published, the total itself).
tau-Argus's audit instead puts every cell below the largest cell value of the table, which it
reads from the true table (and at least 0, or the smallest cell if that is negative):
``apriori="tau-argus"`` reproduces that, to compare intervals with it; it is not what a
stranger to the microdata knows. (tau-Argus also rounds each realized bound inward to the
table's decimals; statrecon's LP interval is the exact LP optimum, its integer interval the
exact bound over the lattice.)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from statrecon.engines.intervals.problem import IntervalProblem
from statrecon.errors import StatreconError
from statrecon.tables import TableSet

Apriori = Literal["nonnegative", "tau-argus"]
APRIORI: tuple[Apriori, ...] = ("nonnegative", "tau-argus")


def problem_from_tables(tables: TableSet, apriori: Apriori = "nonnegative") -> IntervalProblem:
    """The audit problem of ``tables``: its cells in ``keys()`` order, its additivity
    equations (``matrix @ x == 0``), suppressed cells hidden, protection levels carried."""
    if apriori not in APRIORI:
        raise StatreconError(f"a-priori bounds {apriori!r}: choose from {', '.join(APRIORI)}")
    cells = tables.cells()
    values = tuple(c.value for c in cells)
    names = tables.cell_names()
    negative = [i for i, v in enumerate(values) if v < 0]
    if negative:
        raise StatreconError(
            f"cell {names[negative[0]]} is negative ({values[negative[0]]}): the audit assumes "
            "cells of counts or non-negative magnitudes (each cell at least 0)")
    additivity = tables.equations()
    additivity.check(values)
    scale = 10 ** tables.decimals
    off_lattice = [i for i, v in enumerate(values) if (v * scale).denominator != 1]
    if off_lattice:
        i = off_lattice[0]
        raise StatreconError(f"cell {names[i]} = {values[i]} has more than "
                             f"{tables.decimals} decimals, the table's published precision")
    tau = apriori == "tau-argus"
    low = min(min(values, default=Fraction(0)), Fraction(0)) if tau else Fraction(0)
    high = max(values, default=Fraction(0)) if tau else None
    return IntervalProblem(
        matrix=additivity.matrix.tocsr(),
        rhs=(0,) * additivity.matrix.shape[0],
        values=values,
        hidden=tuple(c.status.suppressed for c in cells),
        lower=(low,) * len(cells),
        upper=(high,) * len(cells),
        scale=scale,
        cell_names=names,
        equation_names=additivity.names,
        protection=tuple(c.protection for c in cells),
        sliding=tuple(c.sliding for c in cells),
    )
