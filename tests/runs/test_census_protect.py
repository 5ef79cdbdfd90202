"""Census tables under each protection (issue 30, item 4): on the 3-tract slice, every true
count lies within the bounds its protected release states, and no person the bounded
reconstruction proves certain is false against the truth (for swapping: against the
swapped persons, whose tables the release publishes).

The slice's first small blocks of each tract keep the test to seconds (the whole slice's
217 blocks take 20 to 125 s per protection on 2 cores, all sound: 0 persons beyond the
truth for CKM at D = 2 and 3, rounding to 3 and 5, suppression; ``claimed_beyond`` is the
same check at any size)."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import SLICE

from statrecon.census.persons.cells import mask_matrix
from statrecon.census.persons.swap import PersonsSwap, read_persons, swap_persons, swapped_file
from statrecon.runs.census_bounded import certain_protected, claimed_beyond, person_grid
from statrecon.runs.census_protect import CensusProtectOptions, ProtectedCensus, protect_census

BLOCKS_PER_TRACT = 5
MAX_PERSONS = 25  # per block taken
TIME_LIMIT = 1.0  # per block: a block past it claims nothing, which stays sound

PROTECTIONS: list[tuple[str, dict[str, Any]]] = [
    ("ckm-ons", {"d": 2}), ("ckm-abs", {"d": 3, "v": 2}), ("ckm-abs", {"threshold": 3}),
    ("round", {"base": 5}), ("round", {"base": 3, "rounding": "random"}),
    ("suppress", {}), ("suppress", {"knowledge": "rule"}), ("swap", {"rate": 0.1}),
]


@cache
def persons() -> pd.DataFrame:
    """The slice's first blocks of at most MAX_PERSONS persons of each tract, every person
    of them (15 blocks, 3 tracts)."""
    frame = read_persons(SLICE).persons
    blocks = frame["block_geoid"].astype(str)
    size = blocks.value_counts()
    small = sorted(b for b in size.index if size[b] <= MAX_PERSONS)
    taken = [b for b in small
             if [x for x in small if x[:11] == b[:11]].index(b) < BLOCKS_PER_TRACT]
    return frame[blocks.isin(taken)].reset_index(drop=True)


def _source(release: ProtectedCensus) -> pd.DataFrame:
    """The persons whose tables the release publishes."""
    options = release.options
    if options.method != "swap":
        return persons()
    plan = PersonsSwap(rate=options.rate, seed=options.seed)
    return swapped_file(persons(), swap_persons(persons(), plan))


@pytest.mark.parametrize(("method", "params"), PROTECTIONS,
                         ids=[f"{m}-{'-'.join(f'{k}{v}' for k, v in p.items())}"
                              for m, p in PROTECTIONS])
def test_no_person_proven_certain_is_false(method: str, params: dict[str, Any]) -> None:
    release = protect_census(persons(), CensusProtectOptions(method, seed=7,  # type: ignore[arg-type]
                                                             **params))
    source = _source(release)
    exact = protect_census(source, CensusProtectOptions("suppress", threshold=0))
    for level in ("block", "tract"):  # the stated bounds hold for the persons published
        got, true = getattr(release, level), getattr(exact, level)
        assert got.geoids == true.geoids
        assert (got.lo <= true.published).all() and (true.published <= got.hi).all()
    assert release.of_truth == (method != "swap")
    claims = certain_protected(release, time_limit=TIME_LIMIT)
    assert sum(claims.statuses.values()) == len(release.block.geoids)
    assert "inconsistent" not in claims.statuses  # the truth lies within every bound
    assert claimed_beyond(claims, source, release.cells) == 0
    if method in ("suppress", "swap"):  # exact cells left: something is proven
        assert claims.persons > 0


def test_the_same_persons_are_perturbed_alike_in_every_table() -> None:
    """Cells of different tables that hold the same persons of a block (P1's total and the
    White-alone cell of an all-White block, ...) share one key sum: one perturbation."""
    frame = persons()
    release = protect_census(frame, CensusProtectOptions("ckm-abs", seed=3))
    masks = mask_matrix(release.block_cells).tocsc()
    grid = person_grid(frame)
    blocks = frame["block_geoid"].astype(str).to_numpy()
    pairs = 0
    for b, geoid in enumerate(release.block.geoids):
        members = masks[:, grid[blocks == geoid]].toarray()  # cells x the block's persons
        seen: dict[bytes, int] = {}
        for k in np.flatnonzero(members.any(axis=1)):
            first = seen.setdefault(members[k].tobytes(), int(k))
            if first != k:
                pairs += 1
                assert release.block.published[b, k] == release.block.published[b, first]
    assert pairs > 100


def test_swapping_claims_what_the_swapped_file_holds_not_the_truth() -> None:
    """Swapping's release is exact of the swapped persons: its certain persons are theirs,
    and some are not the true persons (the point of swapping), which is why it is not
    ``of_truth``."""
    release = protect_census(persons(), CensusProtectOptions("swap", rate=0.5, seed=1))
    claims = certain_protected(release, time_limit=TIME_LIMIT)
    assert claimed_beyond(claims, _source(release), release.cells) == 0
    assert claimed_beyond(claims, persons(), release.cells) > 0


def test_tracts_on_two_workers_prove_what_one_process_proves() -> None:
    release = protect_census(persons(), CensusProtectOptions("ckm-abs", seed=7))
    alone = certain_protected(release, time_limit=10.0)
    pooled = certain_protected(release, time_limit=10.0, workers=2)
    assert alone.statuses == pooled.statuses == {"ok": len(release.block.geoids)}
    assert alone.persons > 0  # something to compare
    assert pooled.claims.equals(alone.claims)
