"""The protections experiment (issue 30, item 5): every protection agencies use, on the same
persons, its utility against its risk.

For each setting (a method and one parameter: record swapping at a rate, cell key
perturbation at a maximum noise D, rounding to a base, suppression below a threshold,
differential privacy at a budget rho) the SF1 person tables are published
(``runs/census_protect``; DP: ``experiments/dp_census.run_rho``, the DP experiment's own
step), and measured twice against the truth:

- **utility**: the mean absolute error of the published count cells (block and tract; a
  withheld cell read as 0), the share published exactly, and the mean absolute error of the
  block cells of P8 (race) and P12 (sex by age group);
- **risk**: the reconstruction's agreement with the true persons (exact age, age groups),
  its precision on block uniques and non-modal uniques and on its top 1 % and 10 % scored
  persons, beside the baselines (``census_match.compare``, as the DP experiment scores); the
  persons proven certain at the tables' resolution (``runs/census_bounded``: every dataset
  within the release's hard bounds holds them; DP: within the noise at delta; rho = inf:
  within the exact tables) and how many the truth lacks (0 but for swapping, whose tables
  are those of the swapped persons).

The reconstruction: swapping publishes exact tables (of the swapped persons) and gets the
exact model, certified; CKM and rounding publish every cell within a few counts of the truth
and get the DP route's noise-weighted top-down estimate, each table weighed by the method's
noise standard deviation (an estimate, not a proof; its ranking re-draws Gaussian noise of
that scale, an approximation of the method's law); suppression withholds cells, which that
estimate cannot weigh, so it has no reconstruction here (its proven persons are measured).

Every setting lands in its own folder under ``OUT`` with its ``row.json``; a rerun skips a
setting whose row is there (DP's steps resume as the DP experiment's do).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from statrecon.census.persons.microdata import BLOCK_COLUMN
from statrecon.census.persons.release import CensusRelease, read_release
from statrecon.census.persons.swap import read_persons, swap_persons, swapped_file
from statrecon.engines.census import DEFAULT_TRACT_TIME_LIMIT, CensusOptions
from statrecon.errors import StatreconError, check_count, check_option
from statrecon.experiments import dp_census
from statrecon.experiments.census_match import compare
from statrecon.experiments.stored import read_step, write_step
from statrecon.outputs import write_atomically
from statrecon.report.protections import markdown, plot
from statrecon.runs.census import reconstruct_release
from statrecon.runs.census_bounded import DEFAULT_TIME_LIMIT as CERTAIN_TIME_LIMIT
from statrecon.runs.census_bounded import certain_protected, claimed_beyond
from statrecon.runs.census_protect import (
    BoundedCells,
    CensusProtectOptions,
    ProtectedCensus,
    count_cells,
    protect_census,
    protection_of,
    swap_plan,
    true_tables,
)
from statrecon.runs.progress import Progress, Step

SUMMARY_FILE = "summary.json"
FIGURE_FILE = "protections.png"
README_FILE = "README.md"
ROW_FILE = "row.json"
DEFAULT_SWAP_RATES = (0.05, 0.10, 0.50)
# CKM: sdcTools' ptable of (D, V, js = 1); D = 2, V = 1.08 is the public ABS-style example,
# D = 5, V = 3 a wider one
DEFAULT_CKM = ((2, Fraction(108, 100)), (5, Fraction(3)))
DEFAULT_BASES = (3, 5, 10)
DEFAULT_THRESHOLDS = (3,)
RACE_TABLE, AGE_TABLE = "P8", "P12"


@dataclass(frozen=True)
class ProtectionsOptions:
    """The experiment's settings: the parameters of each method (an empty tuple leaves a
    method out), the seed of every protection, DP's K and delta, and the time limits (seconds,
    None for none): ``time_limit`` per tract of a reconstruction, ``certain_time_limit`` per
    block of a proof of certain persons."""

    swap_rates: tuple[float, ...] = DEFAULT_SWAP_RATES
    swap_k: int = 3
    ckm: tuple[tuple[int, Fraction], ...] = DEFAULT_CKM
    bases: tuple[int, ...] = DEFAULT_BASES
    thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS
    rhos: tuple[float, ...] = dp_census.DEFAULT_RHOS
    seed: int = 0
    rank: int = 20
    delta: float = 0.05
    workers: int = 1
    time_limit: float | None = DEFAULT_TRACT_TIME_LIMIT
    certain_time_limit: float | None = CERTAIN_TIME_LIMIT

    def __post_init__(self) -> None:
        check_option(self, "swap_rates", all(0 <= r <= 1 for r in self.swap_rates),
                     "each swap rate a share of the persons in [0, 1]")
        check_count(self, "swap_k", 0)
        check_option(self, "ckm", all(d >= 1 and v > 0 for d, v in self.ckm),
                     "each (D, V) with D >= 1 and V > 0")
        check_option(self, "bases", all(b >= 2 for b in self.bases),
                     "each rounding base a whole number >= 2")
        check_option(self, "thresholds", all(t >= 1 for t in self.thresholds),
                     "each suppression threshold a whole number >= 1")
        check_option(self, "rhos", all(r > 0 for r in self.rhos), "each rho > 0 (inf: none)")
        dp_census.check_run(self)


@dataclass(frozen=True)
class Setting:
    """One method at one parameter: ``protect`` for ``protect_census``, or DP's ``rho``."""

    method: str  # swap, ckm, round, suppress, dp
    parameter: str  # as the table shows it
    key: str  # its folder under OUT
    protect: CensusProtectOptions | None = None
    rho: float | None = None


