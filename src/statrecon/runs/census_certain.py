"""Every block of a noisy release through ``engines.census_certain``: the persons certain
within the noise, written as one Parquet table (block, class, persons) whose metadata holds
the cell definitions, delta and the bounds used, so ``census compare`` can score it."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from statrecon.census.persons.release import CensusRelease
from statrecon.engines.census import CellMatrices
from statrecon.engines.census_certain import cell_bounds, certain_in_block, class_matrix
from statrecon.errors import StatreconError
from statrecon.outputs import write_atomically
from statrecon.runs.progress import Progress, Step

META_KEY = b"statrecon.census.certain"


@dataclass
class CertainSummary:
    blocks: int
    persons: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0


def certain_release(release: CensusRelease, out: Path, delta: float,
                    time_limit: float | None = 10.0,
                    progress: Progress | None = None) -> CertainSummary:
    """Prove, block by block, the persons in every dataset within the noise bounds; write
    them to ``out``."""
    if not 0 < delta < 1:
        raise StatreconError(f"--delta must lie in (0, 1), got {delta}")
    noise = release.noise
    if noise is None or not noise.noisy:
        raise StatreconError(f"{release.path}: exact tables, not noisy measurements; their "
                             "certain persons come from `census reconstruct`")
    t0 = time.perf_counter()
    mats = CellMatrices.build(release.cells)
    counts = np.flatnonzero(mats.is_count)
    block_cells = release.block_cells
    sigma_block = np.array([noise.sigma[block_cells[k].table] for k in counts])
    sigma_tract = np.array([noise.sigma[c.table] for c in release.tract_cells])
    total_cells = len(release.blocks) * len(block_cells) + len(release.tracts) * len(
        release.tract_cells)
    t_block = cell_bounds(sigma_block, delta, total_cells)
    t_tract = cell_bounds(sigma_tract, delta, total_cells) if len(sigma_tract) else t_block[:0]
    c = class_matrix(mats)
    summary = CertainSummary(blocks=len(release.blocks))
    rows: dict[str, list[Any]] = {"block": [], "class": [], "persons": []}
    if progress:
        progress(Step(0, len(release.blocks), 0))
    for b, block in enumerate(release.blocks):
        m = release.block_values[b, counts]
        got = certain_in_block(c, m - t_block, m + t_block, time_limit=time_limit)
        summary.statuses[got.status] = summary.statuses.get(got.status, 0) + 1
        for k, n in zip(got.classes.tolist(), got.counts.tolist(), strict=True):
            rows["block"].append(block)
            rows["class"].append(k)
            rows["persons"].append(n)
            summary.persons += n
        if progress:
            progress(Step(b + 1, len(release.blocks), summary.persons))
    summary.elapsed_s = time.perf_counter() - t0
    meta = {"release": release.digest, "delta": delta, "rho": noise.rho,
            "cells": [asdict(cell) for cell in release.cells],
            "bounds": {"block": sorted(set(t_block.tolist())),
                       "tract": sorted(set(t_tract.tolist()))},
            "statuses": summary.statuses}
    table = pa.table({"block": pa.array(rows["block"], pa.string()),
                      "class": pa.array(rows["class"], pa.int32()),
                      "persons": pa.array(rows["persons"], pa.int32())})
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    write_atomically(out, lambda tmp: pq.write_table(table, tmp))
    return summary
