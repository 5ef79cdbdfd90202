"""Agreement, precision on uniques and the published-knowledge baselines (issue 16, item 5),
on persons small enough to count by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.experiments.census_scores import (
    KEY,
    block_majority,
    matched_in_rank_order,
    modal_origin,
    precision,
    precision_at_k,
    scores,
    tract_draw,
)

TRACT_A = "01001000100"  # 11 digits: state, county, tract
BINS = [0, 18, 65]


def persons(rows: list[tuple[str, str, int, int, bool]]) -> pd.DataFrame:
    """(block suffix, sex, age, race code, hispanic) -> a persons frame of tract A."""
    return pd.DataFrame([{"block": TRACT_A + b, "sex": s, "age": a, "race": r, "hispanic": h}
                         for b, s, a, r, h in rows])


def test_agreement_pairs_persons_one_to_one() -> None:
    truth = persons([("1000", "F", 30, 1, False), ("1000", "F", 30, 1, False),
                     ("1000", "M", 40, 2, True)])
    guess = persons([("1000", "F", 30, 1, False), ("1000", "M", 41, 2, True),
                     ("1000", "M", 40, 2, True), ("1000", "M", 40, 2, True)])
    got = scores(truth, guess, BINS)
    # F30: min(2, 1) = 1 pair; M40: min(1, 2) = 1 pair -> 2 of 3 true persons
    assert got["agreement_exact"] == pytest.approx(2 / 3)
    # binned (18-64): F: min(2, 1) = 1, M: min(1, 3) = 1
    assert got["agreement_binned"] == pytest.approx(2 / 3)
    assert got["by_block_size"] == [{"size": "3", "blocks": 1, "persons": 3,
                                     "agreement_exact": pytest.approx(2 / 3),
                                     "agreement_binned": pytest.approx(2 / 3)}]


def test_precision_counts_only_the_guess_uniques() -> None:
    guess = persons([
        ("1000", "F", 30, 1, False), ("1000", "F", 40, 1, False),  # same bin: not unique
        ("1000", "M", 70, 2, False),  # unique, and not the block's modal race
        ("2000", "F", 10, 1, True),  # unique, the modal origin of its block
    ])
    truth = persons([("1000", "M", 70, 2, False), ("1000", "F", 35, 1, False),
                     ("2000", "F", 11, 1, True)])
    got = precision(truth, guess, BINS)
    assert got["unique_rows"] == 2 and got["nonmodal_unique_rows"] == 1
    assert got["precision_unique"] == pytest.approx(1 / 2)  # F10 is F11 in the truth
    assert got["precision_unique_binned"] == 1.0  # but both sit in bin 0-17
    assert got["precision_nonmodal"] == 1.0 and got["precision_nonmodal_binned"] == 1.0


def test_precision_is_undefined_without_uniques() -> None:
    guess = persons([("1000", "F", 30, 1, False), ("1000", "F", 30, 1, False)])
    got = precision(guess, guess, BINS)
    assert got["unique_rows"] == 0 and got["precision_unique"] is None
    assert precision(guess, guess.iloc[:0], BINS)["precision_nonmodal"] is None


def test_modal_origin_breaks_ties_the_same_whatever_the_row_order() -> None:
    rows = [("1000", "F", 30, 2, False), ("1000", "M", 30, 1, False),
            ("1000", "F", 50, 1, True), ("1000", "M", 50, 2, True)]
    for order in (rows, rows[::-1], rows[1:] + rows[:1]):
        modal = modal_origin(persons(order))
        assert modal.loc[TRACT_A + "1000"].tolist() == [1, False]


def test_block_majority_uses_only_published_persons() -> None:
    published = persons([("1000", "F", 30, 1, False), ("1000", "M", 31, 1, False),
                         ("1000", "F", 32, 4, True), ("2000", "M", 80, 4, True)])
    guess = block_majority(published, seed=3)
    assert guess.groupby("block").size().to_dict() == published.groupby("block").size(
        ).to_dict()
    first = guess[guess.block == TRACT_A + "1000"]
    assert (first.race == 1).all() and (~first.hispanic).all()
    second = guess[guess.block == TRACT_A + "2000"]
    assert (second.race == 4).all() and second.hispanic.all()
    published_pairs = set(zip(published.sex, published.age, strict=True))
    assert set(zip(guess.sex, guess.age, strict=True)) <= published_pairs


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1000", "1001", "1002"]),
                          st.sampled_from(["F", "M"]), st.integers(0, 90),
                          st.integers(1, 6), st.booleans()), min_size=1, max_size=30),
       st.integers(0, 10_000))
def test_tract_draw_keeps_block_sizes_and_draws_tract_persons(
        rows: list[tuple[str, str, int, int, bool]], seed: int) -> None:
    published = persons(rows)
    drawn = tract_draw(published, seed)
    assert drawn.groupby("block").size().to_dict() == published.groupby("block").size(
        ).to_dict()
    known = set(map(tuple, published[KEY].to_numpy().tolist()))
    assert set(map(tuple, drawn[KEY].to_numpy().tolist())) <= known


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1000", "1001"]), st.sampled_from(["F", "M"]),
                          st.integers(0, 90), st.integers(1, 3), st.booleans()),
                min_size=1, max_size=25))
def test_the_truth_scored_against_itself_is_perfect(
        rows: list[tuple[str, str, int, int, bool]]) -> None:
    truth = persons(rows)
    got = scores(truth, truth.sample(frac=1.0, random_state=0), BINS)
    assert got["agreement_exact"] == 1.0 and got["agreement_binned"] == 1.0
    assert got["precision_unique"] in (None, 1.0)
    assert got["precision_nonmodal"] in (None, 1.0)
    assert sum(r["persons"] for r in got["by_block_size"]) == len(truth)
    sizes = truth.groupby("block").size()
    assert sum(r["blocks"] for r in got["by_block_size"]) == len(sizes)
    assert np.isclose(sum(r["agreement_exact"] * r["persons"] for r in got["by_block_size"]),
                      len(truth))


def test_ranked_copies_pair_first_and_precision_counts_the_top() -> None:
    truth = persons([("1000", "F", 30, 1, False), ("1000", "M", 40, 2, True)])
    guess = persons([("1000", "F", 30, 1, False), ("1000", "F", 30, 1, False),
                     ("1000", "M", 41, 2, True), ("1000", "M", 50, 3, False)])
    guess["score"] = [0.9, 0.2, 0.6, 0.1]
    # one true F30: the 0.9 copy pairs, the 0.2 copy does not; M41 is not M40
    assert matched_in_rank_order(truth, guess).tolist() == [True, False, False, False]
    got = precision_at_k(truth, guess, BINS, seed=0)
    assert got is not None
    # ranked 0.9 (hit), 0.6 (miss), 0.2 (miss), 0.1 (miss): top 25% = 1 person
    assert got["exact"]["25%"] == 1.0 and got["exact"]["50%"] == 0.5
    assert got["exact"]["100%"] == 0.25
    # binned (18-64): M41 pairs with M40 too
    assert got["binned"]["50%"] == 1.0 and got["binned"]["100%"] == 0.5
    assert got["curve_exact"][-1] == [4, 0.25]
    guess["score"] = np.nan
    assert precision_at_k(truth, guess, BINS, seed=0) is None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1000", "1001"]), st.sampled_from(["F", "M"]),
                          st.integers(0, 3), st.integers(1, 2), st.booleans()),
                min_size=1, max_size=20),
       st.lists(st.floats(0, 1), min_size=20, max_size=20))
def test_precision_at_all_equals_agreement_over_the_guess(
        rows: list[tuple[str, str, int, int, bool]], raw_scores: list[float]) -> None:
    """Whatever the scores, the top 100% pairs exactly as the unranked multiset match."""
    truth = persons(rows[: max(1, len(rows) // 2)])
    guess = persons(rows)
    guess["score"] = raw_scores[: len(guess)]
    got = precision_at_k(truth, guess, BINS, seed=1)
    assert got is not None
    pairs = scores(truth, guess, BINS)["agreement_exact"] * len(truth)
    assert got["exact"]["100%"] == pytest.approx(pairs / len(guess))


def test_certain_persons_rank_first_among_equal_scores() -> None:
    truth = persons([("1000", "F", 30, 1, False)])
    guess = persons([("1000", "M", 60, 2, True), ("1000", "F", 30, 1, False)])
    guess["score"] = [1.0, 1.0]
    guess["certain"] = [False, True]
    for seed in range(8):
        got = precision_at_k(truth, guess, BINS, seed=seed)
        assert got is not None and got["exact"]["50%"] == 1.0
