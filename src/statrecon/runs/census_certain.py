"""Every block of a noisy release through ``engines.census_certain``: the persons certain
within the noise, written as one Parquet table (block, class, persons) whose metadata holds
the cell definitions, delta and the bounds used, so ``census compare`` can score it. Tracts
are the units (in parallel, each stored in ``OUT.parts/`` as it finishes: resumable, the
rule of ``runs.stores``)."""

from __future__ import annotations

import json
import time
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import scipy.sparse as sp

from statrecon.census.persons.cells import Sf1Cell, definitions_digest
from statrecon.census.persons.release import CensusRelease, TractTables
from statrecon.engines.census import CellMatrices
from statrecon.engines.census_certain import cell_bounds, certain_in_block, class_matrix
from statrecon.errors import StatreconError
from statrecon.outputs import write_atomically
from statrecon.runs.parallel import run_units
from statrecon.runs.progress import Progress, Step
from statrecon.runs.stores import PartStore

META_KEY = b"statrecon.census.certain"


@dataclass
class CertainSummary:
    blocks: int
    persons: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0


Shared = tuple[tuple[Sf1Cell, ...], np.ndarray, float | None]
_CLASSES: dict[str, tuple[CellMatrices, sp.csr_matrix]] = {}


def _classes(cells: tuple[Sf1Cell, ...]) -> tuple[CellMatrices, sp.csr_matrix]:
    """The cells' matrices and class matrix, built once per worker and definitions."""
    key = definitions_digest(cells)
    if key not in _CLASSES:
        mats = CellMatrices.build(cells)
        _CLASSES[key] = (mats, class_matrix(mats))
    return _CLASSES[key]


def certify_tract(shared: Shared, tables: TractTables
                  ) -> tuple[pa.Table, dict[str, int], float]:
    """One unit of work (runs in a worker): every block of the tract, its certain persons
    as rows (block, class, persons), the count of each block status, and its seconds."""
    cells, t_block, time_limit = shared
    t0 = time.perf_counter()
    mats, c = _classes(cells)
    counts = np.flatnonzero(mats.is_count)
    statuses: dict[str, int] = {}
    rows: dict[str, list[Any]] = {"block": [], "class": [], "persons": []}
    for b, block in enumerate(tables.blocks):
        m = tables.block_values[b, counts]
        got = certain_in_block(c, m - t_block, m + t_block, time_limit=time_limit)
        statuses[got.status] = statuses.get(got.status, 0) + 1
        for k, n in zip(got.classes.tolist(), got.counts.tolist(), strict=True):
            rows["block"].append(block)
            rows["class"].append(k)
            rows["persons"].append(n)
    table = pa.table({"block": pa.array(rows["block"], pa.string()),
                      "class": pa.array(rows["class"], pa.int32()),
                      "persons": pa.array(rows["persons"], pa.int32())})
    return table, statuses, round(time.perf_counter() - t0, 3)


def certain_release(release: CensusRelease, out: Path, delta: float,
                    time_limit: float | None = 10.0, progress: Progress | None = None,
                    workers: int = 1, executor: str | None = None) -> CertainSummary:
    """Prove, block by block, the persons in every dataset within the noise bounds; write
    them to ``out``. Tracts run in parallel (``workers`` or a Dask ``executor``) and each is
    stored in ``OUT.parts/`` as it finishes, so a rerun after a crash or Ctrl-C resumes."""
    if not 0 < delta < 1:
        raise StatreconError(f"--delta must lie in (0, 1), got {delta}")
    noise = release.noise
    if noise is None or not noise.noisy:
        raise StatreconError(f"{release.path}: exact tables, not noisy measurements; their "
                             "certain persons come from `census reconstruct`")
    t0 = time.perf_counter()
    block_cells = release.block_cells
    counts = [k for k, cell in enumerate(block_cells) if not cell.is_median]
    sigma_block = np.array([noise.sigma[block_cells[k].table] for k in counts])
    sigma_tract = np.array([noise.sigma[c.table] for c in release.tract_cells])
    total_cells = len(release.blocks) * len(block_cells) + len(release.tracts) * len(
        release.tract_cells)
    t_block = cell_bounds(sigma_block, delta, total_cells)
    t_tract = cell_bounds(sigma_tract, delta, total_cells) if len(sigma_tract) else t_block[:0]
    store = PartStore(out, {"release": release.digest, "delta": delta}, META_KEY)
    done = store.finished()
    todo = [t for t in release.tract_tables() if t.tract not in done]
    todo.sort(key=lambda t: -len(t.blocks))
    summary = CertainSummary(blocks=len(release.blocks))
    if progress:
        progress(Step(0, len(todo), 0))
    workers = max(1, min(workers, len(todo)))
    with closing(run_units(certify_tract, (release.cells, t_block, time_limit), todo,
                           workers=workers, executor=executor)) as results:
        found = 0
        for i, (tables, (table, statuses, seconds)) in enumerate(results, start=1):
            found += int(pa.compute.sum(table["persons"]).as_py() or 0)
            store.write(tables.tract, table, {"statuses": statuses, "seconds": seconds})
            if progress:
                progress(Step(i, len(todo), found, tables.tract))
    tables_out: list[pa.Table] = []
    statuses_all: dict[str, int] = {}
    tract_seconds = 0.0
    for part, part_meta in sorted(store.finished().values(), key=lambda pm: pm[0]):
        tables_out.append(pq.read_table(part).replace_schema_metadata(None))
        tract_seconds += float(part_meta.get("seconds", 0))
        for status, n in part_meta["statuses"].items():
            statuses_all[status] = statuses_all.get(status, 0) + n
    merged = pa.concat_tables(tables_out) if tables_out else pa.table(
        {"block": pa.array([], pa.string()), "class": pa.array([], pa.int32()),
         "persons": pa.array([], pa.int32())})
    merged = merged.sort_by([("block", "ascending"), ("class", "ascending")])
    summary.statuses = statuses_all
    summary.persons = int(pa.compute.sum(merged["persons"]).as_py() or 0)
    summary.elapsed_s = time.perf_counter() - t0
    meta = {"release": release.digest, "delta": delta, "rho": noise.rho,
            "cells": [asdict(cell) for cell in release.cells],
            "bounds": {"block": sorted(set(t_block.tolist())),
                       "tract": sorted(set(t_tract.tolist()))},
            "statuses": statuses_all, "tract_seconds": round(tract_seconds, 2)}
    merged = merged.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    write_atomically(out, lambda tmp: pq.write_table(merged, tmp))
    store.clear()
    return summary
