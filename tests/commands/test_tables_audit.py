"""``statrecon tables audit`` end to end: tau-Argus input, a table as CSV, microdata with rules;
the JSON contract, the exit codes (0 protected, 4 not, 1 bad input), the HTML report, and the
same answer from a local pool as in process."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import EXAMPLES, CliRunner, assert_one_line_error

ARB = EXAMPLES / "tables" / "tauargus" / "TestTable.arb"
TAB = EXAMPLES / "tables" / "tauargus" / "pp.tab"
# a 3-way frequency table with primaries and random secondaries (its generate.py beside it)
THREE_WAY = EXAMPLES / "tables" / "threeway" / "threeway.csv"


def test_tau_argus_batch_file_all_primaries_disclosed(run_cli: CliRunner,
                                                      tmp_path: Path) -> None:
    """pp.tab's primary cells alone (no secondary suppression): each is pinned by the
    totals, so every one is disclosed, LP and integer interval its own value; exit 4."""
    html = tmp_path / "audit.html"
    code, out, err = run_cli("tables", "audit", ARB, "--json", "--quiet", "--html", html)
    assert code == 4, err
    data = json.loads(out)
    assert data["tables"] == [{"name": "pp", "cells": 162, "suppressed": 9}]
    assert len(data["cells"]) == 9
    for cell in data["cells"]:
        assert set(cell) >= {"table", "codes", "value", "status", "lp", "integer",
                             "protection", "verdict", "attack"}
        assert cell["status"] == "primary" and cell["verdict"] == "disclosed"
        for kind in ("lp", "integer"):
            assert Fraction(cell[kind]["lower_exact"]) == Fraction(cell["value_exact"])
            assert Fraction(cell[kind]["upper_exact"]) == Fraction(cell["value_exact"])
        assert cell["attack"], cell  # the equations that pin it
    assert data["summary"]["disclosed"] == 9 and not data["summary"]["all_protected"]
    page = html.read_text(encoding="utf-8")
    assert "Suppression audit: pp" in page and page.count("<tr>") == 10
    assert "<script" not in page


def test_a_table_that_does_not_add_up_is_a_one_line_error(run_cli: CliRunner) -> None:
    """pp.tab as published: three totals are off by one (tau-Argus recomputes them)."""
    result = run_cli("tables", "audit", TAB, "--json")
    assert_one_line_error(result, "pp.tab:", "does not add up", "Region=Os")
    code, out, _ = run_cli("tables", "audit", TAB, "--recompute-totals", "--json", "--quiet")
    assert code == 4 and len(json.loads(out)["cells"]) == 9


def test_csv_table_integer_intervals_and_pool(run_cli: CliRunner) -> None:
    """A 3-way table: every interval holds the true value, the integer one inside the LP one,
    some strictly (3-way tables have fractional LP bounds); two worker processes give the
    same intervals as one."""
    args = ("tables", "audit", THREE_WAY, "--dimensions", "a,b,c", "--value", "value",
            "--status", "status", "--frequency", "frequency", "--json", "--quiet")
    code, out, err = run_cli(*args)
    data = json.loads(out)
    verdicts = {c["verdict"] for c in data["cells"]}
    assert code == (4 if verdicts & {"disclosed", "under-protected"} else 0), err
    tighter = 0
    for cell in data["cells"]:
        value, lp, ip = (Fraction(cell["value_exact"]), cell["lp"], cell["integer"])
        assert Fraction(lp["lower_exact"]) <= Fraction(ip["lower_exact"]) <= value
        assert value <= Fraction(ip["upper_exact"]) <= Fraction(lp["upper_exact"])
        assert all(Fraction(ip[s]).denominator == 1 for s in ("lower_exact", "upper_exact"))
        tighter += cell["tighter_than_lp"]
    assert tighter == data["summary"]["integer_tighter_than_lp"] > 0
    code2, out2, _ = run_cli(*args, "--workers", "2")
    assert code2 == code
    pooled = json.loads(out2)
    assert [(c["name"], c["lp"], c["integer"]) for c in pooled["cells"]] == \
        [(c["name"], c["lp"], c["integer"]) for c in data["cells"]]


def test_microdata_with_a_frequency_rule(run_cli: CliRunner, tmp_path: Path) -> None:
    """Records tabulated, cells with 1..N contributors primary: (M, c) and the town c total
    (both 1 person); the M row and the empty (F, c) cell pin both."""
    people = pd.DataFrame({"sex": ["F"] * 5 + ["M"] * 5,
                           "town": ["a", "a", "a", "b", "b", "a", "a", "b", "b", "c"]})
    path = tmp_path / "people.csv"
    people.to_csv(path, index=False)
    code, out, _ = run_cli("tables", "audit", path, "--microdata", "--dimensions",
                           "sex,town", "--max-n", "1", "--json", "--quiet")
    data = json.loads(out)
    assert code == 4
    assert [c["name"] for c in data["cells"]] == ["town=c", "sex=M, town=c"]
    assert [c["verdict"] for c in data["cells"]] == ["disclosed", "disclosed"]
    result = run_cli("tables", "audit", path, "--microdata", "--dimensions", "sex,town")
    assert_one_line_error(result, "primary suppression rule")


def test_bad_inputs(run_cli: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "t.txt"
    bad.write_text("x")
    assert_one_line_error(run_cli("tables", "audit", bad), "expected a tau-Argus")
    csv = tmp_path / "t.csv"
    csv.write_text("a,value\nx,1\n")
    assert_one_line_error(run_cli("tables", "audit", csv, "--value", "value"),
                          "--dimensions")
    assert_one_line_error(run_cli("tables", "audit", ARB, "--apriori", "huge"),
                          "--apriori")
    assert_one_line_error(run_cli("tables", "audit", tmp_path / "none.arb"), "none.arb")


def test_protect_writes_a_table_its_own_audit_passes(run_cli: CliRunner, tmp_path: Path) -> None:
    """tau-Argus's test table: the fast pattern, written as tau-Argus files, read back and
    audited by the command: every suppressed cell protected (exit 0); the exact method's
    pattern is proven optimal and no larger."""
    out = tmp_path / "pp_protected.tab"
    code, data_out, err = run_cli("tables", "protect", ARB, "--out", out, "--json", "--quiet")
    assert code == 0, err
    fast = json.loads(data_out)
    assert fast["status"] == "feasible" and fast["audit"]["protected"] == fast["primary"] == 9
    assert out.exists() and out.with_suffix(".rda").exists()
    code, audited, err = run_cli("tables", "audit", out, "--json", "--quiet")
    assert code == 0, err
    data = json.loads(audited)
    assert data["summary"]["suppressed"] == fast["suppressed"]
    assert data["summary"]["all_protected"]
    csv = tmp_path / "pp_exact.csv"
    code, exact_out, err = run_cli("tables", "protect", ARB, "--out", csv, "--method", "exact",
                                   "--json", "--quiet")
    exact = json.loads(exact_out)
    assert code == 0 and exact["status"] == "optimal", err
    assert len(exact["secondary"]) <= len(fast["secondary"])
    frame = pd.read_csv(tmp_path / "pp_exact.working.csv", dtype=str)
    assert (frame["status"] == "secondary").sum() == len(exact["secondary"])
    assert exact["working"] == str(tmp_path / "pp_exact.working.csv")
    published = pd.read_csv(csv, dtype=str)  # the publication: no suppressed value in it
    suppressed = frame["status"].isin(["primary", "secondary"])
    assert list(published.columns) == ["Size", "Region", "value"]
    assert (published.loc[suppressed, "value"] == "x").all()
    assert (published.loc[~suppressed, "value"] == frame.loc[~suppressed, "value"]).all()


def test_protect_bad_inputs_write_nothing(run_cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "x.txt"
    assert_one_line_error(run_cli("tables", "protect", ARB, "--out", out), ".tab, .arb, .csv")
    assert_one_line_error(run_cli("tables", "protect", ARB, "--out", tmp_path / "a.tab",
                                  "--method", "magic"), "--method")
    assert_one_line_error(run_cli("tables", "protect", TAB, "--out", tmp_path / "b.tab"),
                          "does not add up")
    assert list(tmp_path.iterdir()) == []


CELLS = ("--dimensions", "a,b", "--value", "value", "--status", "status", "--frequency",
         "frequency")


def test_a_primary_zero_beside_a_published_zero_is_protected(run_cli: CliRunner,
                                                              tmp_path: Path) -> None:
    """Issue 28, defect 1: a zero with contributors may be suppressed like any cell; protect
    used to prove "infeasible" over the non-zero cells only. Now it writes a pattern that the
    audit command passes, and reports its one primary cell (defect 2: it said 0)."""
    src = tmp_path / "t.csv"
    src.write_text("a,b,value,frequency,status\nx,p,0,1,primary\nx,q,0,3,safe\n"
                   "y,p,5,3,safe\ny,q,6,4,safe\n")
    out = tmp_path / "o.csv"
    code, data, err = run_cli("tables", "protect", src, *CELLS, "--out", out, "--json",
                              "--quiet")
    assert code == 0, err
    got = json.loads(data)
    assert got["status"] == "feasible" and got["primary"] == 1
    code, _, err = run_cli("tables", "audit", tmp_path / "o.working.csv", *CELLS, "--quiet")
    assert code == 0, err


def test_infeasible_names_the_rules_that_kept_cells_out(run_cli: CliRunner,
                                                        tmp_path: Path) -> None:
    """x + y = Total with x primary, y empty (no contributors) and Total protected: no cell
    that may be suppressed hides x, so "infeasible", proven over the cells allowed; the
    output names both cells kept out and the rule that kept each, and the primary cell is
    counted. --suppress-empty offers y, and then x is protected."""
    src = tmp_path / "t.csv"
    src.write_text("a,value,frequency,status\nx,3,1,primary\ny,0,0,safe\nTotal,3,1,protected\n")
    out = tmp_path / "o.csv"
    args = ("tables", "protect", src, "--dimensions", "a", *CELLS[2:], "--out", out)
    code, data, _ = run_cli(*args, "--json", "--quiet")
    got = json.loads(data)
    assert code == 2 and got["status"] == "infeasible" and got["primary"] == 1
    assert got["excluded"] == {"protected": ["Total"], "empty": ["a=y"]}
    assert not out.exists()
    code, text, _ = run_cli(*args)
    assert code == 2
    assert "1 primary" in text and "none audited" in text
    assert "status protected (P)" in text and "--suppress-empty" in text
    code, data, err = run_cli(*args, "--suppress-empty", "--json", "--quiet")
    assert code == 0 and json.loads(data)["secondary"][0]["name"] == "a=y", err


def test_linked_tables_are_protected_and_written_back_as_a_tau_argus_job(
        run_cli: CliRunner, tmp_path: Path) -> None:
    """Issue 28, defect 4: linked tables (a batch file specifying two tables) protected with
    --out job.arb come back as a batch file and a .tab per table, which the audit command
    reads as the same linked tables with every suppressed cell protected; --out x.tab for
    linked tables says to write .arb."""
    from statrecon.tables import TableSet
    from statrecon.tables.rules import MinFrequency, TableSpec, table_from_microdata
    from statrecon.tables.tauargus import write_arb

    people = pd.DataFrame({"region": list("nnsssseeww"), "sex": list("fmffmmfmfm"),
                           "age": list("yooyyoyoyo"), "w": [3, 4, 5, 6, 7, 8, 2, 9, 4, 1]})
    linked = TableSet(tuple(
        table_from_microdata(people, TableSpec(list(v), response="w", name=name),
                             [MinFrequency(1)])
        for name, v in (("by_sex", ("region", "sex")), ("by_age", ("region", "age")))))
    write_arb(linked, tmp_path / "in.arb")
    out = tmp_path / "out.arb"
    code, data, err = run_cli("tables", "protect", tmp_path / "in.arb", "--out", out,
                              "--json", "--quiet")
    assert code == 0, err
    assert (tmp_path / "out_in_by_sex.tab").exists() and (tmp_path / "out_in_by_age.rda").exists()
    code, audited, err = run_cli("tables", "audit", out, "--json", "--quiet")
    assert code == 0, err
    assert json.loads(audited)["summary"]["suppressed"] == json.loads(data)["suppressed"]
    assert_one_line_error(run_cli("tables", "protect", tmp_path / "in.arb", "--out",
                                  tmp_path / "x.tab"), "write .arb")


def test_the_manual_margin_option(run_cli: CliRunner, tmp_path: Path) -> None:
    """Issue 28, defect 3: --manual-margin sets the protection of primary cells whose file
    gives none (10 % of 1.5 is 0.15)."""
    (tmp_path / "t.rda").write_text('   <SEPARATOR> ";"\nA\n    <RECODEABLE>\n'
                                    '    <TOTCODE> "T"\nV\n    <NUMERIC>\n    <DECIMALS> 1\n'
                                    "F\n    <FREQUENCY>\nS\n    <STATUS>\n")
    (tmp_path / "t.tab").write_text('"T";5,0;3;S\n"a";1,5;1;U\n"b";3,5;2;S\n')
    _, out, err = run_cli("tables", "audit", tmp_path / "t.tab", "--manual-margin", "10",
                          "--json", "--quiet")
    cell = json.loads(out)["cells"][0]
    assert cell["protection"]["lower"] == pytest.approx(0.15), err
