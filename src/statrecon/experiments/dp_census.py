"""The DP census experiment: how much of the truth a reconstruction recovers, how well its
scores rank it, and what stays proven, as the privacy budget rho varies.

For each rho: noisy measurements of the true persons' SF1 tables (``census tabulate
--dp-rho``, seeded), the noise-aware reconstruction with scores from K re-drawn estimates
(``census reconstruct --rank K``; rho = inf publishes the exact tables and gets the exact
model, certified), the persons certain within the noise at failure probability delta
(``census certain``), and the Bureau's measures against the truth beside the baselines
(``census compare``). Everything lands under ``OUT/rho_<rho>/``; a rerun skips what is
there (the reconstruction resumes tract by tract), so a crash or Ctrl-C loses at most the
tracts in flight.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow.parquet as pq

from statrecon import inputs
from statrecon.census.persons.cells import select_cells
from statrecon.census.persons.microdata import load_persons
from statrecon.census.persons.noise import noisy_table, plan_noise
from statrecon.census.persons.release import read_release, write_release
from statrecon.census.persons.tabulate import tabulate_cells
from statrecon.db import open_connection
from statrecon.engines.census import DEFAULT_TRACT_TIME_LIMIT, CensusOptions
from statrecon.errors import (
    StatreconError,
    check_count,
    check_option,
    check_time_limit,
)
from statrecon.experiments.census_match import compare
from statrecon.experiments.stored import read_step, write_step
from statrecon.outputs import write_atomically
from statrecon.report.dp_census import markdown, plot
from statrecon.runs.census import reconstruct_release
from statrecon.runs.census_certain import DEFAULT_TIME_LIMIT as CERTAIN_TIME_LIMIT
from statrecon.runs.census_certain import META_KEY as CERTAIN_KEY
from statrecon.runs.census_certain import certain_release
from statrecon.runs.progress import Progress
from statrecon.runs.stores import META_KEY as STORE_KEY

PARAMS_FILE = "params.json"
SUMMARY_FILE = "summary.json"
FIGURE_FILE = "dp_census.png"
README_FILE = "README.md"
DEFAULT_RHOS = (0.1, 0.5, 1.0, 2.63, 10.0, math.inf)


@dataclass(frozen=True)
class DpCensusOptions:
    """The experiment's settings. Its time limits, like every ``*Options``'s: seconds, None for
    no limit, the field's default the engine's (``DpCensusOptions.time_limit``: the census
    engine's per tract); a value out of range raises ``OptionError`` when they are made."""

    rhos: tuple[float, ...] = DEFAULT_RHOS
    seed: int = 0
    rank: int = 20  # K re-drawn (or random-objective) estimates per tract
    delta: float = 0.05
    certify: bool = True  # census certain on noisy releases
    workers: int = 1
    executor: str | None = None
    time_limit: float | None = DEFAULT_TRACT_TIME_LIMIT  # per tract
    certain_time_limit: float | None = CERTAIN_TIME_LIMIT  # bounds, then per block

    def __post_init__(self) -> None:
        check_option(self, "rhos", len(self.rhos) > 0 and all(r > 0 for r in self.rhos),
                     "at least one rho, each > 0 (inf: no noise)")
        check_run(self)


class _TractRun(Protocol):
    @property
    def delta(self) -> float: ...


def check_run(options: _TractRun) -> None:
    """The checks of what every census experiment's options share: ``seed``, ``rank``,
    ``delta``, ``workers``, ``time_limit`` and ``certain_time_limit``."""
    check_count(options, "seed", 0)
    check_count(options, "rank", 0)
    check_option(options, "delta", 0 < options.delta < 1, "must lie in (0, 1)")
    check_count(options, "workers")
    check_time_limit(options)
    check_time_limit(options, "certain_time_limit")


def rho_label(rho: float) -> str:
    return "inf" if math.isinf(rho) else f"{rho:g}"


def parse_rhos(text: str) -> tuple[float, ...]:
    """'0.1,1,inf' -> (0.1, 1.0, inf), each > 0, no repeats."""
    out: list[float] = []
    for part in text.split(","):
        part = part.strip()
        try:
            rho = float(part)
        except ValueError:
            raise StatreconError(f"--rho {text!r}: {part!r} is not a number (or inf)") from None
        if math.isnan(rho) or rho <= 0:
            raise StatreconError(f"--rho {text!r}: every rho must be > 0 (inf: no noise)")
        if rho in out:
            raise StatreconError(f"--rho {text!r}: {part} is given twice")
        out.append(rho)
    return tuple(out)


def _check_params(out: Path, truth: Path, options: DpCensusOptions) -> None:
    check_params(out, {"truth": truth.name, "seed": options.seed, "rank": options.rank,
                       "delta": options.delta, "certify": options.certify})


def check_params(out: Path, params: dict[str, Any]) -> None:
    """A folder holds one experiment: reusing it with other settings would mix results
    (``params`` written the first time, refused when they differ later)."""
    path = out / PARAMS_FILE
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if old != params:
            raise StatreconError(f"{out} holds an experiment with other settings ({path}: "
                                 f"{json.dumps(old)[:200]}); give another --out, or the same "
                                 "settings to resume it")
        return
    write_step(path, params)


def _release(truth: Path, rho: float, seed: int, path: Path) -> Path:
    """The noisy measurements (or exact tables, rho = inf) of the truth, written once."""
    if path.exists():
        return path
    cells = select_cells("sf1-persons")
    plan = plan_noise(cells, rho)
    con = open_connection()
    load_persons(truth, con)
    table = tabulate_cells(con, cells)
    table, noise = noisy_table(table, plan, seed)
    write_release(table, cells, "sf1-persons", path, noise)
    return path


Say = Callable[[str], None]


def run_rho(truth: Path, rho: float, out: Path, options: DpCensusOptions,
            progress: Progress | None = None, say: Say | None = None) -> dict[str, Any]:
    """One rho: release, reconstruction, certain persons, comparison (each skipped when its
    file is there); returns the comparison with the run's timings."""
    folder = out / f"rho_{rho_label(rho)}"
    folder.mkdir(parents=True, exist_ok=True)
    compared = folder / "compare.json"
    if compared.exists():
        label = rho_label(rho)

        def check(data: dict[str, Any]) -> None:
            if data["rho"] != label:
                raise ValueError(f"rho {str(data['rho'])[:20]}, not {label}")
            markdown([summary_row(data)], "")  # what the summary does with it

        return read_step(compared, "comparison", check)
    note = say or (lambda _text: None)
    note(f"rho = {rho_label(rho)}: noisy measurements")
    release = read_release(_release(truth, rho, options.seed, folder / "release.parquet"))
    noisy = release.noise is not None and release.noise.noisy
    note(f"rho = {rho_label(rho)}: reconstruction"
         + (f" with {options.rank} re-drawn estimates per tract" if options.rank else ""))
    t0 = time.perf_counter()
    recon = folder / "recon.parquet"
    summary = reconstruct_release(
        release, recon, workers=options.workers, executor=options.executor,
        options=CensusOptions(time_limit=options.time_limit, seed=options.seed,
                              certify=not noisy, samples=options.rank),
        progress=progress)
    recon_s = time.perf_counter() - t0 if summary.ran else 0.0
    certain, certain_s = None, 0.0
    if noisy and options.certify:
        certain = folder / "certain.parquet"
        if not certain.exists():
            note(f"rho = {rho_label(rho)}: persons certain within the noise "
                 f"(delta = {options.delta:g})")
            t1 = time.perf_counter()
            certain_release(release, certain, options.delta, options.certain_time_limit,
                            progress, workers=options.workers, executor=options.executor)
            certain_s = time.perf_counter() - t1
    note(f"rho = {rho_label(rho)}: comparison with the truth")
    result = compare(truth, recon, seed=options.seed, certain=certain)
    if not noisy:  # no noise: the certified persons of the exact model are the certain ones
        result["certain_within_noise"] = result["certain_persons"]
        result["certain_within_noise_not_in_truth"] = result["certain_persons_not_in_truth"]
        result["delta"] = 0.0
    result["rho"] = rho_label(rho)
    result["seconds"] = {"reconstruct": round(recon_s, 2), "certain": round(certain_s, 2),
                         **tract_seconds(recon),
                         "tracts_certain": _certain_seconds(certain)}
    write_step(compared, result)
    return result


def tract_seconds(recon: Path) -> dict[str, float]:
    """CPU seconds the tracts took (solve, certify, rank), from the reconstruction's own
    records: right even when this run only resumed it (its wall time is then short)."""
    meta = inputs.json_metadata(pq.read_schema(recon).metadata, STORE_KEY, recon,
                                "census reconstruction")
    found = meta.get("tracts") if isinstance(meta, dict) else None
    tracts = [t for t in found.values() if isinstance(t, dict)] if isinstance(found, dict) \
        else []
    return {f"tracts_{k}": round(sum(_seconds(t.get(f"{k}_s")) for t in tracts), 2)
            for k in ("solve", "certify", "sample")}


def _seconds(value: object) -> float:
    """A stored duration; anything but a finite number >= 0 (a tampered record) counts as
    none: these are timings reported beside the results, never a result."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value >= 0 else 0.0


def _certain_seconds(certain: Path | None) -> float:
    """Seconds the tracts of ``census certain`` took, summed over its parts (resumes too)."""
    if certain is None:
        return 0.0
    meta = inputs.json_metadata(pq.read_schema(certain).metadata, CERTAIN_KEY, certain,
                                "certain persons file")
    return _seconds(meta.get("tract_seconds")) if isinstance(meta, dict) else 0.0


def run_experiment(truth: Path, out: Path, options: DpCensusOptions,
                   progress: Progress | None = None, say: Say | None = None
                   ) -> list[dict[str, Any]]:
    """Every rho in turn (``run_rho``), then the summary JSON under ``out``."""
    if not truth.exists():
        raise StatreconError(f"{truth}: no such file")
    if not 0 < options.delta < 1:
        raise StatreconError(f"--delta must lie in (0, 1), got {options.delta}")
    out.mkdir(parents=True, exist_ok=True)
    _check_params(out, truth, options)
    rows = [summary_row(run_rho(truth, rho, out, options, progress, say))
            for rho in options.rhos]
    write_step(out / SUMMARY_FILE, {"truth": truth.name, "seed": options.seed,
                               "rank": options.rank, "delta": options.delta, "rows": rows})
    plot(rows, out / FIGURE_FILE)
    header = (f"# DP census experiment: {truth.name}, seed {options.seed}, K = {options.rank} "
              f"re-drawn estimates, delta = {options.delta:g}\n\n"
              "Agreement: true persons matched in their block (sex, age, race, Hispanic "
              "origin). Top k%: precision of the k% highest-scored reconstructed persons. "
              "Certain: persons in every dataset within the noise bounds (probability >= "
              "1 - delta); at rho = inf, the exact model's certified persons.")
    text = markdown(rows, header)
    write_atomically(out / README_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return rows


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """The figures plotted and tabled for one rho."""
    s = result["scores"]
    base = result["baselines"]
    ranked = result.get("precision_at_k") or {}
    ranked_b = result.get("precision_at_k_binned") or {}
    return {
        "rho": result["rho"],
        "persons": result["persons"],
        "agreement_exact": s["agreement_exact"],
        "agreement_binned": s["agreement_binned"],
        "age_within_1": result["age_within_1_rate"],
        "precision_unique": s["precision_unique"],
        "precision_nonmodal": s["precision_nonmodal"],
        "precision_at_1pct": ranked.get("1%"),
        "precision_at_10pct": ranked.get("10%"),
        "precision_at_10pct_binned": ranked_b.get("10%"),
        "block_majority_exact": base["block_majority"]["agreement_exact"],
        "block_majority_binned": base["block_majority"]["agreement_binned"],
        "tract_draw_exact": base["tract_draw"]["agreement_exact"],
        "tract_draw_binned": base["tract_draw"]["agreement_binned"],
        "certain_within_noise": result.get("certain_within_noise"),
        "certain_within_noise_not_in_truth": result.get("certain_within_noise_not_in_truth"),
        "reconstruct_s": result["seconds"]["reconstruct"],
        "tracts_cpu_s": sum(result["seconds"].get(f"tracts_{k}", 0.0)
                            for k in ("solve", "certify", "sample")),
        "certain_cpu_s": result["seconds"].get("tracts_certain", 0.0),
        "certain_s": result["seconds"]["certain"],  # wall, this run only
    }
