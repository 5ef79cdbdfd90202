"""``statrecon experiment protections`` (issue 30, item 5) on the three smallest blocks of one
tract of the 3-tract slice (39 persons): the files, utility numbers that are what they
claim, nothing proven false but under swapping, resuming per setting, and bad parameters."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SLICE, assert_user_error, json_of, statrecon

from statrecon.census.persons.swap import read_persons
from statrecon.experiments.protections import utility
from statrecon.runs.census_bounded import certain_protected, claimed_beyond
from statrecon.runs.census_protect import (
    CensusProtectOptions,
    count_cells,
    protect_census,
    true_tables,
)

BLOCKS = ("060375324001143", "060375324001089", "060375324001072")  # 8, 12, 19 persons
SETTINGS = ("--swap-rates", "0.5", "--ckm", "2:1.08", "--bases", "3", "--thresholds", "3",
            "--rho", "inf", "--rank", "1", "--time-limit", "60", "--certain-time-limit", "2",
            "--workers", "1")


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = pd.read_csv(SLICE, dtype={"block_geoid": str})
    path = tmp_path_factory.mktemp("protections_truth") / "tract.csv"
    frame[frame["block_geoid"].isin(BLOCKS)].to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def experiment(truth: Path, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, list[dict[str, object]]]:
    out = tmp_path_factory.mktemp("protections") / "exp"
    proc = statrecon("experiment", "protections", *SETTINGS, "--truth", truth, "--out", out,
                     "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json_of(proc)["rows"]
    assert isinstance(rows, list)
    return out, rows


def test_every_setting_is_measured_and_written(
        experiment: tuple[Path, list[dict[str, object]]]) -> None:
    out, rows = experiment
    assert [(r["method"], r["key"]) for r in rows] == [
        ("swap", "swap_0.5"), ("ckm", "ckm_D2"), ("round", "round_3"),
        ("suppress", "suppress_3"), ("dp", "dp/rho_inf")]
    for name in ("summary.json", "protections.png", "README.md", "swap_0.5/row.json",
                 "dp/rho_inf/compare.json"):
        assert (out / name).stat().st_size > 0, name
    assert (out / "protections.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((out / "summary.json").read_text())["rows"] == rows
    readme = (out / "README.md").read_text()
    assert "| round | base 3 |" in readme and "| suppress | below 3 |" in readme
    by = {r["key"]: r for r in rows}
    exact = by["dp/rho_inf"]  # the unprotected tables: no error, the exact model
    assert exact["mae"] == 0 and exact["exact_share"] == 1.0
    assert exact["agreement_binned"] == 1.0
    assert by["suppress_3"]["agreement_exact"] is None  # no reconstruction of withheld cells
    assert by["suppress_3"]["withheld"] > 0
    for key in ("swap_0.5", "ckm_D2", "round_3"):
        assert by[key]["reconstruction"] is not None, key
        assert by[key]["mae"] > 0 and by[key]["exact_share"] < 1, key


def test_nothing_proven_is_false_but_under_swapping(
        experiment: tuple[Path, list[dict[str, object]]]) -> None:
    _, rows = experiment
    for r in rows:
        assert isinstance(r["certain"], int), r["key"]
        if r["method"] != "swap":
            assert r["certain_false"] == 0, r["key"]
    swap = next(r for r in rows if r["method"] == "swap")
    assert swap["of_truth"] is False and swap["certain"] > 0
    # the exact tables allow fewer datasets than any bounds around the truth: whatever a
    # protection lets through, they prove too (the same proof, at the same resolution)
    exact = next(r for r in rows if r["key"] == "dp/rho_inf")
    assert exact["certain"] >= max(r["certain"] for r in rows if r["method"] in (
        "ckm", "round", "suppress"))
    assert 0.5 <= swap["moved"] <= 1  # the rate's pairs, and more: every person at risk
    assert all(r["moved"] is None for r in rows if r["method"] not in ("swap", "dp"))


def test_the_exact_tables_are_proven_as_every_protection_is(
        truth: Path, experiment: tuple[Path, list[dict[str, object]]]) -> None:
    # rho = inf counts the persons of the same class-level proof as the other rows (not the
    # exact model's full-record certification), over every block
    _, rows = experiment
    exact = next(r for r in rows if r["key"] == "dp/rho_inf")
    persons = read_persons(truth).persons
    release = protect_census(persons, CensusProtectOptions("suppress", threshold=0))
    proof = certain_protected(release, time_limit=None)
    assert exact["certain_blocks"] == proof.statuses == {"ok": len(BLOCKS)}
    assert exact["certain"] == proof.persons > 0
    assert exact["certain_false"] == claimed_beyond(proof, persons, release.cells) == 0


def test_rounding_utility_is_what_it_claims(truth: Path,
                                            experiment: tuple[Path, list[dict[str, object]]]
                                            ) -> None:
    _, rows = experiment
    persons = read_persons(truth).persons
    cells = count_cells()
    true = true_tables(persons, cells)
    for base in (3, 10):
        got = protect_census(persons, CensusProtectOptions("round", base=base))
        published = (got.block.published, got.tract.published)
        assert all((p % base == 0).all() for p in published)  # every cell a multiple of b
        errors = np.concatenate([np.abs(p - t.published).ravel()
                                 for p, t in zip(published, true, strict=True)])
        used = utility(true, published, cells)
        assert used["max_error"] == errors.max() <= base / 2  # nearest rounding
        assert used["mae"] == pytest.approx(errors.mean())
        assert used["mae"] <= base / 2
        assert used["exact_share"] == pytest.approx(float((errors == 0).mean()))
        if base == 3:  # the experiment's own numbers
            row = next(r for r in rows if r["key"] == "round_3")
            assert row["mae"] == pytest.approx(used["mae"])
            assert row["exact_share"] == pytest.approx(used["exact_share"])


def test_a_rerun_resumes_each_setting(truth: Path,
                                      experiment: tuple[Path, list[dict[str, object]]]
                                      ) -> None:
    out, rows = experiment
    row = out / "swap_0.5" / "row.json"
    before = row.stat().st_mtime_ns
    (out / "suppress_3" / "row.json").unlink()  # as a crash before it was written leaves it
    again = statrecon("experiment", "protections", *SETTINGS, "--truth", truth, "--out", out,
                      "--json", "--rho", "none")
    assert again.returncode == 0, again.stderr
    got = json_of(again)["rows"]
    assert row.stat().st_mtime_ns == before
    assert [r["key"] for r in got] == [r["key"] for r in rows[:-1]]
    assert (out / "suppress_3" / "row.json").exists()


@pytest.mark.parametrize(("args", "message"), [
    (("--bases", "0"), "--bases '0': a rounding base is a whole number >= 2"),
    (("--bases", "5,1"), "--bases '5,1': a rounding base is a whole number >= 2, got 1"),
    (("--swap-rates", "1.5"), "--swap-rates '1.5': a swap rate is a share of the persons"),
    (("--swap-rates", "-0.1"), "in [0, 1]"),
    (("--ckm", "2"), "give each ptable as D:V"),
    (("--thresholds", "x"), "'x' is not a number"),
])
def test_bad_parameters(args: tuple[str, ...], message: str, tmp_path: Path, truth: Path
                        ) -> None:
    proc = statrecon("experiment", "protections", *args, "--truth", truth, "--out",
                     tmp_path / "x")
    assert_user_error(proc, message)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("rate", [0.05, 0.5])
def test_swapping_by_the_rate_alone_moves_the_rate(rate: float) -> None:
    """With k = 0 the swap moves the rate's pairs and no more (two persons a pair, each to
    another block of its tract), where census swap's k = 3 moves every person counted below
    3 in its block too (47 % of the slice at "5 %"); the release says which it did."""
    from statrecon.experiments.protections import ProtectionsOptions, moved_share, settings

    persons = read_persons(SLICE).persons
    by_rate = next(s for s in settings(ProtectionsOptions(swap_rates=(rate,), swap_k=0))
                   if s.method == "swap")
    assert by_rate.key == f"swap_{rate:g}_k0" and by_rate.parameter.endswith("k = 0")
    assert by_rate.protect is not None
    moved = moved_share(persons, by_rate.protect)
    assert moved is not None and moved <= rate + 2 / len(persons)
    assert moved >= rate / 2  # a pair in one block moves no one; most pairs cross blocks
    targeted = moved_share(persons, CensusProtectOptions("swap", rate=rate))
    assert targeted is not None and targeted > moved
    assert "counted below" not in protect_census(persons, by_rate.protect).statement
    assert "every unit counted below 3 in its area" in protect_census(
        persons, CensusProtectOptions("swap", rate=rate)).statement


@pytest.mark.parametrize("stored", [
    "{bad", "[]", '{"key": "ckm_D2"}', '{"key": "swap_0.5", "method": "swap"}',
    None,  # the right row with a number turned into text
])
def test_a_changed_row_is_one_line_on_resume(
        truth: Path, experiment: tuple[Path, list[dict[str, object]]], tmp_path: Path,
        stored: str | None) -> None:
    """A rerun resumes from the settings' rows in its folder: one changed by hand is one
    line naming it, exit 1, never a traceback in the table or the figure."""
    import shutil

    out = tmp_path / "exp"
    shutil.copytree(experiment[0], out)
    row = out / "swap_0.5" / "row.json"
    if stored is None:
        data = json.loads(row.read_text())
        stored = json.dumps({**data, "mae": "0.03"})
    row.write_text(stored)
    assert_user_error(statrecon("experiment", "protections", *SETTINGS, "--truth", truth,
                                "--out", out, "--rho", "none"), "row.json")
