"""Table spec files (``tables/spec.py``): the example spec tabulates the example microdata
into exactly the table the Python API makes from the same hierarchies and rules (built here
by hand, not by the spec reader), the CLI reads it for ``tables audit`` and ``tables
protect``, and every mistake in a spec is a one-line error naming file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import ROOT, CliRunner, assert_one_line_error

from statrecon.errors import StatreconError
from statrecon.tables import CellStatus
from statrecon.tables.frames import hierarchy_from_columns, table_from_frame, to_frame
from statrecon.tables.rules import (
    Dominance,
    MinFrequency,
    PPercent,
    Protection,
    TableSpec,
    table_from_microdata,
)
from statrecon.tables.spec import read_spec

FIRMS = ROOT / "examples" / "tables" / "firms"


def test_the_example_spec_makes_the_table_the_api_makes() -> None:
    firms = pd.read_csv(FIRMS / "firms.csv", dtype=str).assign(
        turnover=lambda f: f["turnover"].astype(int))
    by_spec = read_spec(FIRMS / "spec.yaml").tabulate(firms)
    industry = {"Total": ["A", "C", "G"], "A": ["A01", "A02"], "C": ["C10", "C11", "C12"],
                "G": ["G46", "G47"]}
    spec = TableSpec(variables=["municipality", "industry"], response="turnover",
                     name="turnover", hierarchies={
                         "municipality": hierarchy_from_columns(
                             firms, "municipality", ["county", "municipality"]),
                         "industry": industry})
    by_api = table_from_microdata(firms, spec, [MinFrequency(2), PPercent(10), Dominance(1, 80)],
                                  protection=Protection("0.1", "0.1"))
    assert by_spec.name == "turnover"
    got = {c.codes: (c.value, c.status, c.protection) for c in
           by_spec.cells}
    want = {c.codes: (c.value, c.status, c.protection) for c in
            by_api.cells}
    assert got == want
    assert ("municipality", "North") in {kv for k in got for kv in k}  # a county subtotal
    assert sum(s is CellStatus.PRIMARY for _, s, _ in got.values()) >= 5


def test_protect_and_audit_read_a_spec(run_cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "firms.csv"
    code, stdout, _ = run_cli("tables", "protect", FIRMS / "firms.csv", "--spec",
                              FIRMS / "spec.yaml", "--out", out, "--json", "--quiet")
    assert code == 0 and out.exists()
    assert json.loads(stdout)["status"] == "feasible"
    code, stdout, _ = run_cli("tables", "audit", FIRMS / "firms.csv", "--spec",
                              FIRMS / "spec.yaml", "--json", "--quiet")
    assert code == 4  # the primary cells alone: the margins disclose them
    assert {c["verdict"] for c in json.loads(stdout)["cells"]} >= {"disclosed"}


GOOD = """\
variables:
  - municipality:
      levels: [county, municipality]
  - industry
response: turnover
rules:
  max_n: 2
