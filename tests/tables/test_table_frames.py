"""Tables from data frames: totals computed from the bottom cells (checked against hand
sums), frames with totals checked, hierarchies from nested columns, the SSBtools tables, and
the frame of a table read back to the same table."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from statrecon.errors import StatreconError
from statrecon.tables import CellStatus, Hierarchy, TableSet
from statrecon.tables.frames import (
    code_text,
    hierarchy_from_columns,
    read_frame,
    table_from_frame,
    to_frame,
)
from statrecon.tables.tauargus import read_tab

F = Fraction
SSB = Path(__file__).resolve().parents[2] / "examples" / "tables" / "ssbtools"
PP = Path(__file__).resolve().parents[2] / "examples" / "tables" / "tauargus"

FRAME = pd.DataFrame({"region": ["n1", "n1", "n2", "s1", "s1"],
                      "sex": ["m", "f", "f", "m", "f"],
                      "count": [3, 1, 4, 0, 2]})
REGION = {"T": ["N", "S"], "N": ["n1", "n2"], "S": ["s1"]}


def test_totals_are_computed_from_the_bottom_cells() -> None:
    t = table_from_frame(FRAME, ["region", "sex"], "count", hierarchies={"region": REGION})
    assert t.kind == "frequency" and t.decimals == 0
    assert t.hierarchies["region"].codes() == ("T", "N", "n1", "n2", "S", "s1")
    assert t.hierarchies["sex"].codes() == ("Total", "f", "m")  # flat, sorted
    by_hand = {("T", "Total"): 10, ("N", "Total"): 8, ("N", "f"): 5, ("N", "m"): 3,
               ("S", "f"): 2, ("S", "m"): 0, ("T", "m"): 3, ("n2", "Total"): 4}
    for codes, value in by_hand.items():
        cell = t.cell(codes)
        assert cell.value == value and cell.frequency == value
    assert t.cell(("s1", "m")).status is CellStatus.SAFE  # a published zero
    assert t.cell(("n2", "m")).status is CellStatus.EMPTY  # no row
    ts = TableSet((t,))
    ts.equations().check(ts.values())


def test_a_frame_with_totals_is_checked() -> None:
    t = table_from_frame(FRAME, ["region", "sex"], "count", hierarchies={"region": REGION})
    frame = to_frame(t, empty=False)
    back = table_from_frame(frame, ["region", "sex"], "value", frequency="frequency",
                            status="status", lower="lower", upper="upper", kind="frequency",
                            hierarchies=t.hierarchies, margins="given", response="count")
    assert back.cells == t.cells
    frame.loc[(frame.region == "N") & (frame.sex == "f"), ["value", "frequency"]] = 6
    with pytest.raises(StatreconError, match="does not add up") as caught:
        table_from_frame(frame, ["region", "sex"], "value", kind="frequency",
                         hierarchies=t.hierarchies, margins="given")
    assert caught.value.where.startswith("table:row ")


def test_a_total_row_with_computed_margins_is_refused() -> None:
    frame = pd.concat([FRAME, pd.DataFrame({"region": ["N"], "sex": ["f"], "count": [5]})])
    with pytest.raises(StatreconError, match="row 6: region=N is a total"):
        table_from_frame(frame, ["region", "sex"], "count", hierarchies={"region": REGION})


@pytest.mark.parametrize("change, words", [
    ({"region": [None, "n1", "n2", "s1", "s1"]}, "row 1: a missing code in column region"),
    ({"region": ["n1", "n1", "n9", "s1", "s1"]}, "row 3: code n9 is not in the hierarchy"),
    ({"count": [3, 1, "x", 0, 2]}, "row 3: count 'x' is not a number"),
    ({"count": [3, 1, 4.5, 0, 2]}, "row 3: count 4.5 is not a whole number"),
    ({"sex": ["m", "m", "f", "m", "f"]}, "row 2: cell n1, m again"),
])
def test_bad_rows_name_their_row(change: dict[str, list[object]], words: str) -> None:
    frame = FRAME.assign(**change)
    with pytest.raises(StatreconError, match=words):
        table_from_frame(frame, ["region", "sex"], "count", hierarchies={"region": REGION})


def test_statuses_and_protection_levels() -> None:
    frame = FRAME.assign(status=["U", "safe", None, "p", "primary"], lower=[1, 0, 0, 0, 1],
                         upper=[2, 0, 0, 0, 0])
    t = table_from_frame(frame, ["region", "sex"], "count", status="status", lower="lower",
                         upper="upper", hierarchies={"region": REGION})
    assert t.cell(("n1", "m")).status is CellStatus.PRIMARY
    assert t.cell(("n1", "m")).protection == (1, 2)
    assert t.cell(("s1", "m")).status is CellStatus.PROTECTED
    assert t.cell(("n2", "f")).status is CellStatus.SAFE
    frame.loc[4, "lower"] = 5  # above the cell's value 2
    with pytest.raises(StatreconError, match="row 5: lower protection level 5 is larger"):
        table_from_frame(frame, ["region", "sex"], "count", status="status", lower="lower",
                         upper="upper", hierarchies={"region": REGION})


def test_a_magnitude_frame_keeps_exact_decimals() -> None:
    frame = FRAME.assign(amount=[0.1, 0.2, 1.25, 0.0, 3.0])
    t = table_from_frame(frame, ["region", "sex"], "amount", frequency="count",
                         hierarchies={"region": REGION})
    assert t.kind == "magnitude" and t.decimals == 2
    assert t.cell(("n1", "Total")).value == F(3, 10)  # 0.1 + 0.2, exactly


def test_hierarchy_from_nested_columns() -> None:
    frame = pd.DataFrame({"fylke": [1, 1, 4], "region": ["A", "B", "C"]})
    h = hierarchy_from_columns(frame, "region", ["fylke", "region"])
    assert h.children == {"Total": ("1", "4"), "1": ("A", "B"), "4": ("C",)}
    frame.loc[2, "region"] = "B"
    with pytest.raises(StatreconError, match="B is under both 1 and 4"):
        hierarchy_from_columns(frame, "region", ["fylke", "region"])


def test_code_text() -> None:
    assert code_text(10100.0) == "10100" and code_text(np.int64(3)) == "3"
    assert code_text(" 1") == " 1" and code_text(float("nan")) is None


def test_the_ssbtools_table_z1() -> None:
    raw = pd.read_parquet(SSB / "z1.parquet")
    t = read_frame(SSB / "z1.parquet", ["region", "hovedint"], "ant")
    assert t.shape == (1 + raw.region.nunique(), 1 + raw.hovedint.nunique())
    assert t.cell({}).value == raw.ant.sum()
    for region, group in raw.groupby("region"):
        assert t.cell({"region": region}).value == group.ant.sum()
    ts = TableSet((t,))
    ts.equations().check(ts.values())


def test_the_ssbtools_tables_link_over_two_hierarchies_of_region() -> None:
    z2 = pd.read_parquet(SSB / "z2.parquet")
    by_fylke = hierarchy_from_columns(z2, "region", ["fylke", "region"])
    by_kostragr = hierarchy_from_columns(z2, "region", ["kostragr", "region"])
    a = table_from_frame(z2, ["region", "hovedint"], "ant", hierarchies={"region": by_fylke},
                         name="fylke")
    b = table_from_frame(z2, ["region", "hovedint"], "ant",
                         hierarchies={"region": by_kostragr}, name="kostragr")
    ts = TableSet((a, b))
    # the cells by region (bottom codes and the total) are the same cells in both
    shared = (1 + z2.region.nunique()) * (1 + z2.hovedint.nunique())
    assert len(ts.keys()) == len(a.cells) + len(b.cells) - shared
    ts.equations().check(ts.values())


def test_a_table_to_a_frame_and_back(tmp_path: Path) -> None:
    pp = read_tab(PP / "pp.tab", additivity="recompute")
    frame = to_frame(pp)
    assert len(frame) == 162 and frame.value.dtype == object  # values with decimals
    assert set(frame.columns) == {"Size", "Region", "value", "frequency", "status", "lower",
                                  "upper", "cost", "top1", "top2"}
    back = table_from_frame(frame, ["Size", "Region"], "value", frequency="frequency",
                            status="status", lower="lower", upper="upper", cost="cost",
                            top=["top1", "top2"], kind="magnitude", decimals=2,
                            hierarchies=pp.hierarchies, margins="given", response="Var2",
                            name="pp", source=pp.source)
    assert back == pp
    floats = to_frame(pp, exact_numbers=False)
    assert floats.value.dtype == np.float64
    path = tmp_path / "pp.parquet"
    to_frame(pp, exact_numbers=False).to_parquet(path)
    assert len(read_frame(path, ["Size", "Region"], "value", frequency="frequency",
                          hierarchies=pp.hierarchies, margins="given").cells) == 162


def test_hierarchies_given_in_three_ways_agree() -> None:
    h = Hierarchy.from_children("region", REGION)
    tables = [table_from_frame(FRAME, ["region", "sex"], "count", hierarchies={"region": g})
              for g in (h, REGION)]
    assert tables[0] == tables[1]
    flat = table_from_frame(FRAME, ["region", "sex"], "count")
    assert flat.hierarchies["region"] == Hierarchy.flat("region", ["n1", "n2", "s1"])


def test_largest_contributions_of_computed_totals() -> None:
    frame = pd.DataFrame({"r": ["a", "b", "c"], "x": [10, 9, 8], "f": [2, 2, 1],
                          "t1": [6, 5, 8], "t2": [4, 4, None]})
    t = table_from_frame(frame, ["r"], "x", frequency="f", top=["t1", "t2"])
    # a total's largest contributions are the largest of its children's
    assert t.cell({}).top == (8, 6) and t.cell({"r": "c"}).top == (8,)
    assert (t.cell({}).value, t.cell({}).frequency) == (27, 5)
