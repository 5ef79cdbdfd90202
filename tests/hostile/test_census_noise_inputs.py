"""Issue 27, "untrusted input", the census DP paths: noise parameters bounded where they enter
and claims files checked as evidence.

Reproductions held here (each hostile file is built from the 3-tract demo in tmp_path):
- ``census tabulate --dp-rho`` with a budget whose scales no sampler draws (1e-30: 3.78 EiB,
  5e-324: a division by zero, 1e-11: MemoryError, 1e-9: a release its readers refused; 1e30:
  a scale that never draws) is one line naming the largest sigma, and writes nothing;
- a release at the largest sigma reads back, and its noise bounds keep ``--time-limit``
  (past it every block is unknown, nothing claimed);
- a release edited to sigma 1e300 (``census certain`` ran for more than 10 minutes), 1e-300,
  a huge integer, or half its tables at sigma 0 (tracebacks in ``reconstruct``) is refused
  when read; so are noisy values no draw of the stated noise reaches, and a --delta whose
  share per cell the bounds cannot compute;
- a forged exact tract population (1,000,000 per tract reconstructed 3,000,000 persons) is
  refused against the release's own noisy totals;
- ``census compare --certain``: duplicated claims (counted three times), a class of 2^31-1,
  a persons count of 2^31-1 ("73 billion certain"), a digest that is not the claims' release,
  and (with ``--release``) a claim above what the release's noisy cells allow are refused.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import SLICE, CliRunner, assert_one_line_error

from statrecon.census.persons.cells import select_cells
from statrecon.census.persons.microdata import load_persons
from statrecon.census.persons.noise import noisy_table, plan_noise
from statrecon.census.persons.release import METADATA_KEY, read_release, write_release
from statrecon.census.persons.tabulate import tabulate_cells
from statrecon.db import open_connection
from statrecon.discrete_gaussian import MAX_SIGMA
from statrecon.engines.census import CensusOptions
from statrecon.runs.census import reconstruct_release
from statrecon.runs.census_certain import META_KEY as CERTAIN_KEY
from statrecon.runs.census_certain import certain_release

Meta = dict[str, Any]


def tabulate(out: Path, tables: str, rho: float | None, seed: int = 0,
             population: bool = False) -> Path:
    """``census tabulate --persons SLICE`` in process (``--dp-rho rho --seed seed``)."""
    cells = select_cells(tables)
    con = open_connection()
    load_persons(SLICE, con)
    table = tabulate_cells(con, cells)
    noise = None
    if rho is not None:
        table, noise = noisy_table(table, plan_noise(cells, rho), seed,
                                   cells if population else None)
    write_release(table, cells, tables, out, noise)
    return out


def forge_release(src: Path, dst: Path, change: Callable[[Meta], None],
                  rows: Callable[[pa.Table], pa.Table] | None = None) -> Path:
    """``src`` with its census metadata (and, with ``rows``, its rows) rewritten."""
    table = pq.read_table(src)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    change(meta)
    if rows is not None:
        table = rows(table)
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()}),
                   dst)
    return dst


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """P1 and P12 of the demo at rho = 1 (sigma 1), each tract's population exact."""
    return tabulate(tmp_path_factory.mktemp("noisy") / "r.parquet", "P1,P12", 1.0,
                    population=True)


# ------------------------------------------------------------------ the budget at tabulate


