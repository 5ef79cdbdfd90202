"""What a protected census release still proves (issue 30, item 4): the persons present in
every dataset whose block tables lie within the release's hard bounds.

A release from ``runs/census_protect`` publishes each cell with the least and greatest true
count its published value allows (the ptable's support, the rounding rule, 0 up to the block
for a suppressed cell). Every block goes through ``engines/census.certain_in_block`` with
those bounds, the proof the noisy path uses with its noise bounds: a class of persons is
claimed only when every non-negative integer dataset within the bounds holds it (INFEASIBLE
beyond the least count found), a block past its time limit claims nothing. Dropping the
tract cells only widens the set of datasets, so the claims stay proofs. No probability
enters: unlike DP's bounds (true with probability 1 - delta), these hold always, so a claim
is false only if the release's bounds are (for swapping they are bounds of the swapped
persons, ``ProtectedCensus.of_truth`` False: there the claims are facts of the swapped file).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp

from statrecon.census.persons.cells import (
    RACES,
    SEXES,
    Sf1Cell,
    definitions_digest,
    grid_index,
)
from statrecon.census.persons.microdata import BLOCK_COLUMN
from statrecon.engines.census import CellMatrices, certain_in_block, class_matrix
from statrecon.runs.census_protect import ProtectedCensus

DEFAULT_TIME_LIMIT = 10.0  # seconds per block (None: no limit)


_CLASSES: dict[str, tuple[CellMatrices, sp.csr_matrix]] = {}


def _classes(cells: tuple[Sf1Cell, ...]) -> tuple[CellMatrices, sp.csr_matrix]:
    """The cells' matrices and class matrix, built once per process and definitions (0.4 s
    for SF1's person cells)."""
    key = definitions_digest(cells)
    if key not in _CLASSES:
        mats = CellMatrices.build(cells)
        _CLASSES[key] = (mats, class_matrix(mats))
    return _CLASSES[key]


@dataclass
class BoundedClaims:
    """The certain persons of a protected release: one row per (block, class, least
    persons), the count of each block status, and the seconds it took."""

    claims: pa.Table
    statuses: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def persons(self) -> int:
        return int(sum(self.claims["persons"].to_pylist()))


def certain_protected(release: ProtectedCensus, time_limit: float | None = DEFAULT_TIME_LIMIT,
                      seed: int = 0) -> BoundedClaims:
    """Prove, block by block, the persons every dataset within the release's bounds holds
    (module docstring); ``time_limit`` holds per block."""
    t0 = time.perf_counter()
    mats, c = _classes(release.cells)
    counts = np.flatnonzero(mats.is_count)
    rows: dict[str, list[object]] = {"block": [], "class": [], "persons": []}
    statuses: dict[str, int] = {}
    block = release.block
    for b, geoid in enumerate(block.geoids):
        got = certain_in_block(c, block.lo[b, counts], block.hi[b, counts],
                               time_limit=time_limit, seed=seed)
        statuses[got.status] = statuses.get(got.status, 0) + 1
        for k, n in zip(got.classes.tolist(), got.counts.tolist(), strict=True):
            rows["block"].append(geoid)
            rows["class"].append(k)
            rows["persons"].append(n)
    table = pa.table({"block": pa.array(rows["block"], pa.string()),
                      "class": pa.array(rows["class"], pa.int32()),
                      "persons": pa.array(rows["persons"], pa.int32())})
    return BoundedClaims(table, statuses, round(time.perf_counter() - t0, 3))


def claimed_beyond(claims: BoundedClaims, persons: pd.DataFrame,
                   cells: tuple[Sf1Cell, ...]) -> int:
    """The claimed persons that ``persons`` (a checked persons frame) lacks: per claim, how
    far its least count exceeds the persons of its class in its block, summed (0: every
    claim holds for these persons)."""
    mats, _ = _classes(cells)
    grid = person_grid(persons)
    truth = pd.DataFrame({"block": persons[BLOCK_COLUMN].astype(str).to_numpy(),
                          "class": mats.block_class[grid]}).value_counts()
    claimed = claims.claims.to_pandas()
    have = np.array([int(truth.get((b, k), 0)) for b, k in
                     zip(claimed["block"], claimed["class"], strict=True)], dtype=np.int64)
    return int(np.maximum(claimed["persons"].to_numpy() - have, 0).sum())


def person_grid(persons: pd.DataFrame) -> np.ndarray:
    """Each person's attribute cell (``cells.grid_index``) from a checked persons frame."""
    race = np.zeros(len(persons), dtype=np.int64)
    for bit, name in enumerate(RACES):
        race |= persons[name].astype(bool).to_numpy().astype(np.int64) << bit
    sex = persons["sex"].map({s: i for i, s in enumerate(SEXES)}).to_numpy().astype(np.int64)
    return grid_index(sex, persons["age"].to_numpy().astype(np.int64), race,
                      persons["hispanic"].astype(bool).to_numpy().astype(np.int64))
