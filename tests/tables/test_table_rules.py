"""Tables from microdata (against a brute-force count of the records under each cell) and the
primary suppression rules on small examples worked by hand."""

from __future__ import annotations

from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.errors import StatreconError
from statrecon.tables import CellStatus, Hierarchy
from statrecon.tables.frames import table_from_frame
from statrecon.tables.rules import (
    Dominance,
    MinFrequency,
    PPercent,
    Protection,
    TableSpec,
    mark_primary,
    sensitivity,
    table_from_microdata,
    tabulate,
)

F = Fraction

# cell x: contributions 100, 10, 5 (sum 115); cell y: 50, 40, 30 (120); cell z: 7 alone
MICRO = pd.DataFrame({"cell": ["x", "x", "x", "y", "y", "y", "z"],
                      "firm": ["a", "b", "c", "d", "e", "f", "g"],
                      "turnover": [100, 10, 5, 50, 40, 30, 7]})
SPEC = TableSpec(["cell"], response="turnover", tops=3)


def statuses(table: object) -> dict[str, CellStatus]:
    return {c.code("cell"): c.status for c in table.cells}  # type: ignore[attr-defined]


def test_tabulate_by_hand() -> None:
    t = tabulate(MICRO, SPEC)
    assert t.kind == "magnitude" and t.decimals == 0
    x = t.cell({"cell": "x"})
    assert (x.value, x.frequency, x.top) == (115, 3, (100, 10, 5))
    total = t.cell({})
    assert (total.value, total.frequency, total.top) == (242, 7, (100, 50, 40))


def test_min_frequency_follows_the_sdctable_convention() -> None:
    frame = pd.DataFrame({"r": ["a", "b", "c", "d"], "n": [1, 2, 3, 0]})
    t = table_from_frame(frame, ["r"], "n")
    marked = mark_primary(t, [MinFrequency(2)])
    assert {c.code("r"): c.status.value for c in marked.cells} == {
        "Total": "safe", "a": "primary", "b": "primary", "c": "safe", "d": "safe"}
    zeros = mark_primary(t, [MinFrequency(2)], protect_zeros=True)
    assert zeros.cell({"r": "d"}).status is CellStatus.PRIMARY
    assert zeros.cell({"r": "c"}).status is CellStatus.SAFE


def test_the_p_percent_rule_by_hand() -> None:
    t = tabulate(MICRO, SPEC)
    # x: remainder 115 - 100 - 10 = 5; y: 120 - 50 - 40 = 30; z: one contributor
    assert statuses(mark_primary(t, [PPercent(10)])) == {
        "Total": CellStatus.SAFE, "x": CellStatus.PRIMARY, "y": CellStatus.SAFE,
        "z": CellStatus.PRIMARY}
    assert statuses(mark_primary(t, [PPercent(4)]))["x"] is CellStatus.SAFE  # 5 >= 4
    # two intruders together: y's remainder 120 - 50 - 40 - 30 = 0 < 5
    assert statuses(mark_primary(t, [PPercent(10, n=2)]))["y"] is CellStatus.PRIMARY


def test_the_dominance_rule_by_hand() -> None:
    t = tabulate(MICRO, SPEC)
    one = statuses(mark_primary(t, [Dominance(1, 60)]))  # x: 100/115; y: 50/120
    assert (one["x"], one["y"], one["z"]) == (CellStatus.PRIMARY, CellStatus.SAFE,
                                             CellStatus.PRIMARY)
    assert statuses(mark_primary(t, [Dominance(2, 75)]))["y"] is CellStatus.SAFE  # 90 = 75 %
    assert statuses(mark_primary(t, [Dominance(2, 74)]))["y"] is CellStatus.PRIMARY
    assert sensitivity(t.cell({"cell": "x"}), [MinFrequency(1), Dominance(1, 60)]) \
        == "(1, 60)-dominance"


def test_protection_levels() -> None:
    t = tabulate(MICRO, SPEC)
    relative = mark_primary(t, [PPercent(10)], protection=Protection(F(1, 10), F(1, 5)))
    assert relative.cell({"cell": "x"}).protection == (F(23, 2), 23)
    absolute = mark_primary(t, [PPercent(10)], protection=Protection(200, 3, relative=False))
    assert absolute.cell({"cell": "x"}).protection == (115, 3)  # lower capped at the value
    assert absolute.cell({"cell": "y"}).protection == (0, 0)  # not primary


def test_rules_that_lack_what_they_need() -> None:
    frequency = tabulate(MICRO, TableSpec(["cell"]))
    with pytest.raises(StatreconError, match="needs the 2 largest contributions"):
        mark_primary(frequency, [PPercent(10)])
    with pytest.raises(StatreconError, match="percentage"):
        PPercent(0)
    with pytest.raises(StatreconError, match="maxN"):
        MinFrequency(0)