@pytest.mark.parametrize("rho", ["1e-30", "5e-324", "1e-11", "1e-9"])
def test_a_budget_too_small_to_sample_is_one_line(rho: str, run_cli: CliRunner,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    assert_one_line_error(run_cli("census", "tabulate", "--persons", SLICE, "--out", out,
                                  "--dp-rho", rho, "--seed", "0"),
                          "--dp-rho", "more than 10,000, the largest sigma the samplers draw",
                          "--dp-rho must lie between")
    assert not out.exists()


def test_a_budget_whose_noise_is_never_drawn_is_one_line(run_cli: CliRunner,
                                                        tmp_path: Path) -> None:
    out = tmp_path / "r.parquet"
    assert_one_line_error(run_cli("census", "tabulate", "--persons", SLICE, "--out", out,
                                  "--dp-rho", "1e30", "--seed", "0"),
                          "--dp-rho 1e+30", "less than 0.01", "inf")
    assert not out.exists()


def test_the_largest_sigma_reads_back_and_its_bounds_keep_the_time_limit(
        tmp_path: Path) -> None:
    """Just inside the limit: the release reads back (no value beyond its noise), and the
    noise bounds (seconds at this sigma) stop at the time limit: nothing is claimed."""
    rho = 1 / (0.99 * MAX_SIGMA) ** 2  # P1 and P12 share it: sigma = 1 / sqrt(rho)
    release = read_release(tabulate(tmp_path / "edge.parquet", "P1,P12", rho,
                                    population=True))
    assert release.noise is not None
    assert max(release.noise.sigma.values()) == pytest.approx(0.99 * MAX_SIGMA)
    t0 = time.perf_counter()
    summary = certain_release(release, tmp_path / "c.parquet", 0.05, time_limit=0.05)
    assert time.perf_counter() - t0 < 1.0
    assert summary.statuses == {"unknown": len(release.blocks)} and summary.persons == 0
    assert pq.read_table(tmp_path / "c.parquet").num_rows == 0


# ------------------------------------------------------------------ noise stated in a release


def _every_sigma(value: object) -> Callable[[Meta], None]:
    def change(meta: Meta) -> None:
        for entry in meta["noise"]["tables"].values():
            entry["sigma"] = value
    return change


def _p12_exact(meta: Meta) -> None:
    meta["noise"]["tables"]["P12"]["sigma"] = 0


@pytest.mark.parametrize("command,change,parts", [
    ("certain", _every_sigma(1e300), ("noise: table P1: sigma 1e+300", "more than 10,000")),
    ("reconstruct", _every_sigma(1e-300), ("noise: table P1: sigma 1e-300", "less than 0.01")),
    ("reconstruct", _every_sigma(10 ** 400), ("table P1: sigma must be a finite number",)),
    ("reconstruct", _p12_exact, ("table P12 states sigma 0 beside noisy tables",)),
], ids=["sigma-1e300", "sigma-1e-300", "sigma-huge-integer", "half-the-tables-at-0"])
def test_a_forged_noise_scale_is_refused_when_read(
        command: str, change: Callable[[Meta], None], parts: tuple[str, ...], noisy: Path,
        run_cli: CliRunner, tmp_path: Path) -> None:
    forged = forge_release(noisy, tmp_path / "forged.parquet", change)
    out = tmp_path / "out.parquet"
    t0 = time.perf_counter()
    assert_one_line_error(run_cli("census", command, forged, "--out", out, "--workers", "1"),
                          str(forged), *parts)
    assert time.perf_counter() - t0 < 30
    assert not out.exists()


def test_a_value_no_draw_of_the_stated_noise_reaches_is_refused(
        noisy: Path, run_cli: CliRunner, tmp_path: Path) -> None:
    """Sigma 1 draws at most 41 from a count; the old floor let -999,999 through."""
    def far(table: pa.Table) -> pa.Table:
        values = table.column("value").to_pylist()
        values[0] = -500_000
        return table.set_column(table.schema.get_field_index("value"), "value",
                                pa.array(values, pa.int64()))

    forged = forge_release(noisy, tmp_path / "forged.parquet", lambda meta: None, far)
    assert_one_line_error(run_cli("census", "reconstruct", forged, "--out",
                                  tmp_path / "o.parquet"),
                          "value -500000", "not a noisy measurement of a count")


def test_a_delta_too_small_to_share_is_one_line(noisy: Path, run_cli: CliRunner,
                                                tmp_path: Path) -> None:
    out = tmp_path / "c.parquet"
    assert_one_line_error(run_cli("census", "certain", noisy, "--out", out, "--delta",
                                  "1e-320"),
                          "--delta", "the least the noise bounds compute")
    assert not out.exists()


# ------------------------------------------------------------------ the exact tract population


def _population(change: Callable[[str, int], int]) -> Callable[[Meta], None]:
    def forge(meta: Meta) -> None:
        population = meta["noise"]["invariants"]["tract_population"]
        for tract, n in population.items():
            population[tract] = change(tract, n)
    return forge


@pytest.mark.parametrize("change", [lambda t, n: 1_000_000, lambda t, n: n + 2_000,
                                    lambda t, n: 0], ids=["a-million", "plus-2000", "none"])
def test_a_forged_tract_population_is_refused(change: Callable[[str, int], int], noisy: Path,
                                              run_cli: CliRunner, tmp_path: Path) -> None:
    forged = forge_release(noisy, tmp_path / "forged.parquet", _population(change))
    out = tmp_path / "o.parquet"
    assert_one_line_error(run_cli("census", "reconstruct", forged, "--out", out),
                          "the invariant population of tract",
                          "the invariant does not belong to these tables")
    assert not out.exists()


def test_true_tract_populations_read_back(noisy: Path, tmp_path: Path) -> None:
    """The genuine invariant passes, noisy and exact (rho = inf: it is the blocks' sum)."""
    stated = read_release(noisy).noise
    assert stated is not None and stated.tract_population
    exact = tabulate(tmp_path / "inf.parquet", "P1,P12", math.inf, population=True)
    assert read_release(exact).noise is not None


# ------------------------------------------------------------------ claims files as evidence


@pytest.fixture(scope="module")
def claims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A noisy P1/P12/P8 release at rho = 50 (facts left to prove), its certain persons, and
    a reconstruction of the exact tables to compare with."""
    d = tmp_path_factory.mktemp("claims")
    release = tabulate(d / "r.parquet", "P1,P12,P8", 50.0, seed=1)
    certain_release(read_release(release), d / "c.parquet", 0.05)
    exact = tabulate(d / "exact.parquet", "P1,P12,P8", None)
    reconstruct_release(read_release(exact), d / "recon.parquet", workers=1,
                        options=CensusOptions(certify=False))
    return {"release": release, "certain": d / "c.parquet", "recon": d / "recon.parquet"}


def forge_claims(src: Path, dst: Path, rows: Callable[[pa.Table], pa.Table] | None = None,
                 change: Callable[[Meta], None] | None = None) -> Path:
    table = pq.read_table(src)
    meta = json.loads(table.schema.metadata[CERTAIN_KEY])
    if change is not None:
        change(meta)
    if rows is not None:
        table = rows(table)
    pq.write_table(table.replace_schema_metadata({CERTAIN_KEY: json.dumps(meta).encode()}),
                   dst)
    return dst


def _first(column: str, value: Callable[[int], int]) -> Callable[[pa.Table], pa.Table]:
    def rows(table: pa.Table) -> pa.Table:
        values = table.column(column).to_pylist()
        values[0] = value(values[0])
        return table.set_column(table.schema.get_field_index(column), column,
                                pa.array(values, pa.int32()))
    return rows


def _tripled(table: pa.Table) -> pa.Table:
    return pa.concat_tables([table, table, table])


def _digest(part: int, text: str) -> Callable[[Meta], None]:
    def change(meta: Meta) -> None:
        parts = meta["release"].split(":")
        parts[part] = text
        meta["release"] = ":".join(parts)
    return change


def _compare(run_cli: CliRunner, claims: dict[str, Path], certain: Path,
             *extra: str | Path) -> tuple[int, str, str]:
    return run_cli("census", "compare", "--truth", SLICE, "--recon", claims["recon"],
                   "--certain", certain, "--json", "--quiet", *extra)


def test_true_claims_pass_with_their_release(claims: dict[str, Path],
                                             run_cli: CliRunner) -> None:
    code, out, err = _compare(run_cli, claims, claims["certain"], "--release",
                              claims["release"])
    assert code == 0, err
    result = json.loads(out)
    real = int(pc.sum(pq.read_table(claims["certain"])["persons"]).as_py())
    assert result["certain_within_noise"] == real > 0
    assert result["certain_within_noise_not_in_truth"] == 0


@pytest.mark.parametrize("rows,change,parts", [
    (_tripled, None, ("is claimed more than once",)),
    (_first("class", lambda k: 2 ** 31 - 1), None,
     ("class 2147483647 is not a class of the claims' cell definitions",)),
    (_first("persons", lambda n: 2 ** 31 - 1), None,
     ("persons claimed, more than a census block holds (at most 100,000)",)),
    (None, _digest(0, "0" * 16), ("not the release they are about",)),
    (None, _digest(1, "nonsense"), ("no release digest",)),
], ids=["every-row-three-times", "class-2^31-1", "persons-2^31-1", "digest-of-other-cells",
        "digest-malformed"])
def test_forged_claims_are_refused(rows: Callable[[pa.Table], pa.Table] | None,
                                   change: Callable[[Meta], None] | None,
                                   parts: tuple[str, ...], claims: dict[str, Path],
                                   run_cli: CliRunner, tmp_path: Path) -> None:
    forged = forge_claims(claims["certain"], tmp_path / "forged.parquet", rows, change)
    assert_one_line_error(_compare(run_cli, claims, forged), str(forged), *parts)


def test_claims_are_checked_against_the_release_they_name(
        claims: dict[str, Path], run_cli: CliRunner, tmp_path: Path) -> None:
    """With --release: the digest must be the release's, and no claim may exceed what the
    release's noisy cells allow within its noise bounds."""
    other = forge_claims(claims["certain"], tmp_path / "other.parquet",
                         change=_digest(1, "1" * 16))
    assert_one_line_error(_compare(run_cli, claims, other, "--release", claims["release"]),
                          "the claims are about release", str(claims["release"]))
    more = forge_claims(claims["certain"], tmp_path / "more.parquet",
                        rows=_first("persons", lambda n: n + 50))
    assert _compare(run_cli, claims, more)[0] == 0  # within what a block holds
    assert_one_line_error(_compare(run_cli, claims, more, "--release", claims["release"]),
                          "persons of class", "within the noise of", str(claims["release"]))
    assert_one_line_error(run_cli("census", "compare", "--truth", SLICE, "--recon",
                                  claims["recon"], "--release", claims["release"]),
                          "give --certain")
