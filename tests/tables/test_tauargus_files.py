"""tau-Argus table input: tau-Argus's own test table ``pp.tab`` (its numbers checked against
the file read independently here), a written table read back, and every kind of bad input
as a one-line error naming file:line, with nothing written."""

from __future__ import annotations

import csv
import shutil
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.errors import StatreconError
from statrecon.tables import CellStatus, Hierarchy, TableSet
from statrecon.tables.model import Cell, Table
from statrecon.tables.tauargus import (
    TabFile,
    read_arb,
    read_tab,
    read_tauargus,
    write_arb,
    write_tab,
)

F = Fraction
PP = Path(__file__).resolve().parents[2] / "examples" / "tables" / "tauargus"


def pp_lines() -> list[list[str]]:
    """pp.tab with the csv module: codes unquoted with their blanks, fields as text."""
    with open(PP / "pp.tab", newline="") as f:
        return list(csv.reader(f, delimiter=";", quotechar='"'))


def number(text: str) -> Fraction:
    return Fraction(text.replace(",", "."))


# --------------------------------------------------------------------------------- pp.tab

@pytest.fixture(scope="module")
def pp() -> TabFile:
    return read_tauargus(PP / "pp.tab", additivity="recompute")


def test_pp_has_every_cell_of_its_grid(pp: TabFile) -> None:
    table = pp.table
    lines = pp_lines()
    sizes = {line[0] for line in lines}
    regions = {line[1] for line in lines}
    assert len(table.cells) == len(lines) == len(sizes) * len(regions) == 162
    assert table.variables == ("Size", "Region") and table.response == "Var2"
    assert table.kind == "magnitude" and table.decimals == 2


def test_pp_codes_are_the_hierarchy_codes_as_tau_argus_keeps_them(pp: TabFile) -> None:
    region = pp.table.hierarchies["Region"]
    hrc = (PP / "region2.hrc").read_text().splitlines()
    below = [line.lstrip("@").rstrip() for line in hrc if line.strip()]
    # "@ 1" is code " 1" (the lead string off, the blank kept); "Os " loses its blank;
    # the missing code "99" of the .rda is added under the total, last
    assert list(region.codes()) == ["Total", *below, "99"]
    assert region.children["Total"] == ("Nr", "Os", "Ws", "Zd", "99")
    assert region.children["Nr"] == (" 1", " 2", " 3")
    for line in pp_lines():
        assert line[1] in region  # the .tab's quoted codes are the hierarchy's codes
    size = pp.table.hierarchies["Size"]
    assert size.codes() == ("Total", " 2", " 4", " 5", " 6", " 7", " 8", " 9", "99")
    assert pp.labels["Region"][" 1"] == "Groningen"


def test_pp_values_statuses_and_levels_are_read_exactly(pp: TabFile) -> None:
    table = pp.table
    changed = {r.codes for r in pp.recomputed}
    letters = {"S": CellStatus.SAFE, "U": CellStatus.PRIMARY, "E": CellStatus.EMPTY}
    for line in pp_lines():
        cell = table.cell((line[0], line[1]))
        if (line[0], line[1]) not in changed:
            assert cell.value == number(line[2])  # "2505042,58" is 250504258/100
            assert cell.top == (number(line[6]), number(line[7]))
        assert cell.frequency == int(line[3])
        empty = number(line[2]) == 0 and int(line[3]) == 0
        assert cell.status is (CellStatus.EMPTY if empty else letters[line[8]])
        if line[8] == "U":  # protection levels belong to the primary cells only
            assert cell.protection == (number(line[9]), number(line[10]))
        else:
            assert cell.protection == (0, 0)
    assert table.cell((" 7", "Total")).value == F(250504258, 100)
    assert Counter(c.status for c in table.cells)[CellStatus.PRIMARY] == 9