def settings(options: ProtectionsOptions) -> list[Setting]:
    """Every setting the options name, method by method."""
    seed = options.seed
    k = options.swap_k
    out = [Setting("swap", f"{r:.0%}" + ("" if k == 3 else f", k = {k}"),
                   f"swap_{r:g}" + ("" if k == 3 else f"_k{k}"),
                   CensusProtectOptions("swap", seed=seed, rate=r, swap_k=k))
           for r in options.swap_rates]
    out += [Setting("ckm", f"D = {d}, V = {float(v):g}", f"ckm_D{d}",
                    CensusProtectOptions("ckm-abs", seed=seed, d=d, v=v))
            for d, v in options.ckm]
    out += [Setting("round", f"base {b}", f"round_{b}",
                    CensusProtectOptions("round", seed=seed, base=b)) for b in options.bases]
    out += [Setting("suppress", f"below {t}", f"suppress_{t}",
                    CensusProtectOptions("suppress", seed=seed, threshold=t))
            for t in options.thresholds]
    out += [Setting("dp", f"rho = {dp_census.rho_label(r)}", f"dp/rho_{dp_census.rho_label(r)}",
                    rho=r) for r in options.rhos]
    return out


# ------------------------------------------------------------------------------ utility


def utility(truth: tuple[BoundedCells, BoundedCells], published: tuple[np.ndarray, np.ndarray],
            cells: tuple[Any, ...], withholds: bool = True) -> dict[str, Any]:
    """The published count cells against the true ones (both levels, geographies x cells in
    ``truth``'s order); ``withholds``: a -1 is a withheld cell, read as 0 (DP's noisy counts
    may be negative: False)."""
    shown = [np.where(v < 0, 0, v) if withholds else v for v in published]
    hidden = [(v < 0) if withholds else np.zeros(v.shape, dtype=bool) for v in published]
    errors = [np.abs(s - t.published).ravel() for s, t in zip(shown, truth, strict=True)]
    exact = [((s == t.published) & ~h).ravel()
             for s, t, h in zip(shown, truth, hidden, strict=True)]
    withheld = int(sum(h.sum() for h in hidden))
    block_cells = [c for c in cells if c.level == "block"]

    def table_mae(table: str) -> float | None:
        cols = [k for k, c in enumerate(block_cells) if c.table == table]
        if not cols or not truth[0].published.size:
            return None
        return float(np.abs(shown[0][:, cols] - truth[0].published[:, cols]).mean())

    every = np.concatenate(errors)
    return {"cells": int(every.size), "mae": float(every.mean()) if every.size else 0.0,
            "max_error": int(every.max()) if every.size else 0,
            "exact_share": float(np.concatenate(exact).mean()) if every.size else 1.0,
            "withheld": withheld, "race_mae": table_mae(RACE_TABLE),
            "age_mae": table_mae(AGE_TABLE)}


