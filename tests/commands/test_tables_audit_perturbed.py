"""``tables audit --ptable``: the audit of a perturbed publication someone else made, from
its published cells and the ptable alone (no true counts): the same proven intervals as
the publisher's own audit (``tables perturb --audit``), true counts shown only where they
are pinned, hierarchies from .hrc files, linked tables from a ``table`` column; a value the
ptable cannot publish, or published values no additive tables fit, exit 2 naming the cell
with nothing written; a ptable that is no distribution, exit 1 in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import CliRunner

AUDIT_KEYS = {"publication", "tables", "ptable", "threshold", "attacker_knows",
              "attacker_knows_text", "cells", "not_published", "withheld", "consistent",
              "consistency_s", "audit"}
AUDIT_CELL_KEYS = {"name", "value", "published", "a_priori", "lp", "integer", "pinned",
                   "narrowed", "verdict", "attack"}


@pytest.fixture
def folder(tmp_path: Path, run_cli: CliRunner) -> Path:
    rows = [("f" if i % 3 else "m", str(i % 4), f"0.{i * 7919 % 10**8:08d}")
            for i in range(40)]
    rows += [("m", "9", "0.55"), ("f", "9", "0.55")]  # two cells of 1
    pd.DataFrame(rows, columns=["sex", "age", "rk"]).to_csv(tmp_path / "m.csv", index=False)
    code, _, err = run_cli("tables", "ptable", "--d", "2", "--v", "1.08", "--js", "1",
                           "--out", tmp_path / "abs.csv")
    assert code == 0, err
    return tmp_path


def _intervals(audit: dict) -> dict[str, tuple]:
    return {c["name"]: (c["integer"]["lower_exact"], c["integer"]["upper_exact"],
                        c["lp"]["lower_exact"], c["lp"]["upper_exact"], c["pinned"])
            for c in audit["cells"]}


@pytest.mark.parametrize("knows", ["ptable", "d"])
def test_the_publication_alone_proves_what_the_publisher_audit_proves(
        folder: Path, run_cli: CliRunner, knows: str) -> None:
    """Two linked tables perturbed and audited by the publisher (true counts at hand), then
    audited from the publication and the ptable only: every cell's LP and integer interval
    the same, the pinned true counts the same, no other true count shown."""
    code, out, err = run_cli("tables", "perturb", folder / "m.csv", "--ptable",
                             folder / "abs.csv", "--dimensions", "sex,age", "--dimensions",
                             "sex", "--record-key", "rk", "--audit", "--json",
                             "--attacker-knows", knows, "--out", folder / "t.csv")
    assert code in (0, 4), err
    own = json.loads(out)["audit"]
    code, out, err = run_cli("tables", "audit", folder / "t.csv", "--ptable",
                             folder / "abs.csv", "--dimensions", "sex,age", "--json",
                             "--attacker-knows", knows)
    report = json.loads(out)
    assert code == (4 if report["audit"]["pinned"] else 0), err
    assert set(report) == AUDIT_KEYS and report["attacker_knows"] == knows
    assert report["tables"] == ["sex x age", "sex"] and report["consistent"]
    audit = report["audit"]
    assert all(set(c) == AUDIT_CELL_KEYS for c in audit["cells"])
    assert _intervals(audit) == _intervals(own)
    assert audit["pinned"] == own["pinned"] > 0  # the two ones (published 0 or 2) pin
    truth = {c["name"]: c["value"] for c in own["cells"]}
    for cell in audit["cells"]:
        assert cell["value"] == (truth[cell["name"]] if cell["pinned"] else None)
    code, out, err = run_cli("tables", "audit", folder / "t.csv", "--ptable",
                             folder / "abs.csv", "--dimensions", "sex,age",
                             "--attacker-knows", knows)
    assert "the attacker is assumed to know " + ("the ptable itself" if knows == "ptable"
                                                 else "only D = 2") in out
    assert f"audit ({knows} known): {audit['pinned']} of {len(audit['cells'])} true counts " \
           "pinned exactly" in out


def _publication(folder: Path, rows: str, name: str = "pub.csv") -> Path:
    (folder / name).write_text(rows)
    return folder / name


def test_a_hierarchy_from_an_hrc_file_pins_through_its_subtotal(folder: Path,
                                                                run_cli: CliRunner) -> None:
    """Regions 1 and 2 under N, 3 under S: 1 and 2 published as 2, N as 0 (D = 2 known):
    N = 1 + 2 pins both at 1 and N at 2; S and 3 are not pinned."""
    (folder / "region.hrc").write_text("N\n@1\n@2\nS\n@3\n")
    pub = _publication(folder, "region,value\nTotal,9\nN,0\n1,2\n2,2\nS,8\n3,8\n")
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                             "--dimensions", "region", "--hierarchy",
                             f"region={folder / 'region.hrc'}", "--attacker-knows", "d",
                             "--json")
    assert code == 4, err
    cells = {c["name"]: c for c in json.loads(out)["audit"]["cells"]}
    pinned = {name: c["value"] for name, c in cells.items() if c["pinned"]}
    assert pinned == {"region=N": 2, "region=1": 1, "region=2": 1}
    assert "pub: region N = 1 + 2" in cells["region=1"]["attack"]
    # read flat, N and S are codes beside 1, 2 and 3 under a total of 9: no tables fit
    flat = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv", "--dimensions",
                   "region", "--attacker-knows", "d")
    assert flat[0] == 2 and "no tables that add up" in flat[2]


@pytest.mark.parametrize(("rows", "message"), [
    ("a,value\nTotal,4\nx,2\ny,1\n",
     "pub.csv:4: cell a=y is published as 1, which the ptable cannot publish from any count "
     "(D = 2, js = 1): the release is inconsistent with its ptable"),
    ("a,value\nTotal,20\nx,2\ny,2\n",
     "no tables that add up lie within the counts the published values allow under the "
     "ptable (3 cells, 1 equations): the release is inconsistent with its ptable"),
    ("table,a,b,value\nt1,x,,2\nt1,Total,,4\nt2,x,Total,3\nt2,x,u,3\nt2,Total,Total,4\n"
     "t2,Total,u,3\n",
     "pub.csv:4: cell a=x of table t2 is published as 3, but as 2 on "),
])
def test_an_inconsistent_release_exits_2_naming_it(folder: Path, run_cli: CliRunner,
                                                   rows: str, message: str) -> None:
    pub = _publication(folder, rows)
    dims = "a,b" if rows.startswith("table") else "a"
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                             "--dimensions", dims, "--json")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and not out, err
    assert message in lines[0].replace(str(folder) + "/", "")


def test_withheld_cells_and_the_threshold(folder: Path, run_cli: CliRunner) -> None:
    """x is a count published below the threshold; a count shown below it is
    inconsistent; x with no threshold is a user error."""
    pub = _publication(folder, "a,value\nTotal,12\nx,x\ny,11\n")
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                             "--dimensions", "a", "--threshold", "5", "--json")
    assert code in (0, 4), err
    cells = {c["name"]: c for c in json.loads(out)["audit"]["cells"]}
    assert cells["a=x"]["a_priori"] == [0, 6]  # published 0..4, from true counts up to 6
    assert json.loads(out)["withheld"] == 1
    code, _, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                           "--dimensions", "a", "--threshold", "12")
    assert code == 2 and "cell a=y is published as 11, below the threshold 12" in err
    code, _, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                           "--dimensions", "a")
    assert code == 1 and "pub.csv:3: cell a=x is withheld (x) but the threshold is 0" in err


ABS_HEAD = "i,j,p,v,p_int_lb,p_int_ub\n"


@pytest.mark.parametrize(("ptable", "message"), [
    (ABS_HEAD + "1,0,0.5,-1,0,0.5\n1,2,0.4,1,0.5,0.9\n", "p.csv:3: i = 1: the probabilities "
     "sum to 0.9, not 1"),
    (ABS_HEAD + "1,0,-0.5,-1,0,-0.5\n1,2,1.5,1,-0.5,1\n", "p.csv:2: p = -0.5 is a negative "
     "probability"),
    (ABS_HEAD + "1,0,0.5,-1,0,0.5\n1,2,0.5,1,0.5,1\n3,3,1,0,0,1\n", "p.csv: no rows for i = 2"),
    ("pcv,ckey,pvalue\n1,0,0\n1,1,0\n3,0,0\n3,1,0\n", "p.csv: pcv 2 has no rows"),
])
def test_a_ptable_that_is_no_distribution_is_one_line(folder: Path, run_cli: CliRunner,
                                                      ptable: str, message: str) -> None:
    (folder / "p.csv").write_text(ptable)
    pub = _publication(folder, "a,value\nTotal,4\nx,2\ny,2\n")
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "p.csv",
                             "--dimensions", "a")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and not out, err
    assert message in lines[0].replace(str(folder) + "/", "")


@pytest.mark.parametrize(("rows", "extra", "message"), [
    ("a,value\nTotal,4\nx,-2\ny,2\n", (), "pub.csv:3: value -2 is not a whole number >= 0"),
    ("a,value\nTotal,4\nx,2.5\ny,2\n", (), "pub.csv:3: value 2.5 is not a whole number"),
    ("a,value\nTotal,4\nx,\ny,2\n", (), "pub.csv:3: value: a missing value"),
    ("a,value\nTotal,4\nx,2\nx,2\n", (), "pub.csv:4: cell x of table pub again (first on "),
    ("a,value\nTotal,4\nx,2\n", ("--max-n", "3"), "--ptable audits a perturbed publication: "
     "leave out --max-n"),
    ("a,value\nTotal,4\nx,2\n", ("--attacker-knows", "all"), "--attacker-knows 'all'"),
    ("a,value\nTotal,4\nx,2\n", ("--hierarchy", "a"), "--hierarchy 'a': expected VAR=FILE"),
])
def test_bad_publications_and_options_are_one_line(folder: Path, run_cli: CliRunner,
                                                   rows: str, extra: tuple[str, ...],
                                                   message: str) -> None:
    pub = _publication(folder, rows)
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                             "--dimensions", "a", *extra)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and not out, err
    assert message in lines[0].replace(str(folder) + "/", "")


def test_a_cell_without_a_row_is_only_at_least_zero(folder: Path, run_cli: CliRunner) -> None:
    """No Total row (published without margins): the total is not known beyond 0 a priori,
    and the equation gives it x + y, each in 1..4 from its published 2."""
    pub = _publication(folder, "a,value\nx,2\ny,2\n")
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                             "--dimensions", "a", "--json")
    assert code == 0, err
    report = json.loads(out)
    cells = {c["name"]: c for c in report["audit"]["cells"]}
    assert report["not_published"] == 1 and cells["Total"]["published"] is None
    assert cells["Total"]["a_priori"] == [0, None]
    total = cells["Total"]["integer"]
    assert (total["lower_exact"], total["upper_exact"]) == ("2", "8")
    assert cells["Total"]["narrowed"] and cells["Total"]["value"] is None


@pytest.mark.timeout(30)  # building the grid first (the old reader) runs out of time or memory
def test_a_grid_over_the_size_limit_is_refused_before_it_is_built(folder: Path,
                                                                  run_cli: CliRunner) -> None:
    """Four dimensions of 180 codes each in 180 rows: a full grid of 181^4 = 1,073,283,121
    cells, far over MAX_CELLS; one line naming the file, before any cell is made."""
    rows = ["a,b,c,d,value"] + [f"{k},{k},{k},{k},1" for k in range(180)]
    pub = _publication(folder, "\n".join(rows) + "\n")
    code, out, err = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                             "--dimensions", "a,b,c,d")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and not out, err
    assert "1,073,283,121 cells" in lines[0] and "pub.csv" in lines[0]


def test_the_audit_reports_progress_unless_quiet(folder: Path, run_cli: CliRunner,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An audit of many cells said nothing until it ended: it now reports the table that fits,
    then the cells audited (plain lines on stderr off a terminal; stdout stays pure JSON);
    --quiet silences it."""
    monkeypatch.setenv("STATRECON_PROGRESS_INTERVAL", "0")
    pub = _publication(folder, "a,value\nTotal,9\nx,5\ny,4\n")
    args = ("tables", "audit", pub, "--ptable", folder / "abs.csv", "--dimensions", "a",
            "--json")
    code, out, err = run_cli(*args)
    assert code in (0, 4), err
    assert json.loads(out)["audit"]["cells"]
    assert "Auditing the publication" in err and "3/3" in err and "cells audited" in err
    assert "posteriors" not in err
    code, out, err = run_cli(*args, "--posterior")
    assert any("3/3" in line and "(posteriors)" in line for line in err.splitlines()), err
    code, out, err = run_cli(*args, "--quiet", "--posterior")
    assert code in (0, 4) and err == ""


