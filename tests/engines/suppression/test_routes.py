"""Routes (``engines.suppression.routes``): the cells whose suppression lets a primary cell
move by its protection level, and the change that moves it. What a route proves (its
witness) must be a completion of the table, checked here independently in Fractions; the
cells it proposes must be candidates not yet suppressed; and on a table worked by hand it
must pick the cheap cells."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from test_suppression import instances

from statrecon.engines.intervals import IntervalProblem
from statrecon.engines.intervals.problem import prepare
from statrecon.engines.intervals.reach import reach, targets
from statrecon.engines.intervals.results import ScaledPairs
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression import ProtectOptions, prepare_run
from statrecon.engines.suppression.cuts import Cut
from statrecon.engines.suppression.fast import _cover
from statrecon.engines.suppression.routes import Routes


def _routes(p: IntervalProblem, candidates: list[int], costs: list[int]) -> Routes:
    movable = np.array(sorted({*candidates, *(j for j, h in enumerate(p.hidden) if h)}))
    return Routes(p, movable, [float(c) for c in costs])


def _is_completion(p: IntervalProblem, pairs: list[tuple[int, Fraction]]) -> bool:
    x = list(p.values)
    for j, v in pairs:
        x[j] = v
    A = sp.csr_matrix(p.matrix)
    for k in range(A.shape[0]):
        s, e = A.indptr[k], A.indptr[k + 1]
        if sum(int(a) * x[int(c)] for c, a in zip(A.indices[s:e], A.data[s:e],
                                                  strict=True)) != p.rhs[k]:
            return False
    return all(p.lower[j] <= x[j] and (p.upper[j] is None or x[j] <= p.upper[j])
               for j in range(p.n_cells))


@settings(max_examples=150, deadline=None)
@given(instances())
def test_a_route_proposes_open_candidates_and_its_witness_is_a_completion(
        case: tuple[IntervalProblem, list[int], list[int]]) -> None:
    p, candidates, costs = case
    routes = _routes(p, candidates, costs)
    mask = np.array(p.hidden, dtype=bool)
    for i in (j for j, h in enumerate(p.hidden) if h):
        low, up = p.protection_of(i)
        asks = [(side, level, integer) for side, level in
                ((True, max(up, Fraction(1))), (False, max(low, Fraction(1))))
                for integer in (False, True)]
        for side, level, integer in asks:
            got = routes.route(mask, i, side, level, integer=integer)
            if got is None:
                continue
            assert set(got.cells) <= set(candidates) and not any(mask[j] for j in got.cells)
            if got.witness is None:
                continue
            pairs = list(got.witness)
            moved = {j for j, v in pairs if v != p.values[j]}
            assert moved <= {*got.cells, *(j for j, h in enumerate(p.hidden) if h)}
            assert _is_completion(p, pairs)
            assert got.value == dict(pairs)[i]
            assert (got.value >= p.values[i] + level) if side else \
                (got.value <= p.values[i] - level)


NAMES = ["r1c1", "r1c2", "r1T", "r2c1", "r2c2", "r2T", "Tc1", "Tc2", "TT"]


def _margins_table() -> tuple[IntervalProblem, list[str]]:
    """A 2 x 2 table with its margins; r1c1 = 10 primary, levels 5 both ways."""
    names = NAMES
    v = [10, 6, 16, 7, 3, 10, 17, 9, 26]
    at = {n: k for k, n in enumerate(names)}
    sums = [("r1T", ["r1c1", "r1c2"]), ("r2T", ["r2c1", "r2c2"]), ("TT", ["r1T", "r2T"]),
            ("Tc1", ["r1c1", "r2c1"]), ("Tc2", ["r1c2", "r2c2"]), ("TT", ["Tc1", "Tc2"])]
    rows = []
    for total, parts in sums:
        row = [0] * 9
        row[at[total]] = -1
        for part in parts:
            row[at[part]] = 1
        rows.append(row)
    p = IntervalProblem(
        matrix=sp.csr_matrix(np.array(rows, dtype=np.int64)), rhs=(0,) * 6,
        values=tuple(Fraction(x) for x in v), hidden=tuple(n == "r1c1" for n in names),
        lower=(Fraction(0),) * 9, upper=(None,) * 9, scale=1, cell_names=tuple(names),
        equation_names=tuple(f"e{k}" for k in range(6)),
        protection=tuple((Fraction(5), Fraction(5)) if n == "r1c1" else
                         (Fraction(0), Fraction(0)) for n in names))
    return p, names


def test_a_route_takes_the_cheap_cells_of_the_table_worked_by_hand() -> None:
    """A 2 x 2 table with its margins (cells r1c1 r1c2 r1T / r2c1 r2c2 r2T / Tc1 Tc2 TT).
    Inner cells cost 1, row totals and TT 100, column totals 150. r1c1 = 10 must be able to
    rise by 5: the inner circuit (r1c1 +5, r1c2 -5, r2c1 -5, r2c2 +5; r1c2 and r2c1 hold 6
    and 7) costs 3 a unit, any way through a margin at least 201: the route is the inner
    three cells and its witness that circuit. Down by 7 the inner circuit has room for 3
    units only (r2c2 = 3): the cheapest change sends 3 units round it and 4 through r2c1,
    r1T and r2T (1 + 100 + 100 a unit): cost 9 + 804 = 813, every other way costs more. The
    LP's price is linear, so the route keeps r1c2 and r2c2 although r2c1, r1T and r2T alone
    would do (7 units through them): pruning publishes such cells again at the end."""
    p, names = _margins_table()
    costs = [0 if n == "r1c1" else 150 if n.startswith("Tc") else 100 if "T" in n else 1
             for n in names]
    routes = _routes(p, [k for k in range(9) if k != 0], costs)
    got = routes.route(np.array(p.hidden, dtype=bool), 0, True, Fraction(5))
    assert got is not None
    assert sorted(names[j] for j in got.cells) == ["r1c2", "r2c1", "r2c2"]
    assert got.witness is not None and got.value == 15
    assert {names[j]: int(x) for j, x in got.witness} == {
        "r1c1": 15, "r1c2": 1, "r2c1": 2, "r2c2": 8}
    down = routes.route(np.array(p.hidden, dtype=bool), 0, False, Fraction(7))
    assert down is not None and down.witness is not None and down.value == 3
    assert {names[j]: int(x) for j, x in down.witness} == {
        "r1c1": 3, "r1c2": 9, "r2c1": 14, "r2c2": 0, "r1T": 12, "r2T": 14}
    assert sorted(names[j] for j in down.cells) == ["r1T", "r1c2", "r2T", "r2c1", "r2c2"]


def test_a_cut_is_covered_in_one_round() -> None:
    """The repair loop's fallback for a cell without a route (``fast._cover``): the cells
    added meet the whole cut (three cells of 2 for a cut of 5), cheapest per unit first,
    not one cell a round."""
    p, names = _margins_table()
    costs = [0 if n == "r1c1" else 1 for n in names]
    run = prepare_run(p, None, costs, ProtectOptions(time_limit=None))
    at = {n: k for k, n in enumerate(names)}
    cut = Cut({at["r1c2"]: Fraction(2), at["r2c1"]: Fraction(2), at["r2c2"]: Fraction(2),
               at["TT"]: Fraction(5)}, Fraction(5), 0, "lp")
    # TT (100) dearer per unit than the three cells of 2 (1 each): they go in, all three
    dear = prepare_run(p, None, [100 if n == "TT" else c for n, c in zip(names, costs,
                                                                            strict=True)],
                       ProtectOptions(time_limit=None))
    got = _cover(dear, cut, frozenset({0}))
    assert sorted(names[j] for j in got) == ["r1c2", "r2c1", "r2c2"]
    assert not cut.violated(frozenset({0, *got}))
    # at cost 1, TT covers the whole cut alone: the cheapest per unit, and enough
    assert [names[j] for j in _cover(run, cut, frozenset({0}))] == ["TT"]


def test_witnesses_of_an_earlier_pattern_are_kept_where_they_reach_further() -> None:
    """``reach(..., start=)``: a witness found under a part of the pattern (here: the inner
    circuit, r1c1 at 15, its level) is kept for the cell: the side it meets is not searched
    again (alone, the sweep finds its own, r1c1 at 16)."""
    p, names = _margins_table()
    hidden = tuple(n in ("r1c1", "r1c2", "r2c1", "r2c2") for n in names)
    prep = prepare(replace(p, hidden=hidden))
    earlier = targets(prep, [0])[0]
    pairs = ScaledPairs(np.array([0, 1, 3, 4]), np.array([15, 1, 2, 8]), 1)
    earlier.offer(True, Fraction(15), pairs)
    got = reach(prep, [0], Deadline.after(None), start={0: earlier})[0]
    assert got.upper is not None and got.upper[0] == 15 and got.upper[1] is pairs
    assert _is_completion(p, list(pairs))
    alone = reach(prep, [0], Deadline.after(None))[0]
    assert alone.upper is not None and alone.upper[0] == 16
