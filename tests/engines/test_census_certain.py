"""Certain within the noise (issue 16, item 4): the per-block proof against a brute-force
oracle that enumerates every integer dataset of tiny cell systems."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.discrete_gaussian import tail_upper
from statrecon.engines.census_certain import cell_bounds, certain_in_block, greedy_witness


def oracle(c: np.ndarray, lo: np.ndarray, hi: np.ndarray, top: int
           ) -> tuple[bool, dict[int, int]]:
    """(any dataset meets the bounds, least count of each class over those datasets)."""
    least: dict[int, int] | None = None
    for y in itertools.product(range(top + 1), repeat=c.shape[1]):
        v = c @ np.array(y)
        if (v >= lo).all() and (v <= hi).all():
            least = dict(enumerate(y)) if least is None else {
                k: min(least[k], y[k]) for k in least}
    if least is None:
        return False, {}
    return True, {k: n for k, n in least.items() if n >= 1}


@st.composite
def systems(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = draw(st.integers(1, 4))
    extra = draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=1,
                          max_size=5))
    c = np.array([[1] * k] + [[int(b) for b in row] for row in extra], dtype=np.int64)
    centre = np.array(draw(st.lists(st.integers(-1, 4), min_size=len(c), max_size=len(c))))
    width = np.array(draw(st.lists(st.integers(0, 2), min_size=len(c), max_size=len(c))))
    return c, centre - width, centre + width


@settings(max_examples=200, deadline=None)
@given(systems())
def test_certain_classes_are_exactly_the_oracles(
        system: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    c, lo, hi = system
    top = int(max(hi.max(), 0))  # the total row bounds every class by hi[0]
    consistent, least = oracle(c, lo, hi, top)
    got = certain_in_block(sp.csr_matrix(c), lo, hi, time_limit=10)
    if not consistent:
        assert got.status == "inconsistent" or (got.status == "ok" and not len(got.classes)
                                                and (lo < 1).all())
        return
    assert got.status == "ok"
    assert dict(zip(got.classes.tolist(), got.counts.tolist(), strict=True)) == least


def test_bounds_hold_for_all_cells_together() -> None:
    sigmas = np.array([0.5, 0.5, 2.0, 7.0])
    t = cell_bounds(sigmas, delta=0.05, cells=1000)
    assert (t[:2] == t[0]).all() and t[0] < t[2] < t[3]
    # each cell's tail at most delta / cells, so all 1000 together at most delta
    assert all(tail_upper(s, int(b)) <= 0.05 / 1000 for s, b in zip(sigmas, t, strict=True))
    assert all(tail_upper(s, int(b) - 1) > 0.05 / 1000 for s, b in zip(sigmas, t, strict=True))


@settings(max_examples=300, deadline=None)
@given(systems())
def test_a_greedy_witness_is_a_dataset_within_the_bounds(
        system: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    c, lo, hi = system
    y = greedy_witness(sp.csr_matrix(c), lo, hi)
    if y is not None:
        assert (y >= 0).all()
        v = c @ y
        assert (v >= lo).all() and (v <= hi).all()


def test_where_the_greedy_fill_gets_stuck_cp_sat_finds_the_witness() -> None:
    # class 2 lies in all three short cells and is taken first: sums (1, 1, 1); the total
    # then needs one more person but cells 1 and 2 are full. y = (1, 1, 0) meets every bound.
    c = np.array([[1, 1, 1], [1, 0, 1], [0, 1, 1]])
    lo = np.array([2, 1, 1])
    hi = np.array([2, 1, 1])
    assert greedy_witness(sp.csr_matrix(c), lo, hi) is None
    consistent, least = oracle(c, lo, hi, 2)
    assert consistent and least == {0: 1, 1: 1}
    got = certain_in_block(sp.csr_matrix(c), lo, hi, time_limit=10)
    assert got.status == "ok"
    assert dict(zip(got.classes.tolist(), got.counts.tolist(), strict=True)) == least
