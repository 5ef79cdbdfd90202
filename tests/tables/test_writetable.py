"""tau-Argus's <WRITETABLE> output types (tables/writetable.py) on a small table: the layouts
byte for byte (pytauargus writes the same bytes: tests/peers/test_microdata_vs_tauargus.py),
which files are publications and which working files, and the intermediate file read back."""

from __future__ import annotations

from fractions import Fraction as F
from pathlib import Path

from statrecon.tables.model import Cell, CellStatus, Hierarchy, Table
from statrecon.tables.tauargus import read_tab
from statrecon.tables.writetable import Output, csv_text, fixed, texts

S, U, M, E = CellStatus.SAFE, CellStatus.PRIMARY, CellStatus.SECONDARY, CellStatus.EMPTY
OPTIONS = {k: False for k in ("AS", "SE", "FL", "HL", "SO", "AR", "HI")} | {"QU": True}


def table() -> Table:
    """2 x 3: A (Total, a, b) x B (Total, p, q)."""
    a = Hierarchy("A", "Total", {"Total": ("a", "b")})
    b = Hierarchy("B", "Total", {"Total": ("p", "q")})
    values = {("Total", "Total"): (F(1005, 100), 5, S), ("Total", "p"): (F(705, 100), 3, S),
              ("Total", "q"): (F(3), 2, S), ("a", "Total"): (F(505, 100), 3, S),
              ("a", "p"): (F(405, 100), 2, U), ("a", "q"): (F(1), 1, M),
              ("b", "Total"): (F(5), 2, S), ("b", "p"): (F(3), 1, M), ("b", "q"): (F(2), 1, U)}
    cells = [Cell((("A", x), ("B", y)), v, f, s, (F(1), F(1)) if s is U else (F(0), F(0)),
                  top=(v,)) for (x, y), (v, f, s) in values.items()]
    return Table("t", ("A", "B"), {"A": a, "B": b}, "V", "magnitude", 2, tuple(cells))


def output(t: Table | None = None) -> Output:
    t = t or table()
    numbers = {S: 1, U: 3, M: 11, E: 14}
    return Output(t, [numbers[c.status] for c in t.cells], 2, tops=1)


def test_csv_is_the_table_layout() -> None:
    assert csv_text(output()) == (',"Total","p","q"\n'
                                  '"Total",10.05,7.05,3.00\n'
                                  '"a",5.05,x,x\n'
                                  '"b",5.00,x,x\n\n')
    one = Table("o", ("A",), {"A": Hierarchy("A", "T", {"T": ("a",)})}, "V", "magnitude", 0,
                (Cell((("A", "T"),), F(2), 1, S), Cell((("A", "a"),), F(2), 1, U)))
    assert csv_text(Output(one, [1, 3], 0), quotes=False) == ",T,a\n,2,x"


def test_code_value_publication_and_working_file(tmp_path: Path) -> None:
    """AS+ writes true values: the working file beside the name; the name gets the same
    rows with x."""
    files = texts(output(), 3, OPTIONS | {"AS": True, "FL": True}, tmp_path / "t.csv")
    published, working = files[tmp_path / "t.csv"], files[tmp_path / "t.working.csv"]
    assert published.splitlines()[:2] == ['"A","B","V","Status"', '"Total","Total",10.05,1']
    assert '"a","p",x,3' in published and '"a","p",4.05,3' in working
    assert set(texts(output(), 3, OPTIONS, tmp_path / "t.csv")) == {tmp_path / "t.csv"}


def test_sbs_flags_and_shares() -> None:
    files = texts(output(), 4, OPTIONS, Path("s.csv"))
    working = files[Path("s.working.csv")].splitlines()
    assert working[4] == '"a","p",4.05,2,B,100.0'  # a rule, one largest contribution read
    assert '"a","q",1.00,1,D' in working
    assert '"a","p",x,2,' in files[Path("s.csv")]


def test_the_intermediate_file_reads_back_as_the_table(tmp_path: Path) -> None:
    files = texts(output(), 5, OPTIONS, tmp_path / "i.tab")
    for path, text in files.items():
        path.write_text(text)
    back = read_tab(tmp_path / "i.working.tab", additivity="check")
    assert [(c.value, c.frequency, c.status) for c in back.cells] == [
        (c.value, c.frequency, c.status) for c in table().cells]
    assert back.cell(("a", "p")).protection == (F(1), F(1))
    line = (tmp_path / "i.working.tab").read_text().splitlines()[4]
    assert line == '"a";"p";4.05;2;4.05;4.05;4.05;U;1.00;1.00'


def test_rounding_is_half_to_even_as_printf() -> None:
    assert [fixed(F(x), 2) for x in ("0.125", "0.135", "-2.5", "1")] == [
        "0.12", "0.14", "-2.50", "1.00"]
    assert fixed(F(-5, 2), 0) == "-2"
