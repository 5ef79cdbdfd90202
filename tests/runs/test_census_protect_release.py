"""Protected census tables as release files (issue 30, item 4): ``census tabulate --protect``
writes the published values and the protection, never its seed; the reader gives back, from
the file alone, the bounds the protection was published with, and ``census certain`` and
``census reconstruct`` take the file as they take a noisy one.

The persons are the 3-tract slice's first small blocks (at most 3 a tract), so each run
takes seconds."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SLICE, CliRunner, assert_one_line_error

from statrecon.census.persons.release import METADATA_KEY, read_release
from statrecon.census.persons.swap import read_persons
from statrecon.runs.census_bounded import certain_protected, claimed_beyond
from statrecon.runs.census_protect import (
    CensusProtectOptions,
    publish_protected,
    release_bounds,
    true_tables,
)

MAX_PERSONS = 12
BLOCKS_PER_TRACT = 3

PROTECTIONS: list[tuple[str, dict[str, Any]]] = [
    ("ckm-ons", {"d": 2}), ("ckm-abs", {"d": 3, "v": 2, "threshold": 3}),
    ("round", {"base": 3, "rounding": "random"}), ("round", {"base": 5, "knowledge": "base"}),
    ("suppress", {}), ("suppress", {"knowledge": "rule"}),
]


@cache
def _blocks() -> tuple[str, ...]:
    raw = pd.read_csv(SLICE, dtype=str)
    size = raw["block_geoid"].value_counts()
    small = sorted(b for b in size.index if size[b] <= MAX_PERSONS)
    return tuple(b for b in small
                 if [x for x in small if x[:11] == b[:11]].index(b) < BLOCKS_PER_TRACT)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slice's rows of its first small blocks, as written (a persons CSV)."""
    raw = pd.read_csv(SLICE, dtype=str)
    path = tmp_path_factory.mktemp("persons") / "persons.csv"
    raw[raw["block_geoid"].isin(_blocks())].to_csv(path, index=False)
    return path


