"""A table as the audit's problem (``problem_from_tables``), checked end to end against brute
force: random small hierarchical tables (a 2-level hierarchy times a flat variable, totals
computed), a random set of suppressed cells; every integer completion of the suppressed cells
that keeps the published cells and the additivity of the table is enumerated, and each
suppressed cell's integer interval must be exactly their min and max."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.intervals import AuditOptions
from statrecon.engines.intervals.tables import apriori_box, problem_from_tables
from statrecon.errors import StatreconError
from statrecon.runs.tables import audit_tables
from statrecon.tables import CellStatus, Hierarchy, TableSet
from statrecon.tables.frames import table_from_frame

REGION = Hierarchy.from_children("region", {"Total": ("N", "S"), "N": ("n1", "n2"),
                                            "S": ("s1",)})
LEAVES = [(r, k) for r in ("n1", "n2", "s1") for k in ("a", "b")]


def small_table(values: list[int], hidden: list[bool]) -> TableSet:
    frame = pd.DataFrame({"region": [r for r, _ in LEAVES], "kind": [k for _, k in LEAVES],
                          "count": values})
    table = table_from_frame(frame, ["region", "kind"], "count",
                             hierarchies={"region": REGION})
    tables = TableSet((table,))
    keys = tables.keys()
    return tables.with_statuses({keys[i]: CellStatus.PRIMARY
                                 for i, h in enumerate(hidden) if h
                                 and tables.cells()[i].status is not CellStatus.EMPTY})


def brute_force(tables: TableSet) -> dict[int, tuple[int, int | None]]:
    """Per suppressed cell, (min, max) over every integer completion within 0..2*total+1;
    max None when a completion reaches the search bound (unbounded)."""
    p = problem_from_tables(tables)
    A = p.matrix.toarray()
    values = np.array([int(v) for v in p.values])
    hidden = [j for j, h in enumerate(p.hidden) if h]
    bound = 2 * int(values.max()) + 1
    found: dict[int, list[int]] = {j: [] for j in hidden}
    for combo in itertools.product(range(bound + 1), repeat=len(hidden)):
        x = values.copy()
        x[hidden] = combo
        if not (A @ x == 0).all():
            continue
        for j, v in zip(hidden, combo, strict=True):
            found[j].append(v)
    return {j: (min(v), None if max(v) == bound else max(v)) for j, v in found.items()}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=6, max_size=6),
       st.sets(st.integers(0, 17), min_size=1, max_size=3))
def test_integer_intervals_of_a_table_equal_brute_force(values: list[int],
                                                        chosen: set[int]) -> None:
    tables = small_table(values, [i in chosen for i in range(18)])
    p = problem_from_tables(tables)
    suppressed = [j for j, h in enumerate(p.hidden) if h]
    if not suppressed or len(suppressed) > 3:
        return  # nothing to audit, or too many for the brute force
    oracle = brute_force(tables)
    result = audit_tables(tables, AuditOptions(time_limit=None))
    for cell in result.result.cells:
        assert cell.integer is not None and cell.integer.proven
        low, high = oracle[cell.cell]
        assert cell.integer.lower.value == low
        assert cell.integer.upper.value == (None if high is None else Fraction(high))
        assert cell.lp.lower.value <= low  # the LP relaxation is never tighter
        if high is not None:
            assert cell.lp.upper.value is not None and cell.lp.upper.value >= high


def test_a_negative_cell_is_refused_with_its_name() -> None:
    frame = pd.DataFrame({"kind": ["a", "b"], "amount": [5, -2], "n": [3, 1]})
    table = table_from_frame(frame, ["kind"], "amount", frequency="n")
    with pytest.raises(StatreconError, match=r"kind=b.*negative"):
        problem_from_tables(TableSet((table,)))


def test_each_peers_a_priori_box_by_its_name() -> None:
    """Issue 28, defect 6: tau-Argus 4.1 bounds every cell by [0, 1.5 x the largest cell]
    (its TableSet.maxTabVal); pytauargus by [smallest, largest]; statrecon's default knows
    only that a cell is at least 0."""
    tables = small_table([1, 2, 3, 5, 1, 1], [False] * 18)
    tau = problem_from_tables(tables, apriori="tau-argus")
    assert set(tau.upper) == {Fraction(3, 2) * max(tau.values)}
    assert set(tau.lower) == {Fraction(0)}
    peer = problem_from_tables(tables, apriori="pytauargus")
    assert set(peer.upper) == {max(peer.values)} and set(peer.lower) == {min(peer.values)}
    plain = problem_from_tables(tables)
    assert set(plain.upper) == {None} and set(plain.lower) == {Fraction(0)}
    assert apriori_box((Fraction(-2), Fraction(4)), "tau-argus") == (Fraction(-3), Fraction(6))
    assert apriori_box((Fraction(-2), Fraction(-1)), "tau-argus") == (Fraction(-3), Fraction(0))
