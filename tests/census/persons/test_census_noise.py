"""Noisy measurements of the SF1 person tables (issue 16, item 2): the budget split, the
noise scales, the release file that states them, and the errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import SLICE, CensusSlice, assert_user_error, json_of, statrecon

from statrecon.census.persons.cells import person_cells, select_cells
from statrecon.census.persons.noise import (
    PRODUCTION_LEVEL_SHARES,
    default_allocation,
    plan_noise,
    sensitivity_squared,
)
from statrecon.census.persons.release import METADATA_KEY, read_release
from statrecon.errors import StatreconError


def test_sensitivities_count_the_cells_one_person_is_in() -> None:
    cells = person_cells()
    by_table = {t: [c for c in cells if c.table == t] for t in ("P1", "P12", "PCT12", "P6")}
    # the Bureau's cell file keeps the detail cells: P12 is sex x 23 age groups (46 cells
    # that split the persons), PCT12 sex x 103 ages; P6 tallies races, a person of six races
    # counts six times
    assert len(by_table["P12"]) == 46 and len(by_table["PCT12"]) == 206
    assert sensitivity_squared(by_table["P1"]) == 1
    assert sensitivity_squared(by_table["P12"]) == 1
    assert sensitivity_squared(by_table["PCT12"]) == 1
    assert sensitivity_squared(by_table["P6"]) == 6


def test_the_default_split_spends_the_whole_budget() -> None:
    cells = select_cells("sf1-persons")
    shares = default_allocation(cells)
    assert math.isclose(sum(shares.values()), 1.0)
    level = {c.table: c.level for c in cells}
    tract_part = sum(s for t, s in shares.items() if level[t] == "tract")
    assert math.isclose(tract_part, PRODUCTION_LEVEL_SHARES["tract"] / (
        PRODUCTION_LEVEL_SHARES["tract"] + PRODUCTION_LEVEL_SHARES["block"]))
    plan = plan_noise(cells, 2.0)
    spent = sum(n.sensitivity_squared / (2 * n.sigma ** 2) for n in plan.tables.values())
    assert math.isclose(spent, 2.0)  # zCDP adds up over the tables
    only_blocks = plan_noise(select_cells("P1,P12"), 1.0)
    assert math.isclose(sum(n.share for n in only_blocks.tables.values()), 1.0)
    assert all(n.sigma == 0 for n in plan_noise(cells, math.inf).tables.values())


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory, census_slice: CensusSlice
             ) -> dict[str, Path]:
    """The slice's exact release (the session's) and three tabulated with --dp-rho."""
    d = tmp_path_factory.mktemp("noise")
    out = {"exact": census_slice.release, "inf": d / "inf.parquet", "a": d / "a.parquet",
           "b": d / "b.parquet"}
    for name, rho in (("inf", "inf"), ("a", "0.5"), ("b", "0.5")):
        proc = statrecon("census", "tabulate", "--persons", SLICE, "--out", out[name],
                         "--dp-rho", rho, "--seed", "3", "--json")
        assert proc.returncode == 0, proc.stderr
    return out


def test_noisy_values_carry_each_tables_noise(releases: dict[str, Path]) -> None:
    exact = pq.read_table(releases["exact"]).to_pandas()
    noisy = pq.read_table(releases["a"]).to_pandas()
    assert (exact[["level", "geoid", "cell"]].to_numpy() == noisy[["level", "geoid", "cell"]]
            .to_numpy()).all()
    assert pq.read_table(releases["b"]).to_pandas()["value"].equals(noisy["value"])
    noise = noisy["value"].to_numpy() - exact["value"].to_numpy()
    assert (noisy["value"] < 0).any()
    stated = read_release(releases["a"]).noise
    assert stated is not None and stated.noisy and stated.rho == 0.5
    assert stated.sampler == "numpy"
    for table in ("P1", "P12", "PCT12"):
        part = noise[(noisy["table"] == table).to_numpy()]
        assert abs(part.std() / stated.sigma[table] - 1) < 0.1, table


def test_rho_inf_publishes_the_exact_tables(releases: dict[str, Path]) -> None:
    exact = read_release(releases["exact"])
    same = read_release(releases["inf"])
    assert same.noise is not None and not same.noise.noisy
    assert np.array_equal(exact.block_values, same.block_values)
    assert np.array_equal(exact.tract_values, same.tract_values)


def _recon_meta(path: Path) -> dict[str, object]:
    meta = json.loads((pq.read_schema(path).metadata or {})[b"statrecon.census.recon"])
    assert isinstance(meta, dict)
    return meta


def test_a_noisy_release_gets_the_noise_aware_estimate(releases: dict[str, Path],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    proc = statrecon("census", "reconstruct", releases["a"], "--out", out, "--rank", "3",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["statuses"] == {"ok": 3}
    truth = read_release(releases["exact"]).block_values[:, 0].sum()
    assert abs(data["persons"] - truth) <= 0.1 * truth  # the totals are fixed top down
    assert "top-down" in str(_recon_meta(out)["solver"])
    assert _recon_meta(out)["estimate"] is True
    compared = statrecon("census", "compare", "--truth", SLICE, "--recon", out, "--json")
    assert compared.returncode == 0, compared.stderr
    result = json_of(compared)
    assert result["certain_persons"] == 0  # an estimate certifies nothing
    curve = result["precision_at_k"]
    assert set(curve) == {"1%", "5%", "10%", "25%", "50%", "100%"}
    assert 0 <= curve["100%"] <= 1
    html = tmp_path / "r.html"
    assert statrecon("census", "report", out, "--out", html).returncode == 0
    text = html.read_text(encoding="utf-8")
    assert "noisy measurements" in text and "certifies nothing" in text


def test_rho_inf_is_reconstructed_by_the_exact_model(releases: dict[str, Path],
                                                     tmp_path: Path) -> None:
    out = tmp_path / "inf.parquet"
    proc = statrecon("census", "reconstruct", releases["inf"], "--out", out, "--no-certify",
                     "--workers", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert _recon_meta(out)["solver"] == "CP-SAT"
    assert _recon_meta(out)["estimate"] is False
    exact = read_release(releases["exact"])
    assert json_of(proc)["persons"] == exact.block_values[:, 0].sum()


def test_bad_noise_requests(releases: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "x.parquet"
    tab = ("census", "tabulate", "--persons", SLICE, "--out", out)
    assert_user_error(statrecon(*tab, "--dp-rho", "-1"), "--dp-rho must be > 0")
    assert_user_error(statrecon(*tab, "--dp-rho", "0"), "--dp-rho must be > 0")
    assert_user_error(statrecon(*tab, "--seed", "2"), "give --dp-rho")
    alloc = tmp_path / "alloc.yaml"
    alloc.write_text("P1: 0.5\nP12: 0.4\n")
    assert_user_error(statrecon(*tab, "--tables", "P1,P12", "--dp-rho", "1", "--allocation",
                                alloc), "add up to 0.9", str(alloc))
    alloc.write_text("P1: 0.5\nP99: 0.5\n")
    assert_user_error(statrecon(*tab, "--tables", "P1,P12", "--dp-rho", "1", "--allocation",
                                alloc), "unknown table 'P99'")
    alloc.write_text("a: &x [1, 1]\nb: &y [*x, *x]\nP1: *y\n")
    assert_user_error(statrecon(*tab, "--tables", "P1,P12", "--dp-rho", "1", "--allocation",
                                alloc), "aliases")
    alloc.write_text("P1: 1.0\n")
    assert_user_error(statrecon(*tab, "--tables", "P1,P12", "--dp-rho", "1", "--allocation",
                                alloc), "no share for table P12")
    assert_user_error(statrecon(*tab, "--with-p13", "--dp-rho", "1"), "medians")
    assert not out.exists()
    alloc.write_text("P1: 0.25\nP12: 0.75\n")
    proc = statrecon(*tab, "--tables", "P1,P12", "--dp-rho", "1", "--allocation", alloc,
                     "--seed", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    stated = read_release(out).noise
    assert stated is not None
    assert math.isclose(stated.sigma["P1"], math.sqrt(1 / (2 * 0.25)))
    assert math.isclose(stated.sigma["P12"], math.sqrt(1 / (2 * 0.75)))
    assert json_of(proc)["noise"]["rho"] == 1.0


def test_a_noisy_release_without_its_scales_is_refused(releases: dict[str, Path],
                                                       tmp_path: Path) -> None:
    table = pq.read_table(releases["a"])
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    del meta["noise"]["tables"]["P12"]
    stripped = tmp_path / "stripped.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()}),
                   stripped)
    assert_user_error(statrecon("census", "reconstruct", stripped, "--out",
                                tmp_path / "r.parquet"), "no sigma for table P12")
    del meta["noise"]
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()}),
                   stripped)
    assert_user_error(statrecon("census", "reconstruct", stripped, "--out",
                                tmp_path / "r.parquet"), "a count must be a whole number >= 0",
                      "--dp-rho")


@pytest.fixture(scope="module")
def coarse_recon(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slice's exact P1, P12 and P8 reconstructed (what the claims are compared with)."""
    d = tmp_path_factory.mktemp("coarse")
    recon, exact = d / "recon.parquet", d / "exact.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", exact, "--tables",
                     "P1,P12,P8").returncode == 0
    assert statrecon("census", "reconstruct", exact, "--out", recon, "--no-certify",
                     "--workers", "1").returncode == 0
    return recon


