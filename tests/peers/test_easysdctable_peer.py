"""easySdcTable's comparison as a peer: the transcribed table holds together, the port of
ProtectTable's table building (benchmarks/peers/easysdctable.py) agrees with brute force on
tiny data and with the sizes easySdcTable itself reports for z3, and each configuration of the
comparison as statrecon tables (``table_set``) has the spec's cells, values and primary cells
(pandas groupby over the Parquet data), adds up, and counts a cell of two linked tables once."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import pandas as pd
import pytest
from conftest import load_peer
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.errors import StatreconError
from statrecon.tables import TableSet

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "tables" / "ssbtools"


peer = load_peer("easysdctable")


def test_the_transcribed_comparison_holds_together() -> None:
    rows = peer.load_comparison()
    assert len(rows) == 120
    keys = ["table", "linked", "protectZeros", "maxN"]
    assert rows.groupby(keys)["method"].apply(sorted).map(tuple).nunique() == 1
    assert rows.groupby(keys).size().eq(5).all() and len(rows.groupby(keys)) == 24
    err = rows["error"]
    assert rows.loc[err, ["suppressed", "seconds", "revealed"]].isna().all().all()
    ok = rows[~err]
    assert ok[["suppressed", "seconds", "revealed"]].notna().all().all()
    assert (ok["revealed_primary"] <= ok["revealed"]).all()
    assert (ok["revealed"] <= ok["suppressed"]).all()
    gauss = rows[rows["method"] == "Gauss"]
    assert not gauss["error"].any() and (gauss["revealed"] == 0).all()


def test_the_rows_the_issue_quotes() -> None:
    rows = peer.load_comparison().set_index(["table", "linked", "protectZeros", "maxN",
                                             "method"])
    gauss = rows.loc[("sosialFiktiv", True, False, 2, "Gauss")]
    simple = rows.loc[("sosialFiktiv", True, False, 2, "SIMPLEHEURISTIC_FALSE")]
    assert (gauss["suppressed"], gauss["revealed"], gauss["seconds"]) == (2168, 0, 31.3)
    assert (simple["suppressed"], simple["revealed"], simple["seconds"]) == (1995, 53, 124.8)


def _linked_frame(counts: list[int]) -> pd.DataFrame:
    """4 regions in 2 fylker and, crosswise, 2 kostragr; 2 hovedint: two linked tables."""
    fylke = {"r1": "f1", "r2": "f1", "r3": "f2", "r4": "f2"}
    kostra = {"r1": "k1", "r2": "k2", "r3": "k1", "r4": "k2"}
    rows = [(r, fylke[r], kostra[r], h) for r, h in itertools.product(fylke, ["a", "b"])]
    frame = pd.DataFrame(rows, columns=["region", "fylke", "kostragr", "hovedint"])
    frame["ant"] = counts
    return frame


def test_two_linked_tables_are_found_with_their_hierarchies() -> None:
    frame = _linked_frame([1] * 8)
    built = peer.build(frame, ["region", "fylke", "kostragr", "hovedint"])
    assert [[d.variables for d in dims] for dims in built.tables] == [
        [("region", "fylke"), ("hovedint",)], [("region", "kostragr"), ("hovedint",)]]
    first = built.tables[0][0]
    assert first.children == {"Total": ("f1", "f2"), "f1": ("r1", "r2"),
                              "f2": ("r3", "r4")}
    # (1 + 2 + 4) x 3 cells per table, sharing (1 + 4) x 3
    assert len(built.cells()) == 21 + 21 - 15
    single = peer.build(frame, ["region", "fylke", "hovedint"])
    assert len(single.tables) == 1 and len(single.cells()) == 21


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=9), min_size=8, max_size=8))
def test_cell_counts_equal_brute_force_sums(counts: list[int]) -> None:
    frame = _linked_frame(counts)
    built = peer.build(frame, ["region", "fylke", "kostragr", "hovedint"])
    got = peer.cell_counts(frame, built)
    for cell, value in got.items():
        mask = pd.Series(True, index=frame.index)
        for name, code in cell:
            if code != "Total":
                column = {"region": ["region", "fylke", "kostragr"]}.get(name, [name])
                mask &= frame[column].eq(code).any(axis=1)
        assert value == frame.loc[mask, "ant"].sum(), cell


def test_z3_sizes_match_what_easysdctable_reports() -> None:
    """comparison/ProtectTableTest.Rmd: z3 with dimVar c(1:2, 4:6) is a "Single table, 1200
    cells", with 1:6 "Linked tables, 1350 cells"."""
    z3 = peer.load_data("z3", DATA)
    names = list(z3.columns)
    single = peer.build(z3, [names[i] for i in (0, 1, 3, 4, 5)])
    linked = peer.build(z3, names[:6])
    assert (len(single.tables), len(single.cells())) == (1, 1200)
    assert (len(linked.tables), len(linked.cells())) == (2, 1350)


