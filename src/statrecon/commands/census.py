"""``statrecon census tabulate | reconstruct | swap | compare | report``: SF1 person tables at
scale."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from statrecon.commands.options import time_limit_option, workers_option
from statrecon.commands.progress import activity, run_bar
from statrecon.errors import InconsistentReleaseError, StatreconError
from statrecon.exitcodes import EXIT_UNKNOWN
from statrecon.outputs import check_writable, dump_yaml, write_atomically
from statrecon.report import output_console

census_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="The 2010 SF1 person tables: tabulate, reconstruct every block, compare, report.",
)


@census_app.command()
def tabulate(
    persons: Annotated[Path, typer.Option(help="Persons file (CSV or Parquet): block_geoid, "
                                          "sex, age, six race flags, hispanic.")],
    out: Annotated[Path, typer.Option(help="Release file to write (Parquet).")],
    tables: Annotated[str, typer.Option(help="sf1-persons (all), or table names such as "
                                        "P1,P12,PCT12.")] = "sf1-persons",
    with_p13: Annotated[bool, typer.Option("--with-p13", help="Also publish P13, median age "
                                           "by sex per block (a non-linear statistic).")] = False,
    dp_rho: Annotated[float | None, typer.Option(
        "--dp-rho", help="Publish noisy measurements: discrete Gaussian noise on every cell "
                         "under this zCDP budget, split over the tables (inf: none).")] = None,
    allocation: Annotated[Path | None, typer.Option(
        help="YAML mapping table -> share of --dp-rho (summing to 1); default: the 2020 "
             "production's tract/block split, equal within a level.")] = None,
    seed: Annotated[int | None, typer.Option(
        min=0, help="Draw the noise with a seeded, reproducible sampler (numpy; NOT "
                    "DP-hardened, for experiments). Default: OpenDP's sampler. With "
                    "--protect: the seed of the record keys or of random rounding "
                    "(default 0).")] = None,
    exact_tract_population: Annotated[bool, typer.Option(
        "--exact-tract-population", help="With --dp-rho: also publish each tract's population "
        "exactly, an invariant outside the DP guarantee (as the 2020 production kept state "
        "populations exact); the reconstruction then keeps it.")] = False,
    swap_statement: Annotated[Path | None, typer.Option(
        help="The <stem>.swap.json that census swap wrote beside these (swapped) persons: "
             "the release then states the swap it was made after.")] = None,
    protect: Annotated[str | None, typer.Option(
        help="Publish the count tables protected instead: ckm-ons or ckm-abs (cell key "
             "perturbation, a ptable of --ckm-d/--ckm-v/--ckm-js), round (to --base), "
             "suppress (counts below --threshold withheld). The release states the method "
             "and what the attacker knows, never the seed.")] = None,
    ckm_d: Annotated[int | None, typer.Option(min=1, help="--protect ckm-*: D, the largest "
                                              "noise (default 2).")] = None,
    ckm_v: Annotated[str | None, typer.Option(help="--protect ckm-*: V, the noise variance "
                                              "('1.08', the default, or '27/25').")] = None,
    ckm_js: Annotated[int | None, typer.Option(min=0, help="--protect ckm-*: counts 1..js "
                                               "never published (default 1).")] = None,
    threshold: Annotated[int | None, typer.Option(
        min=0, help="--protect suppress: counts 1 to this - 1 withheld (default 3); ckm-*: "
                    "a perturbed count below it withheld (default 0: none).")] = None,
    base: Annotated[int | None, typer.Option(min=2, help="--protect round: the base "
                                             "(default 5).")] = None,
    rounding: Annotated[str | None, typer.Option(help="--protect round: nearest (default) "
                                                 "or random.")] = None,
    attacker_knows: Annotated[str | None, typer.Option(
        help="--protect: what the attacker is assumed to know, stated in the release: "
             "ckm-*: ptable (default), d or nothing; round: method (default) or base; "
             "suppress: nothing (default) or rule.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Compute every SF1 person-table cell for every block and tract (DuckDB, one query);
    with --dp-rho, the noisy measurements of those cells instead; with --protect, the
    count cells under a protection agencies use (CKM, rounding, suppression)."""
    given = [name for name, value in (("--ckm-d", ckm_d), ("--ckm-v", ckm_v),
                                      ("--ckm-js", ckm_js), ("--threshold", threshold),
                                      ("--base", base), ("--rounding", rounding),
                                      ("--attacker-knows", attacker_knows)) if value is not None]
    if protect is None and given:
        raise StatreconError(f"{given[0]} describes a protection; give --protect too")
    if protect is not None:
        if dp_rho is not None or with_p13 or swap_statement is not None:
            raise StatreconError("--protect publishes the count tables of the persons "
                                 "given: --dp-rho, --with-p13 and --swap-statement do not go "
                                 "with it")
        options = _protect_options(protect, seed, {
            "d": ckm_d, "v": ckm_v, "js": ckm_js, "threshold": threshold, "base": base,
            "rounding": rounding, "knowledge": attacker_knows})
        check_writable(out, "--out", inputs_given=(("--persons", persons),))
        _tabulate_protected(persons, out, tables, options, as_json, quiet)
        return
    from statrecon.census.persons.cells import select_cells
    from statrecon.census.persons.microdata import load_persons
    from statrecon.census.persons.noise import noise_summary, noisy_table
    from statrecon.census.persons.release import write_release
    from statrecon.census.persons.swap_statement import describe, read_statement
    from statrecon.census.persons.tabulate import tabulate_cells
    from statrecon.db import open_connection

    if dp_rho is None and (allocation is not None or seed is not None
                           or exact_tract_population):
        raise StatreconError("--allocation, --seed and --exact-tract-population describe DP "
                             "noise; give --dp-rho too")
    cells = select_cells(tables, with_p13=with_p13)
    plan = _noise_plan(cells, dp_rho, allocation)
    swap = None if swap_statement is None else read_statement(swap_statement)
    check_writable(out, "--out", inputs_given=(("--persons", persons),
                                                  ("--allocation", allocation),
                                                  ("--swap-statement", swap_statement)))
    t0 = time.perf_counter()
    con = open_connection()
    noise = None
    with activity("Tabulating…", quiet=quiet):
        n = load_persons(persons, con)  # locks con once the file is in
        table = tabulate_cells(con, cells)
        if plan is not None:
            table, noise = noisy_table(table, plan, seed,
                                       cells if exact_tract_population else None)
        write_release(table, cells, tables, out, noise, swap)
        geos = {lv: len(set(con.execute(f"SELECT DISTINCT {lv} FROM persons").fetchall()))
                for lv in ("block", "tract")}
    summary = {"persons": n, "blocks": geos["block"], "tracts": geos["tract"],
               "cells": len(cells), "rows": table.num_rows,
               "elapsed_s": round(time.perf_counter() - t0, 3), "out": str(out),
               **({"noise": noise_summary(noise)} if noise is not None else {}),
               **({"swap": describe(swap)} if swap is not None else {})}
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        Console(stderr=True).print(
            f"wrote {out}: {summary['rows']:,} cells ({len(cells)} cell definitions) "
            f"for {geos['block']:,} blocks and {geos['tract']:,} tracts from {n:,} persons "
            f"in {summary['elapsed_s']} s")
        if noise is not None:
            line = noise_summary(noise)
            Console(stderr=True).print(
                f"noisy measurements: rho = {line['rho']} over {line['tables']} tables, "
                f"sigma {line['sigma_min']:.3g} to {line['sigma_max']:.3g}, sampler "
                f"{line['sampler']}" + (" (seeded: reproducible, not DP-hardened)"
                                        if line["sampler"] == "numpy" else ""))
        if swap is not None:
            Console(stderr=True).print(f"stated with the release: {describe(swap)}",
                                       highlight=False)


