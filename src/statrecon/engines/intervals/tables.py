"""A table (or linked tables) as the audit engine's ``IntervalProblem``.

What the attacker knows: every published cell, the additivity equations the hierarchies imply
(``TableSet.equations``), and a-priori bounds on every cell, by name:

- ``nonnegative`` (the default): for a table of counts or of non-negative magnitudes, each
  cell is at least 0, with no upper bound beyond what the published cells imply (with the
  grand total published, the total itself). What a stranger to the microdata knows.
- ``tau-argus``: tau-Argus 4.1's box, which its audit and its suppression use: every cell
  between 0 and 1.5 x the largest cell value of the true table (the lower end 1.5 x the
  smallest value when that is negative; ``TableSet.java``/``TableService.java``:
  ``maxTabVal``, ``minTabVal``).
- ``pytauargus``: pytauargus's box, every cell between the smallest and the largest cell
  value of the true table.

The last two read the true table, which no stranger sees: they are for comparing intervals
with those tools (tau-Argus also rounds each realized bound inward to the table's decimals;
statrecon's LP interval is the exact LP optimum, its integer interval the exact bound over the
lattice).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from statrecon.engines.intervals.problem import IntervalProblem
from statrecon.errors import StatreconError
from statrecon.tables import TableSet

Apriori = Literal["nonnegative", "tau-argus", "pytauargus"]
APRIORI: tuple[Apriori, ...] = ("nonnegative", "tau-argus", "pytauargus")
TAU_ARGUS_FACTOR = Fraction(3, 2)  # tau-Argus widens the table's extreme values by half


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
    low, high = apriori_box(values, apriori)
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


def apriori_box(values: tuple[Fraction, ...], apriori: Apriori
                ) -> tuple[Fraction, Fraction | None]:
    """The a-priori (lower, upper) bound of every cell under ``apriori`` (module docstring);
    None: no upper bound."""
    smallest = min(values, default=Fraction(0))
    largest = max(values, default=Fraction(0))
    if apriori == "tau-argus":
        return (TAU_ARGUS_FACTOR * smallest if smallest < 0 else Fraction(0),
                TAU_ARGUS_FACTOR * largest if largest > 0 else Fraction(0))
    if apriori == "pytauargus":
        return smallest, largest
    return Fraction(0), None
