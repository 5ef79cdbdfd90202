"""Every block of a noisy release through ``engines.census.certain``: the persons certain
within the noise, written as one Parquet table (block, class, persons) whose metadata holds
the cell definitions, delta and the bounds used, so ``census compare`` can score it. Tracts
are the units (in parallel, each stored in ``OUT.parts/`` as it finishes: resumable, the
rule of ``runs.stores``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import scipy.sparse as sp

from statrecon.census.geography import tract_of
from statrecon.census.persons.cells import Sf1Cell, definitions_digest, definitions_json
from statrecon.census.persons.release import CensusRelease, ReleaseNoise
from statrecon.discrete_gaussian import MIN_ALPHA, BoundOutOfTime
from statrecon.engines.census import CellMatrices, cell_bounds, certain_in_block, class_matrix
from statrecon.errors import StatreconError
from statrecon.outputs import write_atomically
from statrecon.runs.census_protect import release_bounds
from statrecon.runs.parallel import run_units
from statrecon.runs.progress import Progress, Step
from statrecon.runs.stores import PartStore

META_KEY = b"statrecon.census.certain"
DEFAULT_TIME_LIMIT = 10.0  # seconds for the noise bounds, then per block (None: no limit)


@dataclass
class CertainSummary:
    blocks: int
    persons: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0


Shared = tuple[tuple[Sf1Cell, ...], float | None, int]  # cells, seconds per block, seed
_CLASSES: dict[str, tuple[CellMatrices, sp.csr_matrix]] = {}


def block_classes(cells: tuple[Sf1Cell, ...]) -> tuple[CellMatrices, sp.csr_matrix]:
    """The cells' matrices and class matrix, built once per process and definitions (0.4 s
    for SF1's person cells)."""
    key = definitions_digest(cells)
    if key not in _CLASSES:
        mats = CellMatrices.build(cells)
        _CLASSES[key] = (mats, class_matrix(mats))
    return _CLASSES[key]


def certain_rows(cells: tuple[Sf1Cell, ...], blocks: tuple[str, ...], lo: np.ndarray,
                 hi: np.ndarray, time_limit: float | None, seed: int = 0
                 ) -> tuple[pa.Table, dict[str, int]]:
    """Every block through ``certain_in_block`` with its count cells' bounds (rows of
    ``lo``/``hi``): its certain persons as rows (block, class, persons), and the count of
    each block status. The one loop of both certain runs (noisy and protected releases)."""
    _, c = block_classes(cells)
    statuses: dict[str, int] = {}
    rows: dict[str, list[Any]] = {"block": [], "class": [], "persons": []}
    for b, block in enumerate(blocks):
        got = certain_in_block(c, lo[b], hi[b], time_limit=time_limit, seed=seed)
        statuses[got.status] = statuses.get(got.status, 0) + 1
        for k, n in zip(got.classes.tolist(), got.counts.tolist(), strict=True):
            rows["block"].append(block)
            rows["class"].append(k)
            rows["persons"].append(n)
    table = pa.table({"block": pa.array(rows["block"], pa.string()),
                      "class": pa.array(rows["class"], pa.int32()),
                      "persons": pa.array(rows["persons"], pa.int32())})
    return table, statuses


# a tract's blocks and the bounds of their count cells (blocks x count cells)
Unit = tuple[str, tuple[str, ...], np.ndarray, np.ndarray]


def certify_tract(shared: Shared, unit: Unit) -> tuple[pa.Table, dict[str, int], float]:
    """One unit of work (runs in a worker): every block of the tract, its certain persons
    as rows (block, class, persons), the count of each block status, and its seconds."""
    cells, time_limit, seed = shared
    t0 = time.perf_counter()
    _, blocks, lo, hi = unit
    table, statuses = certain_rows(cells, blocks, lo, hi, time_limit, seed)
    return table, statuses, round(time.perf_counter() - t0, 3)


def bounded_units(geoids: tuple[str, ...], lo: np.ndarray, hi: np.ndarray,
                  counts: np.ndarray) -> list[Unit]:
    """Blocks (rows of ``lo``/``hi``, every block cell) grouped by tract, with the bounds of
    their count cells (columns ``counts``), largest tract first."""
    by_tract: dict[str, list[int]] = {}
    for b, geoid in enumerate(geoids):
        by_tract.setdefault(tract_of(geoid), []).append(b)
    units: list[Unit] = []
    for tract, rows in by_tract.items():
        at = np.ix_(np.array(rows, dtype=np.int64), counts)
        units.append((tract, tuple(geoids[b] for b in rows), lo[at], hi[at]))
    return sorted(units, key=lambda u: -len(u[1]))


