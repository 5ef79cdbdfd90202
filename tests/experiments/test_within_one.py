"""The census comparison's matching within one year of age (``census_match._within_one``):
per block, the largest one-to-one matching of persons with the same sex, race and origin
whose ages differ by at most one, against a two-pointer walk over each group's sorted ages
and against brute force on tiny groups."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.experiments.census_match import _within_one

GROUP = ["block", "sex", "race", "hispanic"]


def _two_pointer(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, int]:
    """Each group's sorted ages walked side by side (the implementation before)."""
    out: dict[str, int] = {}
    ages_b = {k: np.sort(g["age"].to_numpy()) for k, g in b.groupby(GROUP)}
    for key, g in a.groupby(GROUP):
        other = ages_b.get(key)
        if other is None:
            continue
        x, i, j, n = np.sort(g["age"].to_numpy()), 0, 0, 0
        while i < len(x) and j < len(other):
            if abs(int(x[i]) - int(other[j])) <= 1:
                n, i, j = n + 1, i + 1, j + 1
            elif x[i] < other[j]:
                i += 1
            else:
                j += 1
        out[str(key[0])] = out.get(str(key[0]), 0) + n
    return out


def _brute(xs: list[int], ys: list[int]) -> int:
    """The largest matching with |x - y| <= 1 by trying every assignment."""
    best = 0
    for k in range(min(len(xs), len(ys)), 0, -1):
        for chosen in itertools.combinations(xs, k):
            if any(all(abs(x - y) <= 1 for x, y in zip(chosen, perm, strict=True))
                   for perm in itertools.permutations(ys, k)):
                return k
    return best


persons = st.lists(st.tuples(st.sampled_from(["b1", "b2"]), st.sampled_from(["f", "m"]),
                             st.integers(0, 2), st.booleans(), st.integers(0, 8)),
                   max_size=40)


def _frame(rows: list[tuple[str, str, int, bool, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[*GROUP, "age"])


@settings(max_examples=150, deadline=None)
@given(persons, persons)
def test_the_matching_equals_the_two_pointer_walk(a: list, b: list) -> None:
    got = {k: int(v) for k, v in _within_one(_frame(a), _frame(b)).items() if v}
    want = {k: v for k, v in _two_pointer(_frame(a), _frame(b)).items() if v}
    assert got == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=5), st.lists(st.integers(0, 6), max_size=5))
def test_the_matching_is_the_largest(xs: list[int], ys: list[int]) -> None:
    a = _frame([("b1", "f", 0, False, x) for x in xs])
    b = _frame([("b1", "f", 0, False, y) for y in ys])
    assert int(_within_one(a, b).get("b1", 0)) == _brute(xs, ys)
