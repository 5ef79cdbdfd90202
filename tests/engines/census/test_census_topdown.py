"""The top-down noise-aware estimate (issue 16, item 2): exact tables are met cell for cell,
the tract's population is kept, the block stage's transportation step is optimal (brute
force on tiny margins), the hot-started fit equals a fresh ``linprog``, the ages are dealt
from the tract histogram, and the scores count re-drawn estimates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import SLICE, CensusSlice, statrecon
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from statrecon.census.persons.cells import GRID_SIZE
from statrecon.census.persons.release import CensusRelease, read_release
from statrecon.engines.census import CellMatrices, CensusOptions
from statrecon.engines.census.topdown import (
    L1Fit,
    deal_ages,
    measurements,
    person_scores,
    reconcile,
    reconstruct_noisy,
    totals,
)
from statrecon.engines.solvers.cpsat import Deadline


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory, census_slice: CensusSlice
             ) -> dict[str, CensusRelease]:
    d = tmp_path_factory.mktemp("topdown")
    exact, noisy = census_slice.release, d / "noisy.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", noisy, "--dp-rho", "10",
                     "--seed", "3").returncode == 0
    return {"exact": read_release(exact), "noisy": read_release(noisy)}


def _sigmas(release: CensusRelease, unit: bool) -> tuple[np.ndarray, np.ndarray]:
    block = [c for c in release.cells if c.level == "block"]
    tract = [c for c in release.cells if c.level == "tract"]
    if unit:
        return np.ones(len(block)), np.ones(len(tract))
    assert release.noise is not None
    return (np.array([release.noise.sigma[c.table] for c in block]),
            np.array([release.noise.sigma[c.table] for c in tract]))


def _tabulate(records: tuple[np.ndarray, ...], mats: CellMatrices
              ) -> tuple[np.ndarray, np.ndarray]:
    """The block and tract cells of the estimate's persons, counted one person at a time."""
    per_block = np.zeros((len(records), GRID_SIZE))
    for b, cells in enumerate(records):
        for c in cells.tolist():
            per_block[b, c] += 1
    return (mats.block @ per_block.T).T, mats.tract @ per_block.sum(axis=0)


def test_exact_tables_are_met_cell_for_cell(releases: dict[str, CensusRelease]) -> None:
    # Not guaranteed by the decomposition (measured: 8 of the 28 real tracts are met exactly,
    # the others miss by 8-148 units over millions of cells), but the slice's three are.
    release = releases["exact"]
    mats = CellMatrices.build(release.cells)
    sb, st_ = _sigmas(release, unit=True)
    for tables in release.tract_tables():
        r = reconstruct_noisy(tables, mats, sb, st_, CensusOptions(time_limit=120))
        assert r.status == "ok" and r.persons == tables.persons
        assert all(b.unique is None and len(b.certain) == 0 for b in r.blocks)  # an estimate
        block_cells, tract_cells = _tabulate(tuple(b.records for b in r.blocks), mats)
        assert np.array_equal(block_cells, tables.block_values)
        assert np.array_equal(tract_cells, tables.tract_values)


def test_noisy_tables_keep_the_estimated_population(releases: dict[str, CensusRelease]
                                                     ) -> None:
    release = releases["noisy"]
    mats = CellMatrices.build(release.cells)
    sb, st_ = _sigmas(release, unit=False)
    truth = {t.tract: t.persons for t in releases["exact"].tract_tables()}
    for tables in release.tract_tables():
        m = measurements(tables, mats, sb, st_)
        total, per_block = totals(m, mats)
        assert per_block.sum() == total and (per_block >= 0).all()
        r = reconstruct_noisy(tables, mats, sb, st_, CensusOptions(time_limit=120))
        records = tuple(b.records for b in r.blocks)
        assert r.status == "ok" and [len(x) for x in records] == per_block.tolist()
        assert r.persons == total
        # no inflation: at rho = 10 the population estimate is within 5% of the truth
        assert abs(total - truth[tables.tract]) <= 0.05 * truth[tables.tract]


def test_a_tract_without_noise_scales_is_refused(releases: dict[str, CensusRelease]) -> None:
    release = releases["exact"]
    mats = CellMatrices.build(release.cells)
    sb, st_ = _sigmas(release, unit=True)
    tables = next(release.tract_tables())
    with pytest.raises(ValueError, match="sigma > 0"):
        measurements(tables, mats, sb * 0, st_)


def _brute_reconcile(fits: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> float:
    """The least L1 distance from ``fits`` over every integer matrix with these margins."""
    nb, nk = fits.shape
    best = np.inf
    ranges = [range(int(min(rows[i], cols[j])) + 1) for i in range(nb) for j in range(nk)]
    for values in itertools.product(*ranges):
        y = np.array(values).reshape(nb, nk)
        if (y.sum(axis=1) == rows).all() and (y.sum(axis=0) == cols).all():
            best = min(best, float(np.abs(y - fits).sum()))
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.data())
def test_reconcile_is_the_nearest_matrix_with_the_margins(nb: int, nk: int,
                                                          data: st.DataObject) -> None:
    rows = np.array(data.draw(st.lists(st.integers(0, 3), min_size=nb, max_size=nb)))
    total = int(rows.sum())
    cuts = sorted(data.draw(st.lists(st.integers(0, total), min_size=nk - 1,
                                     max_size=nk - 1)))
    cols = np.diff(np.array([0, *cuts, total]))
    fits = np.array(data.draw(st.lists(st.floats(0, 3, allow_nan=False), min_size=nb * nk,
                                       max_size=nb * nk))).reshape(nb, nk)
    fits = np.round(fits, 3)  # the flow's costs are in thousandths of a person
    y = reconcile(fits, rows, cols)
    assert (y >= 0).all()
    assert np.array_equal(y.sum(axis=1), rows) and np.array_equal(y.sum(axis=0), cols)
    assert float(np.abs(y - fits).sum()) == pytest.approx(_brute_reconcile(fits, rows, cols),
                                                          abs=1e-6)


