"""What a secondary cell costs: tau-Argus's cost functions and its lambda transformation
(manual 4.1, section 4.4.4; its engine: ``CDataCell::GetCost``).

- ``count`` (tau-Argus's unity, ``-2``): every cell costs 1, the fewest cells are suppressed;
- ``value``: the cell's value (tau-Argus's default, the response);
- ``cost``: a cost variable (``<COSTVAR>``, or an a-priori file's ``C``), else the value;
- ``frequency`` (``-1``): its contributors, the fewest respondents' data hidden;
- ``distance`` (``-3``): how far the cell lies from the nearest primary cell, so that the
  secondary cells gather near the primary ones: for each variable the steps between the two
  codes along the hierarchy (through their common ancestor, at most 5), each variable's steps
  costing ``distances[steps - 1]`` (tau-Argus's ``<DISTANCE>``, default 1 2 3 4 5), summed.

The lambda transformation (a Box-Cox like one) maps a cost ``x`` to ``x ** lambda`` for
lambda > 0 and ``log(x + 1)`` for lambda 0 (0.5: a square root). A cost only steers which
pattern is chosen, never whether one protects: a transformed cost that is not rational is
rounded to 9 significant digits, and a negative cost is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import numpy as np

from statrecon.errors import StatreconError

CostFunction = Literal["count", "value", "cost", "frequency", "distance"]
COST_FUNCTIONS: tuple[CostFunction, ...] = ("count", "value", "cost", "frequency", "distance")
TAU_ARGUS_CODES: dict[str, CostFunction] = {"-1": "frequency", "-2": "count",
                                            "-3": "distance"}
DEFAULT_DISTANCES: tuple[int, ...] = (1, 2, 3, 4, 5)
MAX_STEPS = 5


def transform(costs: Sequence[Fraction], lam: Fraction) -> tuple[Fraction, ...]:
    """tau-Argus's lambda transformation of each cost (module docstring)."""
    if lam < 0:
        raise StatreconError(f"lambda {lam}: the cost transformation takes lambda >= 0")
    if lam == 1:
        return tuple(costs)
    found = []
    for c in costs:
        if c < 0:
            raise StatreconError(f"a negative cost ({c}) cannot be transformed")
        if lam.denominator == 1:
            found.append(c ** lam.numerator)
        else:
            x = math.log(float(c) + 1) if lam == 0 else float(c) ** float(lam)
            found.append(Fraction(f"{x:.9g}"))
    return tuple(found)


def parse_cost_function(field: str, lam: str, where: str) -> tuple[CostFunction, str | None,
                                                                     Fraction]:
    """A ``<SPECIFYTABLE>``'s cost part, as tau-Argus writes it: ``-1`` frequency, ``-2``
    unity, ``-3`` distance, a variable's name (its cost variable), empty (the response's
    value); and lambda (empty: 1). Returns (function, the cost variable or None, lambda)."""
    name = field.strip().strip('"').strip()
    if name in TAU_ARGUS_CODES:
        kind, variable = TAU_ARGUS_CODES[name], None
    elif name.startswith("-"):
        raise StatreconError(f"{where}: cost {name!r}: -1 (frequency), -2 (unity), -3 "
                             "(distance) or a variable", where=where)
    else:
        kind, variable = ("cost", name) if name else ("value", None)
    text = lam.strip()
    try:
        value = Fraction(text) if text else Fraction(1)
    except (ValueError, ZeroDivisionError):
        raise StatreconError(f"{where}: lambda {text[:20]!r} is not a number",
                             where=where) from None
    if value < 0 or value > 10:
        raise StatreconError(f"{where}: lambda {text[:20]}: from 0 to 10", where=where)
    return kind, variable, value


def tree_steps(parents: Sequence[int]) -> np.ndarray:
    """The steps between every two codes of one hierarchy (codes 0..n-1, ``parents[i]`` the
    parent's index, -1 for the total), along the tree, at most ``MAX_STEPS``."""
    n = len(parents)
    depth = np.zeros(n, dtype=np.int64)
    chains: list[list[int]] = []
    for i in range(n):
        chain, j = [i], parents[i]
        while j >= 0:
            chain.append(j)
            j = parents[j]
        chains.append(chain)
        depth[i] = len(chain) - 1
    steps = np.zeros((n, n), dtype=np.int64)
    for a in range(n):
        above = {c: k for k, c in enumerate(chains[a])}
        for b in range(n):
            up = next(k for k, c in enumerate(chains[b]) if c in above)
            steps[a, b] = min(MAX_STEPS, above[chains[b][up]] + up)
    return steps


def distance_costs(shape: Sequence[int], steps: Sequence[np.ndarray],
                   primaries: Sequence[Sequence[int]],
                   distances: Sequence[Sequence[int]] | None = None) -> np.ndarray:
    """Each grid position's distance to the nearest primary cell (``primaries``: their
    positions, one index per variable), summed over the variables through each variable's
    ``distances`` (default 1 2 3 4 5); 1 everywhere when there is no primary cell."""
    cost = np.full(tuple(shape), np.inf)
    if not primaries:
        return np.ones(tuple(shape))
    tables = []
    for v, matrix in enumerate(steps):
        given = tuple(distances[v]) if distances is not None else DEFAULT_DISTANCES
        if len(given) != MAX_STEPS or min(given) < 0:
            raise StatreconError(f"distances {given}: five costs >= 0, for 1 to 5 steps")
        tables.append(np.array((0, *given), dtype=float)[matrix])
    for p in primaries:
        total = np.zeros(())
        for v, table in enumerate(tables):
            total = np.add.outer(total, table[:, p[v]])
        np.minimum(cost, total, out=cost)
    return cost
