"""``statrecon experiment ...``: the Dinur–Nissim and Diffix experiments from the command line.

A thin layer over :mod:`statrecon.experiments`: parse the options, run with a Rich progress bar
on stderr, print the tables ``report/`` builds (or ``--json``) on stdout, write JSON and PNG
files under ``--out``. Every user mistake is a :class:`~statrecon.errors.StatreconError`.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from statrecon.commands.options import time_limit_option, workers_option
from statrecon.commands.progress import activity, step_bar
from statrecon.engines.linear.estimators import ESTIMATORS
from statrecon.errors import StatreconError
from statrecon.outputs import check_writable_folder, write_atomically
from statrecon.report import output_console

experiment_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Reconstruction experiments (Dinur–Nissim, Diffix, DP census tables).",
)

BUNDLED_TRUTH = Path("examples/census/census2010_reconstructed_persons.csv.gz")
# the options both census experiments (dp-census, protections) take
Truth = Annotated[Path | None, typer.Option(
    help=f"True persons (CSV or Parquet); default: the bundled 28 tracts, {BUNDLED_TRUTH}.")]
Rank = Annotated[int, typer.Option(min=0, help="Re-drawn estimates per tract that score "
                                   "each person (K).")]
Workers = Annotated[int, typer.Option(min=0, help="Local worker processes; 0 = all cores.")]
TractTimeLimit = Annotated[float | None, typer.Option(
    min=0.001, help="Solver seconds per tract of a reconstruction (default 600; inf for "
                    "none).")]
AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")]

# --------------------------------------------------------------------------- parsing


def _numbers(option: str, text: str) -> list[float]:
    """'0, 0.05,1' -> [0.0, 0.05, 1.0]; a clear one-line error for anything else."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise StatreconError(f"{option} {text!r}: expected a comma-separated list of numbers")
    values: list[float] = []
    for p in parts:
        try:
            values.append(float(p))
        except ValueError:
            raise StatreconError(f"{option} {text!r}: {p!r} is not a number") from None
    return values


def _integers(option: str, text: str) -> list[int]:
    """Whole numbers read as integers (a float would round 10**20 + 1)."""
    values = _numbers(option, text)
    if any(not (math.isfinite(v) and v.is_integer()) for v in values):
        raise StatreconError(f"{option} {text!r}: expected whole numbers")
    out = []
    for p in text.split(","):
        try:
            out.append(int(p.strip()))
        except ValueError:  # "4.0" or "1e3"
            out.append(int(float(p)))
    return out


def _plain_numbers(option: str, text: str) -> list[float | int]:
    """Whole numbers stay ints, so the generated SQL (and its sticky noise) match the library's
    defaults: ``1`` and ``1.0`` are different SQL texts."""
    return [int(v) if v.is_integer() else v for v in _numbers(option, text)]


def _methods(text: str) -> list[str]:
    from statrecon.experiments.dinur_nissim import ESTIMATORS

    chosen = [m.strip() for m in text.split(",") if m.strip()]
    for m in chosen:
        if m not in ESTIMATORS:
            raise StatreconError(f"--methods: unknown method {m!r} (choose from "
                                 f"{', '.join(ESTIMATORS)})")
    if not chosen:
        raise StatreconError(f"--methods {text!r}: name at least one of {', '.join(ESTIMATORS)}")
    return chosen


def _prepare_out(out: Path | None) -> Path | None:
    """The output folder, created and checked writable before any work (or None)."""
    return None if out is None else check_writable_folder(out, "--out")


