"""The census pipeline end to end through the CLI: ``census tabulate`` -> ``reconstruct`` ->
``compare`` / ``report``, on the bundled slice (three real tracts, 920 persons, 217 blocks).

Sound against the truth, scored against the baselines, ranked, resumed after a rerun or a
kill -9, the same on Dask, bounded by a time limit, conflicts named (exit 2), P13 medians,
partial table sets, and one block checked against the general exact engine. The slice is
tabulated and reconstructed once per test session (``census_slice`` in conftest); a test that
changes a file works on a copy. The domain (cells, tabulation, the files' checks) is tested in
tests/census/persons/test_census.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import (
    COMMAND,
    ROOT,
    SLICE,
    CensusSlice,
    assert_user_error,
    edit_release,
    json_of,
    slice_persons,
    statrecon,
)

from statrecon.census.persons.cells import RACES, person_cells
from statrecon.runs.stores import META_KEY


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


# ------------------------------------------------------------------ reconstruction


def test_reconstruction_is_sound_against_the_truth(census_slice: CensusSlice) -> None:
    proc = statrecon("census", "compare", "--truth", SLICE, "--recon", census_slice.recon, "--json")
    assert proc.returncode == 0, proc.stderr
    r = json_of(proc)
    for key in ("persons", "blocks", "exact_match_rate", "age_within_1_rate", "blocks_exact",
                "blocks_certified_unique", "persons_in_certified_blocks",
                "certified_blocks_mismatched", "baseline_exact_match_rate"):
        assert key in r
    assert (r["persons"], r["blocks"]) == (920, 217)
    assert r["certified_blocks_mismatched"] == 0
    assert r["certified_binned_blocks_mismatched"] == 0
    assert r["certain_persons_not_in_truth"] == 0
    assert r["blocks_certified_unique"] >= 1  # the one-block tract is pinned by its tract
    assert r["exact_match_rate"] > 2 * r["baseline_exact_match_rate"]
    assert r["age_within_1_rate"] >= r["exact_match_rate"]
    # Every block of these zero-solution-variability tracts is unique at the tables' ages.
    assert r["blocks_certified_unique_binned"] == 217 and r["binned_match_rate"] == 1.0


def test_compare_scores_the_baselines_and_a_microdata_file(census_slice: CensusSlice) -> None:
    """The truth given as --microdata agrees with itself; the reconstruction's new scores
    equal the summary's rates; the baselines guess as many persons as were published."""
    r = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon", census_slice.recon,
                          "--microdata", SLICE, "--json"))
    micro = r["baselines"]["microdata"]
    assert micro["agreement_exact"] == 1.0 and micro["precision_unique"] == 1.0
    assert r["scores"]["agreement_exact"] == r["exact_match_rate"]
    assert r["scores"]["agreement_binned"] == r["binned_match_rate"]
    for name in ("block_majority", "tract_draw"):
        assert r["baselines"][name]["guessed"] == r["scores"]["guessed"] == 920
        assert r["baselines"][name]["agreement_exact"] < r["scores"]["agreement_exact"]
    assert r["baselines"]["block_majority"]["nonmodal_unique_rows"] == 0
    assert sum(row["persons"] for row in r["scores"]["by_block_size"]) == 920
    shown = statrecon("census", "compare", "--truth", SLICE, "--recon", census_slice.recon,
                      "--quiet")
    assert shown.returncode == 0 and "block majority" in shown.stdout


def test_ranked_reconstruction_scores_every_person(census_slice: CensusSlice,
                                                   tmp_path: Path) -> None:
    """--rank K: every person gets its share of K other consistent datasets; a person the
    certification proves present is in all of them, and the ranking beats the average row."""
    ranked = tmp_path / "ranked.parquet"
    proc = statrecon("census", "reconstruct", census_slice.release, "--out", ranked, "--rank",
                     "12", "--workers", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    table = pq.read_table(ranked)
    meta = json.loads(table.schema.metadata[META_KEY])
    assert all(t["samples"] == 12 for t in meta["tracts"].values())
    people = [(b, p) for b, recs in zip(table["block"].to_pylist(),
                                        table["records"].to_pylist(), strict=True)
              for p in recs]
    assert people and all(0.0 <= p["score"] <= 1.0 for _, p in people)
    assert all(p["score"] == 1.0 for _, p in people if p["certain"])
    assert any(p["score"] < 1.0 for _, p in people)
    last: dict[tuple[object, ...], float] = {}  # copies of one type: scores do not rise
    for block, p in people:
        key = (block, p["sex"], p["age"], *(p[r] for r in RACES), p["hispanic"])
        assert p["score"] <= last.get(key, 1.0)
        last[key] = p["score"]
    r = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon", ranked, "--json"))
    top, everyone = r["precision_at_k"]["25%"], r["precision_at_k"]["100%"]
    assert everyone == pytest.approx(r["exact_match_rate"] * 920 / r["scores"]["guessed"])
    assert top > everyone
    assert r["precision_at_k_binned"]["100%"] == 1.0
    unranked = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon",
                                 census_slice.recon, "--json"))
    assert unranked["precision_at_k"] is None and unranked["precision_curve"] is None
    shown = statrecon("census", "compare", "--truth", SLICE, "--recon", ranked)
    assert shown.returncode == 0 and "top-scored" in shown.stdout
    html = tmp_path / "ranked.html"
    assert statrecon("census", "report", ranked, "--out", html, "--truth", SLICE).returncode == 0
    page = html.read_text()
    assert "precision of the ranked persons" in page
    assert "Beside the baselines" in page and "block majority" in page