def _protect_options(method: str, seed: int | None, given: dict[str, Any]) -> Any:
    """``--protect`` and the parameters given (None: the method's default) as checked
    options (one line when they do not go together)."""
    from statrecon.number_reader import NumberError, parse_number
    from statrecon.runs.census_protect import METHODS, STATED, CensusProtectOptions

    if method not in METHODS or method == "swap":
        raise StatreconError(f"--protect must be one of ckm-ons, ckm-abs, round, suppress; "
                             f"got {method!r} (swapping: `census swap`, then tabulate)")
    fields = {k: v for k, v in given.items() if v is not None}
    foreign = [k for k in fields if k not in STATED[method]]
    if foreign:  # a parameter of another method would be dropped without a word
        flags = {"d": "--ckm-d", "v": "--ckm-v", "js": "--ckm-js", "knowledge":
                 "--attacker-knows"}
        flag = flags.get(foreign[0], f"--{foreign[0]}")
        raise StatreconError(f"{flag} does not go with --protect {method}")
    if "v" in fields:
        try:
            fields["v"] = parse_number(fields["v"], fraction=True, exponent=False)
        except NumberError as e:
            raise StatreconError(f"--ckm-v: {e}") from None
    return CensusProtectOptions(method, seed=seed or 0, **fields)


