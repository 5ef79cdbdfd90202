"""``tables ptable`` and ``tables perturb`` from the command line: a ptable built and read
back, the publication without true counts beside its working file, drawn keys kept with the
records and reused, the attacker's assumed knowledge stated, and bad input one line naming
file:line with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import CliRunner


@pytest.fixture
def folder(tmp_path: Path, run_cli: CliRunner) -> Path:
    rows = [("f" if i % 3 else "m", str(i % 4), i * 37 % 256) for i in range(60)]
    rows += [("m", "9", 5)]  # one person alone: a cell of 1
    pd.DataFrame(rows, columns=["sex", "age", "rk"]).to_csv(tmp_path / "m.csv", index=False)
    for fmt in ("abs", "ons"):
        code, out, err = run_cli("tables", "ptable", "--d", "2", "--v", "1.08", "--js", "1",
                                 "--format", fmt, "--out", tmp_path / f"{fmt}.csv")
        assert code == 0, err
        assert f"an {fmt.upper()} ptable for counts, D = 2, V = 1.08, js = 1" in out
    return tmp_path


def test_the_publication_holds_no_true_count(folder: Path, run_cli: CliRunner) -> None:
    code, out, err = run_cli("tables", "perturb", folder / "m.csv", "--ptable",
                             folder / "ons.csv", "--dimensions", "sex,age", "--record-key",
                             "rk", "--threshold", "0", "--out", folder / "t.csv")
    assert code == 0, err
    assert "the attacker is assumed to know the ptable itself" in out
    published = pd.read_csv(folder / "t.csv", dtype=str)
    working = pd.read_csv(folder / "t.working.csv", dtype=str)
    assert list(published.columns) == ["sex", "age", "value"]
    assert {"count", "ckey", "noise", "perturbed"} <= set(working.columns)
    assert (published["value"] == working["published"]).all()
    assert (working["count"].astype(int) + working["noise"].astype(int)
            == working["perturbed"].astype(int)).all()
    # a zero is never perturbed; js = 1: no cell is published as 1
    zeros = working[working["count"] == "0"]
    assert len(zeros) and (zeros["published"] == "0").all()
    assert "1" not in set(published["value"])


def test_no_margins_and_the_threshold(folder: Path, run_cli: CliRunner) -> None:
    code, _, err = run_cli("tables", "perturb", folder / "m.csv", "--ptable",
                           folder / "ons.csv", "--dimensions", "sex,age", "--record-key",
                           "rk", "--no-margins", "--out", folder / "t.csv")
    assert code == 0, err
    published = pd.read_csv(folder / "t.csv", dtype=str)
    assert "Total" not in set(published["sex"]) | set(published["age"])
    assert len(published) == 2 * 5
    working = pd.read_csv(folder / "t.working.csv", dtype=str)
    small = working["perturbed"].astype(int) < 10  # ONS's default threshold
    assert (published["value"][small] == "x").all() and small.any()


def test_drawn_keys_are_kept_and_reused(folder: Path, run_cli: CliRunner) -> None:
    code, out, err = run_cli("tables", "perturb", folder / "m.csv", "--ptable",
                             folder / "abs.csv", "--dimensions", "sex,age", "--seed", "11",
                             "--attacker-knows", "d", "--json", "--out", folder / "a.csv")
    assert code == 0, err
    report = json.loads(out)
    assert report["attacker_knows"] == "d"
    assert report["attacker_knows_text"].startswith("only D = 2")
    assert report["ptable"] == {"format": "abs", "D": 2, "js": 1, "cell_keys": "[0, 1)"}
    assert report["record_keys"] == {"column": "record_key", "drawn": True, "seed": 11,
                                     "from_ids": None}
    records = folder / "a.records.working.csv"
    assert report["working_files"] == [str(folder / "a.working.csv"), str(records)]
    # a later table of the same records, with the kept keys: the shared cells agree
    code, _, err = run_cli("tables", "perturb", records, "--ptable", folder / "abs.csv",
                           "--dimensions", "sex", "--record-key", "record_key",
                           "--out", folder / "b.csv")
    assert code == 0, err
    first = pd.read_csv(folder / "a.csv", dtype=str)
    later = pd.read_csv(folder / "b.csv", dtype=str)
    margin = first[first["age"] == "Total"].set_index("sex")["value"]
    assert later.set_index("sex")["value"].to_dict() == margin.to_dict()


@pytest.mark.parametrize(("edit", "where", "message"), [
    ("rk", "m.csv:3", "record key 300 is not a whole number from 0 to 255"),
    ("ptable", "ons.csv:2", "pvalue -5 would publish the count 1 as -4"),
])
def test_bad_input_is_one_line_and_nothing_is_written(folder: Path, run_cli: CliRunner,
                                                      edit: str, where: str,
                                                      message: str) -> None:
    if edit == "rk":
        lines = (folder / "m.csv").read_text().splitlines()
        lines[2] = lines[2].rsplit(",", 1)[0] + ",300"
        (folder / "m.csv").write_text("\n".join(lines) + "\n")
    else:
        lines = (folder / "ons.csv").read_text().splitlines()
        lines[1] = "1,0,-5"
        (folder / "ons.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run_cli("tables", "perturb", folder / "m.csv", "--ptable",
                           folder / "ons.csv", "--dimensions", "sex,age", "--record-key",
                           "rk", "--out", folder / "t.csv")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1, err
    assert f"{folder / where}: {message}" in lines[0]
    assert not (folder / "t.csv").exists() and not (folder / "t.working.csv").exists()


def test_options_are_checked_before_any_work(folder: Path, run_cli: CliRunner) -> None:
    base = ("tables", "perturb", folder / "m.csv", "--ptable", folder / "ons.csv",
            "--dimensions", "sex")
    for extra, message in [
        ((), "give --record-key COLUMN"),
        (("--record-key", "rk", "--seed", "1"), "exactly one of the three"),
        (("--record-key", "rk", "--ons-id", "rk"), "exactly one of the three"),
        (("--ons-id", "nope"), "no column 'nope' of ids"),
        (("--record-key", "rk", "--attacker-knows", "all"), "--attacker-knows 'all'"),
        (("--record-key", "nope"), "no column 'nope' of record keys"),
    ]:
        code, _, err = run_cli(*base, *extra, "--out", folder / "t.csv")
        assert code == 1 and message in err, err
    code, _, err = run_cli("tables", "ptable", "--d", "2", "--v", "0.5", "--js", "1",
                           "--out", folder / "p.csv")
    assert code == 1 and "choose a larger V or D" in err and not (folder / "p.csv").exists()


def test_the_audit_pins_two_ones_under_their_margin(folder: Path, run_cli: CliRunner) -> None:
    """The issue's example from the command line: two cells of 1 published as 2, their
    margin of 2 published as 0; D = 2 known pins all three (exit 4), nothing known pins
    none (exit 0)."""
    (folder / "two.csv").write_text("a,rk\nx,0.55\ny,0.55\n")
    base = ("tables", "perturb", folder / "two.csv", "--ptable", folder / "abs.csv",
            "--dimensions", "a", "--record-key", "rk", "--audit", "--out", folder / "o.csv")
    code, out, err = run_cli(*base, "--attacker-knows", "d")
    assert code == 4, err
    assert "audit (d known): 3 of 3 true counts pinned exactly" in out
    assert "a=x = 1 (published 2, alone in [1, 4]): proven by a: a Total = x + y" in out
    code, out, err = run_cli(*base, "--attacker-knows", "d", "--json")
    assert code == 4, err
    audit = json.loads(out)["audit"]
    assert audit["attacker_knows"] == "d" and audit["pinned"] == 3
    total = audit["cells"][0]
    assert (total["name"], total["value"], total["published"], total["a_priori"]) == \
        ("Total", 2, 0, [0, 2])
    assert total["integer"]["lower_exact"] == total["integer"]["upper_exact"] == "2"
    code, out, err = run_cli(*base, "--attacker-knows", "nothing")
    assert code == 0, err
    assert "audit (nothing known): 0 of 3 true counts pinned" in out


def test_keys_from_ids_are_checked(folder: Path, run_cli: CliRunner) -> None:
    """``--ons-id``: a missing id names its line; an ABS ptable (keys in [0, 1)) cannot take
    whole-number keys; nothing written either way. Valid ids publish (the side-by-side test
    with ONS's package is tests/peers/test_ckm_vs_ons.py)."""
    (folder / "ids.csv").write_text("sex,id\nf,4097\nm,\n")
    base = ("tables", "perturb", folder / "ids.csv", "--dimensions", "sex", "--ons-id",
            "id", "--out", folder / "t.csv")
    code, _, err = run_cli(*base, "--ptable", folder / "ons.csv")
    assert code == 1 and f"{folder / 'ids.csv'}:3" in err, err
    code, _, err = run_cli(*base, "--ptable", folder / "abs.csv")
    assert code == 1 and "ABS format" in err, err
    assert not (folder / "t.csv").exists() and not (folder / "t.working.csv").exists()
    (folder / "ids.csv").write_text("sex,id\nf,4097\nm,12\n")
    code, out, err = run_cli(*base, "--ptable", folder / "ons.csv", "--threshold", "0")
    assert code == 0, err
    assert "each record's id modulo 4096" in out
