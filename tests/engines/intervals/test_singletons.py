"""The singleton attacker (issue 28, item 10) against brute force: a respondent alone in a
suppressed cell knows its value; every integer completion that keeps that value is what
they cannot rule out."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_intervals_tables import Tables, flat, integer_oracle, linked

from statrecon.engines.intervals import AuditOptions, audit, prepare
from statrecon.engines.intervals.singletons import audit_singletons, pin, worst_by_cell

NO_LIMIT = AuditOptions(time_limit=None)


def _key(a: str, b: str) -> frozenset[tuple[str, str]]:
    return frozenset({("A", a), ("B", b)})


def _two_by_three(leaves: list[int]) -> Tables:
    return linked({"A": flat("a", 2), "B": flat("b", 3)}, [("A", "B")],
                  np.array(leaves).reshape(2, 3))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 3), min_size=6, max_size=6), st.data())
def test_the_singletons_view_equals_brute_force_over_its_completions(
        leaves: list[int], data: st.DataObject) -> None:
    t = _two_by_three(leaves)
    grand = t.values[t.grand()]
    hidden = data.draw(st.lists(st.sampled_from([j for j in range(len(t.keys))
                                                 if j != t.grand()]),
                                min_size=2, max_size=4, unique=True))
    p = t.problem(hidden, 1, [grand] * len(t.keys), None)
    singleton = data.draw(st.sampled_from(hidden))
    primaries = [j for j in hidden if j != singleton]
    found = audit_singletons(prepare(p), [singleton], primaries, NO_LIMIT)
    # the attacker's problem written out by hand, audited from scratch, and enumerated
    v = p.values[singleton]
    lower, upper = list(p.lower), list(p.upper)
    lower[singleton] = upper[singleton] = v
    theirs = replace(p, lower=tuple(lower), upper=tuple(upper))
    truth = integer_oracle(theirs, grand)
    fresh = {c.cell: c for c in audit(theirs, primaries, NO_LIMIT).cells}
    component = prepare(p).component_of
    expected = [j for j in primaries if component[j] == component[singleton]]
    assert [a.audit.cell for a in found] == expected
    for a in found:
        assert a.singleton == singleton
        assert a.audit.integer is not None and a.audit.integer.proven
        got = (a.audit.integer.lower.value, a.audit.integer.upper.value)
        assert got == truth[a.audit.cell]
        assert a.audit.verdict == fresh[a.audit.cell].verdict
        lo, hi = truth[a.audit.cell]
        assert (a.audit.verdict == "disclosed") == (lo == hi)


def test_two_primaries_protecting_only_each_other_are_disclosed_to_a_singleton() -> None:
    # rows a0, a1; columns b0..b2; the rectangle a0b0 (one contributor, 7), a0b1, a1b0,
    # a1b1 suppressed: a stranger cannot pin any of them; a0b0's own contributor pins all.
    t = _two_by_three([7, 12, 5, 4, 9, 6])
    names = t.keys
    hidden = [names.index(_key(a, b)) for a, b in (("a0", "b0"), ("a0", "b1"), ("a1", "b0"),
                                                   ("a1", "b1"))]
    p = t.problem(hidden, 1, [t.values[t.grand()]] * len(names), None)
    stranger = audit(p, hidden, NO_LIMIT)
    assert all(c.verdict == "protected" for c in stranger.cells)
    prepared = prepare(p)
    found = audit_singletons(prepared, [hidden[0]], hidden, NO_LIMIT)
    worst = worst_by_cell(found)
    assert {names[c] for c, a in worst.items() if a.audit.verdict == "disclosed"} == {
        _key("a0", "b1"), _key("a1", "b0"), _key("a1", "b1")}
    # pinning changes the singleton's component only, and not the prepared problem given
    seen = pin(prepared, hidden[0])
    assert prepared.problem.lower[hidden[0]] == 0
    assert seen.problem.lower[hidden[0]] == seen.problem.upper[hidden[0]] == Fraction(7)
    assert seen.component_of == prepared.component_of


def test_a_published_singleton_adds_nothing() -> None:
    t = _two_by_three([1, 2, 3, 4, 5, 6])
    hidden = [0, 1]
    p = t.problem(hidden, 1, [t.values[t.grand()]] * len(t.keys), None)
    published = next(j for j in range(len(t.keys)) if j not in hidden)
    assert audit_singletons(prepare(p), [published], hidden, NO_LIMIT) == ()