def _ids(protections: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [f"{m}-{'-'.join(f'{k}{v}' for k, v in p.items())}" for m, p in protections]


@pytest.mark.parametrize(("method", "params"), PROTECTIONS, ids=_ids(PROTECTIONS))
def test_the_file_gives_back_the_bounds_it_was_published_with(
        tmp_path: Path, small: Path, method: str, params: dict[str, Any]) -> None:
    options = CensusProtectOptions(method, seed=11, **params)  # type: ignore[arg-type]
    out = tmp_path / "release.parquet"
    published = publish_protected(small, out, options)
    release = read_release(out)
    assert release.protection is not None and release.protection.method == method
    assert release.protection.statement == published.statement
    block, tract = release_bounds(release)
    truth = true_tables(read_persons(small).persons, published.cells)
    for got, made, true in ((block, published.block, truth[0]),
                            (tract, published.tract, truth[1])):
        assert got.geoids == made.geoids == true.geoids
        for name in ("published", "lo", "hi"):
            assert np.array_equal(getattr(got, name), getattr(made, name)), name
        assert (got.lo <= true.published).all() and (true.published <= got.hi).all()
    meta = json.loads(pq.read_schema(out).metadata[METADATA_KEY])
    assert "seed" not in meta["protection"] and "11" not in json.dumps(meta["protection"])
    if method == "suppress":
        assert (release.block_values < 0).any()  # withheld cells are null in the file
        assert pq.read_table(out)["value"].null_count == int(
            (published.block.published < 0).sum() + (published.tract.published < 0).sum())


def test_the_protection_is_part_of_what_identifies_the_release(tmp_path: Path,
                                                               small: Path) -> None:
    digests = set()
    for k, knows in enumerate(("method", "base")):
        out = tmp_path / f"r{k}.parquet"
        publish_protected(small, out, CensusProtectOptions("round", knowledge=knows))
        digests.add(read_release(out).digest)
    assert len(digests) == 2  # the same values, other bounds: another release


def test_census_certain_on_the_file_proves_what_the_protection_proves(
        tmp_path: Path, small: Path, run_cli: CliRunner) -> None:
    options = CensusProtectOptions("ckm-abs", seed=7)
    release = tmp_path / "ckm.parquet"
    published = publish_protected(small, release, options)
    out = tmp_path / "certain.parquet"
    code, stdout, err = run_cli("census", "certain", release, "--out", out, "--workers", "1",
                                "--json", "--quiet")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["protection"] == "ckm-abs" and summary["delta"] is None
    claims = pq.read_table(out).replace_schema_metadata(None)
    alone = certain_protected(published, time_limit=10.0)
    assert summary["statuses"] == alone.statuses == {"ok": len(_blocks())}
    assert alone.persons > 0 and claims.equals(alone.claims)
    assert claimed_beyond(alone, read_persons(small).persons, published.cells) == 0
    # scored against the truth, the claims checked against the release they name
    recon = tmp_path / "recon.parquet"
    assert run_cli("census", "reconstruct", release, "--out", recon, "--workers", "1",
                   "--quiet")[0] == 0
    code, stdout, err = run_cli("census", "compare", "--truth", small, "--recon", recon,
                                "--certain", out, "--release", release, "--json")
    assert code == 0, err
    scores = json.loads(stdout)
    assert scores["certain_within_noise"] == alone.persons
    assert scores["certain_within_noise_not_in_truth"] == 0 and scores["delta"] == 0
    # a claim above what the release's bounds let its block hold is refused
    table = pq.read_table(out)
    persons = table["persons"].to_numpy().copy()
    persons[0] += 1000
    forged = table.set_column(table.schema.get_field_index("persons"), "persons",
                              pa.array(persons, table["persons"].type))
    pq.write_table(forged.replace_schema_metadata(table.schema.metadata), out)
    assert_one_line_error(run_cli("census", "compare", "--truth", small, "--recon", recon,
                                  "--certain", out, "--release", release),
                          str(out), "claimed", "holds at most")


def test_reconstruct_estimates_a_perturbed_release_and_refuses_withheld_cells(
        tmp_path: Path, small: Path, run_cli: CliRunner) -> None:
    ckm, suppressed = tmp_path / "ckm.parquet", tmp_path / "suppress.parquet"
    publish_protected(small, ckm, CensusProtectOptions("ckm-ons", seed=2))
    publish_protected(small, suppressed, CensusProtectOptions("suppress"))
    out = tmp_path / "recon.parquet"
    code, stdout, err = run_cli("census", "reconstruct", ckm, "--out", out, "--workers", "1",
                                "--json", "--quiet")
    assert code == 0, err
    tracts = len({b[:11] for b in _blocks()})
    assert json.loads(stdout)["statuses"] == {"ok": tracts}
    meta = json.loads(pq.read_schema(out).metadata[b"statrecon.census.recon"])
    assert meta["estimate"] is True
    assert_one_line_error(run_cli("census", "reconstruct", suppressed, "--out",
                                  tmp_path / "r2.parquet"), str(suppressed), "withheld",
                          "census certain")
    assert not (tmp_path / "r2.parquet").exists()


def test_block_release_refuses_values_that_are_not_the_counts(
        tmp_path: Path, small: Path, run_cli: CliRunner) -> None:
    """A perturbed count written as an exact statistic would make a reconstruction of it a
    false proof; the same for a noisy measurement."""
    protected = tmp_path / "ckm.parquet"
    publish_protected(small, protected, CensusProtectOptions("ckm-abs"))
    noisy = tmp_path / "noisy.parquet"
    assert run_cli("census", "tabulate", "--persons", small, "--out", noisy, "--dp-rho", "1",
                   "--seed", "0", "--quiet")[0] == 0
    block = _blocks()[0]
    for release, what in ((protected, "tables protected by ckm-abs"),
                          (noisy, "noisy measurements")):
        out = tmp_path / "block.yaml"
        assert_one_line_error(run_cli("census", "block-release", release, "--block", block,
                                      "--out", out), str(release), what, "not the counts")
        assert not out.exists()


def test_claims_made_with_no_probability_are_not_taken_for_a_noisy_release(
        tmp_path: Path, small: Path, run_cli: CliRunner) -> None:
    """A claims file of a protected release (delta 0), relabelled with a noisy release's
    digest, is refused for what it is, not scored against the noise."""
    protected, noisy = tmp_path / "round.parquet", tmp_path / "noisy.parquet"
    publish_protected(small, protected, CensusProtectOptions("round", base=3))
    assert run_cli("census", "tabulate", "--persons", small, "--out", noisy, "--dp-rho", "1",
                   "--seed", "0", "--quiet")[0] == 0
    claims = tmp_path / "certain.parquet"
    assert run_cli("census", "certain", protected, "--out", claims, "--workers", "1",
                   "--quiet")[0] == 0
    table = pq.read_table(claims)
    meta = json.loads(table.schema.metadata[b"statrecon.census.certain"])
    meta["release"] = read_release(noisy).digest
    pq.write_table(table.replace_schema_metadata(
        {b"statrecon.census.certain": json.dumps(meta).encode()}), claims)
    recon = tmp_path / "recon.parquet"
    assert run_cli("census", "reconstruct", protected, "--out", recon, "--workers", "1",
                   "--quiet")[0] == 0
    assert_one_line_error(run_cli("census", "compare", "--truth", small, "--recon", recon,
                                  "--certain", claims, "--release", noisy),
                          str(claims), "with no probability", "noisy measurements")