def _tabulate_protected(persons: Path, out: Path, tables: str, options: Any, as_json: bool,
                        quiet: bool) -> None:
    from statrecon.runs.census_protect import publish_protected

    t0 = time.perf_counter()
    with activity("Tabulating and protecting…", quiet=quiet):
        protected = publish_protected(persons, out, options, tables)
    withheld = int((protected.block.published < 0).sum() + (protected.tract.published < 0).sum())
    summary = {"blocks": len(protected.block.geoids), "tracts": len(protected.tract.geoids),
               "cells": len(protected.cells), "method": options.method,
               "withheld": withheld, "exact_share": round(protected.exact_share(), 4),
               "statement": protected.statement,
               "elapsed_s": round(time.perf_counter() - t0, 3), "out": str(out)}
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    Console(stderr=True).print(
        f"wrote {out}: {len(protected.cells):,} count cells for {summary['blocks']:,} blocks "
        f"and {summary['tracts']:,} tracts, {options.method}"
        + (f", {withheld:,} withheld" if withheld else "") + f", in {summary['elapsed_s']} s",
        highlight=False)
    Console(stderr=True).print(f"stated with the release: {protected.statement}",
                               highlight=False)


def _noise_plan(cells: Any, rho: float | None, allocation: Path | None) -> Any:
    """The noise of each table for --dp-rho (None: an exact release); checked before any
    work."""
    if rho is None:
        return None
    from statrecon.census.persons.noise import plan_noise, read_allocation

    shares = read_allocation(allocation, cells) if allocation is not None else None
    return plan_noise(cells, rho, shares)


def census_options(time_limit: float | None, certify: bool, rank: int = 0) -> Any:
    """``--time-limit``: None keeps the engine's default per tract, ``inf`` lifts it."""
    from statrecon.engines.census import CensusOptions

    return CensusOptions(time_limit=time_limit_option(time_limit, CensusOptions.time_limit),
                         certify=certify, samples=rank)


