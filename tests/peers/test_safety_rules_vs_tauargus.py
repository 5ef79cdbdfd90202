"""statrecon's tau-Argus safety rules (tables/safety.py, rules.table_with_safety_rules) next to
tau-Argus's own (pytauargus 0.6.0, its native engine) on the same microdata: the same primary
cells, each with the same protection levels, for every rule, at the record and the holding
level, with weights. Skipped without pytauargus.

Two differences, each the peer's and each pinned here:
- a nonnegative cell's lower protection level is capped at its value (it cannot go below 0);
  tau-Argus leaves it at the upper level (a level of at least 1 below a cell of 0.5);
- ``WGT(1)`` weighs the rules as tau-Argus's manual and batch reader say; pytauargus 0.6.0
  weighs them only with ``WGT(2)`` (its ``weight_on_safety = k >= 2``), which tau-Argus's batch
  reader refuses. So pytauargus runs with WGT(2) where statrecon reads WGT(1).
tau-Argus groups a holding's records only where they are consecutive in the file; the
microdata here are sorted by holding, as tau-Argus's manual asks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import load_peer

from statrecon.tables import CellStatus, Table
from statrecon.tables.rules import RuleColumns, TableSpec, table_with_safety_rules
from statrecon.tables.safety import parse_safety_rule

peer = load_peer("tauargus")


@pytest.fixture(scope="module")
def microdata() -> pd.DataFrame:
    pytest.importorskip("pytauargus", exc_type=ImportError)
    rng = np.random.default_rng(5)
    n = 60
    frame = pd.DataFrame({"A": rng.choice(list("abcd"), n, p=[.4, .3, .2, .1]),
                          "B": rng.choice(list("xyz"), n, p=[.5, .3, .2]),
                          "V": rng.integers(0, 100, n),
                          "W": rng.choice([1, 2, 3, 1.5], n),
                          "H": rng.choice([f"h{i:02d}" for i in range(25)], n)})
    frame.loc[0:3, "V"] = [500, 0, 0, 900]  # a dominant contributor, zeros
    return frame.sort_values("H", kind="stable").reset_index(drop=True)


def _tau_cells(frame: pd.DataFrame, rule: str, workdir: Path, *, holding: bool = False,
               weighted: bool = False) -> pd.DataFrame:
    columns = ["A", "B", "V"] + (["H"] if holding else []) + (["W"] if weighted else [])
    options: dict[str, Any] = {}
    if holding:
        options["holding_var"] = "H"
    if weighted:
        options.update(weight_var="W", weighted=True)
    table = peer.TauTable.from_microdata(frame[columns], ["A", "B"], "V", rule, workdir,
                                         **options)
    if weighted:  # the peer weighs the rules only with WGT(2) (module docstring)
        table = dataclasses.replace(table, safety_rules=(f"{rule}|WGT(2)",))
    return peer.read(table).set_index(["A", "B"])


def _ours(frame: pd.DataFrame, rule: str, *, holding: bool = False,
          weighted: bool = False) -> Table:
    spec = TableSpec(variables=["A", "B"], response="V", weight="W" if weighted else None)
    text = f"{rule}|WGT(1)" if weighted else rule
    return table_with_safety_rules(frame, spec, parse_safety_rule(text, "job.arb:5"),
                                   RuleColumns(holding="H" if holding else None))


def _differences(ours: Table, tau: pd.DataFrame) -> list[str]:
    found = []
    for cell in ours.cells:
        row = tau.loc[(cell.code("A"), cell.code("B"))]
        primary = row["status"] == "U"
        if primary != (cell.status is CellStatus.PRIMARY):
            found.append(f"{cell.name}: tau-Argus {row['status']}, statrecon {cell.status}")
        elif primary:
            lower, upper = cell.protection
            expected = (min(row["protection_lower"], row["value"]), row["protection_upper"])
            if not np.allclose((float(lower), float(upper)), expected, atol=1e-9):
                found.append(f"{cell.name}: tau-Argus {expected}, statrecon "
                             f"{(float(lower), float(upper))}")
    return found


@pytest.mark.parametrize("rule", [
    "FREQ(3,30)", "P(20,1)", "P(15,2)", "P(10,50,1)", "NK(2,80)", "NK(1,60)|NK(3,90)",
    "P(20,1)|FREQ(3,30)", "ZERO(5)|FREQ(2,10)", "NK(2,70)|P(10,1)|FREQ(4,25)|ZERO(3)",
    "NK(3,75)|NK(0,0)|FREQ(3,20)",
])
def test_individual_rules_as_tau_argus(microdata: pd.DataFrame, rule: str,
                                       tmp_path: Path) -> None:
    tau = _tau_cells(microdata, rule, tmp_path)
    ours = _ours(microdata, rule)
    assert (tau["status"] == "U").any()
    assert _differences(ours, tau) == []


@pytest.mark.parametrize("rule", [
    "P(10,1)|P(0,1)|P(20,1)", "FREQ(3,30)|FREQ(6,40)", "NK(2,80)|NK(0,0)|NK(1,50)",
    "P(15,1)|FREQ(2,10)|FREQ(6,20)",
])
def test_holding_rules_as_tau_argus(microdata: pd.DataFrame, rule: str,
                                    tmp_path: Path) -> None:
    tau = _tau_cells(microdata, rule, tmp_path, holding=True)
    ours = _ours(microdata, rule, holding=True)
    assert _differences(ours, tau) == []
    alone = _ours(microdata, rule.split("|")[0])  # the holding rule makes a difference
    held = {c.name for c in ours.cells if c.status is CellStatus.PRIMARY}
    assert held != {c.name for c in alone.cells if c.status is CellStatus.PRIMARY}


@pytest.mark.parametrize("rule", ["FREQ(3,30)", "P(20,1)", "NK(2,80)", "P(10,2)|FREQ(3,20)",
                                  "NK(1,50)|P(15,1)"])
def test_weighted_rules_as_tau_argus(microdata: pd.DataFrame, rule: str,
                                     tmp_path: Path) -> None:
    tau = _tau_cells(microdata, rule, tmp_path, weighted=True)
    ours = _ours(microdata, rule, weighted=True)
    assert _differences(ours, tau) == []