@pytest.mark.parametrize("rho,seed,workers", [(50.0, 1, "2"), (200.0, 2, "1")])
def test_certain_within_the_noise_is_never_false(coarse_recon: Path, tmp_path: Path,
                                                 rho: float, seed: int, workers: str) -> None:
    """P1, P12 and P8 only (coarse classes: a fast proof): every person claimed certain
    within the noise is in the true block, at each rho and seed (on a pool of workers, and
    in this process)."""
    release, claims = tmp_path / "r.parquet", tmp_path / "c.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", release, "--tables",
                     "P1,P12,P8", "--dp-rho", str(rho), "--seed", str(seed)).returncode == 0
    proc = statrecon("census", "certain", release, "--out", claims, "--delta", "0.05",
                     "--workers", workers, "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json_of(proc)
    recon = coarse_recon
    r = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon", recon,
                          "--certain", claims, "--json"))
    assert r["delta"] == 0.05
    assert r["certain_within_noise"] == summary["certain_within_noise"]
    assert r["certain_within_noise_not_in_truth"] == 0
    assert r["certain_within_noise"] > 0  # these budgets leave facts to prove


def test_compare_refuses_a_forged_certain_file(census_slice: CensusSlice,
                                               tmp_path: Path) -> None:
    import pyarrow as pa

    from statrecon.runs.census_certain import META_KEY

    recon = census_slice.recon
    forged = tmp_path / "forged.parquet"
    compare = ("census", "compare", "--truth", SLICE, "--recon", recon, "--certain", forged)
    table = pa.table({"block": ["x"], "class": pa.array([1], pa.int32()),
                      "persons": pa.array([1], pa.int32())})
    for meta, error in (("{not json", "unreadable metadata"),
                        (json.dumps({"delta": 0.05}), "unreadable metadata"),
                        (json.dumps({"delta": 2, "cells": []}), "delta must lie in (0, 1)")):
        pq.write_table(table.replace_schema_metadata({META_KEY: meta.encode()}), forged)
        assert_user_error(statrecon(*compare), error)
    pq.write_table(table.drop_columns(["persons"]).replace_schema_metadata(
        {META_KEY: json.dumps({"delta": 0.05, "cells": []}).encode()}), forged)
    assert_user_error(statrecon(*compare), "expected the columns")
    pq.write_table(pa.table({"a": [1]}), forged)
    assert_user_error(statrecon(*compare), "not the output of")