def test_a_contributor_counts_once() -> None:
    micro = pd.DataFrame({"cell": ["x", "x", "x", "y"], "firm": ["a", "a", "b", "a"],
                          "turnover": [60, 50, 10, 5]})
    spec = TableSpec(["cell"], response="turnover", contributor="firm")
    t = tabulate(micro, spec)
    assert (t.cell({"cell": "x"}).frequency, t.cell({"cell": "x"}).top) == (2, (110, 10))
    assert (t.cell({}).frequency, t.cell({}).top) == (2, (115, 10))
    marked = table_from_microdata(micro, spec, [MinFrequency(1)])
    assert marked.cell({"cell": "y"}).status is CellStatus.PRIMARY


def test_a_record_without_a_number_is_refused() -> None:
    micro = MICRO.assign(turnover=[1.5, 2, None, 1, 1, 1, 1])
    with pytest.raises(StatreconError, match="row 3: turnover nan is not a number"):
        tabulate(micro, SPEC)


def test_a_record_without_its_contributor_is_refused() -> None:
    micro = MICRO.assign(firm=["a", None, "c", "d", "e", "f", "g"])
    with pytest.raises(StatreconError, match="row 2: no firm"):
        tabulate(micro, TableSpec(["cell"], response="turnover", contributor="firm"))


def test_weights_scale_values_not_counts() -> None:
    micro = MICRO.assign(w=[1.5, 2, 1, 1, 1, 1, 0.5])
    t = tabulate(micro, TableSpec(["cell"], response="turnover", weight="w"))
    x = t.cell({"cell": "x"})
    assert (x.value, x.frequency, x.top) == (175, 3, (100, 10))
    assert t.cell({"cell": "z"}).value == F(7, 2) and t.decimals == 1
    counts = tabulate(micro, TableSpec(["cell"], weight="w"))
    assert counts.kind == "frequency" and counts.cell({"cell": "x"}).value == F(9, 2)


def test_zero_cells_or_empty_cells() -> None:
    micro = pd.DataFrame({"a": ["p", "q"], "b": ["u", "v"], "x": [1, 2]})
    empty = tabulate(micro, TableSpec(["a", "b"]))
    assert empty.cell({"a": "p", "b": "v"}).status is CellStatus.EMPTY
    zeros = tabulate(micro, TableSpec(["a", "b"], zeros="cells"))
    assert zeros.cell({"a": "p", "b": "v"}).status is CellStatus.SAFE
    marked = mark_primary(zeros, protect_zeros=True)
    assert marked.cell({"a": "p", "b": "v"}).status is CellStatus.PRIMARY
    assert mark_primary(empty, protect_zeros=True).cell(
        {"a": "p", "b": "v"}).status is CellStatus.EMPTY


def test_microdata_with_a_total_code_is_refused() -> None:
    h = Hierarchy("cell", "T", {"T": ("xy", "z"), "xy": ("x", "y")})
    micro = MICRO.assign(cell=["x", "x", "xy", "y", "y", "y", "z"])
    with pytest.raises(StatreconError, match="row 3: cell=xy is a total"):
        tabulate(micro, TableSpec(["cell"], {"cell": h}, response="turnover"))


@st.composite
def microdata(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    a = Hierarchy("a", "T", {"T": ("g", "k"), "g": ("g1", "g2"), "k": ("k1",)})
    b = Hierarchy.flat("b", draw(st.sampled_from([["u"], ["u", "v", "w"]])))
    n = draw(st.integers(1, 15))
    frame = pd.DataFrame({
        "a": draw(st.lists(st.sampled_from(a.leaves()), min_size=n, max_size=n)),
        "b": draw(st.lists(st.sampled_from(b.leaves()), min_size=n, max_size=n)),
        "who": draw(st.lists(st.sampled_from("pqr"), min_size=n, max_size=n)),
        "x": draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))})
    return frame, {"a": a, "b": b}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(microdata(), st.booleans())
def test_tabulate_matches_a_count_of_the_records_under_each_cell(
        drawn: tuple[pd.DataFrame, dict[str, Hierarchy]], by_contributor: bool) -> None:
    frame, hierarchies = drawn
    spec = TableSpec(["a", "b"], hierarchies, response="x", tops=2,
                     contributor="who" if by_contributor else None)
    t = tabulate(frame, spec)
    for cell in t.cells:
        under = [r for r in frame.itertuples()
                 if all(getattr(r, v) == c or c in hierarchies[v].ancestors(getattr(r, v))
                        for v, c in cell.codes)]
        units: dict[object, int] = {}
        for i, r in enumerate(under):
            key = r.who if by_contributor else i
            units[key] = units.get(key, 0) + r.x
        assert cell.value == sum(r.x for r in under)
        assert cell.frequency == len(units)
        assert cell.top == tuple(sorted(units.values(), reverse=True)[:2])
        assert (cell.status is CellStatus.EMPTY) == (not under)
