"""The two long runs, census tracts and claims blocks, share one progress report (``Step``)
and one resumable-store rule (``runs.stores``): the same callback sees both, both resume after
a crash with only the missing units, both refuse a store made from other inputs, and stores
in the format written before the rule was shared still resume."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from statrecon.census.households.priors import tract_and_state_priors
from statrecon.census.households.synthetic import generate_blocks
from statrecon.census.persons.cells import select_cells
from statrecon.census.persons.microdata import load_persons
from statrecon.census.persons.release import CensusRelease, read_release, write_release
from statrecon.census.persons.tabulate import tabulate_cells
from statrecon.db import open_connection
from statrecon.engines.census import CensusOptions
from statrecon.engines.claims import ClaimsOptions
from statrecon.errors import StatreconError
from statrecon.runs.census import RunSummary, reconstruct_release, solve_tract
from statrecon.runs.claims import BlockTask, Shared, attack_block, run_blocks
from statrecon.runs.claims import tasks_from_households as claims_tasks
from statrecon.runs.progress import Progress, Step
from statrecon.runs.records import BlockRecord
from statrecon.runs.stores import (
    FINAL,
    META_KEY,
    SCHEMA,
    BlockStore,
    ReconStore,
    UnitStore,
    read_records,
)

TRACTS = ("99001000001", "99001000002", "99001000003")
PERSON = {"sex": "female", "age": "34", "white": "Y", "black": "N", "aian": "N", "asian": "N",
          "nhopi": "N", "sor": "N", "hispanic": "N"}
OPTIONS = CensusOptions(certify=False)
PARAMS = {"blocks": 3, "seed": 3, "formulation": "fast", "k": 5, "time_limit": None}


class Crash(Exception):
    """A simulated kill right after the first unit was stored."""


def crash_after_first(step: Step) -> None:
    if step.done == 1:
        raise Crash


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# --------------------------------------------------------------------------- inputs


def tabulate(folder: Path, name: str, per_block: int) -> CensusRelease:
    """A P1+P12 release of one block in each of three tracts."""
    rows = [{"block_geoid": t + "1000", **PERSON, "age": str(20 + 7 * i),
             "sex": ("female", "male")[i % 2]} for t in TRACTS for i in range(per_block)]
    persons = folder / f"{name}.csv"
    pd.DataFrame(rows).to_csv(persons, index=False)
    cells = select_cells("P1,P12")
    con = open_connection()
    load_persons(persons, con)
    out = folder / f"{name}.parquet"
    write_release(tabulate_cells(con, cells), cells, "P1,P12", out)
    return read_release(out)


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[CensusRelease, CensusRelease]:
    """Two releases of the same tracts with different values (so different digests)."""
    d = tmp_path_factory.mktemp("releases")
    return tabulate(d, "two", 2), tabulate(d, "three", 3)


@pytest.fixture(scope="module")
def blocks() -> tuple[list[BlockTask], Shared]:
    gen = generate_blocks(3, 3)  # small blocks (4 to 9 units): quick to solve
    shared = Shared(ClaimsOptions(k_solutions=5, negative=False),
                    *tract_and_state_priors(gen.population))
    return claims_tasks(gen.targets, None, "generated blocks"), shared


def run_census(release: CensusRelease, out: Path,
               progress: Progress | None = None) -> RunSummary:
    return reconstruct_release(release, out, workers=1, options=OPTIONS, progress=progress)


def run_claims(tasks: list[BlockTask], shared: Shared, store: Path,
               params: dict[str, object] = PARAMS,
               progress: Progress | None = None) -> list[BlockRecord]:
    return list(run_blocks(tasks, shared, store=BlockStore(store, params), progress=progress))


# --------------------------------------------------------------------------- one progress


def assert_counts_up(steps: list[Step], total: int) -> None:
    assert all(isinstance(s, Step) for s in steps)
    assert [s.done for s in steps] == list(range(total + 1))
    assert {s.total for s in steps} == {total}
    assert steps[0].unit == "" and all(s.unit for s in steps[1:])
    assert [s.count for s in steps] == sorted(s.count for s in steps)


def test_both_runs_report_the_same_steps(releases: tuple[CensusRelease, CensusRelease],
                                         blocks: tuple[list[BlockTask], Shared],
                                         tmp_path: Path) -> None:
    census: list[Step] = []
    summary = run_census(releases[0], tmp_path / "recon.parquet", census.append)
    assert_counts_up(census, 3)
    assert census[-1].count == summary.persons == 6  # persons
    assert sorted(s.unit for s in census[1:]) == list(TRACTS)
    tasks, shared = blocks
    claims: list[Step] = []
    records = run_claims(tasks, shared, tmp_path / "blocks.jsonl", progress=claims.append)
    assert_counts_up(claims, len(tasks))
    assert claims[-1].count == sum(not c.trivial for r in records for c in r.claims)
    assert [s.unit for s in claims[1:]] == [t.block for t in tasks]


# --------------------------------------------------------------------------- one store rule


def test_both_stores_offer_the_same_interface(tmp_path: Path) -> None:
    for store in (ReconStore(tmp_path / "r.parquet", "d"), BlockStore(tmp_path / "b.jsonl", {})):
        assert isinstance(store, UnitStore)
        assert store.finished() == set()


@pytest.mark.parametrize("status", ["ok", "infeasible", "unknown"])
def test_final_statuses_are_not_run_again_in_either_store(status: str, tmp_path: Path) -> None:
    census = ReconStore(tmp_path / "r.parquet", "d")
    meta = {"tracts": {TRACTS[0]: {"status": status}}, "release": "d"}
    census.parts.mkdir()
    pq.write_table(SCHEMA.empty_table().replace_schema_metadata(
        {META_KEY: json.dumps(meta).encode()}), census.parts / f"{TRACTS[0]}.parquet")
    claims = BlockStore(tmp_path / "blocks.jsonl", {})
    claims.path.write_text(json.dumps({"block": "b", "status": status}) + "\n")
    assert census.finished() == ({TRACTS[0]} if status in FINAL else set())
    assert claims.finished() == ({"b"} if status in FINAL else set())


def test_census_resumes_after_a_crash(releases: tuple[CensusRelease, CensusRelease],
                                      tmp_path: Path) -> None:
    out = tmp_path / "recon.parquet"
    with pytest.raises(Crash):
        run_census(releases[0], out, crash_after_first)
    assert len(list(out.with_name(out.name + ".parts").glob("*.parquet"))) == 1
    steps: list[Step] = []
    summary = run_census(releases[0], out, steps.append)
    assert (summary.skipped, summary.ran) == (1, 2)
    assert [s.done for s in steps] == [0, 1, 2]
    fresh = run_census(releases[0], tmp_path / "fresh.parquet")
    assert fresh.ran == 3
    assert pq.read_table(out).equals(pq.read_table(tmp_path / "fresh.parquet"))


def test_claims_resume_after_a_crash(blocks: tuple[list[BlockTask], Shared],
                                     tmp_path: Path) -> None:
    tasks, shared = blocks
    store = tmp_path / "blocks.jsonl"
    with pytest.raises(Crash):
        run_claims(tasks, shared, store, progress=crash_after_first)
    first = store.read_text().splitlines()
    assert len(first) == 1
    steps: list[Step] = []
    records = run_claims(tasks, shared, store, progress=steps.append)
    lines = store.read_text().splitlines()
    assert lines[:1] == first and len(lines) == len(tasks)  # only the others ran
    assert [r.block for r in records] == [t.block for t in tasks]
    assert [s.done for s in steps] == list(range(len(tasks) + 1))  # stored ones count too
    assert sorted(read_records(store)) == sorted(t.block for t in tasks)


def test_both_stores_refuse_other_inputs_the_same_way(
        releases: tuple[CensusRelease, CensusRelease], blocks: tuple[list[BlockTask], Shared],
        tmp_path: Path) -> None:
    """A store made from other inputs: a one-line StatreconError, and nothing touched."""
    out = tmp_path / "census" / "recon.parquet"
    out.parent.mkdir()
    with pytest.raises(Crash):  # a part of release 0 in OUT.parts
        run_census(releases[0], out, crash_after_first)
    tasks, shared = blocks
    folder = tmp_path / "claims"
    folder.mkdir()
    with pytest.raises(Crash):
        run_claims(tasks, shared, folder / "blocks.jsonl", progress=crash_after_first)
    before = snapshot(tmp_path)
    with pytest.raises(StatreconError) as census_error:
        run_census(releases[1], out)
    with pytest.raises(StatreconError) as claims_error:
        run_claims(tasks, shared, folder / "blocks.jsonl", params=PARAMS | {"k": 6})
    assert "different release" in str(census_error.value)
    assert "different run" in str(claims_error.value)
    for error in (census_error.value, claims_error.value):
        assert "\n" not in str(error)
    assert snapshot(tmp_path) == before
    run_census(releases[0], out)  # the same inputs resume
    assert len(run_claims(tasks, shared, folder / "blocks.jsonl")) == len(tasks)
    merged = pq.read_table(out)  # and a finished OUT is refused too
    assert json.loads(merged.schema.metadata[META_KEY])["release"] == releases[0].digest
    with pytest.raises(StatreconError, match="different release"):
        run_census(releases[1], out)


# --------------------------------------------------------------------------- older stores


def test_census_store_written_before_resumes(releases: tuple[CensusRelease, CensusRelease],
                                             tmp_path: Path) -> None:
    """One part as every earlier version wrote it: OUT.parts/TRACT.parquet, the tract summary
    and the release digest in the statrecon.census.recon metadata."""
    release = releases[0]
    out = tmp_path / "recon.parquet"
    parts = out.with_name(out.name + ".parts")
    parts.mkdir()
    tables = next(t for t in release.tract_tables() if t.tract == TRACTS[1])
    table, _ = solve_tract((release.cells, OPTIONS, None), tables)
    meta = json.loads(table.schema.metadata[META_KEY]) | {"release": release.digest}
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}),
                   parts / f"{TRACTS[1]}.parquet")
    steps: list[Step] = []
    summary = run_census(release, out, steps.append)
    assert (summary.skipped, summary.ran) == (1, 2)
    assert TRACTS[1] not in {s.unit for s in steps}
    assert pq.read_table(out).num_rows == 3 and not parts.exists()


def test_claims_store_written_before_resumes(blocks: tuple[list[BlockTask], Shared],
                                             tmp_path: Path) -> None:
    """As every earlier version wrote it: run.json holds the parameters (json.dumps), and
    blocks.jsonl one record per line."""
    tasks, shared = blocks
    store = tmp_path / "blocks.jsonl"
    (tmp_path / "run.json").write_text(json.dumps(PARAMS), encoding="utf-8")
    old = attack_block(shared, tasks[1])
    store.write_text(json.dumps(old.to_json()) + "\n", encoding="utf-8")
    steps: list[Step] = []
    records = run_claims(tasks, shared, store, progress=steps.append)
    assert records[0].block == tasks[1].block and records[0] == old  # from the store
    assert tasks[1].block not in {r.block for r in records[1:]}
    assert len(store.read_text().splitlines()) == len(tasks)
    assert json.loads((tmp_path / "run.json").read_text()) == PARAMS


def test_record_of_another_block_is_refused(tmp_path: Path) -> None:
    record = BlockRecord("b", "t", "s", households=0, statistics=0, status="ok", claims=(),
                         negative_claims=(), negative_undecided=0, reconstructed=False,
                         candidates=0, unknown_candidates=0, solutions=0, allowed_types=0,
                         elapsed_s=0.0)
    with pytest.raises(ValueError, match="stored as"):
        BlockStore(tmp_path / "b.jsonl", {}).write("a", record)
