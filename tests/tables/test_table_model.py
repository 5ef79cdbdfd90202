"""The table model: hierarchies, the full grid, linked tables and the additivity equations
derived from the hierarchies (counted by hand on small tables; on random tables from random
microdata they always hold, and a perturbed cell breaks exactly the equations it is in)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.errors import StatreconError
from statrecon.tables import Cell, CellStatus, Hierarchy, Table, TableSet
from statrecon.tables.rules import TableSpec, tabulate

F = Fraction


def table_of(name: str, hierarchies: list[Hierarchy], values: dict[tuple[str, ...], int],
             status: dict[tuple[str, ...], CellStatus] | None = None) -> Table:
    """A table whose every grid cell has the value given by hand."""
    variables = tuple(h.variable for h in hierarchies)
    cells = []
    for codes in itertools.product(*(h.codes() for h in hierarchies)):
        cells.append(Cell(tuple(zip(variables, codes, strict=True)), F(values[codes]), None,
                          (status or {}).get(codes, CellStatus.SAFE)))
    return Table(name, variables, {h.variable: h for h in hierarchies}, "x", "magnitude", 0,
                 tuple(cells))


A = Hierarchy.flat("A", ["a1", "a2"])
B = Hierarchy.flat("B", ["b1", "b2", "b3"])
INNER = {("a1", "b1"): 1, ("a1", "b2"): 2, ("a1", "b3"): 3,
         ("a2", "b1"): 4, ("a2", "b2"): 5, ("a2", "b3"): 6}


def two_by_three() -> dict[tuple[str, str], int]:
    values = dict(INNER)
    values.update({("a1", "Total"): 6, ("a2", "Total"): 15, ("Total", "b1"): 5,
                   ("Total", "b2"): 7, ("Total", "b3"): 9, ("Total", "Total"): 21})
    return values


# ---------------------------------------------------------------------------- hierarchies

def test_a_hierarchy_lists_codes_depth_first_in_file_order() -> None:
    h = Hierarchy("Region", "T", {"T": ("N", "S"), "N": ("n2", "n1"), "S": ("s1",)})
    assert h.codes() == ("T", "N", "n2", "n1", "S", "s1")
    assert h.leaves() == ("n2", "n1", "s1")
    assert h.parent("n1") == "N" and h.parent("T") is None
    assert h.ancestors("n1") == ("N", "T")
    assert "s1" in h and "x" not in h and len(h) == 6


def test_flat_and_from_children() -> None:
    assert Hierarchy.flat("A", ["x", "y"]).children == {"Total": ("x", "y")}
    assert Hierarchy.flat("A", []).codes() == ("Total",)
    h = Hierarchy.from_children("R", {"N": ["n1"], "T": ["N", "S"]})
    assert h.total == "T" and h.codes() == ("T", "N", "n1", "S")


@pytest.mark.parametrize("children, words", [
    ({"T": ("a", "b"), "a": ("b",)}, "twice"),
    ({"T": ("a",), "a": ("T",)}, "total"),
    ({"T": ("a",), "x": ("y",)}, "not under the total"),
    ({"T": ("a",), "b": ("c",), "c": ("b",)}, "cycle"),
    ({"T": ("a", "")}, "empty code"),
])
def test_a_malformed_hierarchy_is_refused(children: dict[str, tuple[str, ...]],
                                          words: str) -> None:
    with pytest.raises(StatreconError, match=words):
        Hierarchy("V", "T", children)


def test_from_children_needs_one_root() -> None:
    with pytest.raises(StatreconError, match="exactly one root"):
        Hierarchy.from_children("V", {"A": ["a"], "B": ["b"]})


# ---------------------------------------------------------------------------- tables

def test_a_table_is_the_full_grid() -> None:
    t = table_of("t", [A, B], two_by_three())
    assert len(t.cells) == 12 and t.shape == (3, 4)
    assert t.cell({"A": "a2", "B": "b3"}).value == 6
    assert t.cell({"A": "a2"}).value == 15  # a variable left out is at its total
    assert t.grid.shape == (3, 4)
    assert t.cells[t.grid[0, 0]].codes == (("A", "Total"), ("B", "Total"))
    with pytest.raises(StatreconError, match="no cell"):
        t.index({"A": "zz"})


def test_a_table_refuses_a_partial_or_repeated_grid() -> None:
    t = table_of("t", [A, B], two_by_three())
    with pytest.raises(StatreconError, match="grid of 12"):
        Table("t", ("A", "B"), t.hierarchies, "x", "magnitude", 0, t.cells[:-1])
    with pytest.raises(StatreconError, match="twice"):
        Table("t", ("A", "B"), t.hierarchies, "x", "magnitude", 0, t.cells[:-1] + t.cells[:1])
    with pytest.raises(StatreconError, match="more precise"):
        bad = (*t.cells[:-1], Cell(t.cells[-1].codes, F(1, 2), None, CellStatus.SAFE))
        Table("t", ("A", "B"), t.hierarchies, "x", "magnitude", 0, bad)


def test_an_empty_cell_is_zero() -> None:
    with pytest.raises(StatreconError, match="empty cell"):
        Cell((("A", "a1"),), F(3), 1, CellStatus.EMPTY)
    with pytest.raises(StatreconError, match="negative protection"):
        Cell((("A", "a1"),), F(3), 1, CellStatus.PRIMARY, (F(-1), F(0)))
    assert CellStatus.PRIMARY.suppressed and CellStatus.SECONDARY.suppressed
    assert not CellStatus.SAFE.suppressed and not CellStatus.EMPTY.suppressed


# ---------------------------------------------------------------------------- equations

def test_the_equations_of_a_two_by_three_table_counted_by_hand() -> None:
    ts = TableSet((table_of("t", [A, B], two_by_three()),))
    eq = ts.equations()
    # A's total at each of B's 4 codes (3 cells each), B's total at each of A's 3 codes (4)
    assert eq.matrix.shape == (7, 12)
    assert eq.matrix.nnz == 4 * 3 + 3 * 4
    assert eq.matrix.dtype == np.int64
    assert sorted(np.asarray(eq.matrix.sum(axis=1)).ravel().tolist()) == [-2] * 3 + [-1] * 4
    assert "t: A Total = a1 + a2 (B=b2)" in eq.names
    assert "t: B Total = b1 + b2 + b3 (A=a1)" in eq.names
    row = eq.names.index("t: B Total = b1 + b2 + b3 (A=a1)")
    keys = ts.keys()
    entries = {keys[j]: int(eq.matrix[row, j]) for j in eq.matrix[row].indices}
    assert entries == {frozenset({("A", "a1")}): 1, frozenset({("A", "a1"), ("B", "b1")}): -1,
                       frozenset({("A", "a1"), ("B", "b2")}): -1,
                       frozenset({("A", "a1"), ("B", "b3")}): -1}
    eq.check(ts.values())


def test_check_names_the_equation_its_cells_and_both_sides() -> None:
    values = two_by_three()
    values[("a1", "Total")] = 7  # the row total of a1 is 6
    ts = TableSet((table_of("t", [A, B], values),))
    with pytest.raises(StatreconError) as caught:
        ts.equations().check(ts.values())
    message = str(caught.value)
    # a1's row total is in two equations: B's total at A=a1 and A's total at B=Total;
    # the message names one of them with both its sides
    assert ("t: B Total = b1 + b2 + b3 (A=a1): 7 != 6" in message
            or "t: A Total = a1 + a2 (B=Total): 21 != 22" in message)
    assert "1 more" in message
    assert len(ts.equations().violations(ts.values())) == 2


def test_a_two_level_hierarchy() -> None:
    region = Hierarchy("Region", "T", {"T": ("N", "S"), "N": ("n1", "n2"), "S": ("s1",)})
    sex = Hierarchy.flat("Sex", ["m", "f"])
    inner = {("n1", "m"): 1, ("n1", "f"): 2, ("n2", "m"): 3, ("n2", "f"): 4,
             ("s1", "m"): 5, ("s1", "f"): 6}
    values = dict(inner)
    for r in ("n1", "n2", "s1"):
        values[(r, "Total")] = inner[(r, "m")] + inner[(r, "f")]
    for s in ("m", "f", "Total"):
        values[("N", s)] = values[("n1", s)] + values[("n2", s)]
        values[("S", s)] = values[("s1", s)]
        values[("T", s)] = values[("N", s)] + values[("S", s)]
    ts = TableSet((table_of("t", [region, sex], values),))
    eq = ts.equations()
    # Region: parents T, N and S, at Sex's 3 codes; Sex: its total at Region's 6 codes
    assert eq.matrix.shape == (3 * 3 + 6, 18)
    assert "t: Region N = n1 + n2 (Sex=f)" in eq.names
    assert "t: Region S = s1 (Sex=Total)" in eq.names
    eq.check(ts.values())


def linked_pair() -> tuple[Table, Table]:
    c = Hierarchy.flat("C", ["c1", "c2", "c3"])
    b = Hierarchy.flat("B", ["b1", "b2"])
    a_values = {"a1": 10, "a2": 20}
    t1 = {("a1", "b1"): 4, ("a1", "b2"): 6, ("a2", "b1"): 5, ("a2", "b2"): 15}
    t2 = {("a1", "c1"): 1, ("a1", "c2"): 2, ("a1", "c3"): 7,
          ("a2", "c1"): 10, ("a2", "c2"): 0, ("a2", "c3"): 10}
    tables = []
    for name, h, inner in (("t1", b, t1), ("t2", c, t2)):
        values = dict(inner)
        for a, total in a_values.items():
            values[(a, "Total")] = total
        for code in h.codes():
            values[("Total", code)] = sum(values[(a, code)] for a in a_values)
        tables.append(table_of(name, [A, h], values))
    return tables[0], tables[1]


def test_linked_tables_share_a_margin_once() -> None:
    t1, t2 = linked_pair()
    ts = TableSet((t1, t2))
    # 9 + 12 cells; the grand total and A's two totals are published in both
    assert len(ts.keys()) == 9 + 12 - 3
    shared = frozenset({("A", "a1")})
    assert ts.where(shared) == [("t1", {"A": "a1", "B": "Total"}),
                                ("t2", {"A": "a1", "C": "Total"})]
    assert ts.cell(shared).value == 10
    assert ts.cell_name(shared) == "A=a1" and ts.cell_name(frozenset()) == "Total"
    eq = ts.equations()
    # t1: 3 + 3 rows, t2: 4 + 3 rows; "A Total = a1 + a2" at the B and C totals is one row
    assert eq.matrix.shape == (12, 18)
    assert sum(name.startswith("t1: A Total = a1 + a2 (B=Total)") or
               name.startswith("t2: A Total = a1 + a2 (C=Total)") for name in eq.names) == 1
    eq.check(ts.values())
    one = TableSet((t1,)).equations().matrix.shape[0]
    two = TableSet((t2,)).equations().matrix.shape[0]
    assert eq.matrix.shape[0] == one + two - 1


def test_linked_tables_that_disagree_are_refused() -> None:
    t1, t2 = linked_pair()
    i = t2.index({"A": "a1"})
    cells = list(t2.cells)
    cells[i] = Cell(cells[i].codes, F(11), None, CellStatus.SAFE)
    bad = Table("t2", t2.variables, t2.hierarchies, "x", "magnitude", 0, tuple(cells))
    with pytest.raises(StatreconError, match=r"disagree on cell A=a1: value 10 in t1 .* 11"):
        TableSet((t1, bad))


def test_statuses_are_set_in_every_table_publishing_a_cell() -> None:
    t1, t2 = linked_pair()
    ts = TableSet((t1, t2)).with_statuses({frozenset({("A", "a2")}): CellStatus.SECONDARY})
    assert ts.tables[0].cell({"A": "a2"}).status is CellStatus.SECONDARY
    assert ts.tables[1].cell({"A": "a2"}).status is CellStatus.SECONDARY
    assert sum(c.status is CellStatus.SECONDARY for c in ts.cells()) == 1


# ------------------------------------------------------- random tables from random microdata

@st.composite
def hierarchies(draw: st.DrawFn, variable: str) -> Hierarchy:
    """A tree of depth 1 or 2 with 1 to 3 codes under the total."""
    children: dict[str, tuple[str, ...]] = {}
    top = [f"{variable}{i}" for i in range(draw(st.integers(1, 3)))]
    children["T"] = tuple(top)
    for code in top:
        n = draw(st.integers(0, 2))
        if n:
            children[code] = tuple(f"{code}.{j}" for j in range(n))
    return Hierarchy(variable, "T", children)


@st.composite
def microdata(draw: st.DrawFn) -> tuple[pd.DataFrame, list[Hierarchy]]:
    found = [draw(hierarchies(v)) for v in ("A", "B", "C")[:draw(st.integers(1, 3))]]
    n = draw(st.integers(1, 12))
    frame = pd.DataFrame({h.variable: draw(st.lists(st.sampled_from(h.leaves()), min_size=n,
                                                      max_size=n)) for h in found})
    frame["x"] = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    return frame, found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(microdata(), st.data())
def test_tables_from_microdata_add_up_and_a_perturbed_cell_breaks_its_equations(
        drawn: tuple[pd.DataFrame, list[Hierarchy]], data: st.DataObject) -> None:
    frame, found = drawn
    spec = TableSpec([h.variable for h in found], {h.variable: h for h in found}, response="x")
    ts = TableSet((tabulate(frame, spec),))
    eq = ts.equations()
    values = list(ts.values())
    eq.check(values)
    assert eq.matrix.shape[0] > 0
    j = data.draw(st.integers(0, len(values) - 1), label="cell")
    values[j] += data.draw(st.sampled_from([F(-3), F(1, 100), F(7)]), label="change")
    containing = set(np.flatnonzero(eq.matrix[:, [j]].toarray().ravel()).tolist())
    assert containing, "every cell is in some equation"
    assert set(eq.violations(values).tolist()) == containing
    with pytest.raises(StatreconError) as caught:
        eq.check(values)
    first = min(containing)
    assert eq.names[first] in str(caught.value)
    assert caught.value.statistic == eq.names[first]
