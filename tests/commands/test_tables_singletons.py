"""``--singletons`` on ``tables audit`` and ``tables protect`` (issue 28, item 10): a respondent
alone in a suppressed cell knows its value; two primary cells that protect only each other
are then disclosed to that respondent."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CliRunner

CELLS = ("--dimensions", "a,b", "--value", "value", "--status", "status", "--frequency",
         "frequency")
# x,p (one contributor) and x,q primary, hidden in the rectangle with y,p and y,q
RECTANGLE = ("a,b,value,frequency,status\n"
             "x,p,7,1,primary\nx,q,12,3,primary\nx,r,5,2,safe\n"
             "y,p,4,2,secondary\ny,q,9,2,secondary\ny,r,6,3,safe\n")


def test_the_rectangle_protects_from_strangers_not_from_the_singleton(
        run_cli: CliRunner, tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text(RECTANGLE)
    code, data, err = run_cli("tables", "audit", src, *CELLS, "--json", "--quiet")
    assert code == 0, err
    assert "singletons" not in json.loads(data)
    code, data, _ = run_cli("tables", "audit", src, *CELLS, "--singletons", "--json",
                            "--quiet")
    got = json.loads(data)
    assert code == 4
    assert got["summary"]["all_protected"] is False
    assert got["singletons"]["checked"] == 1
    flagged = got["singletons"]["cells"]
    assert [(c["name"], c["singleton_name"], c["verdict"]) for c in flagged] == [
        ("a=x, b=q", "a=x, b=p", "disclosed")]
    assert flagged[0]["integer"]["lower_exact"] == flagged[0]["integer"]["upper_exact"] == "12"
    code, text, _ = run_cli("tables", "audit", src, *CELLS, "--singletons")
    assert code == 4
    assert "disclosed [12, 12] to the single contributor of a=x, b=p" in text


def test_protect_with_singletons_writes_what_the_singleton_audit_passes(
        run_cli: CliRunner, tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text(RECTANGLE.replace("secondary", "safe"))
    out = tmp_path / "o.csv"
    code, data, err = run_cli("tables", "protect", src, *CELLS, "--singletons", "--out", out,
                              "--json", "--quiet")
    got = json.loads(data)
    assert code in (0, 2), err
    if code == 2:  # then no pattern protects x,q from x,p's contributor: proven
        assert got["status"] == "infeasible" and "single contributor of a=x, b=p" in got["note"]
        return
    assert got["singletons"]["checked"] >= 1 and got["singletons"]["cells"] == []
    code, _, err = run_cli("tables", "audit", tmp_path / "o.working.csv", *CELLS,
                           "--singletons", "--quiet")
    assert code == 0, err
