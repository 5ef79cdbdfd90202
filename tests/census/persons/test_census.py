"""Census at scale: SF1 cells, tabulation, reconstruction, resumability, Dask, compare.

The bundled slice (examples/census/persons_3tracts.csv: three real tracts, 920 persons, 217
blocks of the Bureau's file) keeps these tests fast; the whole file is for `make bench`.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import COMMAND, ROOT, SLICE, assert_user_error, json_of, statrecon

from statrecon.census.persons.cells import (
    CELL_FILE,
    RACES,
    SEXES,
    grid_index,
    person_cells,
    select_cells,
)
from statrecon.census.persons.microdata import load_persons
from statrecon.runs.stores import META_KEY


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("census")
    rel, recon = d / "release.parquet", d / "recon.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", rel).returncode == 0
    proc = statrecon("census", "reconstruct", rel, "--out", recon, "--workers", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    return {"dir": d, "release": rel, "recon": recon, "summary": json_of(proc)}  # type: ignore


def _slice() -> pd.DataFrame:
    return pd.read_csv(SLICE, dtype={"block_geoid": str})


# ------------------------------------------------------------------ cells and tabulation


def test_tables_come_from_the_cell_file() -> None:
    with (ROOT / "src" / "statrecon" / "data" / CELL_FILE).open() as f:
        rows = list(csv.DictReader(f))
    per_table = Counter(r["table_number"] for r in rows)
    cells = person_cells()
    assert Counter(c.table for c in cells) == per_table
    expected = {"P1", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "P14", "PCT12",
                *(f"P12{x}" for x in "ABCDEFGHI"), *(f"PCT12{x}" for x in "ABCDEFGHIJKLMNO")}
    assert set(per_table) == expected
    assert {c.level for c in cells if c.table.startswith("PCT")} == {"tract"}
    assert [c.cell for c in select_cells("P1,p12")] == [
        r["cell_number"] for r in rows if r["table_number"] in ("P1", "P12")]


def test_sql_predicates_and_masks_agree_on_random_persons() -> None:
    """Two encodings of every cell (DuckDB SQL for tabulation, numpy masks for the solver)."""
    rng = np.random.default_rng(7)
    n = 3000
    flags = rng.random((n, 6)) < 0.3
    flags[~flags.any(axis=1), 0] = True
    frame = pd.DataFrame(flags, columns=list(RACES))
    frame["sex"] = rng.choice(SEXES, n)
    frame["age"] = rng.integers(0, 111, n)
    frame["hispanic"] = rng.random(n) < 0.3
    race = sum(flags[:, i].astype(np.int64) << i for i in range(6))
    idx = grid_index((frame["sex"] == "female").to_numpy().astype(np.int64),
                     frame["age"].to_numpy(), race, frame["hispanic"].to_numpy().astype(int))
    con = duckdb.connect()
    con.register("p", frame)
    for cell in person_cells()[::7]:
        by_sql = con.sql(f"SELECT ({cell.sql()}) AS hit FROM p").df()["hit"].to_numpy(bool)
        assert (cell.mask()[idx] == by_sql).all(), cell.cell


def test_tabulation_matches_pandas_counts(built: dict[str, Path]) -> None:
    people = _slice()
    rel = pq.read_table(built["release"]).to_pandas()
    value = rel.set_index(["geoid", "cell"])["value"]
    for block, group in people.groupby("block_geoid"):
        assert value[(block, "P0010001")] == len(group)
        male_22_24 = ((group.sex == "male") & group.age.between(22, 24)).sum()
        assert value[(block, "P0120010")] == male_22_24
        white_black_only = ((group.white == "Y") & (group.black == "Y")
                            & (group[list(RACES[2:])] == "N").all(axis=1))
        assert value[(block, "P0080011")] == white_black_only.sum()  # P8 White; Black
    for tract, group in people.groupby(people.block_geoid.str[:11]):
        hisp_f5 = ((group.hispanic == "Y") & (group.sex == "female") & (group.age == 5)).sum()
        assert value[(tract, "PCT012H112")] == hisp_f5
    levels = rel.groupby("level").geoid.nunique().to_dict()
    assert levels == {"block": people.block_geoid.nunique(), "tract": 3}
    assert len(rel) == levels["block"] * 775 + levels["tract"] * 3296


# ------------------------------------------------------------------ reconstruction


def test_reconstruction_is_sound_against_the_truth(built: dict[str, Path]) -> None:
    proc = statrecon("census", "compare", "--truth", SLICE, "--recon", built["recon"], "--json")
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


def test_compare_scores_the_baselines_and_a_microdata_file(built: dict[str, Path]) -> None:
    """The truth given as --microdata agrees with itself; the reconstruction's new scores
    equal the summary's rates; the baselines guess as many persons as were published."""
    r = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon", built["recon"],
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
    shown = statrecon("census", "compare", "--truth", SLICE, "--recon", built["recon"],
                      "--quiet")
    assert shown.returncode == 0 and "block majority" in shown.stdout


