"""The pass that decides a large component's cells by propagation and moves
(``engines/intervals/settle.py``), against the brute-force oracles on tiny tables whose
hidden cells are each known within a few counts of their value (as a perturbed or rounded
release publishes them): every side it proves equals the oracles' LP and integer ends, every
proof re-checks from the problem alone (the multipliers by weak duality, the witness over
every equation), windows change what it proves only by time, and it does prove sides (the
property is not vacuous)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_intervals import SHAPES
from test_intervals_tables import integer_oracle, lp_oracle

from statrecon.engines.intervals import (
    AuditOptions,
    IntervalProblem,
    audit,
    check_cell,
    prepare,
)
from statrecon.engines.intervals.settle import applies, settle
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.errors import OptionError, StatreconError

SEEN = {"cells": 0, "settled": 0, "narrowed": 0}
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def known_within(draw: st.DrawFn) -> tuple[IntervalProblem, list[int], list[list[int]]]:
    """A tiny table, some cells hidden, each known within [v - a, v + b] (a, b <= 2, not
    below 0), and random windows over its cells."""
    build, shape = SHAPES[draw(st.sampled_from(sorted(SHAPES)))]
    size = int(np.prod(shape))
    leaves = np.array(draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)))
    t = build(leaves.reshape(shape))
    n = len(t.keys)
    hidden = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5, unique=True))
    p = t.problem(hidden, 1, [0] * n)
    below = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    above = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    p = replace(p, lower=tuple(max(Fraction(0), v - a) for v, a in zip(p.values, below,
                                                                          strict=True)),
                upper=tuple(v + b for v, b in zip(p.values, above, strict=True)))
    windows = draw(st.lists(st.lists(st.integers(0, n - 1), max_size=n), max_size=3))
    return p, hidden, windows


@SETTINGS
@given(known_within())
def test_settled_sides_equal_the_brute_force_oracles(case) -> None:  # type: ignore[no-untyped-def]
    p, hidden, windows = case
    assert applies(p)
    cap = max(int(u) for u in p.upper if u is not None)
    got = settle(prepare(p), hidden, Deadline.after(None), windows)
    lps, ints = lp_oracle(p, cap), integer_oracle(p, cap)
    SEEN["cells"] += len(hidden)
    SEEN["settled"] += len(got)
    for j, a in got.items():
        assert a.cell == j
        assert a.integer is not None
        assert (a.lp.lower.value, a.lp.upper.value) == lps[j]
        assert (a.integer.lower.value, a.integer.upper.value) == ints[j]
        assert check_cell(p, a) == []
        if (a.lp.lower.value, a.lp.upper.value) != (p.lower[j], p.upper[j]):
            SEEN["narrowed"] += 1
            assert a.attack.equations  # the equations that narrowed it are named


def test_the_pass_settles_cells() -> None:
    """Run after the property above (same file, in order): it settled cells, some of them
    narrowed by the equations (their certificates carry multipliers), not every one."""
    assert SEEN["cells"] > 0
    assert 0 < SEEN["settled"] <= SEEN["cells"], SEEN
    assert SEEN["narrowed"] > 0, SEEN


def _pinned_pair() -> IntervalProblem:
    return IntervalProblem(
        matrix=sp.csr_matrix(np.array([[1, 1, -1]], dtype=np.int64)), rhs=(0,),
        values=(Fraction(1), Fraction(1), Fraction(2)), hidden=(True, True, True),
        lower=(Fraction(0), Fraction(0), Fraction(2)),
        upper=(Fraction(1), Fraction(1), Fraction(4)), scale=1,
        cell_names=("a", "b", "a+b"), equation_names=("a + b = a+b",))


def test_a_pinned_pair_is_settled_by_its_margin() -> None:
    """Two cells of 1 each known within [0, 1], their margin of 2 within [2, 4]: all three
    are pinned, by the margin's equation alone."""

    p = _pinned_pair()
    got = settle(prepare(p), [0, 1, 2], Deadline.after(None))
    assert sorted(got) == [0, 1, 2]
    for a in got.values():
        assert (a.lp.lower.value, a.lp.upper.value) == (a.value, a.value)
        assert a.verdict == "disclosed"
        assert a.attack.equations == ("a + b = a+b",)
        assert check_cell(p, a) == []


def test_a_problem_it_cannot_certify_is_left_alone() -> None:
    """Counts of 1/2 (scale 2) or a cell without an upper bound: nothing settled."""
    base = IntervalProblem(
        matrix=sp.csr_matrix(np.array([[1, 1, -1]], dtype=np.int64)), rhs=(0,),
        values=(Fraction(1), Fraction(1), Fraction(2)), hidden=(True, True, True),
        lower=(Fraction(0),) * 3, upper=(Fraction(2),) * 3, scale=1,
        cell_names=("a", "b", "t"), equation_names=("e",))
    assert applies(base)
    assert not applies(replace(base, scale=2))
    assert not applies(replace(base, upper=(Fraction(2), None, Fraction(2))))
    assert settle(prepare(replace(base, upper=(Fraction(2), None, Fraction(2)))), [0, 1],
                  Deadline.after(None)) == {}


def test_windows_are_checked() -> None:
    with pytest.raises(OptionError):
        AuditOptions(windows=((0, -1),))
    with pytest.raises(StatreconError, match="beyond the problem's 3 cells"):
        audit(_pinned_pair(), options=AuditOptions(windows=((0, 3),)))


def test_a_certificate_that_implies_less_settles_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each certificate is checked in integers before a side is claimed: with every
    derivation replaced by the empty one (the cells' own bounds), the pinned pair above is
    not settled, though its witnesses reach the propagated bounds."""

    from statrecon.engines.intervals import settle as settle_module

    monkeypatch.setattr(settle_module.Derivations, "multipliers",
                        lambda self, var, side: {})
    p = _pinned_pair()
    assert settle(prepare(p), [0, 1, 2], Deadline.after(None)) == {}
