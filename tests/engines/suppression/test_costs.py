"""tau-Argus's cost functions for secondary suppression (engines/suppression/costs.py, the
tables' costs in runs/tables.cell_costs, `tables protect --cost --cost-lambda`)."""

from __future__ import annotations

import math
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from conftest import CliRunner

from statrecon.engines.suppression.costs import (
    distance_costs,
    parse_cost_function,
    transform,
    tree_steps,
)
from statrecon.errors import StatreconError
from statrecon.runs.tables import cell_costs
from statrecon.tables import Cell, CellStatus, Hierarchy, Table, TableSet

ROOT = Path(__file__).resolve().parents[3]
ARB = ROOT / "examples" / "tables" / "tauargus" / "TestTable.arb"


def test_the_lambda_transformation() -> None:
    assert transform((F(4), F(9)), F(1, 2)) == (2, 3)
    assert transform((F(3),), F(2)) == (9,)
    assert transform((F(3),), F(1)) == (3,)
    (log,) = transform((F(np.e - 1),), F(0))
    assert math.isclose(float(log), 1.0, rel_tol=1e-8)
    with pytest.raises(StatreconError, match="lambda"):
        transform((F(1),), F(-1))


def test_cost_parts_as_tau_argus_writes_them() -> None:
    assert parse_cost_function("-1", "", "j.arb:3") == ("frequency", None, 1)
    assert parse_cost_function("-2", "0.5", "j.arb:3") == ("count", None, F(1, 2))
    assert parse_cost_function("-3", "", "j.arb:3") == ("distance", None, 1)
    assert parse_cost_function('"Var2_Cost"', "1", "j.arb:3") == ("cost", "Var2_Cost", 1)
    assert parse_cost_function("", "", "j.arb:3") == ("value", None, 1)
    for field, lam, words in (("-4", "", "-1"), ("-1", "x", "not a number"),
                              ("-1", "11", "from 0 to 10")):
        with pytest.raises(StatreconError, match=words) as caught:
            parse_cost_function(field, lam, "j.arb:3")
        assert caught.value.where == "j.arb:3"


def test_steps_along_a_hierarchy() -> None:
    """T -> a, b; a -> a1, a2: a1 to a2 is 2 steps (through a), a1 to b 3, a1 to T 2."""
    steps = tree_steps([-1, 0, 1, 1, 0])  # T, a, a1, a2, b
    assert steps[2, 3] == 2 and steps[2, 4] == 3 and steps[2, 0] == 2 and steps[1, 1] == 0
    assert (steps == steps.T).all()


def test_distance_is_to_the_nearest_primary_cell() -> None:
    flat = tree_steps([-1, 0, 0, 0])  # Total, x, y, z
    cost = distance_costs((4, 4), (flat, flat), [(1, 1)])
    assert cost[1, 1] == 0 and cost[1, 2] == 2 and cost[2, 2] == 4 and cost[0, 1] == 1
    two = distance_costs((4, 4), (flat, flat), [(1, 1), (3, 3)])
    assert two[3, 2] == 2
    assert (distance_costs((4, 4), (flat, flat), []) == 1).all()
    weighted = distance_costs((4, 4), (flat, flat), [(1, 1)], [(5, 5, 5, 5, 5), (1, 2, 3, 4, 5)])
    assert weighted[1, 2] == 2 and weighted[2, 1] == 5


def _small() -> TableSet:
    a = Hierarchy.flat("A", ["x", "y"])
    cells = []
    for code, value, freq, status in (("Total", 9, 5, CellStatus.SAFE),
                                      ("x", 4, 1, CellStatus.PRIMARY),
                                      ("y", 5, 4, CellStatus.SAFE)):
        cells.append(Cell((("A", code),), F(value), freq, status))
    return TableSet((Table("t", ("A",), {"A": a}, "v", "magnitude", 0, tuple(cells)),))


def test_the_cost_of_each_cell() -> None:
    tables = _small()
    assert cell_costs(tables, "count") is None
    order = {c.code("A"): j for j, c in enumerate(tables.cells())}
    freq = cell_costs(tables, "frequency")
    assert freq is not None and freq[order["y"]] == 4
    value = cell_costs(tables, "value", F(1, 2))
    assert value is not None and value[order["Total"]] == 3
    distance = cell_costs(tables, "distance")
    assert distance is not None and distance[order["y"]] == 2 and distance[order["Total"]] == 1


@pytest.mark.parametrize("cost", ["frequency", "distance", "value"])
def test_protect_with_a_cost_function(run_cli: CliRunner, tmp_path: Path, cost: str) -> None:
    out = tmp_path / "p.csv"
    code, stdout, err = run_cli("tables", "protect", str(ARB), "--out", str(out), "--cost",
                                cost, "--cost-lambda", "0.5", "--quiet")
    assert code == 0, err
    assert "integer audit of the primary cells: 9 protected" in stdout
    code, _, err = run_cli("tables", "protect", str(ARB), "--out", str(out), "--cost", "x")
    assert code == 1 and "frequency" in err