def test_pp_does_not_add_up_as_published() -> None:
    """Four Var2 cells of pp.tab differ from its (additive) shadow column without their totals
    changed: three equations fail. tau-Argus reads it with <READTABLE> 1, recomputing."""
    with pytest.raises(StatreconError, match="does not add up") as caught:
        read_tab(PP / "pp.tab")
    line = int(caught.value.where.rsplit(":", 1)[1])
    lines = pp_lines()
    codes = tuple(lines[line - 1][:2])
    assert codes in {("Total", "Os"), ("Total", " 4"), (" 4", "Total")}
    column = {row[1]: number(row[2]) for row in lines if row[0] == "Total"}
    if codes == ("Total", "Os"):
        below = sum(number(r[2]) for r in lines if r[1] == "Os" and r[0] != "Total")
        assert f"{int(column['Os'])} != {int(below)}" in str(caught.value)


def test_pp_totals_recomputed_as_tau_argus_does(pp: TabFile) -> None:
    lines = {tuple(r[:2]): number(r[2]) for r in pp_lines()}
    recomputed = {r.codes: r for r in pp.recomputed}
    assert set(recomputed) == {("Total", "Total"), ("Total", "Os"), ("Total", " 4"),
                               (" 4", "Total")}
    for codes, r in recomputed.items():
        assert r.old == lines[codes] and r.new == lines[codes] - 1
    ts = TableSet((pp.table,))
    ts.equations().check(ts.values())


def test_the_batch_file_reads_the_table_recomputing_its_totals() -> None:
    ts = read_arb(PP / "TestTable.arb")  # <READTABLE> 1
    assert [t.name for t in ts.tables] == ["pp"]
    assert len(ts.keys()) == 162
    assert ts.tables[0].cell({"Size": " 4"}).value == 24


def test_a_written_table_reads_back_the_same(pp: TabFile, tmp_path: Path) -> None:
    paths = write_tab(pp.table, tmp_path / "pp.tab")
    assert {p.name for p in paths} == {"pp.tab", "pp.rda", "pp_Size.hrc", "pp_Region.hrc"}
    back = read_tab(tmp_path / "pp.tab")
    assert back.cells == pp.table.cells
    assert back.hierarchies == pp.table.hierarchies
    assert (back.response, back.kind, back.decimals) == ("Var2", "magnitude", 2)


# ------------------------------------------------------------------- a small table by hand

RDA = """\
   <SEPARATOR> ";"
Reg "9"
    <RECODEABLE>
    <TOTCODE> "T"
    <HIERARCHICAL>
    <HIERCODELIST> "REG.HRC"
    <HIERLEADSTRING> "@"
Sex
    <RECODEABLE>
    <TOTCODE> "All"
Val
    <NUMERIC>
    <DECIMALS> 1
Freq
    <FREQUENCY>
Stat
    <STATUS>
Lo
    <NUMERIC> <LOWERPL>
Up
    <NUMERIC> <UPPERPL>
"""
HRC = "N\n@ 1\n@ 2\nS\n@ 3\n"
# value, frequency by hand: ( 1,f) 1.5/1 primary, ( 1,m) 2/2, ( 2,f) 3/3, ( 2,m) 0/0 empty,
# ( 3,f) 4/4, ( 3,m) 5.5/5
LINES = [
    '"T";"All";16,0;15;S;0;0', '"T";"f";8,5;8;S;0;0', '"T";"m";7,5;7;S;0;0',
    '"N";"All";6,5;6;S;0;0', '"N";"f";4,5;4;S;0;0', '"N";"m";2,0;2;S;0;0',
    '" 1";"All";3,5;3;S;0;0', '" 1";"f";1,5;1;U;0,5;1,0', '" 1";"m";2,0;2;S;0;0',
    '" 2";"All";3,0;3;S;0;0', '" 2";"f";3,0;3;S;0;0', '" 2";"m";0,0;0;E;0;0',
    '"S";"All";9,5;9;S;0;0', '"S";"f";4,0;4;S;0;0', '"S";"m";5,5;5;S;0;0',
    '" 3";"All";9,5;9;S;0;0', '" 3";"f";4,0;4;S;0;0', '" 3";"m";5,5;5;S;0;0',
]


def small(folder: Path, lines: list[str] | None = None, rda: str = RDA, hrc: str = HRC,
          hrc_name: str = "reg.hrc") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.rda").write_text(rda)
    (folder / hrc_name).write_text(hrc)
    tab = folder / "small.tab"
    tab.write_text("\n".join(LINES if lines is None else lines) + "\n")
    return tab


