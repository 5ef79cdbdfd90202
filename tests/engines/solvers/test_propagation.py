"""Bound propagation against a brute-force oracle: every integer solution keeps the bounds,
and "no solution" is said only where none exists."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.intervals.exact import implied_bound
from statrecon.engines.solvers.propagation import Derivations, propagate


@st.composite
def systems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                      np.ndarray]:
    n = draw(st.integers(1, 4))
    m = draw(st.integers(0, 4))
    a = np.array(draw(st.lists(st.lists(st.integers(-2, 2), min_size=n, max_size=n),
                               min_size=m, max_size=m)), dtype=np.int64).reshape(m, n)
    lo = np.array(draw(st.lists(st.integers(-4, 6), min_size=m, max_size=m)), dtype=np.int64)
    width = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)), dtype=np.int64)
    lb = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    extra = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    return a, lo, lo + width, lb, lb + extra


def solutions(a: np.ndarray, lo: np.ndarray, hi: np.ndarray, lb: np.ndarray,
              ub: np.ndarray) -> list[np.ndarray]:
    out = []
    boxes = (range(int(low), int(up) + 1) for low, up in zip(lb, ub, strict=True))
    for y in itertools.product(*boxes):
        v = a @ np.array(y, dtype=np.int64)
        if (v >= lo).all() and (v <= hi).all():
            out.append(np.array(y, dtype=np.int64))
    return out


@settings(max_examples=400, deadline=None)
@given(systems())
def test_every_integer_solution_keeps_the_propagated_bounds(
        system: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    a, lo, hi, lb, ub = system
    got = propagate(sp.csr_matrix(a), lo, hi, lb, ub)
    found = solutions(a, lo, hi, lb, ub)
    if not got.feasible:
        assert not found
        return
    for y in found:
        assert (got.lb <= y).all() and (y <= got.ub).all()
    assert (got.lb >= lb).all() and (got.ub <= ub).all()


@settings(max_examples=300, deadline=None)
@given(systems())
def test_unit_rows_tighten_as_the_same_rows_doubled(
        system: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Rows of coefficients +-1 take a path of their own (dividing by them multiplies); the
    same rows and sides doubled imply the same bounds and go through the division."""
    a, lo, hi, lb, ub = system
    unit = np.sign(a)
    once = propagate(sp.csr_matrix(unit), lo, hi, lb, ub)
    doubled = propagate(sp.csr_matrix(2 * unit), 2 * lo, 2 * hi, lb, ub)
    assert once.feasible == doubled.feasible
    if once.feasible:
        assert np.array_equal(once.lb, doubled.lb) and np.array_equal(once.ub, doubled.ub)


def test_two_ones_under_their_total_are_pinned() -> None:
    # cells a, b at least 1 each and a + b at most 2: both are exactly 1
    a = sp.csr_matrix(np.array([[1, 1]]))
    got = propagate(a, np.array([0]), np.array([2]), np.array([1, 1]), np.array([5, 5]))
    assert got.feasible
    assert got.lb.tolist() == [1, 1] and got.ub.tolist() == [1, 1]


def test_negative_coefficients_bound_from_the_other_side() -> None:
    # x - y = 3 with 0 <= y <= 1 and x <= 10: x in 3..4
    a = sp.csr_matrix(np.array([[1, -1]]))
    got = propagate(a, np.array([3]), np.array([3]), np.array([0, 0]), np.array([10, 1]))
    assert got.lb.tolist() == [3, 0] and got.ub.tolist() == [4, 1]


def test_crossing_bounds_prove_there_is_no_solution() -> None:
    a = sp.csr_matrix(np.array([[1, 1], [1, 0]]))
    got = propagate(a, np.array([5, 0]), np.array([5, 1]), np.array([0, 0]),
                    np.array([9, 3]))
    assert not got.feasible
    assert not solutions(a.toarray(), np.array([5, 0]), np.array([5, 1]), np.zeros(2),
                         np.array([9, 3]))


