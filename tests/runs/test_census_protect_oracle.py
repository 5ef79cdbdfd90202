"""The bounded census reconstruction against brute force on tiny blocks (issue 30, item 4):
persons of a few types in one or two blocks, published under each protection; every dataset
of those types whose block cells lie within the release's bounds (enumerated) holds every
person the reconstruction proves certain. Those datasets are some of all the datasets the
bounds allow, so this checks soundness (never a claim some allowed dataset breaks), not that
everything certain is found; ``tests/engines/census/test_census_certain.py`` checks the
proof itself against the full enumeration of tiny cell systems."""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.census.persons.cells import RACES, Sf1Cell, mask_matrix
from statrecon.engines.census import CellMatrices
from statrecon.runs.census_bounded import certain_protected, person_grid
from statrecon.runs.census_protect import CensusProtectOptions, protect_census

TRACT = "01001000100"
BLOCKS = (TRACT + "1000", TRACT + "1001")
# sex x age x race (White alone, Black alone), not Hispanic: 8 person types
TYPES = [(sex, age, race) for sex in ("male", "female") for age in (30, 45)
         for race in ("white", "black")]
MAX_ENUMERATED = 5  # persons per block in the enumerated datasets
PROTECTIONS = [("ckm-abs", {"d": 2}), ("ckm-ons", {"d": 2}), ("ckm-abs", {"d": 3, "v": 2}),
               ("round", {"base": 3}), ("round", {"base": 5, "rounding": "random"}),
               ("suppress", {}), ("suppress", {"knowledge": "rule"})]


def _frame(people: list[tuple[str, int]]) -> pd.DataFrame:
    rows = []
    for block, t in people:
        sex, age, race = TYPES[t]
        rows.append({"block_geoid": block, "sex": sex, "age": age, "hispanic": False,
                     **{r: r == race for r in RACES}})
    return pd.DataFrame(rows)


@cache
def _block_class(cells: tuple[Sf1Cell, ...]) -> np.ndarray:
    return CellMatrices.build(cells).block_class


def _check(people: list[tuple[str, int]], method: str, params: dict[str, object],
           seed: int) -> int:
    """Every enumerated dataset within the bounds holds every claim; the persons claimed."""
    frame = _frame(people)
    release = protect_census(frame, CensusProtectOptions(method, seed=seed,  # type: ignore[arg-type]
                                                         **params))  # type: ignore[arg-type]
    claims = certain_protected(release, time_limit=10).claims.to_pandas()
    assert set(claims["block"]) <= set(release.block.geoids)
    type_grid = person_grid(_frame([(BLOCKS[0], t) for t in range(len(TYPES))]))
    members = mask_matrix(release.block_cells)[:, type_grid].toarray()  # cells x types
    klass = _block_class(release.cells)[type_grid]
    for b, block in enumerate(release.block.geoids):
        lo, hi = release.block.lo[b], release.block.hi[b]
        mine = claims[claims["block"] == block]
        allowed = 0
        for size in range(MAX_ENUMERATED + 1):
            for combo in itertools.combinations_with_replacement(range(len(TYPES)), size):
                y = np.bincount(np.array(combo, dtype=np.int64), minlength=len(TYPES))
                v = members @ y
                if not ((v >= lo) & (v <= hi)).all():
                    continue
                allowed += 1
                for k, n in zip(mine["class"], mine["persons"], strict=True):
                    assert y[klass == k].sum() >= n, (block, combo, k, n)
        assert allowed >= 1  # the truth is one (at most 4 persons a block)
    return int(claims["persons"].sum())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(people=st.lists(st.tuples(st.sampled_from(BLOCKS), st.integers(0, len(TYPES) - 1)),
                       min_size=1, max_size=4),
       protection=st.sampled_from(PROTECTIONS), seed=st.integers(0, 50))
def test_every_dataset_within_the_bounds_holds_every_claim(
        people: list[tuple[str, int]], protection: tuple[str, dict[str, object]],
        seed: int) -> None:
    _check(people, *protection, seed)


def test_the_oracle_checks_claims_that_are_made() -> None:
    """Not vacuous: on fixed tiny blocks, CKM, rounding and suppression prove persons, and
    the enumeration holds them."""
    people = [(BLOCKS[0], 0), (BLOCKS[0], 0), (BLOCKS[0], 3), (BLOCKS[1], 5), (BLOCKS[1], 5)]
    for method, params in (("ckm-abs", {"d": 2}), ("round", {"base": 3}),
                           ("suppress", {"knowledge": "rule"})):
        assert _check(people, method, params, seed=1) > 0, method
