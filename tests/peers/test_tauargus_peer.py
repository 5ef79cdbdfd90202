"""tau-Argus (pytauargus) as a peer: its suppression and audit of its own test table, checked
for the facts statrecon's side-by-side comparison relies on. Skipped cleanly without
pytauargus; the table is bundled (examples/tables/tauargus/)."""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import load_peer

ROOT = Path(__file__).resolve().parents[2]
ARB = ROOT / "examples" / "tables" / "tauargus" / "TestTable.arb"


peer = load_peer("tauargus")


@pytest.fixture(scope="module")
def table() -> Any:
    pytest.importorskip("pytauargus", exc_type=ImportError)
    return peer.TauTable.from_arb(ARB)


def _raw_values(tab: Path) -> dict[tuple[str, str], Fraction]:
    """pp.tab's own Var2 column, decimal comma read exactly (independent of the engine)."""
    out = {}
    for line in tab.read_text().splitlines():
        fields = [f.strip().strip('"').strip() for f in line.split(";")]
        out[(fields[0], fields[1])] = Fraction(fields[2].replace(",", "."))
    return out


def test_without_pytauargus_the_peer_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pytauargus", None)
    assert not peer.available()
    bare = peer.TauTable(tab=tmp_path / "t.tab", rda=tmp_path / "t.rda",
                         explanatory=("A",), response="V")
    with pytest.raises(peer.PeerUnavailable, match="pip install pytauargus"):
        peer.read(bare)


def test_reading_pp_recomputes_the_totals_the_file_gets_wrong(table: Any) -> None:
    """pp.tab does not add up as given (3 equations); TestTable.arb reads it with
    READTABLE 1, which recomputes the totals: what tau-Argus audits is the recomputed table."""
    cells = peer.read(table)
    trees = peer.hierarchies(table)
    matrix, _names = peer.additivity(cells, trees, table.explanatory)
    assert len(cells) == 162
    assert np.abs(matrix @ cells["value"].to_numpy()).max() < 1e-6
    raw = _raw_values(table.tab)
    exact = pd.Series([raw[(s, r)] for s, r in zip(cells["Size"], cells["Region"],
                                                     strict=True)])
    residual = [sum(exact[j] * int(v) for j, v in zip(row.indices, row.data, strict=True))
                for row in matrix]
    assert sum(1 for r in residual if r != 0) == 3
    changed = cells[[float(raw[(s, r)]) != v for s, r, v in
                     zip(cells["Size"], cells["Region"], cells["value"], strict=True)]]
    assert set(zip(changed["Size"], changed["Region"], strict=True)) == {
        ("Total", "Total"), ("Total", "Os"), ("Total", "4"), ("4", "Total")}
    assert trees["Region"]["Total"] == ("Nr", "Os", "Ws", "Zd", "99")


@pytest.mark.parametrize("method", ["MOD", "OPT"])
def test_suppression_keeps_every_primary_and_leaves_no_cell_alone(table: Any,
                                                                  method: str) -> None:
    before = peer.read(table)
    primary = set(before.loc[before["status"] == "U", "cell"])
    result = peer.suppress(table, method)
    after = result.cells.set_index("cell")
    assert primary and result.primary_before == len(primary)
    assert (after.loc[sorted(primary), "status"] == "U").all()
    assert result.secondary > 0
    hidden = after["status"].isin(["U", "M"]).to_numpy()
    matrix, names = peer.additivity(result.cells, peer.hierarchies(table), table.explanatory)
    alone = [names[i] for i, row in enumerate(matrix) if hidden[row.indices].sum() == 1]
    assert alone == []  # a lone suppressed cell in an equation would be its published value


@pytest.mark.parametrize("method", ["MOD", "OPT"])
def test_realized_intervals_contain_the_values_and_are_the_lp(table: Any,
                                                              method: str) -> None:
    result = peer.audit(table, method)
    rows = result.cells
    hidden = set(result.suppression.cells.query("status in ['U', 'M']")["cell"])
    assert set(rows["cell"]) == hidden
    assert ((rows["realized_lower"] <= rows["value"] + 1e-6)
            & (rows["value"] <= rows["realized_upper"] + 1e-6)).all()
    assert rows["protected"].all()
    grand = result.suppression.cells.query("Size == 'Total' and Region == 'Total'")
    assert result.apriori == (0.0, float(grand["value"].iloc[0]))  # [0, grand total]
    lp = peer.reference_lp(result.suppression.cells, peer.hierarchies(table),
                           table.explanatory, result.apriori)
    both = rows.merge(lp, on="cell")
    assert len(both) == len(rows)
    assert np.allclose(both["realized_lower"], both["lp_lower"], atol=1e-6)
    assert np.allclose(both["realized_upper"], both["lp_upper"], atol=1e-6)


def test_the_primary_cells_alone_are_all_disclosed(table: Any) -> None:
    rows = peer.audit(table, None).cells
    assert len(rows) == 8 and (rows["status"] == "U").all()
    assert np.allclose(rows["realized_lower"], rows["value"])
    assert np.allclose(rows["realized_upper"], rows["value"])
    assert not rows["protected"].any()


def test_methods_the_engine_cannot_run_are_refused(table: Any) -> None:
    with pytest.raises(ValueError, match="GH: pytauargus's headless engine does not run"):
        peer.suppress(table, "GH(1,100,0)")
    with pytest.raises(ValueError, match="not a suppression method"):
        peer.suppress(table, "SIMPLE")


def test_a_microdata_table_with_and_without_primary_cells(tmp_path: Path) -> None:
    """A table built from microdata: MOD on a table with no primary cell returns it as is
    (pytauargus 0.6.0 itself crashes there), and with primaries the audit is the LP."""
    pytest.importorskip("pytauargus", exc_type=ImportError)
    rng = np.random.default_rng(3)
    weights = np.array([8, 8, 4, 1, 1]) / 22
    micro = pd.DataFrame({"A": rng.choice(list("abcde"), 120, p=weights),
                          "B": rng.choice(list("vwxyz"), 120, p=weights),
                          "V": rng.integers(1, 50, 120).astype(float)})
    none = peer.TauTable.from_microdata(micro, ["A", "B"], "V", "FREQ(1,30)", tmp_path / "a")
    quiet = peer.suppress(none, "MOD")
    assert quiet.primary_before == 0 and quiet.secondary == 0
    some = peer.TauTable.from_microdata(micro, ["A", "B"], "V", "FREQ(3,30)", tmp_path / "b")
    result = peer.audit(some, "MOD")
    assert result.suppression.primary_before > 0 and result.cells["protected"].all()
    lp = peer.reference_lp(result.suppression.cells, peer.hierarchies(some), some.explanatory,
                           result.apriori)
    both = result.cells.merge(lp, on="cell")
    assert np.allclose(both["realized_lower"], both["lp_lower"], atol=1e-6)
    assert np.allclose(both["realized_upper"], both["lp_upper"], atol=1e-6)