def _write_json(path: Path, data: Any) -> Path:
    text = json.dumps(data, indent=2) + "\n"
    return write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _check_diffix(ids: int, primes: list[int] | None, offsets: list[float | int] | None,
                  exponents: list[float | int] | None) -> None:
    """The Cohen–Nissim parameters, named by their options (the library checks them too)."""
    from statrecon import querygen
    from statrecon.experiments import dinur_nissim as dn

    queries = (len(querygen.DEFAULT_PRIMES if primes is None else primes)
               * len(querygen.DEFAULT_OFFSETS if offsets is None else offsets)
               * len(querygen.DEFAULT_EXPONENTS if exponents is None else exponents))
    if queries * ids > dn.MAX_MATRIX_ENTRIES:
        raise StatreconError(f"--ids {ids}: {queries:,} queries × {ids:,} records is more than "
                             f"{dn.MAX_MATRIX_ENTRIES:,} matrix entries")

    checks: list[tuple[str, Any, Callable[..., None]]] = [
        ("--primes", primes, dn.check_primes),
        ("--offsets", offsets, lambda v: dn.check_positive("offsets", v)),
        ("--exponents", exponents, lambda v: dn.check_positive("exponents", v))]
    for option, values, check in checks:
        if values is None:
            continue
        try:
            check(values)
        except dn.ExperimentError as err:
            raise StatreconError(f"{option}: {err}") from None


# --------------------------------------------------------------------------- dinur-nissim


