"""The per-block proof of certain persons (``engines/census.certain_in_block``) on a seeded
sample of the 28 bundled tracts' blocks, published under one protection with hard bounds
(CKM, rounding, suppression, swapping), one process, one core.

Prints the seconds, the blocks per status and the persons proven. To compare two versions
of the engine side by side, run it on both in one go (the engine of another commit through
PYTHONPATH; the data and the sample are the same: protections are seeded):

    git worktree add /tmp/before <commit>
    PYTHONPATH=/tmp/before/src .venv/bin/python benchmarks/bench_certain_blocks.py
    .venv/bin/python benchmarks/bench_certain_blocks.py
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from _machine import describe
from bench_census import DATA

from statrecon.census.persons.swap import read_persons
from statrecon.engines.census import CellMatrices, certain_in_block, class_matrix
from statrecon.runs.census_protect import CensusProtectOptions, protect_census


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", default="ckm-abs",
                    choices=["ckm-abs", "ckm-ons", "round", "suppress", "swap"])
    ap.add_argument("--d", type=int, default=2, help="CKM's maximum noise D")
    ap.add_argument("--v", default="1.08", help="CKM's variance V")
    ap.add_argument("--base", type=int, default=5, help="rounding base")
    ap.add_argument("--blocks", type=int, default=300, help="blocks sampled (seed 0)")
    ap.add_argument("--time-limit", type=float, default=1.0, help="seconds per block")
    ap.add_argument("--persons", type=Path, default=DATA)
    args = ap.parse_args()
    persons = read_persons(args.persons).persons
    options = CensusProtectOptions(args.method, d=args.d, v=Fraction(args.v), base=args.base)
    release = protect_census(persons, options)
    mats = CellMatrices.build(release.cells)
    c = class_matrix(mats)
    counts = np.flatnonzero(mats.is_count)
    block = release.block
    pick = np.random.default_rng(0).choice(len(block.geoids),
                                           size=min(args.blocks, len(block.geoids)),
                                           replace=False)
    statuses: dict[str, int] = {}
    persons_proven = 0
    seconds = []
    for b in pick.tolist():
        t0 = time.perf_counter()
        got = certain_in_block(c, block.lo[b, counts], block.hi[b, counts],
                               time_limit=args.time_limit)
        seconds.append(time.perf_counter() - t0)
        statuses[got.status] = statuses.get(got.status, 0) + 1
        persons_proven += int(got.counts.sum())
    total = float(np.sum(seconds))
    print(describe())
    print(f"engine: {Path(certain_in_block.__code__.co_filename).parent}")
    print(f"{release.statement}")
    print(f"{len(pick)} blocks of {len(block.geoids):,}, {args.time_limit:g} s per block: "
          f"{total:.1f} s ({total / len(pick) * 1000:.0f} ms a block; median "
          f"{np.median(seconds) * 1000:.0f} ms), {statuses}, {persons_proven:,} persons proven")


if __name__ == "__main__":
    main()
