"""The one incremental elimination (engines/solvers/elimination.py), against FLINT's ranks:
modulo a prime and exactly, a vector reduces to nothing exactly when it is in the span of
those added before, the basis stays reduced, a tag carries each row's combination of the
inputs, and planning then committing a step leaves the basis :meth:`add` leaves."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import flint
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.solvers.elimination import (
    SparseBasis,
    Vec,
    axpy,
    axpy_support,
    reindex,
)
from statrecon.engines.solvers.modp import PRIMES

SMALL_P = 7  # a small prime makes accidental dependencies (and cancellations) common
N = 6


def vectors(values: st.SearchStrategy[int]) -> st.SearchStrategy[list[dict[int, int]]]:
    entry = st.dictionaries(st.integers(0, N - 1), values, max_size=N)
    return st.lists(entry, min_size=1, max_size=9)


def _rank_mod(vs: list[dict[int, int]], p: int) -> int:
    if not vs:
        return 0
    return int(flint.nmod_mat(len(vs), N, [v.get(c, 0) % p for v in vs for c in range(N)],
                              p).rank())


def _rank_exact(vs: list[dict[int, int]]) -> int:
    if not vs:
        return 0
    return int(flint.fmpq_mat(len(vs), N, [v.get(c, 0) for v in vs for c in range(N)]).rank())


def _clean(v: dict[int, int], p: int | None) -> Vec:
    if p is None:
        return {c: flint.fmpq(a) for c, a in v.items() if a}
    return {c: a % p for c, a in v.items() if a % p}


def _check_reduced(b: SparseBasis) -> None:
    """Every row has its pivot alone: no row holds a pivot column; holders is exact."""
    for q, rest in b.rows.items():
        assert q not in rest and not set(rest) & set(b.rows)
        assert all(a for a in rest.values())
        for c in rest:
            assert q in b.holders[c]
    for c, hs in b.holders.items():
        assert all(c in b.rows[h] for h in hs)


@pytest.mark.parametrize("p", [SMALL_P, PRIMES[0], None])
@settings(max_examples=80, deadline=None)
@given(vs=vectors(st.integers(-3, 3)), first=st.booleans())
def test_a_vector_is_in_the_span_exactly_when_flint_says_so(vs: list[dict[int, int]],
                                                            first: bool, p: int | None) -> None:
    b = SparseBasis(p)
    rank = _rank_mod if p is not None else (lambda vs, _: _rank_exact(vs))
    added: list[dict[int, int]] = []
    for v in vs:
        r = b.reduce(_clean(v, p))
        in_span = rank([*added, v], p) == rank(added, p)
        assert (not r) is in_span
        if r:
            b.add(r, min(r) if first else max(r))
            added.append(v)
        assert b.rank == rank(added, p)
        _check_reduced(b)
    for j in range(N):  # e_j is in the span exactly when j is a pivot with nothing else
        unit = {j: 1}
        assert (not b.reduce(_clean(unit, p))) is (rank([*added, unit], p) == rank(added, p))
        assert (not b.reduce(_clean(unit, p))) is (j in b.rows and not b.rows[j])


@settings(max_examples=60, deadline=None)
@given(vs=vectors(st.integers(-4, 4)))
def test_tags_carry_each_rows_combination_and_a_plan_commits_to_what_add_does(
        vs: list[dict[int, int]]) -> None:
    """Exact basis tagged with the inputs: row q (e_q + rest) is Σ tag[i] · input i."""
    planned, added = SparseBasis(None, tagged=True), SparseBasis(None, tagged=True)
    inputs: dict[int, Vec] = {}
    for i, v in enumerate(vs):
        vec = _clean(v, None)
        tag: dict[int, Any] = {i: flint.fmpq(1)}
        r = planned.reduce(vec, tag)
        tag2: dict[int, Any] = {i: flint.fmpq(1)}
        r2 = added.reduce(vec, tag2)
        assert r == r2 and tag == tag2
        inputs[i] = vec
        if not r:  # in the span: the tag combines v and earlier inputs into nothing
            assert _combine(inputs, tag) == {}
            continue
        q = min(r, key=lambda c: (len(planned.holders.get(c, ())), c))
        rank = planned.rank
        plan = planned.plan(dict(r), q, dict(tag))
        assert planned.rank == rank  # a plan changes nothing
        units = plan.units()
        planned.commit(plan)
        added.add(r, q, tag)
        assert planned.rows == added.rows and planned.tags == added.tags
        assert units == sorted(j for j in (*plan.updates, q) if not planned.rows[j])
        _check_reduced(planned)
        assert planned.tags is not None
        for q2, rest in planned.rows.items():
            assert _combine(inputs, planned.tags[q2]) == {q2: 1, **rest}


def _combine(inputs: dict[int, Vec], tag: Vec) -> dict[int, Any]:
    out: dict[int, Any] = {}
    for i, coef in tag.items():
        axpy(out, -coef, inputs[i], None)
    return {c: -a for c, a in out.items()}


def test_exact_arithmetic_never_turns_integers_into_floats() -> None:
    b = SparseBasis(None)
    b.add(b.reduce({0: 3, 1: 1}), 0)
    assert b.rows == {0: {1: Fraction(1, 3)}}
    assert b.reduce({0: 1}) == {1: Fraction(-1, 3)}


def test_axpy_support_reports_the_support_it_changed() -> None:
    target = {0: 1, 1: 2}
    changed = axpy_support(target, 1, {1: 5, 2: 3}, 7)
    assert target == {0: 1, 2: 3} and sorted(changed) == sorted([~1, 2])
    index: Any = {1: {9}, 2: set()}
    from collections import defaultdict

    index = defaultdict(set, index)
    reindex(changed, 9, index)
    assert index[1] == set() and index[2] == {9}