def test_compare_scores_a_known_perturbation(census_slice: CensusSlice, tmp_path: Path) -> None:
    """Truth = the reconstruction itself, then one person's age moved by one year."""
    table = pq.read_table(census_slice.recon).to_pandas()
    rows = [{"block_geoid": b, "sex": p["sex"], "age": p["age"],
             **{r: "Y" if p[r] else "N" for r in RACES}, "hispanic": "Y" if p["hispanic"]
             else "N"} for b, recs in zip(table.block, table.records, strict=True)
            for p in recs]
    frame = pd.DataFrame(rows)
    frame.to_csv(tmp_path / "same.csv", index=False)
    same = json_of(statrecon("census", "compare", "--truth", tmp_path / "same.csv",
                             "--recon", census_slice.recon, "--json"))
    assert same["exact_match_rate"] == 1.0 and same["blocks_exact"] == 217
    i = int(np.flatnonzero(frame.age.between(30, 60))[0])
    frame.loc[i, "age"] += 1
    frame.to_csv(tmp_path / "moved.csv", index=False)
    moved = json_of(statrecon("census", "compare", "--truth", tmp_path / "moved.csv",
                              "--recon", census_slice.recon, "--json"))
    assert moved["exact_match_rate"] == pytest.approx(1 - 1 / 920)
    assert moved["age_within_1_rate"] == 1.0
    assert moved["blocks_exact"] == 216


def test_rerun_skips_finished_tracts(census_slice: CensusSlice, tmp_path: Path) -> None:
    out = Path(shutil.copy(census_slice.recon, tmp_path / "recon.parquet"))
    proc = statrecon("census", "reconstruct", census_slice.release, "--out", out, "--json")
    assert proc.returncode == 0
    assert json_of(proc)["skipped"] == 3 and json_of(proc)["ran"] == 0
    assert pq.read_table(out).to_pylist() == pq.read_table(census_slice.recon).to_pylist()