"""


@pytest.mark.parametrize(("text", "line", "message"), [
    (GOOD + "colour: blue\n", 8, "unknown key 'colour'"),
    (GOOD.replace("max_n: 2", "max_n: 2\n  max_n: 3"), 8, "given twice"),
    (GOOD.replace("max_n: 2", "nk: [2]"), 7, "pair [n, k]"),
    (GOOD.replace("max_n: 2", "p_percent: -5"), 7, "p"),
    (GOOD.replace("max_n: 2", "max_n: two"), 7, "expected a number"),
    (GOOD.replace("max_n: 2", "protect_zeros: maybe"), 7, "true or false"),
    (GOOD.replace("rules:\n  max_n: 2\n", "rules: {}\n"), 6, "no primary suppression rule"),
    (GOOD.replace("[county, municipality]", "[municipality, county]"), 3, "end with"),
    (GOOD.replace("  - industry", "  - industry:\n      hierarchy: nowhere.hrc"), 5,
     "no such file"),
    (GOOD.replace("  - industry", "  - municipality"), 4, "listed twice"),
    ("x: &a [1]\ny: *a\n", 2, "aliases"),
    (GOOD + "zeros: sometimes\n", 8, "choose from empty, cells"),
    (GOOD.replace("variables:", "variables: [\n"), None, "not valid YAML"),
])
def test_spec_mistakes_name_the_line(tmp_path: Path, text: str, line: int | None,
                                     message: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    with pytest.raises(StatreconError) as e:
        read_spec(spec)
    assert message in str(e.value)
    if line is not None:
        assert str(e.value).startswith(f"{spec}:{line}:"), str(e.value)


def test_a_spec_with_command_line_rules_is_a_one_line_error(run_cli: CliRunner) -> None:
    result = run_cli("tables", "audit", FIRMS / "firms.csv", "--spec", FIRMS / "spec.yaml",
                     "--max-n", "3")
    assert_one_line_error(result, "--spec", "--max-n")


def test_a_spec_naming_a_missing_column_is_a_one_line_error(run_cli: CliRunner,
                                                            tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(GOOD.replace("response: turnover", "response: profit"), encoding="utf-8")
    assert_one_line_error(run_cli("tables", "audit", FIRMS / "firms.csv", "--spec", spec),
                          "profit")


def test_a_sliding_level_reaches_the_cells_the_frame_and_the_audit(tmp_path: Path,
                                                                   run_cli: CliRunner) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(GOOD + "protection: {sliding: 0.5}\n", encoding="utf-8")
    firms = pd.read_csv(FIRMS / "firms.csv", dtype=str).assign(
        turnover=lambda f: f["turnover"].astype(int))
    table = read_spec(spec).tabulate(firms)
    primary = [c for c in table.cells if c.status is CellStatus.PRIMARY]
    assert primary and all(c.sliding == c.value / 2 and c.protection == (0, 0)
                           for c in primary)
    assert all(c.sliding == 0 for c in table.cells if c.status is not CellStatus.PRIMARY)
    frame = to_frame(table)
    back = table_from_frame(frame, list(table.variables), "value", status="status",
                            lower="lower", upper="upper", sliding="sliding",
                            hierarchies=table.hierarchies, margins="given",
                            kind=table.kind, decimals=table.decimals)
    assert [c.sliding for c in back.cells] == [c.sliding for c in table.cells]
    code, out, _ = run_cli("tables", "audit", FIRMS / "firms.csv", "--spec", spec, "--json",
                           "--quiet")
    cells = json.loads(out)["cells"]
    assert code == 4 and cells
    assert all(c["protection"]["sliding"] == c["value"] / 2 for c in cells
               if c["status"] == "primary")


def test_the_sliding_option_of_microdata(run_cli: CliRunner) -> None:
    code, out, _ = run_cli("tables", "audit", FIRMS / "firms.csv", "--microdata",
                           "--dimensions", "municipality,industry", "--value", "turnover",
                           "--max-n", "2", "--sliding-protection", "0.25", "--json", "--quiet")
    primary = [c for c in json.loads(out)["cells"] if c["status"] == "primary"]
    assert code == 4 and primary
    assert all(c["protection"]["sliding"] == c["value"] / 4 for c in primary)


def test_sliding_levels_are_not_lost_in_a_tab_file(run_cli: CliRunner, tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(GOOD + "protection: {sliding: 0.5}\n", encoding="utf-8")
    out = tmp_path / "out.tab"
    result = run_cli("tables", "protect", FIRMS / "firms.csv", "--spec", spec, "--out", out)
    assert_one_line_error(result, "sliding", ".csv")
    assert not out.exists()
    out = tmp_path / "out.csv"
    code, _, _ = run_cli("tables", "protect", FIRMS / "firms.csv", "--spec", spec, "--out",
                         out, "--quiet")
    frame = pd.read_csv(tmp_path / "out.working.csv")  # the working file keeps the levels
    assert code == 0 and (frame.loc[frame["status"] == "primary", "sliding"] > 0).all()


def test_a_padded_tau_argus_hierarchy_and_missing_codes(run_cli: CliRunner,
                                                        tmp_path: Path) -> None:
    """Issue 28, defect 5: a tau-Argus .hrc pads its codes ('@ 1' is ' 1'); CSV microdata do
    not: the spec reads the codes without padding. A missing code is a child of the total
    and its cells are safe even when a rule would make them primary. Mistakes name the
    microdata file, not 'microdata'."""
    (tmp_path / "region.hrc").write_text("N\n@ 1\n@ 2\nS\n@ 3\n")
    (tmp_path / "m.csv").write_text("region,sex\n1,f\n1,f\n2,m\n3,f\n3,m\n3,m\n9,f\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("variables:\n  - region:\n      hierarchy: region.hrc\n"
                    "      missing: ['9']\n  - sex\nrules:\n  max_n: 1\n")
    table = read_spec(spec).tabulate(pd.read_csv(tmp_path / "m.csv", dtype=str), "m.csv")
    assert table.hierarchies["region"].children["Total"] == ("N", "S", "9")
    assert table.cell({"region": "2", "sex": "m"}).status is CellStatus.PRIMARY  # one record
    missing = table.cell({"region": "9", "sex": "f"})
    assert missing.frequency == 1 and missing.status is CellStatus.SAFE
    assert table.cell({"region": "Total", "sex": "Total"}).value == 7
    (tmp_path / "m.csv").write_text("region,sex\n1,f\n7,m\n")
    result = run_cli("tables", "audit", tmp_path / "m.csv", "--spec", spec)
    assert_one_line_error(result, "m.csv:row 2", "region=7")
    (tmp_path / "region.hrc").write_text("N\n@ 1\n@1\n")
    with pytest.raises(StatreconError, match=r"region.hrc:3: code '1' is ' 1' of line 2 but "
                       "for its leading blanks"):
        read_spec(spec)