# ----------------------------------------------------------------------------------------
# the comparison's configurations as statrecon tables (peer.table_set), against brute force

# the spec's figures (examples/tables/easysdctable/README.md): distinct cells, and primary
# cells per (protectZeros, maxN)
SPEC = {
    ("z2", False): (90, {(False, 2): 6, (False, 10): 23, (True, 2): 8, (True, 10): 25}),
    ("z2", True): (100, {(False, 2): 7, (False, 10): 24, (True, 2): 9, (True, 10): 26}),
    ("z3", False): (800, {(False, 2): 165, (False, 10): 407, (True, 2): 277, (True, 10): 519}),
    ("z3", True): (900, {(False, 2): 173, (False, 10): 436, (True, 2): 288, (True, 10): 551}),
    ("sosialFiktiv", False): (9140, {(False, 2): 1074, (False, 10): 3373, (True, 2): 1621,
                                     (True, 10): 3920}),
    ("sosialFiktiv", True): (9440, {(False, 2): 1074, (False, 10): 3379, (True, 2): 1621,
                                    (True, 10): 3926}),
}
# the spec's tables: each dimension as its columns, finest first (step 2 of the README; z2
# has no mnd)
SPEC_TABLES = {
    False: [[("region", "fylke"), ("hovedint",), ("mnd",)]],
    True: [[("region", "fylke"), ("hovedint",), ("mnd",)],
           [("region", "kostragr"), ("hovedint",), ("mnd",)]],
}
RULES = [(False, 2), (False, 10), (True, 2), (True, 10)]
Brute = dict[frozenset[tuple[str, str]], int]


def _brute_table(frame: pd.DataFrame, dims: list[tuple[str, ...]]) -> Brute:
    """Every cell of one table by pandas groupby: each dimension at its total or at one of
    its columns; a cell is its non-total (dimension, code) pairs, the dimension named after
    its finest column."""
    cells: Brute = {}
    for levels in itertools.product(*[[None, *d] for d in dims]):
        chosen = [(d[0], col) for d, col in zip(dims, levels, strict=True) if col]
        if not chosen:
            cells[frozenset()] = int(frame["ant"].sum())
            continue
        sums = frame.groupby([col for _, col in chosen])["ant"].sum()
        for codes, total in sums.items():
            codes = codes if isinstance(codes, tuple) else (codes,)
            key = frozenset((d, str(c)) for (d, _), c in zip(chosen, codes, strict=True))
            cells[key] = int(total)
    return cells


def _brute(frame: pd.DataFrame, tables: list[list[tuple[str, ...]]]) -> list[Brute]:
    found = [_brute_table(frame, dims) for dims in tables]
    union: Brute = {}
    for cells in found:
        for key, value in cells.items():
            assert union.setdefault(key, value) == value, key  # one sum per key
    return found


@functools.cache
def _brute_of(name: str, linked: bool) -> list[Brute]:
    frame = peer.load_data(name, DATA)
    spec = [[d for d in dims if d[0] in frame.columns] for dims in SPEC_TABLES[linked]]
    return _brute(frame, spec)


def _primary(cells: Brute, protect_zeros: bool, max_n: int) -> set[frozenset[tuple[str, str]]]:
    """ProtectTable's Gauss route: count <= maxN, and zeros only with protectZeros."""
    return {k for k, v in cells.items() if v <= max_n and (protect_zeros or v > 0)}


def _check_against(tables: TableSet, found: list[Brute], protect_zeros: bool, max_n: int) -> None:
    union = {k: v for cells in found for k, v in cells.items()}
    keys = tables.keys()
    assert len(keys) == len(set(keys)) == len(union)
    assert dict(zip(keys, [int(v) for v in tables.values()], strict=True)) == union
    assert set(peer.primary_keys(tables)) == _primary(union, protect_zeros, max_n)
    assert all(c.protection == (0, 0) for c in tables.cells())
    assert [len(t.cells) for t in tables.tables] == [len(cells) for cells in found]
    tables.equations().check(tables.values())