@census_app.command()
def reconstruct(
    release: Annotated[Path, typer.Argument(help="Release file from `census tabulate`.")],
    out: Annotated[Path, typer.Option(help="Reconstruction to write (Parquet); a rerun "
                                      "resumes it.")],
    workers: Annotated[int, typer.Option(min=0, help="Local worker processes; 0 = all "
                                         "cores.")] = 0,
    executor: Annotated[str | None, typer.Option(help="dask://HOST:PORT to run on a Dask "
                                                 "cluster instead of a local pool.")] = None,
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="Solver seconds per tract (solve and certify); past it the tract is "
             "'unknown', never certified. Default 600; 'inf' for none.")] = None,
    certify: Annotated[bool, typer.Option(help="Certify per-block uniqueness and certain "
                                          "persons.")] = True,
    rank: Annotated[int, typer.Option(
        min=0, help="Score every reconstructed person by how often it appears in this many "
                    "other consistent datasets (random objectives); 0: no scores.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Reconstruct every tract (CP-SAT) and certify which blocks are unique; with --rank K,
    score each person by its share of K other consistent datasets. Noisy measurements
    (`census tabulate --dp-rho`) get the noise-aware top-down estimate instead (nothing
    certified; --rank K scores each person over K estimates from re-drawn noise)."""
    from statrecon.census.persons.release import read_release
    from statrecon.runs.census import reconstruct_release

    check_writable(out, "--out", inputs_given=(("release", release),))
    rel = read_release(release)
    n_workers = workers_option(workers)
    options = census_options(time_limit, certify, rank)
    err = Console(stderr=True)
    with run_bar("tracts", "persons", quiet=quiet) as progress:
        summary = reconstruct_release(rel, out, workers=n_workers, executor=executor,
                                      options=options, progress=progress)
    data = {"tracts": summary.tracts, "skipped": summary.skipped, "ran": summary.ran,
            "persons": summary.persons, "statuses": dict(summary.statuses),
            "elapsed_s": round(summary.elapsed_s, 3), "out": str(out),
            "conflicts": {t: list(c) for t, c in summary.conflicts.items()}}
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        err.print(f"wrote {out}: {summary.ran} tracts reconstructed "
                  f"({summary.skipped} already done), {summary.persons:,} persons, "
                  f"{summary.elapsed_s:.1f} s; statuses {dict(summary.statuses)}")
    if summary.conflicts:
        first = next(iter(summary.conflicts.items()))
        raise InconsistentReleaseError(
            f"{release}: no dataset satisfies the tables of tract {first[0]}; conflicting "
            f"cells: {'; '.join(first[1]) or '(not isolated)'}"
            + (f" ({len(summary.conflicts) - 1} more tracts)" if len(summary.conflicts) > 1
               else ""))
    if summary.statuses.get("unknown"):
        raise typer.Exit(EXIT_UNKNOWN)


@census_app.command()
def certain(
    release: Annotated[Path, typer.Argument(help="Noisy release from `census tabulate "
                                            "--dp-rho`, or a protected one (--protect).")],
    out: Annotated[Path, typer.Option(help="Certain persons to write (Parquet).")],
    delta: Annotated[float, typer.Option(help="Failure probability: every claim holds "
                                         "together with probability >= 1 - delta.")] = 0.05,
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds for the noise bounds, then solver seconds per block; past "
                        "it the block (every block, for the bounds) is 'unknown'. Default 10; "
                        "'inf' for none.")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Local worker processes; 0 = all "
                                         "cores.")] = 0,
    executor: Annotated[str | None, typer.Option(help="dask://HOST:PORT to run on a Dask "
                                                 "cluster instead of a local pool.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Persons present in every dataset whose tables lie within the noise bounds: certain
    with probability >= 1 - delta over the mechanism; for a protected release (CKM,
    rounding, suppression), within the bounds its protection leaves: certain, no
    probability. A rerun resumes (tract by tract)."""
    from statrecon.census.persons.release import read_release
    from statrecon.runs.census_certain import DEFAULT_TIME_LIMIT, certain_release

    if not 0 < delta < 1:
        raise StatreconError(f"--delta must lie in (0, 1), got {delta}")
    check_writable(out, "--out", inputs_given=(("release", release),))
    rel = read_release(release)
    with run_bar("tracts", "persons", quiet=quiet) as progress:
        summary = certain_release(rel, out, delta,
                                  time_limit_option(time_limit, DEFAULT_TIME_LIMIT), progress,
                                  workers=workers_option(workers), executor=executor)
    protected = rel.protection is not None
    data = {"blocks": summary.blocks, "certain_within_noise": summary.persons,
            "delta": None if protected else delta, "statuses": summary.statuses,
            "protection": rel.protection.method if rel.protection else None,
            "elapsed_s": round(summary.elapsed_s, 3), "out": str(out)}
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
        return
    within = (f"within the bounds {rel.protection.method} leaves (always: no probability)"
              if rel.protection else
              f"within the noise (together, with probability >= {1 - delta:g})")
    Console(stderr=True).print(
        f"wrote {out}: {summary.persons:,} persons certain {within} in {summary.blocks:,} "
        f"blocks; statuses {summary.statuses}, {summary.elapsed_s:.1f} s")


@census_app.command()
def swap(
    persons: Annotated[Path, typer.Option(help="Persons file (CSV or Parquet), as `census "
                                          "tabulate` reads it.")],
    out: Annotated[Path, typer.Option(
        help="The swapped persons, a working file (true records, moved): <stem>.working.csv "
             "or .parquet. Beside it <stem>.swaps.working<suffix> (which units swapped) and "
             "<stem>.swap.json (the method and its parameters, to state with the release).")],
    rate: Annotated[float, typer.Option(help="Share of units swapped, in [0, 1] (a pair "
                                        "swaps two).")],
    k: Annotated[int, typer.Option("--k", help="k-anonymity threshold: a unit with a person "
                                   "whose risk combination is counted below k in its area "
                                   "is swapped out of it (0: none).")] = 3,
    levels: Annotated[str, typer.Option(
        help="Geographic levels, highest first, where risk is counted and units are swapped "
             "across: state, county, tract, block (the block GEOID's).")] = "block",
    within: Annotated[str, typer.Option(
        help="Every pair stays within one of these (state, county, tract), which keeps "
             "all its counts; none: anywhere.")] = "tract",
    risk: Annotated[str, typer.Option(
        help="Risk variables, comma-separated: columns of the persons file or voting_age, "
             "household_size, adults.")] = "voting_age,hispanic,white,black,aian,asian,"
                                            "nhopi,sor",
    similar: Annotated[list[str] | None, typer.Option(
        help="Similarity profile: partners share these (comma-separated; empty: any); "
             "repeat for fallbacks tried in order. Default household_size,adults.")] = None,
    household: Annotated[str | None, typer.Option(
        help="Column of household ids: a household's persons (in one block) move together. "
             "Default: each person is a unit.")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Seed (default: drawn, and "
                                             "reported).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Targeted record swapping (as sdcMicro's recordSwap): units at risk (counted below k)
    swapped out of their area, topped up to the swap rate, each with a partner of the same
    similarity profile; seeded. Writes working files only: tabulate the swapped persons with
    `census tabulate` to publish."""
    import secrets

    from statrecon.census.persons import swap as swapping

    options = swapping.PersonsSwap(
        rate=rate, k=k, levels=_names(levels), within=None if within == "none" else within,
        risk=_names(risk),
        similar=tuple(_names(p) for p in similar) if similar else swapping.DEFAULT_SIMILAR,
        household=household, seed=secrets.randbelow(2**32) if seed is None else seed)
    swapping.check_options(options)
    swapping.check_out(out)
    paths = swapping.output_paths(out)
    for path in paths:
        check_writable(path, "--out", inputs_given=(("--persons", persons),))
    with activity("Swapping…", quiet=quiet):
        read = swapping.read_persons(persons)
        result = swapping.swap_persons(read.persons, options)
        swapping.write_swap(read.raw, result, options, out)
    summary = swapping.summary(result, options, paths)
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    unit = options.unit_name
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    err.print(f"wrote {paths[0]}: the swapped {unit}, a working file (true records, moved: "
              f"never publish it); {paths[1]}: which swapped (working); {paths[2]}: the "
              "method, to state with the release")
    err.print(f"{summary['swapped_units']:,} of {summary['units']:,} {unit} swapped in "
              f"{result.pairs:,} pairs (rate {rate}: {result.target_pairs:,} pairs); "
              f"{result.protected:,} of {result.at_risk:,} at risk (k = {k}) moved out of "
              f"their area; seed {options.seed}")
    err.print(f"kept: {'; '.join(summary['preserved'])}")


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names."""
    return tuple(n.strip() for n in text.split(",") if n.strip())


@census_app.command("block-release")
def block_release(
    release: Annotated[Path, typer.Argument(help="Release file from `census tabulate`.")],
    block: Annotated[str, typer.Option(help="15-digit block geoid.")],
    out: Annotated[Path, typer.Option(help="Release file (YAML) to write.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON on "
                                          "stdout.")] = False,
) -> None:
    """One block's SF1 cells as statrecon statistics (for `statrecon reconstruct`)."""
    from statrecon.census.persons.as_release import block_release as block_document
    from statrecon.census.persons.release import read_release

    check_writable(out, "--out", inputs_given=(("release", release),))
    document = block_document(read_release(release), block)
    text = dump_yaml(document, width=1000)
    write_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if as_json:
        print(json.dumps({"out": str(out), "block": block,
                          "statistics": len(document["statistics"])}))
        return
    Console(stderr=True).print(f"wrote {out}")


@census_app.command()
def compare(
    truth: Annotated[Path, typer.Option(help="The true persons file.")],
    recon: Annotated[Path, typer.Option(help="Reconstruction from `census reconstruct`.")],
    seed: Annotated[int, typer.Option(min=0, help="Seed of the random baselines.")] = 0,
    microdata: Annotated[Path | None, typer.Option(
        help="A persons file scored as a baseline 'reconstruction' (for example the "
             "microdata a DP run published).")] = None,
    certain_file: Annotated[Path | None, typer.Option(
        "--certain", help="Persons certain within the noise, from `census certain`: "
                          "counted against the truth.")] = None,
    release: Annotated[Path | None, typer.Option(
        help="The noisy release the --certain claims are about: its digest must be theirs "
             "and no claim may exceed what its noisy cells allow.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Refuse a truth file with tracts "
                                         "the reconstruction lacks (default: compare the "
                                         "common tracts and count the rest).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Match rates as the Bureau reports them, with a random-assignment baseline.

    Only the tracts of the reconstruction are scored; truth blocks elsewhere are counted
    (truth_blocks_left_out), or refused with --strict.
    """
    from statrecon.experiments.census_match import compare as run

    with activity("Comparing…", quiet=quiet):
        result = run(truth, recon, seed=seed, strict=strict, microdata=microdata,
                     certain=certain_file, release=release)
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
        return
    from statrecon.report.census_text import render_compare

    render_compare(result, recon, truth, output_console())


@census_app.command()
def report(
    recon: Annotated[Path, typer.Argument(help="Reconstruction from `census reconstruct`.")],
    out: Annotated[Path, typer.Option(help="HTML file to write.")],
    truth: Annotated[Path | None, typer.Option(help="True persons file, for match-rate "
                                               "plots.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON on "
                                          "stdout.")] = False,
) -> None:
    """An HTML report with plots a data steward can read."""
    from statrecon.experiments.census_match import truth_scores
    from statrecon.report.census import write_report

    check_writable(out, "--out", inputs_given=(("reconstruction", recon),
                                                  ("--truth", truth)))
    with activity("Writing the report…", quiet=quiet):
        scores = None if truth is None else truth_scores(truth, recon)
        write_report(recon, out, truth=scores)
    if as_json:
        print(json.dumps({"out": str(out), "truth": None if truth is None else str(truth)}))
        return
    Console(stderr=True).print(f"wrote {out}")