def test_ranked_reconstruction_scores_every_person(built: dict[str, Path]) -> None:
    """--rank K: every person gets its share of K other consistent datasets; a person the
    certification proves present is in all of them, and the ranking beats the average row."""
    ranked = built["dir"] / "ranked.parquet"
    proc = statrecon("census", "reconstruct", built["release"], "--out", ranked, "--rank",
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
                                 built["recon"], "--json"))
    assert unranked["precision_at_k"] is None and unranked["precision_curve"] is None
    shown = statrecon("census", "compare", "--truth", SLICE, "--recon", ranked)
    assert shown.returncode == 0 and "top-scored" in shown.stdout
    html = built["dir"] / "ranked.html"
    assert statrecon("census", "report", ranked, "--out", html, "--truth", SLICE).returncode == 0
    page = html.read_text()
    assert "precision of the ranked persons" in page
    assert "Beside the baselines" in page and "block majority" in page


def test_compare_scores_a_known_perturbation(built: dict[str, Path], tmp_path: Path) -> None:
    """Truth = the reconstruction itself, then one person's age moved by one year."""
    table = pq.read_table(built["recon"]).to_pandas()
    rows = [{"block_geoid": b, "sex": p["sex"], "age": p["age"],
             **{r: "Y" if p[r] else "N" for r in RACES}, "hispanic": "Y" if p["hispanic"]
             else "N"} for b, recs in zip(table.block, table.records, strict=True)
            for p in recs]
    frame = pd.DataFrame(rows)
    frame.to_csv(tmp_path / "same.csv", index=False)
    same = json_of(statrecon("census", "compare", "--truth", tmp_path / "same.csv",
                             "--recon", built["recon"], "--json"))
    assert same["exact_match_rate"] == 1.0 and same["blocks_exact"] == 217
    i = int(np.flatnonzero(frame.age.between(30, 60))[0])
    frame.loc[i, "age"] += 1
    frame.to_csv(tmp_path / "moved.csv", index=False)
    moved = json_of(statrecon("census", "compare", "--truth", tmp_path / "moved.csv",
                              "--recon", built["recon"], "--json"))
    assert moved["exact_match_rate"] == pytest.approx(1 - 1 / 920)
    assert moved["age_within_1_rate"] == 1.0
    assert moved["blocks_exact"] == 216


def test_rerun_skips_finished_tracts(built: dict[str, Path]) -> None:
    proc = statrecon("census", "reconstruct", built["release"], "--out", built["recon"],
                     "--json")
    assert proc.returncode == 0
    assert json_of(proc)["skipped"] == 3 and json_of(proc)["ran"] == 0