def test_the_hot_started_fit_equals_fresh_linprog() -> None:
    rng = np.random.default_rng(5)
    a = sp.csr_matrix((rng.random((12, 9)) < 0.4).astype(float))
    w = rng.uniform(0.2, 2, 12)
    fit = L1Fit(a, w, np.full(9, 4.0))
    for _ in range(6):  # several measurements through one object: each from the last basis
        values = rng.integers(-2, 6, 12).astype(float)
        total = int(rng.integers(0, 10))
        x = fit.solve(values, total, Deadline.after(30))
        assert x is not None and abs(x.sum() - total) < 1e-7 and (x >= -1e-9).all()
        mine = float((w * np.abs(a @ x - values)).sum())
        k = a.shape[0]
        eye = sp.identity(k)
        ref = linprog(np.concatenate([np.zeros(9), w, w]),
                      A_eq=sp.vstack([sp.hstack([a, -eye, eye]),
                                      sp.hstack([sp.csr_matrix(np.ones((1, 9))),
                                                 sp.csr_matrix((1, 2 * k))])]),
                      b_eq=np.concatenate([values, [total]]),
                      bounds=[(0, 4)] * 9 + [(0, None)] * (2 * k), method="highs")
        assert ref.status == 0 and mine == pytest.approx(ref.fun, abs=1e-7)


def test_samples_fitted_from_the_published_basis_are_optimal(
        releases: dict[str, CensusRelease]) -> None:
    """The tract fit of each re-drawn measurement starts from the published fit's basis
    (``TractFit``): its L1 error equals that of a fit made afresh for that measurement, which
    starts from nothing."""
    from statrecon.engines.census.topdown import TractFit, _redrawn

    release = releases["noisy"]
    mats = CellMatrices.build(release.cells)
    sb, st_ = _sigmas(release, unit=False)
    tables = next(t for t in release.tract_tables() if len(t.blocks) == 5)
    m = measurements(tables, mats, sb, st_)
    kept = TractFit(m, mats)
    total, _ = totals(m, mats)
    assert kept.histogram(m, total, Deadline.after(60)) is not None
    assert kept.first_basis is not None and kept.fit.highs is not None
    drawn = _redrawn(m, 1)
    errors = []
    for fit in (kept, TractFit(drawn, mats)):  # the fit of the last sample, and a fresh one
        assert fit.histogram(drawn, total, Deadline.after(60)) is not None
        errors.append(fit.fit.highs.getInfo().objective_function_value)  # the L1 error
    assert errors[0] == pytest.approx(errors[1], rel=1e-9, abs=1e-6)


def test_ages_are_dealt_from_the_tract_histogram() -> None:
    # cells 0, 1 share class 0 (ages the block tables cannot tell apart), cell 2 is class 1
    block_class = np.array([0, 0, 1])
    h = np.array([2, 1, 2])
    counts = np.array([[1, 2], [2, 0]])  # block 0: one of class 0, two of class 1
    records = deal_ages(h, np.array([0, 1]), counts, block_class, np.random.default_rng(0))
    assert [len(r) for r in records] == [3, 2]
    assert list(records[0]).count(2) == 2 and 2 not in records[1]
    assert sorted(np.concatenate(records).tolist()) == [0, 0, 1, 2, 2]


def test_scores_count_the_samples_holding_each_copy() -> None:
    records = [np.array([4, 4, 7]), np.array([1])]
    samples = [[np.array([4, 7]), np.array([1])],
               [np.array([4, 4]), np.array([], dtype=np.int64)],
               [np.array([4, 4, 4, 7]), np.array([2])]]
    scores = person_scores(records, samples)
    # block 0: first 4 in all three, second 4 in two (>= 2 copies), 7 in two; block 1: 1 once
    assert np.allclose(scores[0], [1, 2 / 3, 2 / 3])
    assert np.allclose(scores[1], [1 / 3])
    assert np.isnan(person_scores(records, [])[0]).all()


def test_ranked_noisy_tract_scores_every_person(releases: dict[str, CensusRelease]) -> None:
    release = releases["noisy"]
    mats = CellMatrices.build(release.cells)
    sb, st_ = _sigmas(release, unit=False)
    tables = next(t for t in release.tract_tables() if len(t.blocks) == 5)
    result = reconstruct_noisy(tables, mats, sb, st_, CensusOptions(samples=4, seed=1))
    assert result.status == "ok" and result.samples == 4
    for b in result.blocks:
        assert b.unique is None and len(b.certain) == 0  # an estimate certifies nothing
        assert b.scores is not None and len(b.scores) == b.persons
        assert ((b.scores >= 0) & (b.scores <= 1)).all()
    assert any(b.persons for b in result.blocks)


def test_time_limit_gives_unknown(releases: dict[str, CensusRelease]) -> None:
    release = releases["noisy"]
    mats = CellMatrices.build(release.cells)
    sb, st_ = _sigmas(release, unit=False)
    tables = max(release.tract_tables(), key=lambda t: len(t.blocks))
    result = reconstruct_noisy(tables, mats, sb, st_, CensusOptions(time_limit=0.001))
    assert result.status == "unknown" and result.persons == 0
