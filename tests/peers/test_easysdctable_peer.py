"""easySdcTable's comparison as a peer: the transcribed table holds together, and the port of
ProtectTable's table building (benchmarks/peers/easysdctable.py) agrees with brute force on
tiny data and with the sizes easySdcTable itself reports for z3."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
from conftest import load_peer
from hypothesis import given, settings
from hypothesis import strategies as st

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