@experiment_app.command("dinur-nissim")
def dinur_nissim(
    n: Annotated[int, typer.Option("--n", help="Records (secret bits).")] = 1000,
    c: Annotated[float, typer.Option("--c", help="Queries per record: k = c·n.")] = 4.0,
    sigmas: Annotated[str, typer.Option(
        help="Gaussian noise levels σ in units of √n, comma separated.")]
        = "0,0.05,0.1,0.25,0.5,1,2,4",
    methods: Annotated[str, typer.Option(
        help=f"Attacks, comma separated: {', '.join(ESTIMATORS)}.")]
        = "ls,lp-l1,lp-linf",
    seed: Annotated[int, typer.Option(min=0, help="Seed of secrets, queries and noise.")] = 0,
    trials: Annotated[int, typer.Option(help="Independent instances averaged.")] = 1,
    out: Annotated[Path | None, typer.Option(
        help="Directory for dinur_nissim.json/png (and the optional parts' files).")] = None,
    subsampling: Annotated[bool, typer.Option(
        help="Also attack the subsampling defence with the first method "
             "(subsampling.json/png).")] = False,
    rates: Annotated[str, typer.Option(help="Subsampling rates, comma separated.")]
        = "1,0.5,0.2,0.1,0.05",
    runtime: Annotated[bool, typer.Option(
        help="Also time each method as n grows (runtime.json/png).")] = False,
    runtime_ns: Annotated[str, typer.Option(help="Values of n for --runtime.")]
        = "100,200,500,1000",
    exhaustive_n: Annotated[int | None, typer.Option(
        help="Also run the all-2^n-queries attack at this n <= 16 (exhaustive.json).")] = None,
    exhaustive_alpha: Annotated[float, typer.Option(
        help="Error bound of the exhaustive attack's answers, as a fraction α of n.")] = 0.05,
    exhaustive_noise: Annotated[str, typer.Option(
        help="uniform (errors uniform in ±αn) or adversarial (pulled toward a decoy).")]
        = "uniform",
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds per LP/IP solve (default: none for LPs, 60 for ip).")] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Phase transition of linear reconstruction: accuracy against noise σ/√n."""
    from statrecon.experiments import dinur_nissim as dn

    factors = _numbers("--sigmas", sigmas)
    chosen = _methods(methods)
    rate_list = _numbers("--rates", rates) if subsampling else []
    ns = _integers("--runtime-ns", runtime_ns) if runtime else []
    _check_exhaustive_and_time(exhaustive_n, exhaustive_noise, time_limit)
    # Check the later parts' options now, not after minutes of phase transition.
    _check_later_parts(n, c, rate_list, ns, runtime_ns, exhaustive_alpha)
    outputs = _Outputs(_prepare_out(out))
    with step_bar("Dinur–Nissim", quiet=quiet) as tick:
        phase = dn.phase_transition(n, c, factors, chosen, seed, trials, tick, time_limit)
    outputs.add("dinur_nissim", phase, dn.plot_phase_transition)
    sub = None
    if subsampling:
        with step_bar("Subsampling", quiet=quiet) as tick:
            sub = dn.subsampling_defence(n, c, rate_list, chosen[0], seed, progress=tick,
                                         time_limit=time_limit)
        outputs.add("subsampling", sub, dn.plot_subsampling)
    timing = None
    if runtime:
        with step_bar("Run time", quiet=quiet) as tick:
            timing = dn.runtime_scaling(ns, c, chosen, seed, progress=tick,
                                        time_limit=time_limit)
        outputs.add("runtime", timing, dn.plot_runtime)
    exhaustive = None
    if exhaustive_n is not None:
        with activity("Exhaustive attack", quiet=quiet):
            exhaustive = dn.exhaustive_attack(exhaustive_n, exhaustive_alpha, seed,
                                              exhaustive_noise)
        outputs.add("exhaustive", exhaustive)
    outputs.report["files"] = [str(f) for f in outputs.files]
    if as_json:
        sys.stdout.write(json.dumps(outputs.report) + "\n")
        return
    _print_dinur_nissim(phase, sub, timing, exhaustive, outputs.files)


def _check_exhaustive_and_time(exhaustive_n: int | None, exhaustive_noise: str,
                               time_limit: float | None) -> None:
    """--exhaustive-n, --exhaustive-noise and --time-limit, in that order."""
    from statrecon.experiments import dinur_nissim as dn

    if exhaustive_n is not None and not 1 <= exhaustive_n <= dn.EXHAUSTIVE_MAX_N:
        raise StatreconError(f"--exhaustive-n {exhaustive_n}: must be in 1..{dn.EXHAUSTIVE_MAX_N}"
                             " (2^n queries × 2^n candidates)")
    if exhaustive_noise not in ("uniform", "adversarial"):
        raise StatreconError(f"--exhaustive-noise {exhaustive_noise!r}: choose uniform or "
                             "adversarial")
    if time_limit is not None and not time_limit > 0:
        raise StatreconError(f"--time-limit {time_limit}: must be > 0")


def _check_later_parts(n: int, c: float, rate_list: list[float], ns: list[int],
                       runtime_ns: str, exhaustive_alpha: float) -> None:
    """The options of every part, checked before the first one runs (minutes)."""
    from statrecon.experiments import dinur_nissim as dn
    from statrecon.mechanisms import Subsampling

    for rate in rate_list:
        Subsampling(rate)
    if any(v < 2 for v in ns):
        raise StatreconError(f"--runtime-ns {runtime_ns!r}: every n must be >= 2")
    for size in [n, *ns]:
        dn.check_size(size, c)
    if not (exhaustive_alpha >= 0 and exhaustive_alpha < float("inf")):
        raise StatreconError(f"--exhaustive-alpha {exhaustive_alpha}: must be a number >= 0")


@dataclass
class _Outputs:
    """The --json report and the files written under --out (if given), part by part."""

    directory: Path | None
    report: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def add(self, key: str, result: Any, plot: Callable[[Any, Path], Path] | None = None
            ) -> None:
        """A part's result: in the report under ``key``, and as ``key``.json (and .png)."""
        self.report[key] = result.to_json()
        if self.directory is not None:
            self.files.append(_write_json(self.directory / f"{key}.json", self.report[key]))
            if plot is not None:
                self.files.append(plot(result, self.directory / f"{key}.png"))


def _print_dinur_nissim(phase: Any, sub: Any, timing: Any, exhaustive: Any,
                        files: list[Path]) -> None:
    """The human view: one table per part run, then the files written (on stderr)."""
    from statrecon.report.dinur_nissim import render_dinur_nissim

    render_dinur_nissim(phase, sub, timing, exhaustive, output_console())
    if files:
        Console(stderr=True).print("wrote " + ", ".join(escape(str(f)) for f in files),
                                   highlight=False)


# --------------------------------------------------------------------------- diffix


@experiment_app.command("diffix")
def diffix(
    ids: Annotated[int, typer.Option("--ids", help="Records in the public table.")] = 200,
    primes: Annotated[str | None, typer.Option(
        help="Primes m of the Cohen–Nissim predicates (default 2,3,5,7,11).")] = None,
    offsets: Annotated[str | None, typer.Option(
        help="Offsets o (default 1..10).")] = None,
    exponents: Annotated[str | None, typer.Option(
        help="Exponents e (default 0.5,0.55,0.6,0.65,0.7).")] = None,
    base_sigma: Annotated[float, typer.Option(
        help="Diffix-like noise: std base_sigma·√(conditions per query).")] = 1.0,
    method: Annotated[str, typer.Option(help="Decoder: lp-l1, lp-linf, ls, ip, ...")]
        = "lp-l1",
    seed: Annotated[int, typer.Option(
        min=0, help="Seed of the secret and the sticky noise.")] = 0,
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds for the solve (default 60; 'inf' for none).")] = None,
    out: Annotated[Path | None, typer.Option(help="Directory for diffix.json.")] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """The Cohen–Nissim attack on a Diffix-like interface, decoded from the SQL via DuckDB."""
    from statrecon.engines.linear import LinearOptions
    from statrecon.experiments import dinur_nissim as dn

    p = _integers("--primes", primes) if primes is not None else None
    o = _plain_numbers("--offsets", offsets) if offsets is not None else None
    e = _plain_numbers("--exponents", exponents) if exponents is not None else None
    _methods(method)
    if time_limit is not None and not time_limit > 0:
        raise StatreconError(f"--time-limit {time_limit}: must be > 0")
    _check_diffix(ids, p, o, e)
    directory = _prepare_out(out)
    limit = time_limit_option(time_limit, LinearOptions.time_limit)
    with activity("Querying the Diffix-like interface and decoding…", quiet=quiet):
        result = dn.diffix_attack(ids, p, o, e, base_sigma, seed, method, limit)
    data = result.to_json()
    files: list[Path] = []
    if directory is not None:
        files.append(_write_json(directory / "diffix.json", data))
    data["files"] = [str(f) for f in files]
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
        return
    from statrecon.report.dinur_nissim import render_diffix

    render_diffix(result, output_console())
    if files:
        Console(stderr=True).print("wrote " + ", ".join(escape(str(f)) for f in files),
                                   highlight=False)


# --------------------------------------------------------------------------- dp-census



@experiment_app.command("dp-census")
def dp_census(
    rho: Annotated[str, typer.Option(
        "--rho", help="zCDP budgets, comma separated; inf publishes the exact tables.")]
        = "0.1,0.5,1,2.63,10,inf",
    seed: Annotated[int, typer.Option(min=0, help="Seed of the noise, the estimates and the "
                                      "baselines.")] = 0,
    out: Annotated[Path, typer.Option(help="Directory for everything (a rerun resumes it).")]
        = Path("dp_census"),
    truth: Truth = None,
    rank: Rank = 20,
    delta: Annotated[float, typer.Option(help="Failure probability of the certain-within-"
                                         "noise claims.")] = 0.05,
    certify: Annotated[bool, typer.Option(help="Prove the persons certain within the noise "
                                          "(census certain).")] = True,
    workers: Workers = 0,
    executor: Annotated[str | None, typer.Option(help="dask://HOST:PORT to reconstruct on a "
                                                 "Dask cluster.")] = None,
    time_limit: TractTimeLimit = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Reconstruction, ranking and certainty from noisy SF1 person tables against rho, beside
    the baselines (PNG, JSON and a README table under --out)."""

    from statrecon.commands.progress import run_bar
    from statrecon.experiments import dp_census as dp

    rhos = dp.parse_rhos(rho)
    if not 0 < delta < 1:
        raise StatreconError(f"--delta must lie in (0, 1), got {delta}")
    source = truth or BUNDLED_TRUTH
    if not source.exists():
        raise StatreconError(f"{source}: no such file" + (
            "" if truth else " (run from the repository root, or give --truth FILE)"))
    folder = check_writable_folder(out, "--out")
    limit = time_limit_option(time_limit, dp.DpCensusOptions.time_limit)
    options = dp.DpCensusOptions(rhos=rhos, seed=seed, rank=rank, delta=delta,
                                 certify=certify, workers=workers_option(workers),
                                 executor=executor, time_limit=limit)
    err = Console(stderr=True)
    with run_bar("tracts", "persons", quiet=quiet) as progress:
        rows = dp.run_experiment(source, folder, options, progress,
                                 None if quiet else lambda text: err.print(text))
    files = [str(folder / f) for f in (dp.SUMMARY_FILE, dp.FIGURE_FILE, dp.README_FILE)]
    if as_json:
        sys.stdout.write(json.dumps({"rows": rows, "files": files}) + "\n")
        return
    from statrecon.report.dp_census import summary_table

    output_console().print(summary_table(rows, f"DP census experiment ({source.name}, seed "
                                               f"{seed}, K = {rank})"))
    output_console().print("wrote " + ", ".join(escape(f) for f in files), highlight=False)


# --------------------------------------------------------------------------- protections


@experiment_app.command("protections")
def protections(
    swap_rates: Annotated[str, typer.Option(
        help="Record swapping rates, shares of the persons in [0, 1] ('none': left out).")]
        = "0.05,0.1,0.5",
    swap_k: Annotated[int, typer.Option(
        min=0, help="Swapping also moves every person counted below k in its block (census "
                    "swap's k); 0: the rate alone, as the Bureau's swap rates are read.")] = 3,
    ckm: Annotated[str, typer.Option(
        help="Cell key perturbation ptables as D:V (maximum noise, variance), comma "
             "separated.")] = "2:1.08,5:3",
    bases: Annotated[str, typer.Option(help="Rounding bases (nearest), each >= 2.")]
        = "3,5,10",
    thresholds: Annotated[str, typer.Option(
        help="Suppression thresholds: counts from 1 to t - 1 withheld.")] = "3",
    rho: Annotated[str, typer.Option(
        "--rho", help="DP budgets (zCDP), as experiment dp-census; 'none': left out.")]
        = "0.1,0.5,1,2.63,10,inf",
    seed: Annotated[int, typer.Option(min=0, help="Seed of every protection, estimate and "
                                      "baseline.")] = 0,
    out: Annotated[Path, typer.Option(help="Directory for everything (a rerun resumes it).")]
        = Path("protections"),
    truth: Truth = None,
    rank: Rank = 20,
    delta: Annotated[float, typer.Option(help="Failure probability of DP's certain-within-"
                                         "noise claims.")] = 0.05,
    workers: Workers = 0,
    time_limit: TractTimeLimit = None,
    certain_time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="Solver seconds per block of a proof of certain persons (default "
                        "10; inf for none).")] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Every protection's utility (error of the published cells) against its risk
    (reconstruction, persons proven), beside DP and the baselines (PNG, JSON and a README
    table under --out)."""

    from statrecon.commands.progress import run_bar
    from statrecon.experiments import dp_census as dp
    from statrecon.experiments import protections as pr

    rhos = () if rho.strip().lower() == "none" else dp.parse_rhos(rho)
    source = truth or BUNDLED_TRUTH
    if not source.exists():
        raise StatreconError(f"{source}: no such file" + (
            "" if truth else " (run from the repository root, or give --truth FILE)"))
    options = pr.ProtectionsOptions(
        swap_rates=pr.parse_rates(swap_rates), swap_k=swap_k, ckm=pr.parse_ckm(ckm),
        bases=pr.parse_whole(bases, "--bases", 2, "a rounding base"),
        thresholds=pr.parse_whole(thresholds, "--thresholds", 1, "a threshold"),
        rhos=rhos, seed=seed, rank=rank, delta=delta,
        workers=workers_option(workers),
        time_limit=time_limit_option(time_limit, pr.ProtectionsOptions.time_limit),
        certain_time_limit=time_limit_option(certain_time_limit,
                                             pr.ProtectionsOptions.certain_time_limit))
    folder = check_writable_folder(out, "--out")
    err = Console(stderr=True)
    with run_bar("protections", "persons proven", quiet=quiet) as progress:
        rows = pr.run_experiment(source, folder, options, progress,
                                 None if quiet else lambda text: err.print(escape(text)))
    files = [str(folder / f) for f in (pr.SUMMARY_FILE, pr.FIGURE_FILE, pr.README_FILE)]
    if as_json:
        sys.stdout.write(json.dumps({"rows": rows, "files": files}) + "\n")
        return
    from statrecon.report.protections import summary_table

    output_console().print(summary_table(rows, f"Protections compared ({source.name}, seed "
                                               f"{seed}, K = {rank})"))
    output_console().print("wrote " + ", ".join(escape(f) for f in files), highlight=False)
