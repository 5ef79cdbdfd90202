"""Windows of linked tables (``tables/windows.py``): one per branch of the hierarchy that
splits the tables most, then pairs of branches; every window holds the cells above the
branches (the variable's total, the tables without it); a flat variable gives pairs only;
too few branches give none. Then the audit of a release known within sets proves the same
intervals with the windows as without (a window is a hint, never a premise)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from statrecon.engines.intervals import AuditOptions, audit_cells, local
from statrecon.engines.intervals.settle import settle
from statrecon.runs.known_cells import audit_known_cells
from statrecon.tables import Hierarchy, TableSet
from statrecon.tables.rules import TableSpec, tabulate
from statrecon.tables.windows import windows

AREA = Hierarchy("area", "Total", {"Total": ("R1", "R2", "R3"), "R1": ("a", "b"),
                                   "R2": ("c", "d"), "R3": ("e", "f")})


def _tables(rows: int = 300, seed: int = 0) -> TableSet:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"area": rng.choice(list("abcdef"), rows),
                          "sex": rng.choice(["f", "m"], rows),
                          "age": rng.choice(["0", "1", "2"], rows)})
    return TableSet((tabulate(frame, TableSpec(("area", "sex"), {"area": AREA}, name="t1")),
                     tabulate(frame, TableSpec(("sex", "age"), name="t2"))))


def _code(tables: TableSet, j: int, variable: str) -> str | None:
    return dict(tables.keys()[j]).get(variable)


def test_one_window_per_region_then_pairs_each_with_the_totals_above() -> None:
    tables = _tables()
    got = windows(tables)
    assert len(got) == 3 + 3
    above = {j for j in range(len(tables.keys())) if _code(tables, j, "area") is None}
    assert above  # the area totals and the sex x age table
    regions = [{"R1", "a", "b"}, {"R2", "c", "d"}, {"R3", "e", "f"}]
    pairs = [regions[0] | regions[1], regions[1] | regions[2], regions[2] | regions[0]]
    for window, codes in zip(got, [*regions, *pairs], strict=True):
        inside = set(window)
        assert above <= inside
        assert {_code(tables, j, "area") for j in inside - above} == codes


def test_a_flat_variable_gives_pairs_and_two_branches_none() -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"k": rng.choice(list("pqrs"), 100), "sex": rng.choice(["f", "m"], 100)})
    flat = TableSet((tabulate(frame, TableSpec(("k", "sex"))),))
    got = windows(flat)
    assert len(got) == 4  # (p, q), (q, r), (r, s), (s, p)
    assert {_code(flat, j, "k") for j in got[0]} == {"p", "q", None}
    only_sex = TableSet((tabulate(frame, TableSpec(("sex",))),))
    assert windows(only_sex) == ()


def test_the_audit_proves_the_same_with_and_without_windows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables' windows and windows that cannot help (single cells) give the intervals
    that the whole-component LPs give (this small component is solved whole unless the
    settling pass is forced on it, as a component of 1,000 cells would be)."""
    tables = _tables(400, 2)
    values = [int(c.value) for c in tables.cells()]
    rng = np.random.default_rng(3)
    bounds = [(max(0, v - int(rng.integers(0, 3))), v + int(rng.integers(0, 3)))
              for v in values]
    options = AuditOptions(time_limit=None)
    whole = audit_known_cells(tables, bounds, "ptable", options)
    monkeypatch.setattr(local, "LOCAL_FROM", 0)
    decided: list[int] = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = settle(*args, **kwargs)
        decided.append(len(found))
        return found

    monkeypatch.setattr(audit_cells, "settle", counted)
    settled = []
    seen: list[tuple[int, int]] = []
    for given in ((), tuple((j,) for j in range(len(values)))):
        seen.clear()
        got = audit_known_cells(tables, bounds, "ptable", replace(
            options, windows=given, on_progress=lambda d, n: seen.append((d, n))))
        settled.append(got)
        # progress only goes forward, and ends with every cell
        assert seen[-1] == (len(values), len(values))
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))
    for a, *others in zip(whole.result.cells, *(s.result.cells for s in settled),
                          strict=True):
        assert a.integer is not None and a.integer.lower.value is not None
        assert a.integer.lower.value <= Fraction(values[a.cell]) <= a.integer.upper.value
        for b in others:
            assert b.integer is not None
            assert (b.lp.lower.value, b.lp.upper.value, b.integer.lower.value,
                    b.integer.upper.value) == (a.lp.lower.value, a.lp.upper.value,
                                               a.integer.lower.value, a.integer.upper.value)
            assert b.integer.lower.proof in ("lp-dual", "dual", "witness")
    assert len(decided) == 2 and min(decided) > len(values) // 2  # the pass did the work