def _posterior_oracle(ptable: Path, shown: dict[str, int | str], threshold: int
                      ) -> dict[str, dict[str, float]]:
    """A 1-way table (cells x, y and Total = x + y) by brute force: every true x, y (and
    their Total) each of whose published values has a positive probability under the
    ptable, weighted by the product of those probabilities; the marginals."""
    from fractions import Fraction

    from statrecon.tables.ckm import read_ptable

    table = read_ptable(ptable)

    def p(true: int, seen: int | str) -> Fraction:
        values = range(threshold) if seen == "x" else (int(seen),)
        return sum((Fraction(y == 0) if true == 0 else
                    table.outcomes(true).get(y - true, Fraction(0)) for y in values),
                   Fraction(0))

    weights: dict[tuple[int, int, int], Fraction] = {}
    for x in range(30):
        for y in range(30):
            w = p(x, shown["x"]) * p(y, shown["y"]) * p(x + y, shown["Total"])
            if w:
                weights[x, y, x + y] = w
    total = sum(weights.values())
    out: dict[str, dict[str, Fraction]] = {"a=x": {}, "a=y": {}, "Total": {}}
    for t, w in weights.items():
        for name, v in zip(out, t, strict=True):
            out[name][str(v)] = out[name].get(str(v), Fraction(0)) + w / total
    return {name: {v: round(float(q), 6) for v, q in d.items()} for name, d in out.items()}