def test_kill_9_loses_only_tracts_in_flight(built: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "recon.parquet"
    env = {**os.environ, "STATRECON_TRACT_DELAY_S": "1.5"}
    proc = subprocess.Popen([*COMMAND, "census", "reconstruct", str(built["release"]), "--out",
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
    rerun = statrecon("census", "reconstruct", built["release"], "--out", out, "--workers", "1",
                      "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert (json_of(rerun)["skipped"], json_of(rerun)["ran"]) == (1, 2)
    assert not parts.exists()
    a = pq.read_table(out).drop_columns([]).to_pylist()
    b = pq.read_table(built["recon"]).to_pylist()
    assert a == b


def test_dask_local_cluster_gives_identical_results(built: dict[str, Path],
                                                    tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "recon.parquet"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  processes=False, protocol="tcp://",
                                  dashboard_address=None) as cluster:
        address = cluster.scheduler_address.replace("tcp://", "dask://")
        proc = statrecon("census", "reconstruct", built["release"], "--out", out,
                         "--executor", address, "--json")
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(out).to_pylist() == pq.read_table(built["recon"]).to_pylist()


# ------------------------------------------------------------------ bad input


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("change, parts", [
    (lambda f: f.drop(columns=["hispanic"]), ["missing column", "hispanic"]),
    (lambda f: f.assign(age=f.age.where(f.index != 4, 111)), ["line 6", "age", "111"]),
    (lambda f: f.assign(age=f.age.where(f.index != 0, -1)), ["line 2", "age", "-1"]),
    (lambda f: f.assign(block_geoid=f.block_geoid.where(f.index != 2, "12345")),
     ["line 4", "block_geoid", "15 digits", "12345"]),
    (lambda f: f.assign(sex=f.sex.where(f.index != 1, "M")), ["line 3", "sex", "'M'"]),
    (lambda f: f.assign(white="N", black="N", aian="N", asian="N", nhopi="N", sor="N"),
     ["line 2", "race flag"]),
])
def test_bad_persons_files_are_named(tmp_path: Path, change, parts) -> None:  # type: ignore
    frame = change(_slice())
    path = _write(frame, tmp_path / "bad.csv")
    proc = statrecon("census", "tabulate", "--persons", path, "--out", tmp_path / "r.parquet")
    assert_user_error(proc, str(path), *parts)


def _edit(release: Path, out: Path, edits: dict[tuple[str, str], int]) -> Path:
    table = pq.read_table(release)
    frame = table.to_pandas()
    for (geoid, cell), value in edits.items():
        hit = (frame.geoid == geoid) & (frame.cell == cell)
        assert hit.sum() == 1
        frame.loc[hit, "value"] = value
    import pyarrow as pa

    edited = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(
        table.schema.metadata)
    pq.write_table(edited, out)
    return out


def test_tables_that_do_not_add_up_exit_2(built: dict[str, Path], tmp_path: Path) -> None:
    rel = pq.read_table(built["release"]).to_pandas()
    block = sorted(b for b in rel.geoid.unique() if b.startswith("06037532400")
                   and len(b) == 15)[0]
    row = rel[(rel.geoid == block) & (rel.table == "P12") & (rel.value > 0)].iloc[0]
    bad = _edit(built["release"], tmp_path / "bad.parquet",
                {(block, row.cell): int(row.value) + 1})
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for part in (block, "P12", "P1 P0010001"):
        assert part in proc.stderr


def _white_nh(frame: pd.DataFrame) -> pd.Series:
    return ((frame.white == "Y") & (frame.hispanic == "N")
            & (frame[list(RACES[1:])] == "N").all(axis=1))


def _p12i_cell(sex: str, age: int, table: str = "P12I") -> str:
    return next(c.cell for c in person_cells() if c.table == table and c.sex == sex
                and c.age_lo <= age <= c.age_hi)


def test_excluded_person_names_the_zero_cells(built: dict[str, Path], tmp_path: Path) -> None:
    """A one-person block whose P12I count moves to an empty sex/age bin: the positive cell
    and the zero cell that excludes it are named."""
    people = _slice()
    single = people.groupby("block_geoid").filter(lambda g: len(g) == 1)
    person = single[_white_nh(single) & single.age.between(25, 84)].iloc[0]
    block, on = person.block_geoid, _p12i_cell(person.sex, person.age)
    off = _p12i_cell("female" if person.sex == "male" else "male", person.age)
    bad = _edit(built["release"], tmp_path / "bad.parquet", {(block, on): 0, (block, off): 1})
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet",
                     "--workers", "1")
    assert proc.returncode == 2, proc.stderr
    assert "no dataset satisfies" in proc.stderr
    assert f"{block} P12I:{off} = 1" in proc.stderr and "= 0" in proc.stderr


def test_moved_person_names_a_small_conflict(built: dict[str, Path],
                                                       tmp_path: Path) -> None:
    """Every sum still adds up, but no dataset fits: a white non-Hispanic person is moved (in
    P12I and P12A only) onto a non-white person's sex/age bin. A small set of cells is named."""
    people = _slice()
    rel = pq.read_table(built["release"]).to_pandas().set_index(["geoid", "cell"])["value"]
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
    bad = _edit(built["release"], tmp_path / "bad.parquet",
                {(block, on): rel[(block, on)] - 1, (block, off): 1,
                 (block, on_a): rel[(block, on_a)] - 1, (block, off_a): 1})
    proc = statrecon("census", "reconstruct", bad, "--out", tmp_path / "r.parquet",
                     "--workers", "1")
    assert proc.returncode == 2, proc.stderr
    assert "no dataset satisfies" in proc.stderr and block in proc.stderr
    named = proc.stderr.split("conflicting cells:")[1].split(";")
    assert 2 <= len(named) <= 15  # a small set, not the whole tract


def test_not_a_release_is_a_user_error(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1]})
    frame.to_parquet(tmp_path / "x.parquet")
    assert_user_error(statrecon("census", "reconstruct", tmp_path / "x.parquet", "--out",
                                tmp_path / "r.parquet"), "census tabulate")
    assert_user_error(statrecon("census", "reconstruct", tmp_path / "nope.parquet", "--out",
                                tmp_path / "r.parquet"), "no such file")


def test_persons_loader_counts(tmp_path: Path) -> None:
    con = duckdb.connect()
    assert load_persons(SLICE, con) == len(_slice())


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


def test_time_limit_gives_unknown_never_certified(built: dict[str, Path],
                                                  tmp_path: Path) -> None:
    out = tmp_path / "recon.parquet"
    proc = statrecon("census", "reconstruct", built["release"], "--out", out, "--workers", "1",
                     "--time-limit", "0.001", "--json")
    assert proc.returncode == 3, proc.stderr
    rows = pq.read_table(out).to_pylist()
    unknown = [r for r in rows if r["status"] == "unknown"]
    assert unknown, "a 1 ms limit cannot finish the 211-block tract"
    assert all(r["unique"] is None and r["certain_persons"] is None for r in unknown)
    rerun = statrecon("census", "reconstruct", built["release"], "--out", out, "--workers", "1",
                      "--json")  # unknown tracts are redone, finished ones kept
    assert rerun.returncode == 0, rerun.stderr
    assert json_of(rerun)["ran"] == len({r["tract"] for r in unknown})
    assert pq.read_table(out).to_pylist() == pq.read_table(built["recon"]).to_pylist()


def test_partial_table_sets(tmp_path: Path) -> None:
    """Block tables only reconstruct (tracts from the block ids); no P1 or no block tables is
    a clear error."""
    rel = tmp_path / "r.parquet"
    people = _slice()
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


def test_bad_release_values_are_named(built: dict[str, Path], tmp_path: Path) -> None:
    import pyarrow as pa

    table = pq.read_table(built["release"])
    frame = table.to_pandas()
    block = frame.geoid.iloc[0]
    negative = _edit(built["release"], tmp_path / "neg.parquet", {(block, "P0120010"): -3})
    assert_user_error(statrecon("census", "reconstruct", negative, "--out",
                                tmp_path / "r.parquet"), block, "P0120010", "-3")
    dropped = frame[~((frame.geoid == block) & (frame.cell == "P0140005"))]
    pq.write_table(pa.Table.from_pandas(dropped, preserve_index=False)
                   .replace_schema_metadata(table.schema.metadata), tmp_path / "drop.parquet")
    assert_user_error(statrecon("census", "reconstruct", tmp_path / "drop.parquet", "--out",
                                tmp_path / "r.parquet"), block, "P0140005", "missing")


def test_p13_medians_pin_more_and_stay_sound(built: dict[str, Path], tmp_path: Path) -> None:
    """P13 (median age by sex, a non-linear statistic) pins single-year ages in small blocks:
    more blocks certified unique, a higher exact-match rate, still nothing certified wrongly."""
    rel, recon = tmp_path / "r13.parquet", tmp_path / "c13.parquet"
    assert statrecon("census", "tabulate", "--persons", SLICE, "--out", rel,
                     "--with-p13").returncode == 0
    values = pq.read_table(rel).to_pandas()
    p13 = values[values.table == "P13"]
    people = _slice()
    first_block = people.block_geoid.iloc[0]
    males = people[(people.block_geoid == first_block) & (people.sex == "male")].age
    assert p13.set_index(["geoid", "cell"]).value[(first_block, "P0130002")] == \
        round(10 * float(np.median(males)))
    proc = statrecon("census", "reconstruct", rel, "--out", recon, "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    with_p13 = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon", recon,
                                 "--json"))
    without = json_of(statrecon("census", "compare", "--truth", SLICE, "--recon",
                                built["recon"], "--json"))
    assert with_p13["certified_blocks_mismatched"] == 0
    assert with_p13["certain_persons_not_in_truth"] == 0
    assert with_p13["blocks_certified_unique"] > without["blocks_certified_unique"]
    assert with_p13["exact_match_rate"] > without["exact_match_rate"]