@pytest.mark.parametrize(("name", "linked"), list(SPEC))
def test_configurations_have_the_specs_cells_and_primary_cells(name: str, linked: bool) -> None:
    cells, primaries = SPEC[(name, linked)]
    found = _brute_of(name, linked)
    union = {k: v for table in found for k, v in table.items()}
    assert len(union) == cells
    for protect_zeros, max_n in RULES:
        assert len(_primary(union, protect_zeros, max_n)) == primaries[(protect_zeros, max_n)]
        tables = peer.table_set(name, linked, protect_zeros, max_n)
        assert len(tables.tables) == (2 if linked else 1)
        _check_against(tables, found, protect_zeros, max_n)


@pytest.mark.parametrize("name", ["z2", "z3", "sosialFiktiv"])
def test_linked_tables_share_their_common_cells_once(name: str) -> None:
    tables = peer.table_set(name, True, False, 2)
    first, second = _brute_of(name, True)
    common = set(first) & set(second)
    # what is common: the grand total and the region codes, crossed with every code of
    # the other dimensions; the fylke and kostragr codes are each in their own table
    region_codes = {c for k in first for d, c in k if d == "region"}
    assert {c for k in common for d, c in k if d == "region"} < region_codes
    keys = tables.keys()
    shared = [k for k in keys if len(tables.where(k)) == 2]
    assert set(shared) == common and len(common) > 0
    assert len(keys) == len(first) + len(second) - len(common)
    for key in shared:
        (_, a), (_, b) = tables.where(key)
        assert {v: c for v, c in a.items() if c != "Total"} == dict(key)
        assert {v: c for v, c in b.items() if c != "Total"} == dict(key)
    rows = tables.equations().matrix.tocsr()
    patterns = {(tuple(rows[r].indices), tuple(rows[r].data)) for r in range(rows.shape[0])}
    assert len(patterns) == rows.shape[0]  # an equation both tables imply is written once


def test_a_table_that_does_not_add_up_is_caught() -> None:
    """The additivity check of the tests above can fail: one changed cell breaks it."""
    tables = peer.table_set("z2", True, False, 2)
    values = list(tables.values())
    tables.equations().check(values)
    leaf = next(i for i, k in enumerate(tables.keys()) if ("region", "A") in k and len(k) == 2)
    values[leaf] += 1
    with pytest.raises(StatreconError, match="does not add up"):
        tables.equations().check(values)


def test_z2s_single_child_code_is_the_one_duplicated_sum() -> None:
    """z2's fylke 4 holds one region, B: its 5 cells repeat B's (sdcTable drops such codes
    internally, so a count of distinct sums is 85 / 95); no other data set has one."""
    for linked in (False, True):
        tables = peer.table_set("z2", linked, False, 2)
        pairs = peer.single_child_cells(tables)
        assert len(pairs) == 5
        for child, parent in pairs.items():
            assert ("region", "B") in child and ("region", "4") in parent
            assert tables.cell(child).value == tables.cell(parent).value
    assert not peer.single_child_cells(peer.table_set("sosialFiktiv", True, False, 2))


def test_14160_cells_is_dimvar_with_mnd2() -> None:
    """A linked sosialFiktiv of 14,160 cells is dimVar 1:6: mnd2 nests mnd, so mnd becomes a
    hierarchy of 6 codes (9,440 x 6 / 4); the comparison's dimVar is 1:5 (9,440 cells)."""
    x = peer.load_data("sosialFiktiv", DATA)
    names = list(x.columns)
    assert len(peer.build(x, names[:6]).cells()) == 14160
    assert len(peer.build(x, names[:5]).cells()) == 9440


def test_configurations_come_from_the_comparison() -> None:
    found = peer.configurations()
    assert len(found) == len(set(found)) == 24
    assert {(n, linked) for n, linked, _, _ in found} == set(SPEC)
    assert {(z, m) for _, _, z, m in found} == set(RULES)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8),
       st.booleans(), st.integers(min_value=1, max_value=3), st.booleans())
def test_table_sets_of_tiny_frames_equal_brute_force(counts: list[int], linked: bool,
                                                     max_n: int, protect_zeros: bool) -> None:
    frame = _linked_frame(counts)
    columns = ["region", "fylke", "kostragr", "hovedint"] if linked else \
        ["region", "fylke", "hovedint"]
    tables = peer.mark(peer.tables_of(frame, columns, "tiny"), protect_zeros, max_n)
    spec = [[("region", "fylke"), ("hovedint",)]]
    if linked:
        spec.append([("region", "kostragr"), ("hovedint",)])
    _check_against(tables, _brute(frame, spec), protect_zeros, max_n)
