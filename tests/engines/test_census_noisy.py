"""The noise-aware tract estimate (prototype, issue 16 item 2): on exact tables it meets
every cell; on noisy ones its deviation is what its counts leave, never below the LP bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLES, statrecon

from statrecon.census.persons.release import read_release
from statrecon.engines.census import CellMatrices
from statrecon.engines.census_noisy import reconstruct_noisy_tract

SLICE = EXAMPLES / "census" / "persons_3tracts.csv"
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


def _sigmas(release: object, scale_one: bool) -> tuple[np.ndarray, np.ndarray]:
    cells = release.cells  # type: ignore[attr-defined]
    block = [c for c in cells if c.level == "block"]
    tract = [c for c in cells if c.level == "tract"]
    if scale_one:
        return np.ones(len(block)), np.ones(len(tract))
    noise = release.noise  # type: ignore[attr-defined]
    return (np.array([noise.sigma[c.table] for c in block]),
            np.array([noise.sigma[c.table] for c in tract]))


def _tables_of(tables: object, mats: CellMatrices, result: object) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """The block and tract cells the estimate's persons give, counted from scratch."""
    blocks = tables.blocks  # type: ignore[attr-defined]
    per_block = np.zeros((len(blocks), mats.block.shape[1]))
    np.add.at(per_block, (result.block_of, result.cell_of), result.counts)  # type: ignore
    block_cells = (mats.block @ per_block.T).T
    tract_cells = mats.tract @ per_block.sum(axis=0)
    return block_cells, tract_cells


def test_on_exact_tables_every_cell_is_met(releases: dict[str, Path]) -> None:
    release = read_release(releases["exact"])
    mats = CellMatrices.build(release.cells)
    sb, st = _sigmas(release, scale_one=True)
    count = mats.is_count
    for tables in release.tract_tables():
        if tables.tract not in SMALL_TRACTS:
            continue
        result = reconstruct_noisy_tract(tables, mats, sb, st, time_limit=60)
        assert result.status == "optimal" and result.deviation == 0 == result.lp_bound
        block_cells, tract_cells = _tables_of(tables, mats, result)
        assert np.array_equal(block_cells[:, count], tables.block_values[:, count])
        assert np.array_equal(tract_cells, tables.tract_values)


def test_on_noisy_tables_the_deviation_is_the_counts_and_above_the_bound(
        releases: dict[str, Path]) -> None:
    release = read_release(releases["noisy"])
    mats = CellMatrices.build(release.cells)
    sb, st = _sigmas(release, scale_one=False)
    count = mats.is_count
    for tables in release.tract_tables():
        if tables.tract not in SMALL_TRACTS:
            continue
        result = reconstruct_noisy_tract(tables, mats, sb, st, time_limit=60)
        assert result.status in ("optimal", "feasible") and result.lp_bound is not None
        assert (result.counts > 0).all()
        block_cells, tract_cells = _tables_of(tables, mats, result)
        deviation = float((np.abs(block_cells[:, count] - tables.block_values[:, count])
                           / sb[count][None, :]).sum()
                          + (np.abs(tract_cells - tables.tract_values) / st).sum())
        assert deviation == pytest.approx(result.deviation, rel=1e-9)
        assert result.deviation >= result.lp_bound - 1e-6 * max(1.0, result.lp_bound)
