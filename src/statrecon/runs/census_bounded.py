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
from contextlib import closing
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from statrecon.census.persons.cells import (
    RACES,
    SEXES,
    Sf1Cell,
    grid_index,
)
from statrecon.census.persons.microdata import BLOCK_COLUMN
from statrecon.runs.census_certain import (
    block_classes,
    bounded_units,
    certain_rows,
    certify_tract,
)
from statrecon.runs.census_protect import ProtectedCensus
from statrecon.runs.parallel import run_units

DEFAULT_TIME_LIMIT = 10.0  # seconds per block (None: no limit)


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
                      seed: int = 0, workers: int = 1) -> BoundedClaims:
    """Prove, block by block, the persons every dataset within the release's bounds holds
    (module docstring); ``time_limit`` holds per block; tracts run on ``workers``
    processes."""
    t0 = time.perf_counter()
    mats, _ = block_classes(release.cells)
    block = release.block
    units = bounded_units(block.geoids, block.lo, block.hi, np.flatnonzero(mats.is_count))
    tables: list[pa.Table] = []
    statuses: dict[str, int] = {}
    with closing(run_units(certify_tract, (release.cells, time_limit, seed), units,
                           workers=max(1, min(workers, len(units))))) as results:
        for _, (table, counted, _seconds) in results:
            tables.append(table)
            for status, n in counted.items():
                statuses[status] = statuses.get(status, 0) + n
    claims = pa.concat_tables(tables) if tables else certain_rows(
        release.cells, (), np.zeros((0, 0)), np.zeros((0, 0)), time_limit)[0]
    claims = claims.sort_by([("block", "ascending"), ("class", "ascending")])
    return BoundedClaims(claims, statuses, round(time.perf_counter() - t0, 3))


def claimed_beyond(claims: BoundedClaims, persons: pd.DataFrame,
                   cells: tuple[Sf1Cell, ...]) -> int:
    """The claimed persons that ``persons`` (a checked persons frame) lacks: per claim, how
    far its least count exceeds the persons of its class in its block, summed (0: every
    claim holds for these persons)."""
    mats, _ = block_classes(cells)
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
