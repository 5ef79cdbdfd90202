"""What the fast method reads from a table's inner cells (``engines.suppression.inner``): the
inner cells under each cell against the hierarchies themselves, the sums of primary zeros
that the Gaussian pass guards (a zero pinned by another zero is caught before the audit), and
GaussSuppression's tie-break weight."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_intervals_tables import TWO_LEVEL, flat, leaves_under, linked

from statrecon.engines.intervals import AuditOptions, IntervalProblem, audit
from statrecon.engines.suppression.gauss import gauss_pattern
from statrecon.engines.suppression.inner import bound_sums, breadth, inner_cells

HIERS = {"R": TWO_LEVEL, "K": flat("k", 3)}


def _expected_inner(key: frozenset[tuple[str, str]], keys: list[frozenset[tuple[str, str]]]
                    ) -> set[int]:
    """The leaf cells under a cell, from the hierarchies (not from the equations)."""
    codes = dict(key)
    per_variable = [leaves_under(HIERS[v], codes.get(v, HIERS[v][0])) for v in HIERS]
    return {keys.index(frozenset(zip(HIERS, combo, strict=True)))
            for combo in itertools.product(*per_variable)}


def test_inner_cells_are_the_leaf_cells_under_each_cell() -> None:
    t = linked(HIERS, [("R", "K")], np.arange(12).reshape(4, 3))
    inner = inner_cells(t.problem([]).matrix)
    assert len(inner) == len(t.keys) == 7 * 4
    for j, key in enumerate(t.keys):
        assert set(inner[j]) == _expected_inner(key, t.keys), t.cell_name(j)


def test_inner_cells_read_either_sign_and_stop_at_a_cycle() -> None:
    """Equations written with the total negative are read the same; a cycle (not a
    table's hierarchy) ends: the cell met again is left out below itself."""
    import scipy.sparse as sp

    # T = r + s, r = a + b written as -r + a + b = 0; cells T0 r1 s2 a3 b4
    signs = sp.csr_matrix(np.array([[1, -1, -1, 0, 0], [0, -1, 0, 1, 1]]))
    assert inner_cells(signs) == [(2, 3, 4), (3, 4), (2,), (3,), (4,)]
    # x = y + z and y = x + w: x0 y1 z2 w3
    cycle = sp.csr_matrix(np.array([[1, -1, -1, 0], [-1, 1, 0, -1]]))
    got = inner_cells(cycle)
    assert got[2] == (2,) and got[3] == (3,)
    assert 0 not in got[0] and 1 not in got[1]  # no cell is listed among its own inner cells


def test_breadth_adds_up_like_the_table() -> None:
    """Each total's weight is the sum of its children's: the inner cells of the children
    split the total's."""
    t = linked(HIERS, [("R", "K")], np.arange(12).reshape(4, 3))
    p = t.problem([])
    wide = breadth(p, inner_cells(p.matrix))
    for row in t.rows:
        total = next(j for j, a in row.items() if a == 1)
        assert wide[total] == sum(wide[j] for j, a in row.items() if a == -1)
    assert wide[t.grand()] == max(wide)


def _published_pattern(p: IntervalProblem, primaries: list[int], guard: bool) -> tuple[bool, ...]:
    """The Gaussian pass, the largest cells published first (as the fast method orders)."""
    order = sorted((j for j in range(p.n_cells) if j not in primaries),
                   key=lambda j: (-p.values[j], -j))
    sums = bound_sums(p, primaries, inner_cells(p.matrix)) if guard else []
    secondary, _ = gauss_pattern(p.matrix, primaries, [], order, sums=sums)
    return tuple(j in primaries or j in secondary for j in range(p.n_cells))


def test_two_zeros_in_a_row_are_not_left_to_protect_each_other() -> None:
    """Row a0 = [0, 0, 5]: the two zeros, both primary, can each only move up. The equations
    alone let them trade against each other (a rectangle with row a1 leaves one degree of
    freedom), so the plain pass stops there and the integer audit finds them pinned at 0;
    guarding their sum makes the pass suppress a cell that can give way."""
    t = linked({"A": flat("a", 2), "B": flat("b", 3)}, [("A", "B")],
               np.array([[0, 0, 5], [3, 4, 6]]))
    zeros = [t.keys.index(frozenset({("A", "a0"), ("B", f"b{j}")})) for j in range(2)]
    p = t.problem(zeros)
    assert bound_sums(p, zeros, inner_cells(p.matrix)) == [tuple(sorted(zeros))]

    def protected(hidden: tuple[bool, ...]) -> bool:
        return audit(replace(p, hidden=hidden), zeros,
                     AuditOptions(time_limit=None)).all_protected

    assert not protected(_published_pattern(p, zeros, guard=False))
    assert protected(_published_pattern(p, zeros, guard=True))


def _rank(rows: list[list[int]]) -> int:
    return int(np.linalg.matrix_rank(np.array(rows, dtype=float))) if rows else 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=12, max_size=12))
def test_no_guarded_sum_is_left_determined_by_the_equations(leaves: list[int]) -> None:
    """Every zero is primary (protectZeros); after the guarded pass neither a primary cell
    nor any guarded sum of zeros lies in the span of the equations and the published
    cells."""
    t = linked(HIERS, [("R", "K")], np.array(leaves).reshape(4, 3))
    primaries = [j for j, v in enumerate(t.values) if v == 0]
    p = t.problem(primaries)
    sums = bound_sums(p, primaries, inner_cells(p.matrix))
    hidden = _published_pattern(p, primaries, guard=True)
    n = p.n_cells
    known = [*p.matrix.toarray().tolist(),
             *([int(j == c) for j in range(n)] for c in range(n) if not hidden[c])]
    base = _rank(known)
    for cells in [*([i] for i in primaries), *sums]:
        summed = [int(j in cells) for j in range(n)]
        assert _rank([*known, summed]) == base + 1, cells
