"""Certain within the noise (issue 16, item 4): the per-block proof against a brute-force
oracle that enumerates every integer dataset of tiny cell systems."""

from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.discrete_gaussian import tail_upper
from statrecon.engines.census.certain import (
    LpWitnesses,
    cell_bounds,
    certain_in_block,
    greedy_witness,
)
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.propagation import propagate


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


@settings(max_examples=200, deadline=None)
@given(systems())
def test_lp_witnesses_are_datasets_and_never_undercut_a_least_count(
        system: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    c, lo, hi = system
    top = int(max(hi.max(), 0))
    consistent, least = oracle(c, lo, hi, top)
    bounds = propagate(sp.csr_matrix(c), lo, hi, np.zeros(c.shape[1], dtype=np.int64),
                       np.full(c.shape[1], top, dtype=np.int64))
    assert bounds.feasible or not consistent  # propagation never refutes a dataset
    if not consistent:
        return
    everyone = np.arange(c.shape[1])
    lps = LpWitnesses(sp.csr_matrix(c), lo, hi, bounds.lb, bounds.ub)
    y = lps.fewest(everyone, Deadline.after(10))
    if y is not None:
        v = c @ y
        assert (y >= 0).all() and (v >= lo).all() and (v <= hi).all()
    lowered = lps.lowered(everyone, bounds.ub, bounds.lb, Deadline.after(10))
    for k in everyone.tolist():  # a bound lowered only by datasets: never below the least
        assert least.get(k, 0) <= lowered[k]
        assert bounds.lb[k] <= least.get(k, 0)  # and propagation's floor is proven


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


@st.composite
def two_block_tracts(draw: st.DrawFn) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray],
                                              np.ndarray, np.ndarray, np.ndarray]:
    """Two blocks sharing one class matrix (block cells), tract cells over their sum, and
    bounds m +- t around a true dataset (so the bounds hold, as they do on the event the
    union bound gives)."""
    k = draw(st.integers(1, 3))
    extra = draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=1,
                          max_size=3))
    c = np.array([[1] * k] + [[int(b) for b in row] for row in extra], dtype=np.int64)
    t_rows = draw(st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=1,
                           max_size=3))
    tract = np.array([[int(b) for b in row] for row in t_rows], dtype=np.int64)
    truth = [np.array(draw(st.lists(st.integers(0, 2), min_size=k, max_size=k)))
             for _ in range(2)]
    t_block = draw(st.integers(0, 2))
    t_tract = draw(st.integers(0, 2))
    noise = [np.array(draw(st.lists(st.integers(-t_block, t_block), min_size=len(c),
                                    max_size=len(c)))) for _ in range(2)]
    measured = [c @ y + e for y, e in zip(truth, noise, strict=True)]
    tract_noise = np.array(draw(st.lists(st.integers(-t_tract, t_tract),
                                         min_size=len(tract), max_size=len(tract))))
    measured_tract = tract @ (truth[0] + truth[1]) + tract_noise
    return (c, [m - t_block for m in measured], [m + t_block for m in measured], tract,
            measured_tract - t_tract, measured_tract + t_tract)


@settings(max_examples=150, deadline=None)
@given(two_block_tracts())
def test_two_block_tracts_claims_are_certain_over_the_whole_tract(
        system: tuple[np.ndarray, list[np.ndarray], list[np.ndarray], np.ndarray, np.ndarray,
                      np.ndarray]) -> None:
    """Brute force over every dataset of a tiny two-block tract within the bounds of all its
    cells, block and tract: each count the per-block proof claims is held by every such
    dataset (sound; the proof ignores the tract cells, so it may claim less than the
    oracle finds, never more), and the true dataset is among them."""
    c, lo, hi, tract, lo_t, hi_t = system
    k = c.shape[1]
    top = int(max(h.max() for h in hi)) + 1
    least: list[dict[int, int]] = [{j: top for j in range(k)} for _ in range(2)]
    found_any = False
    singles = [y for y in itertools.product(range(top + 1), repeat=k)]
    ok = [[np.array(y) for y in singles
           if ((c @ np.array(y) >= lo[b]) & (c @ np.array(y) <= hi[b])).all()]
          for b in range(2)]
    for y0 in ok[0]:
        for y1 in ok[1]:
            v = tract @ (y0 + y1)
            if (v >= lo_t).all() and (v <= hi_t).all():
                found_any = True
                for b, y in ((0, y0), (1, y1)):
                    for j in range(k):
                        least[b][j] = min(least[b][j], int(y[j]))
    assert found_any  # the true dataset meets every bound
    for b in range(2):
        got = certain_in_block(sp.csr_matrix(c), lo[b], hi[b], time_limit=10)
        assert got.status == "ok"
        for j, n in zip(got.classes.tolist(), got.counts.tolist(), strict=True):
            assert 1 <= n <= least[b][j]