def test_kill_9_loses_only_tracts_in_flight(census_slice: CensusSlice, tmp_path: Path) -> None:
    out = tmp_path / "recon.parquet"
    env = {**os.environ, "STATRECON_TRACT_DELAY_S": "1.5"}
    proc = subprocess.Popen([*COMMAND, "census", "reconstruct", str(census_slice.release), "--out",
                             str(out), "--workers", "1"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    parts = tmp_path / "recon.parquet.parts"
    deadline = time.monotonic() + 60
    while not list(parts.glob("*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stored = list(parts.glob("*.parquet"))
    assert len(stored) == 1 and not out.exists()
    rerun = statrecon("census", "reconstruct", census_slice.release, "--out", out, "--workers", "1",
                      "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert (json_of(rerun)["skipped"], json_of(rerun)["ran"]) == (1, 2)
    assert not parts.exists()
    a = pq.read_table(out).drop_columns([]).to_pylist()
    b = pq.read_table(census_slice.recon).to_pylist()
    assert a == b


def test_dask_local_cluster_gives_identical_results(census_slice: CensusSlice,
                                                    tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "recon.parquet"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  processes=False, protocol="tcp://",
                                  dashboard_address=None) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        proc = statrecon("census", "reconstruct", census_slice.release, "--out", out,
                         "--executor", address, "--json")
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(out).to_pylist() == pq.read_table(census_slice.recon).to_pylist()


# ------------------------------------------------------------------ conflicts (exit 2)


def _white_nh(frame: pd.DataFrame) -> pd.Series:
    return ((frame.white == "Y") & (frame.hispanic == "N")
            & (frame[list(RACES[1:])] == "N").all(axis=1))


def _p12i_cell(sex: str, age: int, table: str = "P12I") -> str:
    return next(c.cell for c in person_cells() if c.table == table and c.sex == sex
                and c.age_lo <= age <= c.age_hi)


def test_tables_that_do_not_add_up_exit_2(census_slice: CensusSlice, tmp_path: Path) -> None:
    rel = pq.read_table(census_slice.release).to_pandas()
    block = sorted(b for b in rel.geoid.unique() if b.startswith("06037532400")
                   and len(b) == 15)[0]
    row = rel[(rel.geoid == block) & (rel.table == "P12") & (rel.value > 0)].iloc[0]
    bad = edit_release(census_slice.release, tmp_path / "bad.parquet",
                {(block, row.cell): int(row.value) + 1})
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for part in (block, "P12", "P1 P0010001"):
        assert part in proc.stderr


def test_excluded_person_names_the_zero_cells(census_slice: CensusSlice, tmp_path: Path) -> None:
    """A one-person block whose P12I count moves to an empty sex/age bin: the positive cell
    and the zero cell that excludes it are named."""
    people = slice_persons()
    single = people.groupby("block_geoid").filter(lambda g: len(g) == 1)
    person = single[_white_nh(single) & single.age.between(25, 84)].iloc[0]
    block, on = person.block_geoid, _p12i_cell(person.sex, person.age)
    off = _p12i_cell("female" if person.sex == "male" else "male", person.age)
    bad = edit_release(census_slice.release, tmp_path / "bad.parquet",
                       {(block, on): 0, (block, off): 1})
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet",
                     "--workers", "1")
    assert proc.returncode == 2, proc.stderr
    assert "no dataset satisfies" in proc.stderr
    assert f"{block} P12I:{off} = 1" in proc.stderr and "= 0" in proc.stderr


def test_moved_person_names_a_small_conflict(census_slice: CensusSlice,
                                                       tmp_path: Path) -> None:
    """Every sum still adds up, but no dataset fits: a white non-Hispanic person is moved (in
    P12I and P12A only) onto a non-white person's sex/age bin. A small set of cells is named."""
    people = slice_persons()
    rel = pq.read_table(census_slice.release).to_pandas().set_index(["geoid", "cell"])["value"]
    for block, g in people.groupby("block_geoid"):
        white, other = g[_white_nh(g)], g[~_white_nh(g)]
        if len(white) and len(other):
            a, b = white.iloc[0], other.iloc[0]
            on, off = _p12i_cell(a.sex, a.age), _p12i_cell(b.sex, b.age)
            on_a, off_a = (_p12i_cell(a.sex, a.age, "P12A"),
                           _p12i_cell(b.sex, b.age, "P12A"))
            if on != off and rel[(block, off)] == 0 and rel[(block, off_a)] == 0:
                break
    else:
        raise AssertionError("the slice has a block with a white and a non-white person")
    bad = edit_release(census_slice.release, tmp_path / "bad.parquet",
                {(block, on): rel[(block, on)] - 1, (block, off): 1,
                 (block, on_a): rel[(block, on_a)] - 1, (block, off_a): 1})
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet",
                     "--workers", "1")
    assert proc.returncode == 2, proc.stderr
    assert "no dataset satisfies" in proc.stderr and block in proc.stderr
    named = proc.stderr.split("conflicting cells:")[1].split(";")
    assert 2 <= len(named) <= 15  # a small set, not the whole tract


# ------------------------------------------------------------------ as statrecon statistics


def test_block_release_agrees_with_the_general_exact_engine(tmp_path: Path) -> None:
    """A one-block tract of two persons with two-or-more races: which combination goes with
    which age is not published (not even with P13's median 36.5), so both engines must say
    'not unique' and nothing certain."""
    people = pd.DataFrame([
        {"block_geoid": "990010000011000", "sex": "male", "age": 31, "white": "Y",
         "black": "Y", "aian": "N", "asian": "N", "nhopi": "N", "sor": "N", "hispanic": "N"},
        {"block_geoid": "990010000011000", "sex": "male", "age": 42, "white": "Y",
         "black": "N", "aian": "N", "asian": "Y", "nhopi": "N", "sor": "N", "hispanic": "N"}])
    persons = _write(people, tmp_path / "p.csv")
    rel, recon, block = tmp_path / "r.parquet", tmp_path / "c.parquet", tmp_path / "b.yaml"
    tables = "P1,P6,P8,P9,P10,P12,P12A,P12G,P14,PCT12,PCT12G"  # fewer cells: a faster test
    assert statrecon("census", "tabulate", "--persons", persons, "--out", rel, "--tables",
                     tables, "--with-p13").returncode == 0
    assert statrecon("census", "block-release", rel, "--block", "990010000011000", "--out",
                     block).returncode == 0
    assert "MEDIAN(age) FROM persons WHERE sex = 'male', value: 36.5" in block.read_text() \
        or "value: 36.5" in block.read_text()
    exact = statrecon("reconstruct", block, "--json", "--all")
    assert exact.returncode == 0, exact.stderr
    general = json_of(exact)
    assert general["status"] == "multiple" and general["solution_count"] == 2
    assert general["certain_rows"] == []
    assert statrecon("census", "reconstruct", rel, "--out", recon, "--workers", "1"
                     ).returncode == 0
    (row,) = pq.read_table(recon).to_pylist()
    assert row["unique"] is False and row["certain_persons"] == 0
    ours = sorted((p["age"], p["black"], p["asian"]) for p in row["records"])
    solutions = [sorted((p["age"], p["black"] == "Y", p["asian"] == "Y") for p in s)
                 for s in general["solutions"]]
    assert ours in solutions


# ------------------------------------------------------------------ limits and table sets


def test_time_limit_gives_unknown_never_certified(census_slice: CensusSlice,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "recon.parquet"
    proc = statrecon("census", "reconstruct", census_slice.release, "--out", out, "--workers", "1",
                     "--time-limit", "0.001", "--json")
    assert proc.returncode == 3, proc.stderr
    rows = pq.read_table(out).to_pylist()
    unknown = [r for r in rows if r["status"] == "unknown"]
    assert unknown, "a 1 ms limit cannot finish the 211-block tract"
    assert all(r["unique"] is None and r["certain_persons"] is None for r in unknown)
    rerun = statrecon("census", "reconstruct", census_slice.release, "--out", out, "--workers", "1",
                      "--json")  # unknown tracts are redone, finished ones kept
    assert rerun.returncode == 0, rerun.stderr
    assert json_of(rerun)["ran"] == len({r["tract"] for r in unknown})
    assert pq.read_table(out).to_pylist() == pq.read_table(census_slice.recon).to_pylist()


def test_partial_table_sets(tmp_path: Path) -> None:
    """Block tables only reconstruct (tracts from the block ids); no P1 or no block tables is
    a clear error."""
    rel = tmp_path / "r.parquet"
    people = slice_persons()
    small = people[~people.block_geoid.str.startswith("38087965000")]  # two small tracts
    ok = statrecon("census", "tabulate", "--persons", _write(small, tmp_path / "small.csv"),
                   "--out", rel, "--tables",
                   "P1,P8,P9,P12,P12A,P12B,P12C,P12D,P12E,P12F,P12G,P12H,P12I,P14")
    assert ok.returncode == 0, ok.stderr
    proc = statrecon("census", "reconstruct", rel, "--out", tmp_path / "c.parquet",
                     "--workers", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json_of(proc)["tracts"] == 2 and json_of(proc)["persons"] == len(small)
    for tables, message in (("PCT12", "no block-level cells"), ("P12,PCT12", "total cell (P1)")):
        statrecon("census", "tabulate", "--persons", SLICE, "--out", rel, "--tables", tables)
        assert_user_error(statrecon("census", "reconstruct", rel, "--out",
                                    tmp_path / "x.parquet"), str(rel), message)
    assert_user_error(statrecon("census", "tabulate", "--persons", SLICE, "--out", rel,
                                "--tables", "P99"), "P99")


def test_p13_medians_pin_more_and_stay_sound(census_slice: CensusSlice, tmp_path: Path) -> None:
    """P13 (median age by sex, a non-linear statistic) pins single-year ages in small blocks:
    more blocks certified unique, a higher exact-match rate, still nothing certified wrongly."""
    rel, recon = tmp_path / "r13.parquet", tmp_path / "c13.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", rel,
                     "--with-p13").returncode == 0
    values = pq.read_table(rel).to_pandas()
    p13 = values[values.table == "P13"]
    people = slice_persons()
    first_block = people.block_geoid.iloc[0]
    males = people[(people.block_geoid == first_block) & (people.sex == "male")].age
    assert p13.set_index(["geoid", "cell"]).value[(first_block, "P0130002")] == \
        round(10 * float(np.median(males)))
    proc = statrecon("census", "reconstruct", rel, "--out", recon, "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    with_p13 = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon", recon,
                                 "--json"))
    without = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon",
                                census_slice.recon, "--json"))
    assert with_p13["certified_blocks_mismatched"] == 0
    assert with_p13["certain_persons_not_in_truth"] == 0
    assert with_p13["blocks_certified_unique"] > without["blocks_certified_unique"]
    assert with_p13["exact_match_rate"] > without["exact_match_rate"]
