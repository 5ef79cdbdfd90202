"""A cell's LP bounds from the equations around it (``engines/intervals/local.py``), forced on
the tiny tables of the brute-force oracles (neighbourhoods of radius 1: the cell's own
equations, so that most drop some): every interval still equals the oracles', every bound
re-checks from the problem alone, and the neighbourhood does decide sides (the property is
not vacuous). On a long chain of equations, a cell far from the others is decided locally
and the same as over the whole component."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from hypothesis import given
from test_intervals import NO_LIMIT, SETTINGS, _problem, audits
from test_intervals_tables import integer_oracle, lp_oracle

from statrecon.engines.intervals import IntervalProblem, audit, check_cell, prepare
from statrecon.engines.intervals import local as local_module
from statrecon.engines.solvers.cpsat import Deadline

SEEN = {"sides": 0, "local": 0}


@contextmanager
def forced(radii: tuple[int, ...] = (1,)) -> Iterator[None]:
    """Neighbourhoods for every component, of these radii (restored afterwards)."""
    saved = local_module.LOCAL_FROM, local_module.RADII, local_module.local_sides.__defaults__
    local_module.LOCAL_FROM = 0
    local_module.local_sides.__defaults__ = (radii,)
    try:
        yield
    finally:
        local_module.LOCAL_FROM, local_module.RADII = saved[0], saved[1]
        local_module.local_sides.__defaults__ = saved[2]


@SETTINGS
@given(audits())
def test_neighbourhood_bounds_equal_the_brute_force_oracles(case) -> None:  # type: ignore[no-untyped-def]
    t, hidden, scale, unbounded = case
    p, cap = _problem(t, hidden, scale, unbounded)
    prep = prepare(p)
    with forced():
        for j in hidden:
            ci = prep.component_of[j]
            got = local_module.local_sides(prep, ci, prep.components[ci].local[j],
                                           Deadline.after(None))
            SEEN["sides"] += 2
            SEEN["local"] += sum(g is not None for g in got)
        result = audit(p, options=NO_LIMIT)
    lps, ints = lp_oracle(p, cap), integer_oracle(p, cap)
    for c in result.cells:
        assert (c.lp.lower.value, c.lp.upper.value) == lps[c.cell]
        assert c.integer is not None
        assert (c.integer.lower.value, c.integer.upper.value) == ints[c.cell]
        assert check_cell(p, c) == []


def test_the_neighbourhoods_decide_sides() -> None:
    """Run after the property above (same file, in order): some sides were decided by a
    neighbourhood, not all (the rest went to the whole component)."""
    assert SEEN["sides"] > 0
    assert 0 < SEEN["local"] < SEEN["sides"], SEEN


@contextmanager
def whole() -> Iterator[None]:
    """No neighbourhoods: every component solved whole (restored afterwards)."""
    saved = local_module.LOCAL_FROM
    local_module.LOCAL_FROM = 10**9
    try:
        yield
    finally:
        local_module.LOCAL_FROM = saved


def _chains(n: int) -> IntervalProblem:
    """Two chains of n hidden cells within [0, 3], x_i + x_{i+1} = t_i along each. The first
    has the truth in runs of three zeros and three ones: the zeros at its start pin every
    cell, and a zero beside a zero is pinned by their equation alone. The second is all ones:
    each cell lies in [0, 2], which only the whole chain shows."""
    truth = [Fraction((i // 3) % 2) for i in range(n)] + [Fraction(1)] * n
    rows, cols = [], []
    pairs = [i for i in range(2 * n - 1) if i != n - 1]
    for r, i in enumerate(pairs):
        rows += [r, r]
        cols += [i, i + 1]
    A = sp.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)),
                      shape=(len(pairs), 2 * n))
    return IntervalProblem(matrix=A, rhs=tuple(int(truth[i] + truth[i + 1]) for i in pairs),
                           values=tuple(truth), hidden=(True,) * (2 * n),
                           lower=(Fraction(0),) * (2 * n), upper=(Fraction(3),) * (2 * n),
                           scale=1, cell_names=tuple(f"x{i}" for i in range(2 * n)),
                           equation_names=tuple(f"e{i}" for i in pairs))


def test_long_chains_give_the_same_intervals_from_neighbourhoods_as_whole() -> None:
    """Two 1,200-cell components (local by default): the same LP and integer intervals as
    solved whole, every bound re-checked; the pinned cells decided by a neighbourhood (a
    witness of a few cells), the free ones by the whole chain."""
    n = 1_200
    p = _chains(n)
    cells = [0, 1, 3, 4, 7, 600, 601, 603, n - 1, n, n + 1, n + 600, 2 * n - 1]
    assert n >= local_module.LOCAL_FROM
    mine = audit(p, cells, NO_LIMIT).cells
    with whole():
        theirs = audit(p, cells, NO_LIMIT).cells
    for a, b in zip(mine, theirs, strict=True):
        assert (a.lp.lower.value, a.lp.upper.value) == (b.lp.lower.value, b.lp.upper.value)
        assert a.integer is not None and b.integer is not None
        assert (a.integer.lower.value, a.integer.upper.value) == \
            (b.integer.lower.value, b.integer.upper.value)
        assert check_cell(p, a) == []
    pinned, free = [a for a in mine if a.cell < n], [a for a in mine if a.cell >= n]
    assert all(a.verdict == "disclosed" for a in pinned)
    assert all(len(a.lp.lower.witness) < 20 for a in pinned if a.cell % 3 == 1 and
               a.value == 0)  # between two zeros: its own equations pin it
    assert all((a.lp.lower.value, a.lp.upper.value) == (0, 2) for a in free)