def _aligned(release: CensusRelease, truth: tuple[BoundedCells, BoundedCells],
             cells: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    """A release file's values in ``truth``'s geographies and cells (by GEOID and name)."""
    out = []
    for level, true, geoids, values in (
            ("block", truth[0], release.blocks, release.block_values),
            ("tract", truth[1], release.tracts, release.tract_values)):
        have = [c.cell for c in release.cells if c.level == level]
        cols = [have.index(c.cell) for c in cells if c.level == level]
        rows = [geoids.index(g) for g in true.geoids]
        out.append(values[np.ix_(rows, cols)].astype(np.int64))
    return out[0], out[1]


# ------------------------------------------------------------------------------ releases


def _digest(protected: ProtectedCensus) -> str:
    h = hashlib.sha256(protected.statement.encode())
    for level in (protected.block, protected.tract):
        h.update("\n".join(level.geoids).encode())
        h.update(np.ascontiguousarray(level.published, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def as_release(protected: ProtectedCensus, folder: Path) -> CensusRelease | None:
    """The protected tables as a release the census reconstruction takes, as
    ``census tabulate --protect`` would write it: exact tables (swapping), protected ones
    whose cells the reconstruction weighs by their method's error (CKM, rounding:
    ``census_protect.estimate_noise``), None for a release with withheld cells
    (suppression)."""
    block, tract = protected.block, protected.tract
    if (block.published < 0).any() or (tract.published < 0).any():
        return None
    protection = None if protected.options.method == "swap" else protection_of(protected)
    b = np.argsort(np.array(block.geoids)) if block.geoids else np.zeros(0, dtype=np.int64)
    t = np.argsort(np.array(tract.geoids)) if tract.geoids else np.zeros(0, dtype=np.int64)
    return CensusRelease(folder / "release", protected.cells, "sf1-persons",
                         _digest(protected), tuple(block.geoids[i] for i in b),
                         tuple(tract.geoids[i] for i in t), block.published[b],
                         tract.published[t], protection=protection)


# ------------------------------------------------------------------------------ one setting


Say = Callable[[str], None]


def _reconstructed(truth_path: Path, release: CensusRelease | None, folder: Path,
                   options: ProtectionsOptions) -> dict[str, Any] | None:
    """The reconstruction of ``release`` scored against the truth (None: none to run)."""
    if release is None:
        return None
    t0 = time.perf_counter()
    recon = folder / "recon.parquet"
    exact = release.noise is None and release.protection is None
    reconstruct_release(release, recon, workers=options.workers,
                        options=CensusOptions(time_limit=options.time_limit, seed=options.seed,
                                              certify=exact, samples=options.rank))
    result = compare(truth_path, recon, seed=options.seed)
    result["seconds"] = {"reconstruct": round(time.perf_counter() - t0, 2),
                         **dp_census.tract_seconds(recon)}
    return result


def run_protected(truth_path: Path, persons: pd.DataFrame,
                  truth: tuple[BoundedCells, BoundedCells], setting: Setting, out: Path,
                  options: ProtectionsOptions) -> dict[str, Any]:
    """One protection's release, utility, proven persons and reconstruction."""
    assert setting.protect is not None
    folder = out / setting.key
    folder.mkdir(parents=True, exist_ok=True)
    protected = protect_census(persons, setting.protect)
    used = utility(truth, (protected.block.published, protected.tract.published),
                   protected.cells)
    t0 = time.perf_counter()
    claims = certain_protected(protected, options.certain_time_limit, options.seed,
                               workers=options.workers)
    certain_s = time.perf_counter() - t0
    result = _reconstructed(truth_path, as_release(protected, folder), folder, options)
    row = {**_risk(result), "certain": claims.persons,
           "certain_false": claimed_beyond(claims, persons, protected.cells),
           "certain_blocks": claims.statuses, "certain_s": round(certain_s, 2),
           "reconstruction": None if result is None else (
               "exact model (swapped tables)" if setting.method == "swap" else
               "top-down estimate, noise-weighted")}
    return {"method": setting.method, "parameter": setting.parameter, "key": setting.key,
            "statement": protected.statement, "of_truth": protected.of_truth,
            "moved": moved_share(persons, setting.protect), **used, **row}


def moved_share(persons: pd.DataFrame, options: CensusProtectOptions) -> float | None:
    """Swapping: the share of persons the swap moves to another block (the rate's pairs and
    every person at risk, counted below k in its block: often far more than the rate), by
    the same seeded swap ``protect_census`` makes; None for the other methods."""
    if options.method != "swap":
        return None
    swapped = swapped_file(persons, swap_persons(persons, swap_plan(options)))
    before = persons[BLOCK_COLUMN].astype(str).to_numpy()
    return float((swapped[BLOCK_COLUMN].astype(str).to_numpy() != before).mean())


RISK_KEYS = ("persons", "agreement_exact", "agreement_binned", "precision_unique",
             "precision_nonmodal", "precision_at_1pct", "precision_at_10pct",
             "block_majority_exact", "block_majority_binned", "tract_draw_exact",
             "tract_draw_binned")


def _risk(result: dict[str, Any] | None) -> dict[str, Any]:
    """The reconstruction's measures, as the DP experiment tables them (None: not run)."""
    if result is None:
        return {k: None for k in (*RISK_KEYS, "reconstruct_s", "tracts_cpu_s")}
    result = {**result, "rho": "", "seconds": {**result["seconds"], "certain": 0.0}}
    row = dp_census.summary_row(result)
    return {**{k: row[k] for k in RISK_KEYS}, "reconstruct_s": row["reconstruct_s"],
            "tracts_cpu_s": row["tracts_cpu_s"]}


def run_dp(truth_path: Path, persons: pd.DataFrame, truth: tuple[BoundedCells, BoundedCells],
           cells: tuple[Any, ...], setting: Setting, out: Path, options: ProtectionsOptions
           ) -> dict[str, Any]:
    """DP at one rho: the DP experiment's own step (``dp_census.run_rho``), its release's
    utility. At rho = inf (the exact tables) the persons proven are those of every other
    setting's proof, at the tables' resolution (``certain_protected`` over exact bounds),
    not the DP experiment's full-record certification, so the column compares like with
    like."""
    assert setting.rho is not None
    dp = dp_census.DpCensusOptions(rhos=(setting.rho,), seed=options.seed, rank=options.rank,
                                   delta=options.delta, workers=options.workers,
                                   time_limit=options.time_limit,
                                   certain_time_limit=options.certain_time_limit)
    result = dp_census.run_rho(truth_path, setting.rho, out / "dp", dp)
    row = dp_census.summary_row(result)
    release = read_release(out / setting.key / "release.parquet")
    used = utility(truth, _aligned(release, truth, cells), cells, withholds=False)
    noisy = release.noise is not None and release.noise.noisy
    proven = {"certain": row["certain_within_noise"],
              "certain_false": row["certain_within_noise_not_in_truth"],
              "certain_s": row["certain_s"]}
    if not noisy:
        t0 = time.perf_counter()
        exact = protect_census(persons, CensusProtectOptions("suppress", threshold=0))
        claims = certain_protected(exact, options.certain_time_limit, options.seed,
                                   workers=options.workers)
        proven = {"certain": claims.persons,
                  "certain_false": claimed_beyond(claims, persons, exact.cells),
                  "certain_blocks": claims.statuses,
                  "certain_s": round(time.perf_counter() - t0, 2)}
    return {"method": "dp", "parameter": setting.parameter, "key": setting.key,
            "statement": (f"discrete Gaussian noise, rho = {row['rho']} (zCDP); claims "
                          f"within the noise at delta = {options.delta:g}") if noisy else
            "the exact tables (rho = inf)", "of_truth": True, **used,
            **{k: row[k] for k in RISK_KEYS}, "reconstruct_s": row["reconstruct_s"],
            "tracts_cpu_s": row["tracts_cpu_s"], **proven,
            "reconstruction": "top-down estimate, noise-weighted" if noisy else
            "exact model"}


# ------------------------------------------------------------------------------ the experiment


def run_experiment(truth_path: Path, out: Path, options: ProtectionsOptions,
                   progress: Progress | None = None, say: Say | None = None
                   ) -> list[dict[str, Any]]:
    """Every setting in turn (each skipped when its row is there), then the summary JSON, the
    figure and the README table under ``out``."""
    if not truth_path.exists():
        raise StatreconError(f"{truth_path}: no such file")
    out.mkdir(parents=True, exist_ok=True)
    dp_census.check_params(out, {"truth": truth_path.name, "seed": options.seed,
                                 "rank": options.rank, "delta": options.delta})
    persons = read_persons(truth_path).persons
    todo = settings(options)
    note = say or (lambda _text: None)
    rows: list[dict[str, Any]] = []
    truth: tuple[BoundedCells, BoundedCells] | None = None
    cells: tuple[Any, ...] = ()
    if progress:
        progress(Step(0, len(todo), 0))
    for k, setting in enumerate(todo):
        path = out / setting.key / ROW_FILE
        if path.exists():
            rows.append(read_step(path, "result", _resumable(setting.key)))
        else:
            if truth is None:
                cells = count_cells()
                truth = true_tables(persons, cells)
            note(f"{setting.method}, {setting.parameter}")
            t0 = time.perf_counter()
            row = run_dp(truth_path, persons, truth, cells, setting, out, options) \
                if setting.method == "dp" else \
                run_protected(truth_path, persons, truth, setting, out, options)
            row["seconds"] = round(time.perf_counter() - t0, 2)
            (out / setting.key).mkdir(parents=True, exist_ok=True)
            write_step(path, row)
            rows.append(row)
        if progress:
            progress(Step(k + 1, len(todo), sum(r["certain"] or 0 for r in rows),
                          setting.key))
    write_step(out / SUMMARY_FILE, {"truth": truth_path.name, "seed": options.seed,
                               "rank": options.rank, "delta": options.delta, "rows": rows})
    plot(rows, out / FIGURE_FILE)
    header = (f"# Protections compared: {truth_path.name}, seed {options.seed}, K = "
              f"{options.rank}\n\n" + LEGEND)
    text = markdown(rows, header)
    write_atomically(out / README_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return rows


def _resumable(key: str) -> Callable[[dict[str, Any]], None]:
    """The check of a stored row: this setting's, and one the table and figure take."""
    def check(row: dict[str, Any]) -> None:
        if row["key"] != key:
            raise ValueError(f"key {str(row['key'])[:40]}, not {key}")
        markdown([row], "")  # every figure the table and the plot show, formatted
    return check


LEGEND = ("Utility: mean absolute error of every published count cell (block and tract; a "
          "withheld cell read as 0), share published exactly, mean absolute error of the "
          "block cells of P8 (race) and P12 (sex by age group). Risk: true persons matched "
          "in their block (exact age, age groups), precision on non-modal uniques and on "
          "the top 10 % scored persons; persons proven certain at the tables' resolution "
          "(classes of persons no block cell tells apart: every dataset within the release's "
          "bounds holds them; DP: within the noise at delta) and, in brackets, "
          "how many the truth lacks (swapping: the tables are the swapped persons'). A dash: "
          "not available (suppression: the reconstruction cannot weigh withheld cells).")


# ------------------------------------------------------------------------------ parsing


def _parts(option: str, text: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c']; '' or 'none' -> [] (the method left out)."""
    if text.strip().lower() in ("", "none"):
        return []
    parts = [p.strip() for p in text.split(",")]
    if any(not p for p in parts):
        raise StatreconError(f"{option} {text!r}: expected a comma-separated list")
    if len(set(parts)) < len(parts):
        raise StatreconError(f"{option} {text!r}: a value is given twice")
    return parts


def _number(option: str, text: str, part: str) -> Fraction:
    try:
        value = Fraction(part)
    except (ValueError, ZeroDivisionError):
        raise StatreconError(f"{option} {text!r}: {part!r} is not a number") from None
    return value


def parse_rates(text: str, option: str = "--swap-rates") -> tuple[float, ...]:
    """Swap rates, each a share of the persons in [0, 1]."""
    out = []
    for part in _parts(option, text):
        rate = _number(option, text, part)
        if not 0 <= rate <= 1:
            raise StatreconError(f"{option} {text!r}: a swap rate is a share of the persons "
                                 f"in [0, 1], got {part}")
        out.append(float(rate))
    return tuple(out)


def parse_whole(text: str, option: str, least: int, what: str) -> tuple[int, ...]:
    """Whole numbers, each at least ``least`` (``what`` names them in the error)."""
    out = []
    for part in _parts(option, text):
        value = _number(option, text, part)
        if value.denominator != 1 or value < least:
            raise StatreconError(f"{option} {text!r}: {what} is a whole number >= {least}, "
                                 f"got {part}")
        out.append(int(value))
    return tuple(out)


def parse_ckm(text: str, option: str = "--ckm") -> tuple[tuple[int, Fraction], ...]:
    """'2:1.08,5:3' -> ((2, 27/25), (5, 3)): each ptable's maximum noise D and variance V."""
    out = []
    for part in _parts(option, text):
        d, _, v = part.partition(":")
        if not v:
            raise StatreconError(f"{option} {text!r}: give each ptable as D:V, got {part!r}")
        dd, vv = _number(option, text, d), _number(option, text, v)
        if dd.denominator != 1 or dd < 1 or vv <= 0:
            raise StatreconError(f"{option} {text!r}: D is a whole number >= 1 and V > 0, "
                                 f"got {part}")
        out.append((int(dd), vv))
    return tuple(out)
