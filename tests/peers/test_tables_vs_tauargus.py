"""statrecon's table audit next to tau-Argus's (pytauargus): on tau-Argus's own test table, for
each suppression pattern tau-Argus makes, statrecon's LP intervals equal tau-Argus's realized
intervals cell by cell (with tau-Argus's a-priori box), and its integer intervals lie inside
them. Skipped without pytauargus."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import load_peer

from statrecon.runs.tables import audit_tables
from statrecon.tables import CellStatus, TableSet
from statrecon.tables.tauargus import read_arb

ROOT = Path(__file__).resolve().parents[2]
ARB = ROOT / "examples" / "tables" / "tauargus" / "TestTable.arb"
LETTER = {"S": CellStatus.SAFE, "U": CellStatus.PRIMARY, "M": CellStatus.SECONDARY,
          "P": CellStatus.PROTECTED}


def _keys_by_codes(tables: TableSet) -> dict[tuple[str, ...], Any]:
    """Our cell keys by their codes without tau-Argus's padding (as pytauargus gives them)."""
    return {tuple(c.strip() for _, c in cell.codes): key
            for key, cell in zip(tables.keys(), tables.cells(), strict=True)}


def _with_tau_statuses(tables: TableSet, cells: Any) -> TableSet:
    """Our reading of pp.tab with the statuses tau-Argus ended with."""
    variables = tables.tables[0].variables
    letters = {tuple(str(row[v]) for v in variables): row["status"]
               for _, row in cells.iterrows()}
    statuses = {}
    for codes, key in _keys_by_codes(tables).items():
        cell = tables.cell(key)
        letter = letters.get(codes)
        if letter in LETTER and cell.status is not CellStatus.EMPTY:
            statuses[key] = LETTER[letter]
    return tables.with_statuses(statuses)


@pytest.mark.parametrize("method", ["MOD", "OPT"])
def test_lp_intervals_equal_tau_argus_and_integer_ones_lie_inside(method: str) -> None:
    pytest.importorskip("pytauargus", exc_type=ImportError)
    peer = load_peer("tauargus")
    tau = peer.audit(peer.TauTable.from_arb(ARB), method)
    ours = _with_tau_statuses(read_arb(ARB), tau.suppression.cells)
    result = audit_tables(ours, apriori="pytauargus")
    by_key = dict(zip(result.keys, result.result.cells, strict=True))
    assert len(by_key) == len(tau.cells) > 8
    keys = _keys_by_codes(ours)
    for _, row in tau.cells.iterrows():
        name = f"Size={row['Size']}, Region={row['Region']}"
        cell = by_key[keys[(str(row["Size"]), str(row["Region"]))]]
        assert cell.lp.proven, name
        lo, hi = float(cell.lp.lower.value), float(cell.lp.upper.value)
        assert lo == pytest.approx(row["realized_lower"], abs=1e-6), name
        assert hi == pytest.approx(row["realized_upper"], abs=1e-6), name
        assert cell.integer is not None and cell.integer.proven, name
        assert cell.lp.lower.value <= cell.integer.lower.value <= cell.value
        assert cell.value <= cell.integer.upper.value <= cell.lp.upper.value