def _noisy_units(release: CensusRelease, t_block: np.ndarray, done: set[str]
                 ) -> tuple[int, Iterator[Unit]]:
    """The tracts not in ``done``, largest first, each with its blocks' noise bounds m +- t
    (made as each tract is sent, not all at once); and how many there are."""
    counts = np.flatnonzero(block_classes(release.cells)[0].is_count)
    todo = sorted((t for t in release.tract_tables() if t.tract not in done),
                  key=lambda t: -len(t.blocks))

    def units() -> Iterator[Unit]:
        for t in todo:
            m = t.block_values[:, counts]
            yield t.tract, tuple(t.blocks), m - t_block, m + t_block

    return len(todo), units()


def _check_request(release: CensusRelease, delta: float) -> ReleaseNoise:
    """The release's noise, when it is noisy and ``delta`` spread over its cells (the union
    bound: delta / N each) is a failure probability the noise bounds compute."""
    if not 0 < delta < 1:
        raise StatreconError(f"--delta must lie in (0, 1), got {delta}")
    noise = release.noise
    if noise is None or not noise.noisy:
        raise StatreconError(f"{release.path}: exact tables, not noisy measurements; their "
                             "certain persons come from `census reconstruct`")
    cells = _noisy_cells(release)
    if delta / cells < MIN_ALPHA:
        raise StatreconError(f"--delta {delta:g} over the release's {cells:,} noisy cells "
                             f"leaves each cell a failure probability of {delta / cells:.3g}, "
                             f"below {MIN_ALPHA:g}, the least the noise bounds compute; give "
                             f"--delta at least {MIN_ALPHA * cells:.3g}")
    return noise


def _noisy_cells(release: CensusRelease) -> int:
    return len(release.blocks) * len(release.block_cells) + len(release.tracts) * len(
        release.tract_cells)


def _bounds(release: CensusRelease, noise: ReleaseNoise, delta: float,
            time_limit: float | None) -> tuple[np.ndarray, np.ndarray] | None:
    """t_c per block count cell and per tract cell (``cell_bounds``), or None when they took
    longer than ``time_limit`` (a sigma near the largest takes seconds): then nothing is
    proven."""
    block_cells = release.block_cells
    counts = [k for k, cell in enumerate(block_cells) if not cell.is_median]
    sigma_block = np.array([noise.sigma[block_cells[k].table] for k in counts])
    sigma_tract = np.array([noise.sigma[c.table] for c in release.tract_cells])
    end = None if time_limit is None else time.monotonic() + time_limit
    total = _noisy_cells(release)
    try:
        t_block = cell_bounds(sigma_block, delta, total, end)
        t_tract = cell_bounds(sigma_tract, delta, total, end) if len(sigma_tract) \
            else t_block[:0]
    except BoundOutOfTime:
        return None
    return t_block, t_tract


def certain_release(release: CensusRelease, out: Path, delta: float,
                    time_limit: float | None = DEFAULT_TIME_LIMIT,
                    progress: Progress | None = None,
                    workers: int = 1, executor: str | None = None) -> CertainSummary:
    """Prove, block by block, the persons in every dataset within the release's bounds;
    write them to ``out``. A noisy release's bounds are the noise bounds at ``delta``
    (``time_limit`` holds for them first: past it nothing is claimed); a protected release's
    are the hard bounds its protection leaves (``census_protect.release_bounds``: no
    probability, ``delta`` unused). Tracts run in parallel (``workers`` or a Dask
    ``executor``) and each is stored in ``OUT.parts/`` as it finishes, so a rerun after a
    crash or Ctrl-C resumes; ``time_limit`` holds for each block."""
    t0 = time.perf_counter()
    summary = CertainSummary(blocks=len(release.blocks))
    meta: dict[str, Any] = {"release": release.digest,
                            "cells": definitions_json(release.cells)}
    if release.protection is not None:
        delta = 0.0  # the bounds hold always
        block, _ = release_bounds(release)
        counts = np.flatnonzero(block_classes(release.cells)[0].is_count)
        store = PartStore(out, {"release": release.digest, "delta": delta}, META_KEY)
        done = store.finished()
        units = [u for u in bounded_units(block.geoids, block.lo, block.hi, counts)
                 if u[0] not in done]
        meta.update({"delta": delta, "protection": release.protection.statement,
                     "bounds": "protection"})
        _run_tracts(store, len(units), iter(units), (release.cells, time_limit, 0), progress,
                    workers, executor)
    else:
        noise = _check_request(release, delta)
        bounds = _bounds(release, noise, delta, time_limit)
        meta.update({"delta": delta, "rho": noise.rho})
        if bounds is None:  # out of time before any block: every block unknown
            summary.statuses = {"unknown": len(release.blocks)}
            _write(out, _claims_table([]), {**meta, "bounds": None,
                                            "statuses": summary.statuses,
                                            "tract_seconds": 0.0})
            summary.elapsed_s = time.perf_counter() - t0
            return summary
        t_block, t_tract = bounds
        meta["bounds"] = {"block": sorted(set(t_block.tolist())),
                          "tract": sorted(set(t_tract.tolist()))}
        store = PartStore(out, {"release": release.digest, "delta": delta}, META_KEY)
        n, noisy = _noisy_units(release, t_block, set(store.finished()))
        _run_tracts(store, n, noisy, (release.cells, time_limit, 0), progress, workers,
                    executor)
    merged, summary.statuses, tract_seconds = _collect(store)
    summary.persons = int(pa.compute.sum(merged["persons"]).as_py() or 0)
    _write(out, merged, {**meta, "statuses": summary.statuses,
                         "tract_seconds": round(tract_seconds, 2)})
    store.clear()
    summary.elapsed_s = time.perf_counter() - t0
    return summary