def test_a_small_table_by_hand(tmp_path: Path) -> None:
    table = read_tab(small(tmp_path))
    # "REG.HRC" is found as reg.hrc; the missing code "9" is padded to the codes' length
    assert table.hierarchies["Reg"].codes() == ("T", "N", " 1", " 2", "S", " 3", " 9")
    assert table.hierarchies["Sex"].codes() == ("All", "f", "m")
    assert len(table.cells) == 21
    assert table.cell({"Reg": " 1", "Sex": "f"}).protection == (F(1, 2), F(1))
    assert table.cell({"Reg": " 1", "Sex": "f"}).status is CellStatus.PRIMARY
    assert table.cell({"Reg": " 2", "Sex": "m"}).status is CellStatus.EMPTY
    assert table.cell({"Reg": " 9"}).status is CellStatus.EMPTY  # no line: empty
    assert table.cell({"Reg": "T", "Sex": "All"}).value == 16


def test_codes_are_padded_as_tau_argus_pads_them(tmp_path: Path) -> None:
    lines = [line.replace('" 1"', "1").replace('" 3"', '"3"') for line in LINES]
    table = read_tab(small(tmp_path, lines))
    assert table.cell({"Reg": " 3", "Sex": "m"}).value == F(11, 2)
    assert table.cell({"Reg": " 1", "Sex": "f"}).status is CellStatus.PRIMARY


def test_a_variable_without_hierarchy_takes_its_codes_from_the_file_sorted(
        tmp_path: Path) -> None:
    rda = RDA.replace("Sex\n", 'Sex "x"\n')
    lines = [line.replace('"f"', "10").replace('"m"', "2") for line in LINES]
    table = read_tab(small(tmp_path, lines, rda=rda))
    # padded to 2 characters: " 2" sorts before "10"; the missing code last
    assert table.hierarchies["Sex"].codes() == ("All", " 2", "10", " x")


def test_a_default_manual_margin_for_primary_cells_without_levels(tmp_path: Path) -> None:
    lines = [line if "U" not in line else '" 1";"f";1,5;1;U;-;' for line in LINES]
    table = read_tab(small(tmp_path, lines))
    # tau-Argus's manual margin: 20 % of the value
    assert table.cell({"Reg": " 1", "Sex": "f"}).protection == (F(3, 10), F(3, 10))


def test_renamed_status_letters(tmp_path: Path) -> None:
    rda = '<SAFE> "V"\n<UNSAFE> "O"\n' + RDA
    lines = [line.replace(";S;", ";V;").replace(";U;", ";o;") for line in LINES]
    table = read_tab(small(tmp_path, lines, rda=rda))
    assert table.cell({"Reg": " 1", "Sex": "f"}).status is CellStatus.PRIMARY
    assert table.cell({"Reg": " 1", "Sex": "m"}).status is CellStatus.SAFE


def test_a_frequency_table(tmp_path: Path) -> None:
    rda = RDA.replace("Val\n    <NUMERIC>\n    <DECIMALS> 1\n", "")
    lines = [";".join(p for i, p in enumerate(line.split(";")) if i != 2) for line in LINES]
    table = read_tab(small(tmp_path, lines, rda=rda))
    assert (table.kind, table.response, table.decimals) == ("frequency", "Freq", 0)
    assert table.cell({"Reg": "T", "Sex": "All"}).value == 15


def test_a_path_leaving_the_folder_is_looked_up_by_its_name_there(tmp_path: Path) -> None:
    rda = RDA.replace('"REG.HRC"', r'"C:\data\tables\reg.hrc"')
    assert len(read_tab(small(tmp_path, rda=rda)).cells) == 21
    (tmp_path / "outside.hrc").write_text(HRC)
    rda = RDA.replace('"REG.HRC"', '"../outside.hrc"')
    with pytest.raises(StatreconError, match=r"outside\.hrc.*no such file"):
        read_tab(small(tmp_path / "inner", rda=rda))


# ------------------------------------------------------------------------------ bad input

def bad(tmp_path: Path, expected_line: int | None, words: str, **changes: object) -> str:
    tab = small(tmp_path, **changes)  # type: ignore[arg-type]
    with pytest.raises(StatreconError, match=words) as caught:
        read_tab(tab)
    where = caught.value.where
    assert where is not None
    if expected_line is not None:
        assert where.endswith(f":{expected_line}"), where
    assert "\n" not in str(caught.value)
    return where


