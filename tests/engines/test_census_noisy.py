"""The noise-aware tract estimate (prototype, issue 16 item 2): on exact tables it meets
every cell; on noisy ones its deviation is what its counts leave, never below the LP bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import SLICE, statrecon

from statrecon.census.persons.release import CensusRelease, TractTables, read_release
from statrecon.engines.census import CellMatrices
from statrecon.engines.census_noisy import NoisyTract, reconstruct_noisy_tract

SMALL_TRACTS = ("06037532400", "34017006900")  # 5 blocks and 1 block


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("noisy")
    out = {"exact": d / "exact.parquet", "noisy": d / "noisy.parquet"}
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", out["exact"]
                     ).returncode == 0
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", out["noisy"],
                     "--dp-rho", "10", "--seed", "3").returncode == 0
    return out


def _sigmas(release: CensusRelease, scale_one: bool) -> tuple[np.ndarray, np.ndarray]:
    cells = release.cells
    block = [c for c in cells if c.level == "block"]
    tract = [c for c in cells if c.level == "tract"]
    if scale_one:
        return np.ones(len(block)), np.ones(len(tract))
    noise = release.noise
    assert noise is not None
    return (np.array([noise.sigma[c.table] for c in block]),
            np.array([noise.sigma[c.table] for c in tract]))


def _tables_of(tables: TractTables, mats: CellMatrices, result: NoisyTract
               ) -> tuple[np.ndarray, np.ndarray]:
    """The block and tract cells the estimate's persons give, counted from scratch."""
    per_block = np.zeros((len(tables.blocks), mats.block.shape[1]))
    np.add.at(per_block, (result.block_of, result.cell_of), result.counts)
    block_cells = (mats.block @ per_block.T).T
    tract_cells = mats.tract @ per_block.sum(axis=0)
    return block_cells, tract_cells


def _small_tracts(path: Path, scale_one: bool
                  ) -> list[tuple[TractTables, NoisyTract, np.ndarray, np.ndarray, np.ndarray]]:
    """(tables, estimate, its block cells, its tract cells, which block cells are counts)
    for the two small tracts of ``path``, the estimate's cells counted from scratch."""
    release = read_release(path)
    mats = CellMatrices.build(release.cells)
    sb, st = _sigmas(release, scale_one)
    out = []
    for tables in release.tract_tables():
        if tables.tract in SMALL_TRACTS:
            result = reconstruct_noisy_tract(tables, mats, sb, st, time_limit=60)
            out.append((tables, result, *_tables_of(tables, mats, result), mats.is_count))
    assert len(out) == len(SMALL_TRACTS)
    return out


def test_on_exact_tables_every_cell_is_met(releases: dict[str, Path]) -> None:
    for tables, result, block_cells, tract_cells, count in _small_tracts(releases["exact"],
                                                                        scale_one=True):
        assert result.status == "optimal"
        assert result.deviation == 0 == result.lp_bound
        assert np.array_equal(block_cells[:, count],
                              tables.block_values[:, count])
        assert np.array_equal(tract_cells, tables.tract_values)


def test_on_noisy_tables_the_deviation_is_the_counts_and_above_the_bound(
        releases: dict[str, Path]) -> None:
    release = read_release(releases["noisy"])
    sb, st = _sigmas(release, scale_one=False)
    for tables, r, block_cells, tract_cells, count in _small_tracts(releases["noisy"],
                                                                        scale_one=False):
        assert r.status in ("optimal", "feasible")
        assert r.lp_bound is not None
        assert (r.counts > 0).all()
        measured_b = tables.block_values[:, count]
        measured_t = tables.tract_values
        deviation = float((np.abs(block_cells[:, count] - measured_b)
                           / sb[count][None, :]).sum()
                          + (np.abs(tract_cells - measured_t) / st).sum())
        assert deviation == pytest.approx(r.deviation, rel=1e-9)
        assert r.deviation >= r.lp_bound - 1e-6 * max(1.0, r.lp_bound)
