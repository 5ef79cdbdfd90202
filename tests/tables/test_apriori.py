"""tau-Argus's a-priori files (tables/apriori.py, <APRIORI> in a batch file): statuses, costs
and protection levels changed cell by cell before secondary suppression, every mistake named
with file:line, and the same changes as tau-Argus's own (pytauargus) on its test table."""

from __future__ import annotations

import shutil
from fractions import Fraction as F
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import load_peer

from statrecon.errors import StatreconError
from statrecon.tables import CellStatus
from statrecon.tables.tauargus import read_arb

ROOT = Path(__file__).resolve().parents[2]
TAUARGUS = ROOT / "examples" / "tables" / "tauargus"
HST = "5;1;C;3\n5;Nr;P\n2;2;U\n4; 6;PL;10;20\n 9;Total;S\n4;11;M\n"


def _job(tmp_path: Path, hst: str, command: str = '"pp.hst", 1, ";", 0, 0') -> Path:
    for name in ("TestTable.arb", "pp.tab", "pp.rda", "region2.hrc", "region.cdl"):
        shutil.copy(TAUARGUS / name, tmp_path / name)
    arb = tmp_path / "TestTable.arb"
    arb.write_text(arb.read_text() + f"<APRIORI> {command}\n")
    (tmp_path / "pp.hst").write_text(hst)
    return arb


def _cell(tables: Any, size: str, region: str) -> Any:
    table = tables.tables[0]
    codes = {v: next(c for c in table.hierarchies[v].codes() if c.strip() == code)
             for v, code in (("Size", size), ("Region", region))}
    return table.cell(codes)


def test_an_apriori_file_changes_statuses_costs_and_levels(tmp_path: Path) -> None:
    before = read_arb(TAUARGUS / "TestTable.arb")
    after = read_arb(_job(tmp_path, HST))
    assert _cell(after, "5", "1").cost == 3
    assert _cell(after, "5", "Nr").status is CellStatus.PROTECTED
    made = _cell(after, "2", "2")
    assert _cell(before, "2", "2").status is CellStatus.SAFE
    assert made.status is CellStatus.PRIMARY
    assert made.protection == (made.value / 5, made.value / 5)  # MAN 20 %
    assert _cell(after, "9", "Total").status is CellStatus.SAFE
    assert _cell(after, "4", "11").status is CellStatus.SECONDARY
    assert _cell(before, "4", "6").status is CellStatus.PRIMARY
    value = _cell(after, "4", "6").value  # 4: the lower level is capped at the value
    assert _cell(after, "4", "6").protection == (min(F(10), value), 20)


def test_quoted_fields_as_tau_argus_generates_them(tmp_path: Path) -> None:
    """tau-Argus's "Generate apriori" writes codes in quotes, "" for a total: each field's
    pair of quotes is taken off, as tau-Argus's reader does."""
    after = read_arb(_job(tmp_path, '"","",p\n" 5","Nr",P\n"2",2,"u"\n',
                          '"pp.hst", 1, ",", 0, 0'))
    assert _cell(after, "Total", "Total").status is CellStatus.PROTECTED
    assert _cell(after, "5", "Nr").status is CellStatus.PROTECTED
    assert _cell(after, "2", "2").status is CellStatus.PRIMARY


@pytest.mark.parametrize(("hst", "words"), [
    ("5;1;AB;0;100\n", "AB"),
    ("5;1\n", "expected 2 codes"),
    ("5;1;X\n", "unknown command"),
    ("5;1;C\n", "needs 1 number"),
    ("5;1;C;abc\n", "not a number"),
    ("5;1;PL;-1;2\n", "never negative"),
    ("5;Total;PL;1;2\n", "primary cell"),
    ("2;1;P\n", "cannot be protected"),
    ("5;Nr;P\n5;Nr;U\n", "cannot become unsafe"),
    ("5;Atlantis;U\n", "not a code of Region"),
    ("", "empty"),
])
def test_a_bad_line_names_the_file_and_line(tmp_path: Path, hst: str, words: str) -> None:
    arb = _job(tmp_path, hst)
    with pytest.raises(StatreconError, match=words) as caught:
        read_arb(arb)
    assert "pp.hst" in str(caught.value) and "\n" not in str(caught.value)


def test_ignore_error_skips_only_lines_naming_no_cell(tmp_path: Path) -> None:
    arb = _job(tmp_path, "5;Atlantis;U\n5;1;C;3\n", '"pp.hst", 1, ";", 1, 0')
    assert _cell(read_arb(arb), "5", "1").cost == 3
    with pytest.raises(StatreconError, match="AB"):
        read_arb(_job(tmp_path, "5;1;AB;0;9\n", '"pp.hst", 1, ";", 1, 0'))


@pytest.mark.parametrize(("command", "words"), [
    ('"pp.hst", 2, ";"', "a table specified before it"),
    ('"pp.hst"', "needs a file name and a table number"),
    ('"pp.hst", 1, ";", 2', "IgnoreError is 0 or 1"),
    ('"missing.hst", 1, ";"', "missing.hst"),
])
def test_a_bad_apriori_command(tmp_path: Path, command: str, words: str) -> None:
    arb = _job(tmp_path, "5;1;C;3\n", command)
    with pytest.raises(StatreconError, match=words) as caught:
        read_arb(arb)
    assert caught.value.where is not None and caught.value.where.endswith("TestTable.arb:9")


def test_expand_trivial_changes_every_cell_that_is_the_same(tmp_path: Path) -> None:
    """A code with one child is the same cell as its child: ExpandTrivial 1 changes both."""
    from statrecon.tables.apriori import _trivial
    from statrecon.tables.model import Hierarchy

    h = Hierarchy.from_children("R", {"T": ["a", "b"], "a": ["a1"], "a1": ["a11"],
                                      "b": ["b1", "b2"]})
    assert sorted(_trivial(h, "a1")) == ["a", "a1", "a11"]
    assert _trivial(h, "b1") == ["b1"]


peer = load_peer("tauargus")


def test_the_same_changes_as_tau_argus(tmp_path: Path) -> None:
    """pytauargus applies the same a-priori file to the same table: the same statuses, costs
    and protection levels on every cell the file names."""
    pytest.importorskip("pytauargus", exc_type=ImportError)
    arb = _job(tmp_path, HST.replace("4;11;M\n", ""))
    ours = read_arb(arb)
    table = peer.TauTable.from_arb(TAUARGUS / "TestTable.arb")
    text = table.batch_text() + f'<APRIORI> "{tmp_path / "pp.hst"}",1,";",0,0\n'
    with peer._scratch() as scratch:
        job = scratch / "apriori.arb"
        job.write_text(text)
        engine = peer._engine_module().Engine()
        engine.run_batch(job)
        tau = peer._cells(engine).set_index(["Size", "Region"])
    letters = {"S": CellStatus.SAFE, "U": CellStatus.PRIMARY, "P": CellStatus.PROTECTED,
               "M": CellStatus.SECONDARY, "E": CellStatus.EMPTY}
    for line in HST.replace("4;11;M\n", "").splitlines():
        size, region, command = (f.strip() for f in line.split(";")[:3])
        row = tau.loc[(size, region)]
        cell = _cell(ours, size, region)
        assert letters[row["status"]] is cell.status, line
        if command == "C":
            assert row["cost"] == float(cell.cost)
        if cell.status is CellStatus.PRIMARY:
            # tau-Argus leaves a lower level above a nonnegative value; statrecon caps it
            expected = [min(row["protection_lower"], row["value"]), row["protection_upper"]]
            assert np.allclose([float(x) for x in cell.protection], expected), line