def test_certain_refuses_exact_tables_and_bad_delta(releases: dict[str, Path],
                                                   tmp_path: Path) -> None:
    out = tmp_path / "c.parquet"
    assert_user_error(statrecon("census", "certain", releases["exact"], "--out", out),
                      "not noisy measurements")
    assert_user_error(statrecon("census", "certain", releases["a"], "--out", out, "--delta",
                                "0"), "--delta must lie in (0, 1)")
    assert not out.exists()


def test_certain_resumes_after_an_interrupt(tmp_path: Path) -> None:
    """Ctrl-C after the first tract is stored: the rerun does only the others and writes what
    an uninterrupted run writes; a part made with another delta is refused."""
    from statrecon.runs.census_certain import certain_release
    from statrecon.runs.progress import Step

    path = tmp_path / "r.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", path, "--tables",
                     "P1,P12,P8", "--dp-rho", "50", "--seed", "1").returncode == 0
    release = read_release(path)
    clean = tmp_path / "clean.parquet"
    certain_release(release, clean, 0.05)
    out = tmp_path / "c.parquet"

    def stop_after_one(step: Step) -> None:
        if step.done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        certain_release(release, out, 0.05, progress=stop_after_one)
    parts = tmp_path / "c.parquet.parts"
    assert len(list(parts.glob("*.parquet"))) == 1 and not out.exists()
    totals: list[int] = []
    certain_release(release, out, 0.05, progress=lambda s: totals.append(s.total))
    assert set(totals) == {len(release.tracts) - 1}
    assert pq.read_table(out).equals(pq.read_table(clean))
    assert not parts.exists()
    with pytest.raises(KeyboardInterrupt):
        certain_release(release, out.with_name("d.parquet"), 0.05, progress=stop_after_one)
    with pytest.raises(StatreconError, match="another release or delta"):
        certain_release(release, out.with_name("d.parquet"), 0.1)