@pytest.mark.parametrize(("rows", "threshold", "shown"), [
    ("a,value\nTotal,4\nx,2\ny,2\n", (), {"x": 2, "y": 2, "Total": 4}),
    ("a,value\nTotal,0\nx,2\ny,2\n", (), {"x": 2, "y": 2, "Total": 0}),
    ("a,value\nTotal,12\nx,x\ny,11\n", ("--threshold", "5"), {"x": "x", "y": 11, "Total": 12}),
])
def test_posteriors_equal_the_enumeration_under_the_ptable(
        folder: Path, run_cli: CliRunner, rows: str, threshold: tuple[str, ...],
        shown: dict[str, int | str]) -> None:
    """Each true count's posterior (a flat prior over the tables that add up, the ptable's
    probabilities of each published value) equals brute force; the cells are ranked by
    the probability of their most probable count; the assumptions are stated."""
    pub = _publication(folder, rows)
    args = ("tables", "audit", pub, "--ptable", folder / "abs.csv", "--dimensions", "a",
            *threshold, "--posterior")
    code, out, err = run_cli(*args, "--json")
    assert code in (0, 4), err
    posterior = json.loads(out)["posterior"]
    expected = _posterior_oracle(folder / "abs.csv", shown, int(threshold[1]) if threshold
                                 else 0)
    cells = {c["cell"]: c for c in posterior["cells"]}
    assert {name: c["distribution"] for name, c in cells.items()} == expected
    assert posterior["statuses"] == {"exact": 3}
    best = [max(cells[name]["distribution"].values()) for name in posterior["ranking"]]
    assert best == sorted(best, reverse=True)
    assert all(c["probability"] == max(c["distribution"].values()) for c in cells.values())
    assert all(0 <= c["alone"] <= 1 and abs(c["probability"] - c["alone"] - c["added"]) < 1e-5
               for c in cells.values())
    added = [cells[name]["added"] for name in posterior["ranking_by_added"]]
    assert added == sorted(added, reverse=True) and len(added) == len(cells)
    assert "flat prior" in posterior["assumes"]
    code, out, err = run_cli(*args)
    said = f"posteriors (3 exact; {posterior['assumes']})"
    assert " ".join(said.split()) in " ".join(out.split())  # however the lines wrap
    assert "the cells the linked tables make surest" in " ".join(out.split())


