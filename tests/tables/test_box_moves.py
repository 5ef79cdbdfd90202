"""Boxes on sibling leaves (``tables/box_moves``): every box of a table keeps every sum of
it, at every level of its hierarchies; a linked table whose leaves are another's margins
offers boxes the equations break, and the posterior drops exactly those."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from statrecon.engines.ckm.posterior import _kept_boxes
from statrecon.tables import TableSet
from statrecon.tables.box_moves import box_moves
from statrecon.tables.rules import TableSpec, tabulate

DISTRICTS = {"Total": ("R1", "R2"), "R1": ("d1", "d2", "d3"), "R2": ("d4", "d5")}


def _frame() -> pd.DataFrame:
    """Every district, age and sex at least once, so every cell exists."""
    rows = list(itertools.product(("d1", "d2", "d3", "d4", "d5"), ("a", "b", "c"), ("f", "m")))
    return pd.DataFrame(rows, columns=["district", "age", "sex"])


def _table(variables: tuple[str, ...]) -> object:
    spec = TableSpec(variables, hierarchies={"district": DISTRICTS}, name="x".join(variables))
    return tabulate(_frame(), spec, "test")


def _vector(box: tuple[tuple[int, int], ...], n: int) -> np.ndarray:
    m = np.zeros(n, dtype=np.int64)
    for c, d in box:
        m[c] = d
    return m


def test_every_box_of_a_table_keeps_every_sum_of_it() -> None:
    """District (two regions: 3 and 2 districts) x age x sex: sibling pairs 2 + 1 = 3, 2
    and 1, so 6 boxes of 8 cells, +1 and -1 alternating; each keeps every equation, the
    regions' and the totals' included, and no box crosses two regions."""
    tables = TableSet((_table(("district", "age", "sex")),))
    a = tables.equations().matrix
    boxes = box_moves(tables)
    assert len(boxes) == 3 * 2 * 1
    keys = tables.keys()
    for box in boxes:
        assert len(box) == 8 and sorted(d for _, d in box) == [-1] * 4 + [1] * 4
        assert not (a @ _vector(box, a.shape[1])).any()
        districts = {code for c, _ in box for v, code in keys[c] if v == "district"}
        assert districts <= {"d1", "d2", "d3"} or districts <= {"d4", "d5"}


def test_boxes_the_linked_equations_break_are_dropped() -> None:
    """Linked with district x age, whose leaves are the three-way table's margins: that
    table's boxes (district x age, 3 x 2 = 6) change a margin without its parts, so the
    equations break them, and the posterior keeps the three-way table's 6 only."""
    three = _table(("district", "age", "sex"))
    tables = TableSet((three, _table(("district", "age"))))
    a = tables.equations().matrix
    boxes = box_moves(tables)
    assert len(boxes) == 6 + 6
    own = set(box_moves(TableSet((three,))))
    broken = [b for b in boxes if (a @ _vector(b, a.shape[1])).any()]
    assert len(broken) == 6 and not own & set(broken)
    kept = _kept_boxes(a, boxes, np.zeros(a.shape[1], dtype=np.int64))
    assert sorted(kept[0]) == sorted(b for b in boxes if b not in broken)


@pytest.mark.parametrize("variables", [("age",), ("district",)])
def test_a_one_way_table_offers_shifts_between_siblings(variables: tuple[str, ...]) -> None:
    """One variable: +1 and -1 on two sibling leaves (flat ages: a-b, b-c; districts within
    each region), each keeping its parent's sum."""
    tables = TableSet((_table(variables),))
    a = tables.equations().matrix
    boxes = box_moves(tables)
    assert len(boxes) == (2 if variables == ("age",) else 3)
    for box in boxes:
        assert len(box) == 2 and not (a @ _vector(box, a.shape[1])).any()


def test_tables_whose_boxes_would_be_too_many_offer_none() -> None:
    """A cap on the boxes' cells, tables in order: a table past it is skipped whole (the
    three-way table's 6 boxes take 48 cells, the two-way table's 6 take 24), the others
    still offer theirs."""
    tables = TableSet((_table(("district", "age", "sex")), _table(("district", "age"))))
    every = box_moves(tables)
    assert len(every) == 12 and box_moves(tables, max_entries=72) == every
    assert box_moves(tables, max_entries=71) == every[:6]  # the three-way table's
    assert box_moves(tables, max_entries=47) == every[6:]  # the two-way table's
    assert box_moves(tables, max_entries=23) == []
