"""Exact rational arithmetic behind every proven bound: the bound a set of multipliers implies
(weak duality), exact feasibility of a point, and the exact points and multipliers recovered
from HiGHS's floating-point answer. Nothing here trusts a float: a float only proposes a
candidate, and a candidate counts once it is checked with Fractions.

Weak duality, the one fact used. For multipliers u on the equations ``rows`` (``Σ_i a_ki x_i
= b_k``) and a cost c, put d = c - Aᵀu. Every x satisfying the equations has
``c·x = u·b + d·x``, so over the box ``lo <= x <= hi`` the least value of ``d·x`` (d_i > 0 at
lo_i, d_i < 0 at hi_i) gives a valid lower bound on c·x, and the greatest an upper bound. A
point of the set with c·x equal to that bound shows it is attained: the bound is the optimum.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np

Side = Literal["lower", "upper"]
Rows = Sequence[Sequence[tuple[int, int]]]  # per equation: (cell, integer coefficient)
DENOMINATORS = (1, 1000, 10**6)  # rationalising a float: the simplest fraction near it first
AT_BOUND = 1e-9  # relative: a float this close to a bound is read as sitting on it
# the largest system (equations x unknowns) solved exactly; larger: no candidate (the bound
# stays unknown rather than overrun its time limit in an uninterruptible elimination)
MAX_EXACT_ENTRIES = 1_000_000


def reduced_costs(rows: Rows, cost: Mapping[int, Fraction | int],
                  mult: Mapping[int, Fraction]) -> dict[int, Fraction]:
    """d = c - Aᵀu, only its non-zero entries."""
    d: dict[int, Fraction] = {i: Fraction(c) for i, c in cost.items() if c}
    for k, u in mult.items():
        if u:
            for i, a in rows[k]:
                d[i] = d.get(i, Fraction(0)) - u * a
    return {i: v for i, v in d.items() if v}


def implied_bound(rows: Rows, b: Sequence[Fraction], lo: Sequence[Fraction],
                  hi: Sequence[Fraction | None], cost: Mapping[int, Fraction | int],
                  mult: Mapping[int, Fraction], side: Side) -> Fraction | None:
    """The bound on c·x that the multipliers prove (module docstring); None when it would
    need an upper bound a cell does not have."""
    total = sum((u * b[k] for k, u in mult.items() if u), Fraction(0))
    for i, di in reduced_costs(rows, cost, mult).items():
        bound = lo[i] if (di > 0) == (side == "lower") else hi[i]
        if bound is None:
            return None
        total += di * bound
    return total


def holds(rows: Rows, b: Sequence[Fraction], lo: Sequence[Fraction | None],
          hi: Sequence[Fraction | None], x: Sequence[Fraction]) -> bool:
    """Every equation and every bound holds for x, exactly (None: no bound on that side).
    The equations are checked in integers: x and b times their common denominator."""
    if any((low is not None and v < low) or (high is not None and v > high)
           for v, low, high in zip(x, lo, hi, strict=True)):
        return False
    den = math.lcm(*(v.denominator for v in x), *(v.denominator for v in b))
    xi = [v.numerator * (den // v.denominator) for v in x]
    return all(sum(a * xi[i] for i, a in row) == b[k].numerator * (den // b[k].denominator)
               for k, row in enumerate(rows))


def objective(cost: Mapping[int, Fraction | int], x: Sequence[Fraction]) -> Fraction:
    return sum((c * x[i] for i, c in cost.items()), Fraction(0))


def on_lattice(x: Sequence[Fraction], scale: int) -> bool:
    return all((v * scale).denominator == 1 for v in x)


def near_fraction(v: float, den: int) -> Fraction:
    """The simplest fraction with a denominator up to ``den`` near the float v (a candidate
    only; from a float, not a residue: rational reconstruction is ``solvers.modp``'s)."""
    if not math.isfinite(v):
        return Fraction(0)
    r = round(v)
    if abs(v - r) <= 1e-12 * max(1.0, abs(v)):
        return Fraction(r)
    return Fraction(v).limit_denominator(den)


def point_candidates(rows: Rows, b: Sequence[Fraction], lo: Sequence[Fraction | None],
                     hi: Sequence[Fraction | None], x: np.ndarray, scale: int
                     ) -> Iterator[list[Fraction]]:
    """Exact points near HiGHS's x that satisfy everything exactly: x rounded to the lattice,
    then simple fractions near it, then the vertex recomputed exactly (cells at a bound fixed
    there, the others solved from the equations with FLINT)."""
    seen: list[list[Fraction]] = []
    def guesses() -> Iterator[list[Fraction] | None]:
        yield [Fraction(round(float(v) * scale), scale) for v in x]
        for den in DENOMINATORS:
            yield [near_fraction(float(v), den) for v in x]
        yield _vertex(rows, b, lo, hi, x)

    for cand in guesses():
        if cand is not None and cand not in seen:
            seen.append(cand)
            if holds(rows, b, lo, hi, cand):
                yield cand


def _at_bound(v: float, bound: Fraction | None) -> bool:
    return bound is not None and abs(v - float(bound)) <= AT_BOUND * max(1.0, abs(float(bound)))


def _vertex(rows: Rows, b: Sequence[Fraction], lo: Sequence[Fraction | None],
            hi: Sequence[Fraction | None], x: np.ndarray) -> list[Fraction] | None:
    """Cells the float x puts on a bound, fixed there exactly; the rest solved exactly."""
    fixed: dict[int, Fraction] = {}
    for i, v in enumerate(x):
        for bound in (lo[i], hi[i]):
            if bound is not None and _at_bound(float(v), bound):
                fixed[i] = bound
    free = [i for i in range(len(x)) if i not in fixed]
    if free and len(rows) * len(free) > MAX_EXACT_ENTRIES:
        return None  # solve_near would refuse it: not worth a dense matrix of Fractions
    col = {c: t for t, c in enumerate(free)}
    matrix = [[Fraction(0)] * len(free) for _ in rows]
    rhs = list(b)
    for k, row in enumerate(rows):
        for i, a in row:
            if i in col:
                matrix[k][col[i]] += a
            else:
                rhs[k] -= a * fixed[i]
    sol = solve_near(matrix, rhs, [float(x[i]) for i in free])
    if sol is None:
        return None
    out = [Fraction(0)] * len(x)
    for i, v in fixed.items():
        out[i] = v
    for t, i in enumerate(free):
        out[i] = sol[t]
    return out


def solve_near(matrix: Sequence[Sequence[Fraction]], rhs: Sequence[Fraction],
               guess: Sequence[float]) -> list[Fraction] | None:
    """An exact solution of ``matrix z = rhs`` (FLINT rref): its free unknowns set to simple
    fractions near ``guess``; None when the system has no solution."""
    n = len(guess)
    if n == 0:
        return [] if all(v == 0 for v in rhs) else None
    if len(rhs) * n > MAX_EXACT_ENTRIES:
        return None  # FLINT's exact elimination would take minutes, past any time limit
    if not rhs:
        return [near_fraction(g, DENOMINATORS[-1]) for g in guess]
    flint = _flint()
    m = len(rhs)
    entries = [flint.fmpq(v.numerator, v.denominator)
               for k in range(m) for v in (*matrix[k], rhs[k])]
    R, rank = flint.fmpq_mat(m, n + 1, entries).rref()
    pivots = []
    for r in range(rank):
        c = next(c for c in range(n + 1) if R[r, c] != 0)
        if c == n:
            return None  # a row 0 = non-zero: inconsistent
        pivots.append(c)
    z = [near_fraction(g, DENOMINATORS[-1]) for g in guess]
    free = [c for c in range(n) if c not in set(pivots)]
    for r, c in enumerate(pivots):
        v = _fraction(R[r, n]) - sum((_fraction(R[r, f]) * z[f] for f in free), Fraction(0))
        z[c] = v
    return z


def multiplier_candidates(rows: Rows, n: int, cost: Mapping[int, Fraction | int],
                          u: np.ndarray, x: np.ndarray, lo: Sequence[Fraction | None],
                          hi: Sequence[Fraction | None]) -> Iterator[dict[int, Fraction]]:
    """Exact multipliers near HiGHS's duals u: simple fractions near u, then u recomputed
    exactly so that d = c - Aᵀu is 0 on every cell strictly inside its bounds and every cell
    whose float reduced cost is ~0 (the basis, read from the floats)."""
    for den in DENOMINATORS:
        yield {k: q for k, v in enumerate(u) if (q := near_fraction(float(v), den))}
    d = np.array([float(cost.get(i, 0)) for i in range(n)])
    for k, row in enumerate(rows):
        for i, a in row:
            d[i] -= float(u[k]) * a
    basic = [i for i in range(n) if abs(d[i]) <= AT_BOUND
             or not (_at_bound(float(x[i]), lo[i]) or _at_bound(float(x[i]), hi[i]))]
    if rows and len(basic) * len(rows) > MAX_EXACT_ENTRIES:
        return  # solve_near would refuse it: not worth a dense matrix of Fractions
    where = {i: t for t, i in enumerate(basic)}
    matrix = [[Fraction(0)] * len(rows) for _ in basic]
    for k, row in enumerate(rows):
        for i, a in row:
            if i in where:
                matrix[where[i]][k] += a
    sol = solve_near(matrix, [Fraction(cost.get(i, 0)) for i in basic], [float(v) for v in u])
    if sol is not None:
        yield {k: v for k, v in enumerate(sol) if v}


def _fraction(q: Any) -> Fraction:
    return Fraction(int(q.p), int(q.q))


def _flint() -> Any:
    import flint  # lazy: FLINT loads only when a vertex must be recomputed exactly

    return flint
