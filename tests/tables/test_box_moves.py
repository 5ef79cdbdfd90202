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
from statrecon.tables.box_moves import box_moves, record_moves
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


# ------------------------------------------------------------------------- record moves


def _linked() -> TableSet:
    return TableSet((_table(("district", "age", "sex")), _table(("district", "age")),
                     _table(("age", "sex"))))


def _holds(key: frozenset[tuple[str, str]], record: dict[str, str]) -> bool:
    """Whether a cell (its non-total codes) counts the record: each code the record's own or
    one above it (the districts' regions)."""
    regions = {d: r for r, ds in DISTRICTS.items() if r != "Total" for d in ds}
    return all(record[v] == code or (v == "district" and regions[record[v]] == code)
               for v, code in key)


def _every_record_move(tables: TableSet) -> set[tuple[tuple[int, int], ...]]:
    """Brute force: every record of the grid moved to a sibling leaf of one variable, as
    the count of every cell of the linked tables before and after."""
    leaves = {"district": ("d1", "d2", "d3", "d4", "d5"), "age": ("a", "b", "c"),
              "sex": ("f", "m")}
    siblings = {"district": [("d1", "d2"), ("d2", "d3"), ("d4", "d5")],
                "age": [("a", "b"), ("b", "c")], "sex": [("f", "m")]}
    keys = tables.keys()
    found = set()
    for values in itertools.product(*leaves.values()):
        record = dict(zip(leaves, values, strict=True))
        for variable, pairs in siblings.items():
            for old, new in pairs:
                before, after = {**record, variable: old}, {**record, variable: new}
                move = tuple((c, _holds(k, after) - _holds(k, before))
                             for c, k in enumerate(keys) if _holds(k, after) != _holds(k, before))
                found |= {move, tuple((c, -d) for c, d in move)}
    return found


def test_record_moves_are_records_moved_between_sibling_codes() -> None:
    """Three linked tables sharing their margins: the record moves (fewer than the cap, so
    all of them) are the records of the grid moved to a sibling code, counted cell by cell by
    brute force (either direction: the chain proposes both signs); each keeps every
    equation; some move a margin two tables share (what a box kept by the equations never
    does); made twice, the same moves."""
    tables = _linked()
    a = tables.equations().matrix
    moves = record_moves(tables, max_moves=10_000)
    oracle = _every_record_move(tables)
    assert len(set(moves)) == len(moves)  # every record move once, in one direction
    assert set(moves) | {tuple((c, -d) for c, d in m) for m in moves} == oracle
    for move in moves:
        assert not (a @ _vector(move, a.shape[1])).any()
    shared = {c for c, k in enumerate(tables.keys())
              if sum(any(t.key(cell) == k for cell in t.cells) for t in tables.tables) > 1}
    assert any(c in shared for move in moves for c, _ in move)
    assert record_moves(tables, max_moves=10_000) == moves


def test_record_moves_past_the_cap_are_a_sample() -> None:
    """More record moves than the cap: that many, drawn (the same for the same seed), each
    one of the brute force's."""
    tables = _linked()
    oracle = _every_record_move(tables)
    drawn = record_moves(tables, max_moves=20)
    assert len(drawn) == 20 and set(drawn) <= oracle
    assert record_moves(tables, max_moves=20) == drawn != record_moves(tables, 20, seed=1)
    assert record_moves(tables, max_moves=0) == []


def test_record_moves_out_of_time_are_those_made_so_far() -> None:
    """A time limit already spent gives none; a generous one, all of them."""
    tables = _linked()
    assert record_moves(tables, max_moves=10_000, time_limit=0.0) == []
    assert record_moves(tables, max_moves=10_000, time_limit=60.0) == record_moves(
        tables, max_moves=10_000)
