"""The fast method's second Gaussian order (``engines.suppression.portfolio``): on small linked
tables whose candidates include zero cells, ``protect`` returns a pattern that the audit
engine run from scratch finds protecting every primary cell, never above the cost of the
default order run alone (the rest runs only when the first run was quick: on a loaded
machine it may not); and on a fixed table offering zeros last does win.
The brute-force oracle of ``test_suppression`` checks the exact method, whose optimum it
is compared with here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_intervals_tables import Tables, flat, linked
from test_suppression import protects

from statrecon.engines.intervals import IntervalProblem
from statrecon.engines.suppression import ProtectOptions, ProtectResult, prepare_run, protect
from statrecon.engines.suppression import portfolio as suppression_portfolio
from statrecon.engines.suppression.fast import fast
from statrecon.engines.suppression.portfolio import zeros_last

NONE = ProtectOptions(time_limit=None)


def three_linked(leaves: np.ndarray) -> Tables:
    """A x B, A x C and B x C, linked (A: 2 codes, B: leaves' second axis, C: 2)."""
    hiers = {"A": flat("a", 2), "B": flat("b", leaves.shape[1]), "C": flat("c", 2)}
    return linked(hiers, [("A", "B"), ("A", "C"), ("B", "C")], leaves)


def problem_of(leaves: np.ndarray) -> IntervalProblem:
    """The cells of 1 are primary (the first three); every other cell may be suppressed."""
    t = three_linked(leaves)
    return t.problem([j for j, v in enumerate(t.values) if v == 1][:3])


def alone(p: IntervalProblem, zeros_at_end: bool) -> ProtectResult:
    run = prepare_run(p, [not h for h in p.hidden], None, NONE)
    return fast(run, zeros_last(run) if zeros_at_end else None)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 3).flatmap(lambda nb: st.lists(
    st.integers(0, 3), min_size=4 * nb, max_size=4 * nb).map(
        lambda v: np.array(v).reshape(2, nb, 2))))
def test_the_portfolio_keeps_the_cheaper_protecting_pattern(leaves: np.ndarray) -> None:
    p = problem_of(leaves)
    if not any(p.hidden):
        return
    got = protect(p, candidates=[not h for h in p.hidden], options=NONE)
    one = alone(p, False)
    if got.status == "infeasible":
        assert one.status == "infeasible"
        return
    assert got.status == "feasible" and protects(p, got.hidden)
    assert got.audit.all_protected and len(got.audit.cells) == sum(p.hidden)
    assert got.cost <= one.cost  # the swap moves may go below both orders


def test_offering_zeros_last_wins_on_a_fixed_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suppression_portfolio, "QUICK_S", 60.0)  # however loaded the machine
    monkeypatch.setattr(suppression_portfolio, "FLOOR_S", 60.0)
    p = problem_of(np.array([[[1, 3], [0, 1], [1, 0]], [[3, 3], [0, 3], [3, 1]]]))
    one, two = alone(p, False), alone(p, True)
    assert one.cost == 5 and two.cost == 3
    got = protect(p, candidates=[not h for h in p.hidden], options=NONE)
    assert got.cost == 3 and protects(p, got.hidden) and "zero cells last" in got.note
    exact = protect(p, candidates=[not h for h in p.hidden],
                    options=ProtectOptions(method="exact", time_limit=None))
    assert exact.status == "optimal" and exact.cost == 3


def test_the_audit_caches_share_one_set_of_cells_per_component() -> None:
    """Cache keys name a cell's component by its cells: one frozenset per component, not one
    per cell (30,000 primary cells of one 40,000-cell component made 24 GB of keys)."""
    p = problem_of(np.array([1, 0, 0, 3, 0, 2, 1, 0, 2, 1, 0, 1]).reshape(2, 3, 2))
    run = prepare_run(p, [not h for h in p.hidden], None, NONE)
    pattern = frozenset(range(p.n_cells))  # everything hidden: one component
    prep, _ = run.oracle.screen(pattern, run.primaries, run.deadline)
    run.oracle.audit(pattern, run.deadline, False, run.primaries)
    keys = [k[-1] for k in (*run.oracle.screens, *run.oracle.cache)]
    assert len(keys) >= 2 * len(run.primaries) >= 4
    assert len({id(k) for k in keys}) == len({prep.component_of[i] for i in run.primaries})
