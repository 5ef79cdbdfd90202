"""Reconstruct every tract of a census release, storing each as it finishes (resumable: the
rule of ``runs.stores``)."""

from __future__ import annotations

import os
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from statrecon.census.persons.cells import Sf1Cell, definitions_digest
from statrecon.census.persons.release import MAX_VALUE, CensusRelease, ReleaseNoise, TractTables
from statrecon.engines.census import (
    MAX_TRACT_VARIABLES,
    CellMatrices,
    CensusOptions,
    model_variables,
    reconstruct_tract,
)
from statrecon.errors import StatreconError
from statrecon.result import html_table, html_view
from statrecon.runs.parallel import run_units
from statrecon.runs.progress import Progress, Step
from statrecon.runs.stores import ReconStore, tract_table

_MATRICES: dict[str, CellMatrices] = {}
DELAY_VARIABLE = "STATRECON_TRACT_DELAY_S"


def _matrices(cells: tuple[Sf1Cell, ...]) -> CellMatrices:
    key = definitions_digest(cells)
    if key not in _MATRICES:
        _MATRICES[key] = CellMatrices.build(cells)
    return _MATRICES[key]


Shared = tuple[tuple[Sf1Cell, ...], CensusOptions, ReleaseNoise | None]


def solve_tract(shared: Shared, tables: TractTables) -> tuple[pa.Table, dict[str, Any]]:
    """One unit of work (runs in a worker): reconstruct (and certify exact tables, or rank
    either), encode the rows. ``shared[2]``: the noise of noisy measurements (the top-down
    noise-aware estimate, with the tract's exact population when published), None for exact
    tables."""
    cells, options, noise = shared
    delay = float(os.environ.get(DELAY_VARIABLE) or 0)
    if delay:
        time.sleep(delay)  # tests use it to kill a run with tracts in flight
    if noise is None:
        result = reconstruct_tract(tables, _matrices(cells), options)
    else:
        # lazy: the top-down estimate (scipy's LP, OR-Tools' min-cost flow) only for noisy
        # measurements; a worker of exact tables starts 0.2 s sooner without it
        from statrecon.engines.census.topdown import reconstruct_noisy

        block = np.array([noise.sigma[c.table] for c in cells if c.level == "block"])
        tract = np.array([noise.sigma[c.table] for c in cells if c.level == "tract"])
        total = (noise.tract_population or {}).get(tables.tract)
        result = reconstruct_noisy(tables, _matrices(cells), block, tract, options, total)
    info = {"status": result.status, "persons": result.persons, "conflict": result.conflict,
            "unique": sum(1 for b in result.blocks if b.unique)}
    return tract_table(result, tables.blocks), info


@dataclass
class RunSummary:
    """What one ``reconstruct_release`` run did (the tracts of earlier runs are counted in
    ``skipped`` only)."""

    tracts: int
    skipped: int  # finished in an earlier run
    ran: int
    persons: int  # reconstructed in this run
    statuses: Counter[str] = field(default_factory=Counter)
    conflicts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    elapsed_s: float = 0.0
    unique_blocks: int = 0  # certified unique in this run (exact tables only)

    def _repr_html_(self) -> str:
        """Jupyter's view: the run's headline numbers."""
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items())) or "none"
        rows = [["tracts in the release", f"{self.tracts:,}"],
                ["reconstructed in this run", f"{self.ran:,}"],
                ["finished in an earlier run", f"{self.skipped:,}"],
                ["persons reconstructed", f"{self.persons:,}"],
                ["blocks certified unique (proven)", f"{self.unique_blocks:,}"],
                ["tract statuses", statuses],
                ["seconds", f"{self.elapsed_s:.1f}"]]
        if self.conflicts:
            rows.append(["tracts whose tables contradict each other",
                         ", ".join(sorted(self.conflicts))])
        return html_view("Census reconstruction", html_table(["", ""], rows))


def noise_scales(release: CensusRelease) -> ReleaseNoise | None:
    """The release's noise when it holds noisy measurements, else None (exact tables,
    including rho = inf); a protected release's cells are weighed by their method's error
    (``census_protect.estimate_noise``, which refuses withheld cells)."""
    if release.protection is not None:
        # lazy: the ptables (engines/ckm) load only for a protected release
        from statrecon.runs.census_protect import estimate_noise

        return estimate_noise(release)
    if release.noise is not None and release.noise.noisy:
        return release.noise
    return None


def check_model_sizes(release: CensusRelease) -> None:
    """Refuse, before solving anything, a tract whose model or population would not fit.

    Bounds each tract's persons (they are listed one by one in the output) and the size of its
    CP-SAT model, estimated from the published zeros without building it.
    """
    mats = _matrices(release.cells)
    noisy = noise_scales(release) is not None
    for tables in release.tract_tables():
        if tables.persons > MAX_VALUE["tract"]:
            raise StatreconError(f"{release.path}: tract {tables.tract}: its blocks hold "
                                 f"{tables.persons:,} persons, more than a census tract holds "
                                 f"(at most {MAX_VALUE['tract']:,})")
        if noisy:
            continue  # the top-down model's size does not depend on the zeros (no pruning)
        n = model_variables(tables, mats)
        if n > MAX_TRACT_VARIABLES:
            raise StatreconError(f"{release.path}: tract {tables.tract}: the model would have "
                                 f"{n:,} variables (at most {MAX_TRACT_VARIABLES:,}); publish "
                                 "more tables (their zeros prune it) or split the tract")


def reconstruct_release(release: CensusRelease, out: Path, *, workers: int = 1,
                        executor: str | None = None, options: CensusOptions | None = None,
                        progress: Progress | None = None) -> RunSummary:
    """Reconstruct the tracts not yet in ``out``; merge everything into ``out`` at the end.

    First ``check_model_sizes``: a tract too large is refused before anything is solved.
    ``progress`` counts the tracts of this run (not those finished before) and their persons.
    """
    check_model_sizes(release)
    noise = noise_scales(release)
    options = options or CensusOptions()
    t0 = time.perf_counter()
    store = ReconStore(out, release.digest)
    finished = store.finished()
    todo = [t for t in release.tract_tables() if t.tract not in finished]
    todo.sort(key=lambda t: -t.persons)  # biggest first: better load balance
    summary = RunSummary(tracts=len(release.tracts), skipped=len(release.tracts) - len(todo),
                         ran=0, persons=0)
    if progress:
        progress(Step(0, len(todo), 0))
    # No more processes than tracts: a pool only pays its start-up for parallel work.
    workers = max(1, min(workers, len(todo)))
    # closing: on Ctrl-C or an error the pool stops now, not when the generator is collected
    with closing(run_units(solve_tract, (release.cells, options, noise), todo, workers=workers,
                           executor=executor)) as results:
        for tables, (table, info) in results:
            store.write(tables.tract, table)
            summary.ran += 1
            summary.persons += info["persons"]
            summary.unique_blocks += info["unique"]
            summary.statuses[info["status"]] += 1
            if info["conflict"]:
                summary.conflicts[tables.tract] = tuple(info["conflict"])
            if progress:
                progress(Step(summary.ran, len(todo), summary.persons, tables.tract))
    summary.elapsed_s = time.perf_counter() - t0
    bins = sorted({int(a) for a in _matrices(release.cells).age_bin})
    solver = "CP-SAT" if noise is None else "HiGHS top-down, noise-weighted L1 (estimate)"
    store.merge({"solver": solver, "estimate": noise is not None,
                 "time_limit": options.time_limit,
                 "definitions": definitions_digest(release.cells), "age_bins": bins})
    return summary