def test_an_exact_tract_population_is_published_and_kept(census_slice: CensusSlice,
                                                        tmp_path: Path) -> None:
    release = tmp_path / "inv.parquet"
    proc = statrecon("census", "tabulate", "--persons", SLICE, "--out", release, "--dp-rho",
                     "1", "--seed", "0", "--exact-tract-population", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json_of(proc)["noise"]["exact_tract_population"] is True
    exact = read_release(census_slice.release)
    truth = {t.tract: int(t.block_values[:, 0].sum()) for t in exact.tract_tables()}
    noisy = read_release(release)
    assert noisy.noise is not None and noisy.noise.tract_population == truth
    out = tmp_path / "r.parquet"
    assert statrecon("census", "reconstruct", release, "--out", out, "--workers", "1"
                     ).returncode == 0
    blocks = pq.read_table(out, columns=["tract", "persons"]).to_pandas()
    assert blocks.groupby("tract")["persons"].sum().to_dict() == truth
    # the invariant is part of what the release is: a store of the same cells without it is
    # another release
    plain = tmp_path / "plain.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", plain, "--dp-rho", "1",
                     "--seed", "0").returncode == 0
    assert read_release(plain).digest != noisy.digest


def test_forged_invariants_are_refused(tmp_path: Path) -> None:
    release = tmp_path / "inv.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", release, "--tables",
                     "P1,P12", "--dp-rho", "1", "--seed", "0", "--exact-tract-population"
                     ).returncode == 0
    table = pq.read_table(release)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    forged = tmp_path / "forged.parquet"
    population = meta["noise"]["invariants"]["tract_population"]
    first = sorted(population)[0]
    for change, error in (({**population, "99999999999": 5}, "does not publish"),
                          ({**population, first: -3}, "whole number from 0"),
                          ({**population, "x": 1}, "tract GEOID"),
                          ({k: v for k, v in population.items() if k != first},
                           f"no invariant population for tract {first}")):
        meta["noise"]["invariants"]["tract_population"] = change
        pq.write_table(table.replace_schema_metadata(
            {METADATA_KEY: json.dumps(meta).encode()}), forged)
        assert_user_error(statrecon("census", "reconstruct", forged, "--out",
                                    tmp_path / "r.parquet"), error)
    assert_user_error(statrecon("census", "tabulate", "--persons", SLICE, "--out",
                                tmp_path / "x.parquet", "--exact-tract-population"),
                      "give --dp-rho")