def test_a_line_with_the_wrong_number_of_fields(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[4] = '"N";"f";4,5;4;S;0'
    assert bad(tmp_path, 5, "6 fields, but small.rda declares 7", lines=lines)


def test_a_code_missing_from_the_hierarchy(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[7] = '" 7";"f";1,5;1;U;0,5;1,0'
    bad(tmp_path, 8, "code ' 7' of Reg is not in reg.hrc", lines=lines)


def test_a_value_that_is_not_a_number(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[2] = '"T";"m";7.5x;7;S;0;0'
    bad(tmp_path, 3, "Val '7.5x' is not a number", lines=lines)
    lines[2] = '"T";"m";1.234,5;7;S;0;0'  # thousands separators are not read
    bad(tmp_path, 3, "not a number", lines=lines)


def test_a_table_that_does_not_add_up(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[4] = '"N";"f";4,6;4;S;0;0'  # ( 1,f) + ( 2,f) = 4.5
    # (N, f) is in three equations; the error names one, with its sides, at its total's line
    sides = {2: "small: Reg T = N + S + 9 (Sex=f): 8.5 != 8.6",
             4: "small: Sex All = f + m (Reg=N): 6.5 != 6.6",
             5: "small: Reg N = 1 + 2 (Sex=f): 4.6 != 4.5"}
    tab = small(tmp_path, lines)
    with pytest.raises(StatreconError, match="does not add up") as caught:
        read_tab(tab)
    line = int(caught.value.where.rsplit(":", 1)[1])
    assert sides[line] in str(caught.value)
    assert "2 more equations" in str(caught.value)


def test_a_lower_protection_level_above_the_value(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[7] = '" 1";"f";1,5;1;U;2,0;1,0'
    bad(tmp_path, 8, "lower protection level 2 is larger than its value 1.5", lines=lines)


def test_an_unknown_status(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[0] = '"T";"All";16,0;15;X;0;0'
    bad(tmp_path, 1, "unknown status 'X'", lines=lines)


def test_a_cell_given_twice(tmp_path: Path) -> None:
    bad(tmp_path, 19, "again .first on line 1", lines=[*LINES, LINES[0]])


def test_a_nonempty_cell_marked_empty_or_without_contributors(tmp_path: Path) -> None:
    lines = list(LINES)
    lines[2] = '"T";"m";7,5;7;E;0;0'
    bad(tmp_path, 3, "cannot have status E", lines=lines)
    lines[2] = '"T";"m";7,5;0;S;0;0'
    bad(tmp_path, 3, "cannot have frequency 0", lines=lines)


def test_largest_contributions_out_of_order_or_above_the_value(tmp_path: Path) -> None:
    rda = RDA.replace("Freq\n", "Top1\n    <MAXSCORE>\nTop2\n    <MAXSCORE>\nFreq\n")
    lines = [f"{p[0]};{p[1]};{p[2]};0;0;{';'.join(p[3:])}" for p in
             (line.split(";") for line in LINES)]
    lines[0] = '"T";"All";16,0;1;2;15;S;0;0'
    bad(tmp_path, 1, "not in decreasing order", lines=lines, rda=rda)
    lines[0] = '"T";"All";16,0;10;7;15;S;0;0'
    bad(tmp_path, 1, "add up to 17, more than the cell's value 16", lines=lines, rda=rda)


def test_missing_files(tmp_path: Path) -> None:
    tab = small(tmp_path)
    (tmp_path / "reg.hrc").unlink()
    with pytest.raises(StatreconError, match=r"hierarchy file 'REG\.HRC': no such file") as c:
        read_tab(tab)
    assert c.value.where.endswith("small.rda:6")
    with pytest.raises(StatreconError, match=r"no such file \(the metadata file\)"):
        read_tab(tab, tmp_path / "other.rda")
    with pytest.raises(StatreconError, match=r"no such file \(the table file\)"):
        read_tab(tmp_path / "nothing.tab", tmp_path / "small.rda")
    rda = RDA.replace("Sex\n", 'Sex\n    <CODELIST> "sex.cdl"\n')
    with pytest.raises(StatreconError, match=r"code list 'sex\.cdl': no such file"):
        read_tauargus(small(tmp_path / "b", rda=rda))


@pytest.mark.parametrize("rda, line, words", [
    (RDA.replace("<FREQUENCY>", "<FREQUENCIES>"), 15, "unknown keyword <FREQUENCIES>"),
    (RDA.replace('    <TOTCODE> "All"\n', ""), 8, "needs a <TOTCODE>"),
    (RDA.replace("<DECIMALS> 1", "<DECIMALS> one"), 13, "whole number"),
    (RDA + "Stat2\n    <STATUS>\n", 22, "second status variable"),
])
def test_a_malformed_rda(tmp_path: Path, rda: str, line: int, words: str) -> None:
    with pytest.raises(StatreconError, match=words) as caught:
        read_tab(small(tmp_path, rda=rda))
    assert caught.value.where.endswith(f"small.rda:{line}")


@pytest.mark.parametrize("hrc, line, words", [
    ("N\n@@ 1\n", 2, "levels deep"),
    ("N\nT\n", 2, "total code"),
    ("N\n@ 1\nS\n@ 1\n", 4, "twice"),
])
def test_a_malformed_hrc(tmp_path: Path, hrc: str, line: int, words: str) -> None:
    with pytest.raises(StatreconError, match=words) as caught:
        read_tab(small(tmp_path, hrc=hrc))
    assert caught.value.where.endswith(f"reg.hrc:{line}")


def test_an_unwritable_table_writes_nothing(tmp_path: Path) -> None:
    table = read_tab(small(tmp_path / "in"))
    h = Hierarchy("Sex", "All", {"All": ('f"', "m")})
    cells = tuple(Cell(tuple((v, c if c != "f" else 'f"') for v, c in cell.codes), cell.value,
                       cell.frequency, cell.status, cell.protection)
                  for cell in table.cells)
    broken = Table("t", table.variables, {**table.hierarchies, "Sex": h}, table.response,
                   table.kind, table.decimals, cells)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(StatreconError, match="cannot be written"):
        write_tab(broken, out / "t.tab")
    assert list(out.iterdir()) == []


# ------------------------------------------------------------------ round trips at random

@st.composite
def tables(draw: st.DrawFn) -> Table:
    region = Hierarchy("R", "Tot", {"Tot": ("n", "s"), "n": (" 1", " 2")})
    sex = Hierarchy.flat("S", draw(st.sampled_from([["m", "f"], ["1", "10", "2"]])))
    leaves = [(r, s) for r in region.leaves() for s in sex.leaves()]
    tenths = {leaf: draw(st.integers(0, 500)) for leaf in leaves}
    variables = ("R", "S")
    cells = []
    for r in region.codes():
        for s in sex.codes():
            under = [v for (lr, ls), v in tenths.items()
                     if (lr == r or r in region.ancestors(lr)) and s in (ls, sex.total)]
            value = F(sum(under), 10)
            status = draw(st.sampled_from([CellStatus.SAFE, CellStatus.PRIMARY,
                                           CellStatus.SECONDARY, CellStatus.PROTECTED]))
            if value == 0:
                status = CellStatus.EMPTY
            protection = (F(0), F(0))
            if status is CellStatus.PRIMARY:
                protection = (value * draw(st.sampled_from([F(0), F(1, 4), F(1)])),
                              F(draw(st.integers(0, 99)), 7))
            cells.append(Cell((("R", r), ("S", s)), value, len(under) if value else 0,
                              status, protection))
    return Table("rt", variables, {"R": region, "S": sex}, "Amount", "magnitude", 1,
                 tuple(cells))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(tables())
def test_write_then_read_is_the_same_table(tmp_path: Path, table: Table) -> None:
    folder = tmp_path / "rt"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    write_tab(table, folder / "rt.tab")
    back = read_tab(folder / "rt.tab")
    assert back.hierarchies == table.hierarchies
    for a, b in zip(back.cells, table.cells, strict=True):
        assert (a.codes, a.value, a.frequency, a.status) == (b.codes, b.value, b.frequency,
                                                             b.status)
        lower, upper = b.protection
        assert a.protection[0] == lower
        # an upper level of p/7 has no exact decimal: written rounded up, never down
        assert upper <= a.protection[1] <= upper + F(1, 10**12)


def test_an_oversized_table_is_refused_before_it_is_built(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from statrecon.tables import model, tauargus

    tab = small(tmp_path)
    monkeypatch.setattr(tauargus, "MAX_CELLS", 5)
    with pytest.raises(StatreconError, match="more than 5 cells") as caught:
        read_tab(tab)
    assert caught.value.where.endswith("small.tab:6")
    monkeypatch.setattr(tauargus, "MAX_CELLS", 10**6)
    monkeypatch.setattr(model, "MAX_CELLS", 20)  # the grid is 7 x 3 = 21 cells
    with pytest.raises(StatreconError, match=r"a table of 21 cells .* over the limit of 20"):
        read_tab(tab)


def test_a_batch_files_manual_safety_margin(tmp_path: Path) -> None:
    """<SAFETYRULE> MAN(x) after <SPECIFYTABLE> is that table's manual safety margin (issue
    28, defect 3: it was ignored, 20 % always); an explicit margin wins; a rule that table
    input cannot apply is refused, not ignored."""
    lines = [line if "U" not in line else '" 1";"f";1,5;1;U;-;' for line in LINES]
    small(tmp_path, lines)
    arb = tmp_path / "job.arb"
    head = ('<OPENTABLEDATA> "small.tab"\n<OPENMETADATA> "small.rda"\n'
            '<SPECIFYTABLE> "Reg""Sex"|"Val"||\n')
    arb.write_text(head + "<SAFETYRULE> MAN(10)\n")
    cell = {"Reg": " 1", "Sex": "f"}
    assert read_arb(arb).tables[0].cell(cell).protection == (F(3, 20), F(3, 20))
    assert read_arb(arb, manual_margin=F(1, 2)).tables[0].cell(cell).protection == \
        (F(3, 4), F(3, 4))
    arb.write_text(head)
    assert read_arb(arb).tables[0].cell(cell).protection == (F(3, 10), F(3, 10))
    for bad, words in (("P(15,1)|MAN(10)", "other than MAN"), ("MAN(120)", "percentage"),
                       ("MAN", "not a rule")):
        arb.write_text(head + f"<SAFETYRULE> {bad}\n")
        with pytest.raises(StatreconError, match=words) as caught:
            read_arb(arb)
        assert caught.value.where.endswith("job.arb:4")


def test_linked_tables_go_back_to_tau_argus_as_a_job(tmp_path: Path) -> None:
    """Issue 28, defect 4: linked tables are written as one .tab + .rda (+ .hrc) per table
    and a batch file that opens and specifies each; read back, the same linked cells with the
    same values, frequencies and statuses (a secondary cell marked in both tables)."""
    import pandas as pd

    from statrecon.tables import TableSet
    from statrecon.tables.rules import MinFrequency, TableSpec, table_from_microdata

    people = pd.DataFrame({"region": ["n", "n", "s", "s", "s", "e"],
                           "sex": ["f", "m", "f", "f", "m", "m"],
                           "age": ["y", "o", "o", "y", "y", "o"], "w": [3, 4, 5, 6, 7, 8]})
    made = TableSet(tuple(
        table_from_microdata(people, TableSpec(list(v), response="w", name=name),
                             [MinFrequency(1)])
        for name, v in (("by_sex", ("region", "sex")), ("by_age", ("region", "age")))))
    shared = frozenset({("region", "e")})
    made = made.with_statuses({shared: CellStatus.SECONDARY})
    written = write_arb(made, tmp_path / "job.arb")
    assert {p.name for p in written} >= {"job.arb", "job_by_sex.tab", "job_by_sex.rda",
                                         "job_by_age.tab", "job_by_age.rda"}
    back = read_arb(tmp_path / "job.arb")
    assert [t.name for t in back.tables] == ["job_by_sex", "job_by_age"]
    keys = made.keys()
    assert back.keys() == keys
    for key in keys:
        a, b = made.cell(key), back.cell(key)
        assert (a.value, a.frequency, a.status) == (b.value, b.frequency, b.status), key
    assert back.cell(shared).status is CellStatus.SECONDARY