def test_an_entry_given_twice_counts_once_with_its_sum() -> None:
    # 2 x <= 3 written as x + x: x <= 1, not x <= 3
    a = sp.csr_matrix((np.array([1, 1]), np.array([0, 0]), np.array([0, 2])), shape=(1, 1))
    assert not a.has_canonical_format
    got = propagate(a, np.array([0]), np.array([3]), np.array([0]), np.array([9]))
    assert got.ub.tolist() == [1]


def test_a_fractional_coefficient_is_refused_not_cut() -> None:
    a = sp.csr_matrix(np.array([[0.5, 1.0]]))
    with pytest.raises(ValueError, match="integer coefficients"):
        propagate(a, np.array([0]), np.array([1]), np.array([0, 0]), np.array([3, 3]))


@settings(max_examples=400, deadline=None)
@given(systems(), st.booleans())
def test_the_multipliers_imply_the_propagated_bound(
        system: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        equalities: bool) -> None:
    """Where propagation tightens a bound, its multipliers (when it gives them: unit
    coefficients, equations) imply by weak duality a bound at least as tight, which every
    real point of the system keeps, so every integer solution too (brute force)."""
    a, lo, hi, lb, ub = system
    if equalities:
        hi = lo
    got = propagate(sp.csr_matrix(a), lo, hi, lb, ub, explain=True)
    if not got.feasible:
        return
    found = solutions(a, lo, hi, lb, ub)
    rows = [tuple((int(j), int(v)) for j, v in enumerate(row) if v) for row in a]
    derivations = Derivations(got, sp.csr_matrix(a), lo, hi)  # one for every variable
    box_lo = [Fraction(int(v)) for v in lb]
    box_hi = [Fraction(int(v)) for v in ub]
    for var in range(a.shape[1]):
        for side, tight, own in (("lower", got.lb, lb), ("upper", got.ub, ub)):
            if tight[var] == own[var]:
                continue
            mult = derivations.multipliers(var, side)  # type: ignore[arg-type]
            if mult is None:  # refused: a step divides by 2, or a row is not an equation
                assert not equalities or np.abs(a).max() > 1
                continue
            implied = implied_bound(rows, [Fraction(int(v)) for v in lo], box_lo, box_hi,
                                    {var: 1}, {k: Fraction(y) for k, y in mult.items()},
                                    side)  # type: ignore[arg-type]
            assert implied is not None
            if side == "lower":
                assert implied >= tight[var]
                assert all(y[var] >= implied for y in found)
            else:
                assert implied <= tight[var]
                assert all(y[var] <= implied for y in found)


def test_multipliers_are_refused_for_a_coefficient_of_two() -> None:
    # 2 y0 = 4 with y0 in [0, 5]: y0 = 2 for integers and reals alike, but the step divides
    # by 2, which the certificates here do not carry
    a = sp.csr_matrix(np.array([[2]]))
    got = propagate(a, np.array([4]), np.array([4]), np.array([0]), np.array([5]),
                    explain=True)
    assert (got.lb[0], got.ub[0]) == (2, 2)
    assert Derivations(got, a, np.array([4]), np.array([4])).multipliers(0, "upper") is None


def test_a_chained_bound_carries_every_row_of_its_derivation() -> None:
    # x0 = x1, x1 = x2, x2 in [3, 3]: x1 is 3 by the second row, then x0 by the first
    # (using x1's derived bound): the certificate of x0 >= 3 needs both rows
    a = sp.csr_matrix(np.array([[1, -1, 0], [0, 1, -1]]))
    zero = np.zeros(2, dtype=np.int64)
    got = propagate(a, zero, zero, np.array([0, 0, 3]), np.array([5, 5, 3]), explain=True)
    assert (got.lb[0], got.ub[0]) == (3, 3)
    for side in ("lower", "upper"):
        mult = Derivations(got, a, zero, zero).multipliers(0, side)  # type: ignore[arg-type]
        assert mult is not None and set(mult) == {0, 1}
        rows = [((0, 1), (1, -1)), ((1, 1), (2, -1))]
        implied = implied_bound(rows, [Fraction(0)] * 2, [Fraction(0), Fraction(0),
                                                           Fraction(3)],
                                [Fraction(5), Fraction(5), Fraction(3)], {0: 1},
                                {k: Fraction(y) for k, y in mult.items()}, side)  # type: ignore[arg-type]
        assert implied == 3
