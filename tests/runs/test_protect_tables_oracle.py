"""``protect_tables`` against a brute-force oracle (issue 28, defect 1): on tiny 2x2 tables
with totals, zeros with and without contributors, protected cells and one or two primary
cells, "infeasible" is a proof over exactly the cells the user allowed. Every subset of the
cells that may be suppressed (every published cell but those a named rule excluded) is
audited with the integer audit; infeasible must mean that none protects every primary cell,
and a returned pattern must pass the audit."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.intervals import AuditOptions, audit
from statrecon.engines.intervals.tables import problem_from_tables
from statrecon.engines.suppression import ProtectOptions
from statrecon.runs.tables import is_empty, protect_tables
from statrecon.tables import CellStatus, TableSet
from statrecon.tables.frames import table_from_frame

LEAVES = [("x", "p"), ("x", "q"), ("y", "p"), ("y", "q")]


@st.composite
def tiny_tables(draw: st.DrawFn) -> TableSet:
    """A 2x2 magnitude table: each leaf a value 0..4 and 0..2 contributors (a value > 0 has at
    least one), one or two primary leaves, perhaps a protected one."""
    rows = []
    for a, b in LEAVES:
        value = draw(st.integers(0, 4))
        freq = draw(st.integers(1 if value else 0, 2))
        rows.append({"a": a, "b": b, "value": value, "frequency": freq, "status": "safe"})
    primary = draw(st.lists(st.sampled_from(range(4)), min_size=1, max_size=2, unique=True))
    for i in primary:
        rows[i]["status"] = "primary"
    rest = [i for i in range(4) if i not in primary]
    if rest and draw(st.booleans()):
        rows[draw(st.sampled_from(rest))]["status"] = "protected"
    table = table_from_frame(pd.DataFrame(rows), ["a", "b"], "value", frequency="frequency",
                             status="status", kind="magnitude", name="t")
    return TableSet((table,))


def protects(tables: TableSet, suppressed: set[int]) -> bool:
    p = problem_from_tables(tables, "nonnegative")
    primaries = [j for j, h in enumerate(p.hidden) if h]
    hidden = tuple(h or j in suppressed for j, h in enumerate(p.hidden))
    return audit(replace(p, hidden=hidden), primaries, AuditOptions(time_limit=None)).all_protected


@settings(max_examples=60, deadline=None)
@given(tiny_tables(), st.booleans(), st.sampled_from(["fast", "exact"]))
def test_infeasible_only_when_no_allowed_pattern_protects(tables: TableSet, suppress_empty: bool,
                                                          method: str) -> None:
    done = protect_tables(tables, ProtectOptions(method=method, time_limit=None),  # type: ignore[arg-type]
                          suppress_empty=suppress_empty)
    cells, keys = tables.cells(), tables.keys()
    excluded = {k for got in done.excluded.values() for k in got}
    allowed = [j for j, c in enumerate(cells)
               if not c.status.suppressed and keys[j] not in excluded]
    for j, c in enumerate(cells):  # exactly the rules' cells are kept out, each by its rule
        kept = keys[j] in excluded
        assert kept == (not c.status.suppressed and (
            c.status is CellStatus.PROTECTED or (is_empty(c) and not suppress_empty)))
    if done.result.status == "infeasible":
        assert not any(protects(tables, set(s)) for k in range(len(allowed) + 1)
                       for s in itertools.combinations(allowed, k))
        return
    assert done.protected
    assert set(done.result.secondary) <= set(allowed)
    assert protects(tables, set(done.result.secondary))
    assert len(done.result.primary) == sum(c.status is CellStatus.PRIMARY for c in cells)


def protects_from_singletons(tables: TableSet, suppressed: set[int]) -> bool:
    """Every primary cell protected from the stranger and from the single contributor of
    each suppressed one-contributor cell, who knows its value (bounds pinned by hand here,
    audited from scratch)."""
    if not protects(tables, suppressed):
        return False
    p = problem_from_tables(tables, "nonnegative")
    primaries = [j for j, h in enumerate(p.hidden) if h]
    hidden = tuple(h or j in suppressed for j, h in enumerate(p.hidden))
    for s, cell in enumerate(tables.cells()):
        if not hidden[s] or cell.frequency != 1:
            continue
        lower, upper = list(p.lower), list(p.upper)
        lower[s] = upper[s] = p.values[s]
        theirs = replace(p, hidden=hidden, lower=tuple(lower), upper=tuple(upper))
        others = [j for j in primaries if j != s]
        if others and not audit(theirs, others, AuditOptions(time_limit=None)).all_protected:
            return False
    return True


@settings(max_examples=40, deadline=None)
@given(tiny_tables(), st.sampled_from(["fast", "exact"]))
def test_protection_from_singletons_holds_or_is_proven_impossible(tables: TableSet,
                                                                  method: str) -> None:
    done = protect_tables(tables, ProtectOptions(method=method, time_limit=None),  # type: ignore[arg-type]
                          singletons=True)
    cells, keys = tables.cells(), tables.keys()
    excluded = {k for got in done.excluded.values() for k in got}
    allowed = [j for j, c in enumerate(cells)
               if not c.status.suppressed and keys[j] not in excluded]
    if done.result.status == "infeasible":
        assert not any(protects_from_singletons(tables, set(s))
                       for k in range(len(allowed) + 1)
                       for s in itertools.combinations(allowed, k))
        return
    assert done.protected, done.result.note
    assert set(done.result.secondary) <= set(allowed)
    assert protects_from_singletons(tables, set(done.result.secondary))
    assert all(a.audit.verdict == "protected" for a in done.singletons)
