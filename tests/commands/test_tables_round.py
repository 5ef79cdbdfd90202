"""``tables round`` from the command line: each method's publication (rounded values only,
multiples of the base next to the true values) beside its working file, controlled rounding
adding up, the attacker's assumed knowledge stated, the audit's exit 4, no controlled
rounding (exit 2, a proof) and none in time (exit 3) with nothing written, bad input one
line with nothing written, and the ``--json`` keys."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from ortools.sat.python import cp_model

from statrecon.tables import TableSource, load
from tests.conftest import CliRunner, assert_one_line_error

ROOT = Path(__file__).resolve().parents[2]
THREEWAY = ROOT / "examples" / "tables" / "threeway" / "threeway.csv"
FIVES = ROOT / "examples" / "tables" / "rounding" / "three_fives.csv"
TABLE = ("--dimensions", "a,b,c", "--value", "value")
ROUND = {"method", "base", "seed", "status", "attacker_knows", "attacker_knows_text",
         "tables", "cells", "changed", "change", "core", "core_minimal", "publication",
         "working_files", "elapsed_s"}
AUDIT = {"attacker_knows", "cells", "pinned", "narrowed", "unknown", "elapsed_s"}
AUDIT_CELL = {"name", "value", "published", "a_priori", "lp", "integer", "pinned",
              "narrowed", "verdict", "attack"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copy(THREEWAY, tmp_path / "t.csv")
    shutil.copy(FIVES, tmp_path / "fives.csv")
    return tmp_path


@pytest.mark.parametrize(("method", "extra"), [("nearest", ()), ("random", ("--seed", "3")),
                                               ("controlled", ())])
def test_the_publication_holds_rounded_values_only(folder: Path, run_cli: CliRunner,
                                                   method: str, extra: tuple[str, ...]) -> None:
    code, out, err = run_cli("tables", "round", folder / "t.csv", *TABLE, "--base", "5",
                             "--method", method, *extra, "--out", folder / "r.csv")
    assert code == 0, err
    assert "the attacker is assumed to know the rounding method and its base, b = 5" in flat(out)
    published = pd.read_csv(folder / "r.csv", dtype=str)
    working = pd.read_csv(folder / "r.working.csv", dtype=str)
    assert list(published.columns) == ["a", "b", "c", "value"]
    assert list(working.columns) == ["a", "b", "c", "value", "rounded", "change"]
    assert (published["value"] == working["rounded"]).all()
    for true, rounded in zip(working["value"], working["rounded"], strict=True):
        low = int(true) // 5 * 5
        assert int(rounded) % 5 == 0 and low <= int(rounded) <= low + 5
        assert int(rounded) == int(true) if int(true) % 5 == 0 else True
    if method == "controlled":  # the publication adds up: read back as a table, checked
        assert flat(out).startswith("optimal (the least total change, proven)")
        load(TableSource(folder / "r.csv", dimensions=("a", "b", "c"), value="value"))


def test_json_keys_and_the_audit_that_pins(folder: Path, run_cli: CliRunner) -> None:
    """Rounding to 2, nearest: a published 0 can only be a 0, so the audit pins cells
    (exit 4) and names the equations for the others it pins."""
    args = ("tables", "round", folder / "t.csv", *TABLE, "--base", "2", "--out",
            folder / "r.csv", "--audit")
    code, out, err = run_cli(*args, "--json")
    assert code == 4, err
    report = json.loads(out)
    audit = report.pop("audit")
    assert set(report) == ROUND and set(audit) == AUDIT
    assert all(set(cell) == AUDIT_CELL for cell in audit["cells"])
    assert report["status"] == "rounded" and report["base"] == 2 and audit["pinned"] > 0
    total = audit["cells"][0]
    assert (total["name"], total["value"], total["published"], total["a_priori"]) == \
        ("Total", 60, 60, [59, 60])
    assert total["pinned"] and total["attack"]
    code, out, err = run_cli(*args)
    assert code == 4, err
    assert "audit (method known): 56 of 64 true counts pinned exactly" in flat(out)
    code, out, err = run_cli(*args, "--attacker-knows", "base")
    assert "only the base (not the method), b = 2: each true value x lies within |x - r| < 2" \
        in flat(out)
    assert "audit (base known): " in flat(out)


def test_no_controlled_rounding_is_proven_and_nothing_written(folder: Path,
                                                              run_cli: CliRunner) -> None:
    code, out, err = run_cli("tables", "round", folder / "fives.csv", "--dimensions",
                             "region,sex,age", "--value", "persons", "--base", "10",
                             "--method", "controlled", "--out", folder / "r.csv", "--json")
    assert code == 2, err
    report = json.loads(out)
    assert report["status"] == "infeasible" and report["core_minimal"]
    assert report["publication"] is None and report["change"] is None
    assert all(name.startswith("fives: ") for name in report["core"])
    assert not (folder / "r.csv").exists() and not (folder / "r.working.csv").exists()
    code, out, err = run_cli("tables", "round", folder / "fives.csv", "--dimensions",
                             "region,sex,age", "--value", "persons", "--base", "10",
                             "--method", "controlled", "--out", folder / "r.csv")
    assert code == 2
    assert flat(out).startswith("infeasible: no controlled rounding to base 10 exists (CP-SAT "
                                "proves it); nothing written")
    assert "equations admit no rounding together (no one of them can be left out)" in flat(out)


def flat(text: str) -> str:
    """The output with its line breaks undone (the terminal's width decides where Rich
    breaks a line: 80 columns where there is none)."""
    return " ".join(text.split())


class _OutOfTime:
    """A CP-SAT solver that stops before it decides anything."""

    def solve(self, model: Any) -> Any:
        return cp_model.UNKNOWN


def test_none_within_the_time_limit_is_unknown(folder: Path, run_cli: CliRunner,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("statrecon.engines.suppression.rounding.new_solver",
                        lambda **kwargs: _OutOfTime())
    code, out, err = run_cli("tables", "round", folder / "t.csv", *TABLE, "--base", "5",
                             "--method", "controlled", "--time-limit", "1", "--out",
                             folder / "r.csv")
    assert code == 3, err
    assert flat(out).startswith("unknown: no controlled rounding to base 5 found within the "
                                "time limit (1 s); nothing written")
    assert not (folder / "r.csv").exists()


@pytest.mark.parametrize(("extra", "message"), [
    (("--base", "0"), "--base 0: a rounding base must be a whole number of at least 2"),
    (("--base", "1"), "--base 1: a rounding base must be a whole number of at least 2"),
    (("--base", "-5"), "--base -5: a rounding base must be a whole number of at least 2"),
    (("--base", "5", "--method", "floor"), "--method 'floor': choose from nearest, random, "
                                           "controlled"),
    (("--base", "5", "--method", "random"), "--method random needs --seed N"),
    (("--base", "5", "--seed", "1"), "--method random needs --seed N"),
    (("--base", "5", "--attacker-knows", "all"), "--attacker-knows 'all': choose from"),
])
def test_bad_input_is_one_line_and_nothing_written(folder: Path, run_cli: CliRunner,
                                                   extra: tuple[str, ...], message: str) -> None:
    result = run_cli("tables", "round", folder / "t.csv", *TABLE, *extra, "--out",
                     folder / "r.csv")
    assert_one_line_error(result, message)
    assert not (folder / "r.csv").exists() and not (folder / "r.working.csv").exists()


def test_outputs_are_checked_and_protect_points_to_round(folder: Path,
                                                         run_cli: CliRunner) -> None:
    assert_one_line_error(run_cli("tables", "round", folder / "t.csv", *TABLE, "--base", "5",
                                  "--out", folder / "r.txt"), "write a .csv or .parquet")
    assert_one_line_error(run_cli("tables", "round", folder / "t.csv", *TABLE, "--base", "5",
                                  "--out", folder / "t.csv"), "--out")
    assert_one_line_error(run_cli("tables", "protect", folder / "t.csv", *TABLE, "--method",
                                  "round", "--out", folder / "p.csv"),
                          "--method round needs --base b")


@pytest.mark.parametrize(("method", "extra"), [("nearest", ("--audit",)),
                                               ("random", ("--seed", "3")), ("controlled", ())])
def test_protect_method_round_is_tables_round(folder: Path, run_cli: CliRunner, method: str,
                                              extra: tuple[str, ...]) -> None:
    """The issue's ``tables protect --method round --base b``: the same publication, working
    file and report as ``tables round`` with the same options (controlled rounding: an
    optimal one of the same least change; CP-SAT's portfolio may pick another)."""
    runs = {}
    for name, command in (("round", ("tables", "round", "--method", method)),
                          ("protect", ("tables", "protect", "--method", "round", "--rounding",
                                       method))):
        out = folder / f"{name}.csv"
        code, text, err = run_cli(*command, folder / "t.csv", *TABLE, "--base", "5", *extra,
                                  "--out", out, "--json")
        assert code in (0, 4), err
        report = json.loads(text)
        assert (report["method"], report["base"]) == (method, 5)
        report.pop("elapsed_s")
        report.pop("publication"), report.pop("working_files")
        report.get("audit", {}).pop("elapsed_s", None)
        if method == "controlled":
            assert report["status"] == "optimal"
            runs[name] = (code, report["change"], report["cells"], report["attacker_knows"])
        else:
            runs[name] = (code, report, out.read_bytes(),
                          (folder / f"{name}.working.csv").read_bytes())
    assert runs["round"] == runs["protect"]


@pytest.mark.parametrize(("extra", "message"), [
    (("--method", "round", "--base", "5", "--cost", "value"), "--method round takes no --cost"),
    (("--method", "round", "--base", "5", "--max-n", "3", "--singletons"),
     "--method round takes no --max-n, --singletons"),
    (("--method", "round", "--base", "1"), "base"),
    (("--method", "round", "--base", "5", "--rounding", "up"), "--rounding 'up': choose from"),
    (("--method", "round", "--base", "5", "--rounding", "random"),
     "--rounding random needs --seed N"),
    (("--method", "round", "--base", "5", "--seed", "4"), "--rounding random needs --seed N"),
    (("--base", "5"), "--method fast takes no --base"),
    (("--method", "exact", "--rounding", "random", "--seed", "2"),
     "--method exact takes no --rounding, --seed"),
    (("--method", "rounding", "--base", "5"), "choose from fast, exact, round"),
])
def test_protect_keeps_rounding_and_suppression_options_apart(
        folder: Path, run_cli: CliRunner, extra: tuple[str, ...], message: str) -> None:
    result = run_cli("tables", "protect", folder / "t.csv", *TABLE, *extra, "--out",
                     folder / "p.csv")
    assert_one_line_error(result, message)
    assert not any(folder.glob("p*.csv"))


def test_a_table_with_decimals_rounds_on_its_lattice(tmp_path: Path,
                                                    run_cli: CliRunner) -> None:
    """Magnitudes with one decimal, base 5: rounded values are whole multiples of 5, and the
    audit's sets lie on the 0.1 lattice (nearest: 2.5 <= x < 7.5 for a published 5)."""
    pd.DataFrame({"a": ["x", "y", "z"], "v": ["2.5", "7.4", "12.6"], "n": [2, 3, 4]}).to_csv(
        tmp_path / "m.csv", index=False)
    code, out, err = run_cli("tables", "round", tmp_path / "m.csv", "--dimensions", "a",
                             "--value", "v", "--frequency", "n", "--base", "5", "--out",
                             tmp_path / "r.csv", "--audit", "--json")
    assert code == 0, err
    cells = {c["name"]: c for c in json.loads(out)["audit"]["cells"]}
    assert cells["a=x"]["published"] == 5 and cells["a=x"]["a_priori"] == ["5/2", "37/5"]
    assert Fraction(cells["a=x"]["integer"]["lower_exact"]) == Fraction(5, 2)
    published = pd.read_csv(tmp_path / "r.csv", dtype=str)
    assert list(published["value"]) == ["25", "5", "5", "15"]