def test_two_ones_under_a_margin_published_as_zero_are_certain_in_the_posterior(
        folder: Path, run_cli: CliRunner) -> None:
    """The issue's example: pinned by the audit, so probability 1 in the posterior."""
    pub = _publication(folder, "a,value\nTotal,0\nx,2\ny,2\n")
    code, out, _ = run_cli("tables", "audit", pub, "--ptable", folder / "abs.csv",
                           "--dimensions", "a", "--posterior", "--json")
    cells = {c["cell"]: c for c in json.loads(out)["posterior"]["cells"]}
    assert code == 4
    assert {n: (c["most_probable"], c["probability"]) for n, c in cells.items()} == {
        "a=x": (1, 1.0), "a=y": (1, 1.0), "Total": (2, 1.0)}


@pytest.mark.parametrize(("extra", "message"), [
    (("--ptable", "abs.csv", "--attacker-knows", "d"), "--posterior with --attacker-knows d: "
     "the posterior needs the ptable's probabilities"),
    ((), "--posterior is for a perturbed publication: give its --ptable"),
])
def test_a_posterior_without_the_ptable_is_one_line(folder: Path, run_cli: CliRunner,
                                                    extra: tuple[str, ...],
                                                    message: str) -> None:
    pub = _publication(folder, "a,value\nTotal,4\nx,2\ny,2\n")
    code, out, err = run_cli("tables", "audit", pub, "--dimensions", "a", "--posterior",
                             *extra, cwd=folder)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1 and not out, err
    assert message in lines[0]
