"""Rounding (runs/rounding.py) against brute force on tiny tables.

- The audit: for each method and each thing the attacker may know, every integer table whose
  cells lie within what their rounded values allow and that adds up gives each cell's least
  and greatest value; those are the integer intervals the audit proves, the true values lie
  inside, and a cell is pinned exactly when they meet.
- Controlled rounding: what it publishes adds up, every cell is a multiple of the base next
  to its value (a multiple kept), and its total change is the least over every such
  rounding, found by trying them all; when it says infeasible, trying them all finds none.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.suppression import RoundingProblem, controlled_round
from statrecon.errors import OptionError, StatreconError
from statrecon.runs.rounding import RoundOptions, audit_rounded, round_tables
from statrecon.tables import TableSet
from statrecon.tables.frames import table_from_frame
from statrecon.tables.rounding import is_adjacent, possible, round_nearest, round_random


def _tables(shape: Sequence[int], values: Sequence[int]) -> TableSet:
    """A count table of ``shape`` (variables v0, v1, ...; codes c0, c1, ...) with these
    inner cells, margins computed."""
    names = [f"v{i}" for i in range(len(shape))]
    rows = [dict(zip(names, (f"c{k}" for k in combo), strict=True)) | {"n": v}
            for combo, v in zip(itertools.product(*map(range, shape)), values, strict=True)]
    return TableSet((table_from_frame(pd.DataFrame(rows), names, "n", name="t"),))


def _inner(tables: TableSet) -> list[int]:
    """The columns of the inner cells (every variable at a non-total code)."""
    width = len(tables.tables[0].variables)
    return [i for i, key in enumerate(tables.keys()) if len(key) == width]


def _completions(tables: TableSet, choices: Sequence[Sequence[int]]) -> list[list[int]]:
    """Every full table (``keys()`` order) whose inner cells take one of their choices;
    the margins are the sums (each cell is a sum of inner cells)."""
    keys = tables.keys()
    inner = _inner(tables)
    out = []
    for pick in itertools.product(*choices):
        table = dict(zip(inner, pick, strict=True))
        full = [sum(v for i, v in table.items() if key <= keys[i]) for key in keys]
        out.append(full)
    return out


# (shape, base): brute force tries up to (2 base - 1) ** inner cells tables
SIZES = st.sampled_from([((2, 2), 2), ((2, 2), 3), ((2, 2), 5), ((2, 3), 2), ((2, 3), 3),
                         ((3,), 2), ((3,), 5)])


@settings(max_examples=40, deadline=None)
@given(data=st.data(), case=SIZES,
       method=st.sampled_from(["nearest", "random", "controlled"]),
       knows=st.sampled_from(["method", "base"]), seed=st.integers(0, 2**20))
def test_the_integer_intervals_are_brute_force_min_and_max(
        data: st.DataObject, case: tuple[tuple[int, ...], int], method: str, knows: str,
        seed: int) -> None:
    shape, base = case
    size = 1
    for n in shape:
        size *= n
    values = data.draw(st.lists(st.integers(0, 9), min_size=size, max_size=size))
    tables = _tables(shape, values)
    run = round_tables(tables, RoundOptions(base, method,  # type: ignore[arg-type]
                                            seed=seed if method == "random" else None))
    assert run.rounded is not None  # a table of one or two variables always rounds
    checked = audit_rounded(run, knowledge=knows)  # type: ignore[arg-type]
    bounds = [(int(lo), int(hi)) for lo, hi in checked.bounds]  # type: ignore[arg-type]
    inner = _inner(tables)
    consistent = [full for full in _completions(tables, [range(bounds[i][0], bounds[i][1] + 1)
                                                         for i in inner])
                  if all(lo <= v <= hi for v, (lo, hi) in zip(full, bounds, strict=True))]
    assert consistent  # the true table is one
    truth = [int(v) for v in tables.values()]
    for audit in checked.result.cells:
        least = min(full[audit.cell] for full in consistent)
        most = max(full[audit.cell] for full in consistent)
        assert audit.integer is not None and audit.integer.proven
        assert (audit.integer.lower.value, audit.integer.upper.value) == (least, most)
        assert least <= truth[audit.cell] <= most
        assert (audit.verdict == "disclosed") == (least == most)


def _adjacent(tables: TableSet, base: int) -> list[list[int]]:
    """Every choice of the inner cells' adjacent multiples (a multiple kept)."""
    values = tables.values()
    return [[int(v)] if v % base == 0 else [int(v // base * base), int(v // base * base) + base]
            for v in (values[i] for i in _inner(tables))]


def _controlled(tables: TableSet, base: int) -> list[list[int]]:
    """Every controlled rounding, by brute force: the full tables from adjacent inner cells
    whose every cell (the margins too) is next to its value."""
    values = tables.values()
    return [full for full in _completions(tables, _adjacent(tables, base))
            if all(is_adjacent(v, Fraction(r), base) for v, r in zip(values, full,
                                                                    strict=True))]


@settings(max_examples=60, deadline=None)
@given(data=st.data(), shape=st.sampled_from([(2, 2), (2, 3), (2, 2, 2)]),
       base=st.sampled_from([2, 3, 5]))
def test_controlled_rounding_is_additive_adjacent_least_or_proven_impossible(
        data: st.DataObject, shape: tuple[int, ...], base: int) -> None:
    size = 1
    for n in shape:
        size *= n
    values = data.draw(st.lists(st.integers(0, 2 * base), min_size=size, max_size=size))
    tables = _tables(shape, values)
    run = round_tables(tables, RoundOptions(base, "controlled"))
    every = _controlled(tables, base)
    if run.status == "infeasible":
        assert every == []
        assert len(shape) == 3  # two-way tables always have one
        return
    assert run.status == "optimal" and run.rounded is not None
    rounded = list(run.rounded)
    tables.equations().check(rounded)
    truth = tables.values()
    assert all(is_adjacent(v, r, base) for v, r in zip(truth, rounded, strict=True))
    least = min(sum(abs(r - v) for r, v in zip(full, truth, strict=True)) for full in every)
    assert run.change == least


def test_three_halves_that_pair_up_have_no_controlled_rounding() -> None:
    """2 x 2 x 2 counts, base 2: three cells of 1 (at 011, 101, 110), the rest 0. Each
    pair of them makes a one-way margin of 2, which must stay 2: exactly one of each pair
    rounds up, which three cells cannot do. CP-SAT proves it, names equations that admit
    no rounding together (none of them can be left out), and brute force agrees."""
    tables = _tables((2, 2, 2), [0, 0, 0, 1, 0, 1, 1, 0])
    run = round_tables(tables, RoundOptions(2, "controlled"))
    assert run.status == "infeasible" and run.rounded is None
    assert run.controlled is not None and run.controlled.core_minimal
    names = [tables.equations().names[k] for k in run.controlled.core]
    assert names and all(name.startswith("t: ") for name in names)
    assert _controlled(tables, 2) == []
    with pytest.raises(ValueError, match="nothing was rounded"):
        audit_rounded(run)


def test_every_two_by_two_by_two_table_of_halves_is_decided_as_brute_force_does() -> None:
    """All 256 tables of 0s and 1s in 2 x 2 x 2, base 2 (the engine on one table's
    equations): infeasible exactly when trying every adjacent rounding finds none, else
    the least change."""
    template = _tables((2, 2, 2), [0] * 8)
    equations = template.equations()
    keys, inner = template.keys(), _inner(template)
    infeasible = 0
    for values in itertools.product((0, 1), repeat=8):
        full = [sum(v for i, v in zip(inner, values, strict=True) if key <= keys[i])
                for key in keys]
        answer = controlled_round(RoundingProblem(equations.matrix.tocsr(), tuple(
            Fraction(v) for v in full), 2, 1, equations.names))
        every = [r for r in _completions(template, [[0] if v == 0 else [0, 2] for v in values])
                 if all(is_adjacent(Fraction(v), Fraction(x), 2) for v, x in zip(full, r,
                                                                                   strict=True))]
        assert (answer.status == "infeasible") == (every == []), values
        if every:
            assert answer.status == "optimal"
            assert answer.change == min(sum(abs(x - v) for x, v in zip(r, full, strict=True))
                                        for r in every)
        infeasible += answer.status == "infeasible"
    assert infeasible == 54  # of 256: brute force agrees on each


def test_nearest_ties_go_up_and_the_sets_are_as_stated() -> None:
    assert round_nearest([Fraction(v) for v in (0, 4, 5, 14, 15, 25)], 10) == tuple(
        Fraction(v) for v in (0, 0, 10, 10, 20, 30))
    # nearest to 10 with ties up: 5..14 give 10; 0 only from 0..4
    assert possible(Fraction(10), 10, "nearest", "method", 1) == (5, 14)
    assert possible(Fraction(0), 10, "nearest", "method", 1) == (0, 4)
    assert possible(Fraction(5), 5, "nearest", "method", 1) == (3, 7)
    # |x - r| < b otherwise; at least 0
    assert possible(Fraction(10), 10, "nearest", "base", 1) == (1, 19)
    assert possible(Fraction(0), 5, "random", "method", 1) == (0, 4)
    assert possible(Fraction(5), 5, "controlled", "method", 1) == (1, 9)
    # a table with one decimal: the lattice is 0.1
    assert possible(Fraction(5), 5, "nearest", "method", 10) == (Fraction(25, 10),
                                                                  Fraction(74, 10))
    assert possible(Fraction(5), 5, "random", "method", 10) == (Fraction(1, 10),
                                                                 Fraction(99, 10))


def test_random_rounding_is_seeded_adjacent_and_unbiased() -> None:
    tables = _tables((3,), [3, 7, 10])
    once = round_tables(tables, RoundOptions(5, "random", seed=11))
    again = round_tables(tables, RoundOptions(5, "random", seed=11))
    assert once.rounded == again.rounded
    assert once.rounded is not None
    assert all(is_adjacent(v, r, 5) for v, r in zip(tables.values(), once.rounded,
                                                    strict=True))
    drawn = round_random([Fraction(3)] * 4000, 5, seed=2, scale=1)
    assert set(drawn) == {0, 5}
    assert 2250 < drawn.count(Fraction(5)) < 2550  # up with probability 3/5: 2400 +- 5 sd


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"base": 1}, "RoundOptions.base"), ({"base": 0}, "RoundOptions.base"),
    ({"base": 5, "method": "floor"}, "RoundOptions.method"),
    ({"base": 5, "method": "random"}, "needs a seed"),
    ({"base": 5, "method": "random", "seed": -1}, "needs a seed"),
    ({"base": 5, "seed": 3}, "needs a seed"),
    ({"base": 5, "knowledge": "all"}, "RoundOptions.knowledge"),
    ({"base": 5, "time_limit": -1.0}, "RoundOptions.time_limit"),
])
def test_bad_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        RoundOptions(**kwargs)  # type: ignore[arg-type]


def test_a_negative_cell_is_refused() -> None:
    frame = pd.DataFrame({"a": ["x", "y"], "v": [3, -1]})
    tables = TableSet((table_from_frame(frame, ["a"], "v", kind="magnitude", name="t"),))
    with pytest.raises(StatreconError, match="negative"):
        round_tables(tables, RoundOptions(5))