def claim_ceilings(release: CensusRelease, delta: float, blocks: list[str],
                   classes: np.ndarray) -> np.ndarray:
    """Per claim (``blocks[i]``, ``classes[i]``), the most persons of that class any dataset
    within the release's bounds (the noise bounds at ``delta``, or a protection's hard
    bounds) puts in that block: the least upper bound over the block count cells holding
    the class (-1: no such block). A claim of ``census certain`` on this release never
    exceeds it (its witness meets every upper bound), so a claim that does is not about
    this release."""
    mats, c = block_classes(release.cells)
    counts = np.flatnonzero(mats.is_count)
    if release.protection is not None:
        upper = release_bounds(release)[0].hi[:, counts]
    else:
        noise = _check_request(release, delta)
        bounds = _bounds(release, noise, delta, None)
        assert bounds is not None  # no time limit
        upper = release.block_values[:, counts] + bounds[0]
    cols = c.tocsc()
    row = {b: i for i, b in enumerate(release.blocks)}
    out = np.full(len(blocks), -1, dtype=np.int64)
    for j, (block, k) in enumerate(zip(blocks, classes.tolist(), strict=True)):
        i = row.get(block)
        if i is None or not 0 <= k < cols.shape[1]:
            continue
        cells = cols.indices[cols.indptr[k]:cols.indptr[k + 1]]  # never none: P1 holds all
        out[j] = max(0, int(upper[i, cells].min()))
    return out


def _run_tracts(store: PartStore, n: int, units: Iterator[Unit], shared: Shared,
                progress: Progress | None, workers: int, executor: str | None) -> None:
    """The ``n`` tracts of ``units`` (those not yet in ``store``), each stored as it
    finishes."""
    if progress:
        progress(Step(0, n, 0))
    workers = max(1, min(workers, n))
    with closing(run_units(certify_tract, shared, units, workers=workers,
                           executor=executor)) as results:
        found = 0
        for i, (unit, (table, statuses, seconds)) in enumerate(results, start=1):
            found += int(pa.compute.sum(table["persons"]).as_py() or 0)
            store.write(unit[0], table, {"statuses": statuses, "seconds": seconds})
            if progress:
                progress(Step(i, n, found, unit[0]))


def _claims_table(tables: list[pa.Table]) -> pa.Table:
    """The parts as one table sorted by block and class (empty: the three columns)."""
    merged = pa.concat_tables(tables) if tables else pa.table(
        {"block": pa.array([], pa.string()), "class": pa.array([], pa.int32()),
         "persons": pa.array([], pa.int32())})
    return merged.sort_by([("block", "ascending"), ("class", "ascending")])


def _collect(store: PartStore) -> tuple[pa.Table, dict[str, int], float]:
    """Every stored tract merged: the claims, the count of each block status, the seconds."""
    tables_out: list[pa.Table] = []
    statuses: dict[str, int] = {}
    seconds = 0.0
    for part, part_meta in sorted(store.finished().values(), key=lambda pm: pm[0]):
        tables_out.append(pq.read_table(part).replace_schema_metadata(None))
        seconds += float(part_meta.get("seconds", 0))
        for status, n in part_meta["statuses"].items():
            statuses[status] = statuses.get(status, 0) + n
    return _claims_table(tables_out), statuses, seconds


def _write(out: Path, merged: pa.Table, meta: dict[str, Any]) -> None:
    merged = merged.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    write_atomically(out, lambda tmp: pq.write_table(merged, tmp))
