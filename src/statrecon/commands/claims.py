"""``statrecon claims generate-blocks | check-households | verify | tabulate | experiment |
block-release``: Generate-then-Verify claims about housing units (reference 003) from the
command line.

Thin layer: options, progress bars, printing and exit codes live here; the files
(``census.households.files``), the runs (``runs.claims``), the experiment
(``experiments.generate_verify``) and the view (``report.claims``) do the work.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from statrecon.commands.options import time_limit_option, workers_option
from statrecon.commands.progress import run_bar
from statrecon.engines.claims.formulations import FORMULATIONS, formulations_help
from statrecon.errors import StatreconError
from statrecon.exitcodes import EXIT_UNKNOWN
from statrecon.outputs import (
    atomic_outputs,
    check_writable,
    check_writable_folder,
    dump_yaml,
    write_atomically,
)
from statrecon.report import output_console

claims_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Generate-then-Verify: prove claims about housing units from block tables.",
)


def default_population_path(out: Path) -> Path:
    """``<out stem>_population.csv`` next to ``out``."""
    return out.with_name(f"{out.stem}_population.csv")


@claims_app.command("generate-blocks")
def generate_blocks(
    out: Annotated[Path, typer.Option(help="Households CSV of the target blocks to write.")],
    blocks: Annotated[int, typer.Option(help="Target blocks to generate (each 2-60 housing "
                                        "units, one per tract).")] = 50,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same "
                                      "files.")] = 0,
    population_out: Annotated[Path | None, typer.Option(
        help="Households CSV of every unit of the targets' tracts (default: "
             "<out stem>_population.csv next to --out).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
) -> None:
    """Synthetic census blocks of housing units with national 2010 shares (no PPMF needed)."""
    from statrecon.census.households.files import write_households_csv
    from statrecon.census.households.synthetic import MAX_TARGETS
    from statrecon.census.households.synthetic import generate_blocks as generate

    if not 1 <= blocks <= MAX_TARGETS:
        raise StatreconError(f"--blocks {blocks}: must be between 1 and {MAX_TARGETS:,}")
    if seed < 0:
        raise StatreconError(f"--seed {seed}: must be 0 or more")
    population_path = population_out or default_population_path(out)
    if population_path.resolve() == out.resolve():
        raise StatreconError(f"--population-out {population_path}: must differ from --out")
    check_writable(out, "--out")
    check_writable(population_path, "--population-out")
    gen = generate(blocks, seed)
    # both files or neither: a failed second write must not leave the first one behind
    with atomic_outputs(out, population_path) as (out_tmp, population_tmp):
        write_households_csv(gen.targets, out_tmp)
        write_households_csv(gen.population, population_tmp)
    units_per_block = gen.targets.groupby("block").size()
    summary = {
        "blocks": int(units_per_block.size),
        "units": len(gen.targets),
        "median_units_per_block": float(units_per_block.median()),
        "tracts": int(gen.population["tract"].nunique()),
        "states": int(gen.population["state"].nunique()),
        "population_blocks": int(gen.population["block"].nunique()),
        "population_units": len(gen.population),
        "seed": seed,
        "out": str(out),
        "population_out": str(population_path),
    }
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    median = summary["median_units_per_block"]
    Console(stderr=True).print(
        f"wrote {out}: {summary['blocks']} target blocks, {summary['units']:,} housing units "
        f"(median {median:g} per block) in {summary['tracts']} tracts of "
        f"{summary['states']} states\nwrote {population_path}: "
        f"{summary['population_units']:,} housing units in {summary['population_blocks']:,} "
        "blocks (the targets' tracts, targets included)", highlight=False, soft_wrap=True)


@claims_app.command("check-households")
def check_households(
    households: Annotated[Path, typer.Argument(help="Households CSV: block (tract, state) and "
                                               "the ten housing-unit columns.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable summary.")] = False,
) -> None:
    """Validate a households file (values, block ids, structural rules) and summarise it."""
    from statrecon.census.households.files import read_households

    units = read_households(households)
    per_block = units.groupby("block").size()
    summary = {
        "units": len(units),
        "vacant": int((units["vacancy"] != "occupied").sum()),
        "blocks": int(per_block.size),
        "median_units_per_block": float(per_block.median()),
        "tracts": int(units["tract"].nunique()),
        "states": int(units["state"].nunique()),
        "file": str(households),
    }
    if as_json:
        sys.stdout.write(json.dumps(summary) + "\n")
        return
    Console(stderr=True).print(
        f"{households}: ok, {summary['units']:,} housing units ({summary['vacant']:,} vacant) "
        f"in {summary['blocks']:,} blocks (median {summary['median_units_per_block']:g} "
        f"units), {summary['tracts']} tracts, {summary['states']} states", highlight=False,
        soft_wrap=True)


def _options(formulation: str, k: int, time_limit: float | None, negative: bool) -> Any:
    """--formulation, --k and --time-limit, named as the user typed them, as ClaimsOptions."""
    from statrecon.engines.claims import ClaimsOptions

    if formulation not in FORMULATIONS:
        raise StatreconError(f"--formulation {formulation!r}: expected "
                             f"{' or '.join(FORMULATIONS)}")
    if k < 1:
        raise StatreconError(f"--k {k}: need at least one generated dataset")
    if time_limit is not None and not time_limit > 0:  # NaN too
        raise StatreconError(f"--time-limit {time_limit}: must be positive")
    return ClaimsOptions(formulation=formulation, k_solutions=k, negative=negative,
                         time_limit=time_limit_option(time_limit, ClaimsOptions.time_limit))


@claims_app.command("verify")
def verify(
    households: Annotated[Path | None, typer.Option(help="Housing units CSV (block, tract, "
                                                    "state and the ten columns).")] = None,
    tables: Annotated[Path | None, typer.Option(help="Published block tables instead: CSV "
                                                "block, cell, value (see `claims tabulate`).")
                      ] = None,
    block: Annotated[list[str] | None, typer.Option(help="Only this block (repeatable).")] = None,
    population: Annotated[Path | None, typer.Option(help="Units CSV for the tract and state "
                                                    "baselines (default: --households).")
                          ] = None,
    formulation: Annotated[str, typer.Option(help=formulations_help())] = "fast",
    k: Annotated[int, typer.Option("--k", help="Consistent datasets to generate candidates "
                                   "from.")] = 100,
    time_limit: Annotated[float | None, typer.Option(help="Seconds per block; a block cut "
                                                     "short is 'unknown'. Default 300; 'inf' "
                                                     "for none.")] = None,
    negative: Annotated[bool, typer.Option(help="Also prove negative claims.")] = True,
    workers: Annotated[int, typer.Option(min=0, help="Blocks solved in parallel; 0 = all "
                                         "cores.")] = 1,
    executor: Annotated[str | None, typer.Option(help="local or dask://HOST:PORT.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Prove claims R(a, m) about housing units from the published block tables."""
    from statrecon.census.households.files import read_households, read_tables
    from statrecon.census.households.priors import tract_and_state_priors
    from statrecon.runs.claims import (
        Shared,
        run_all_blocks,
        tasks_from_households,
        tasks_from_tables,
    )

    options = _options(formulation, k, time_limit, negative)
    if (households is None) == (tables is None):
        raise StatreconError("give exactly one of --households and --tables")
    workers = workers_option(workers)
    tract_priors: dict[str, Any] = {}
    state_priors: dict[str, Any] = {}
    if households is not None:
        units = read_households(households)
        tasks = tasks_from_households(units, block, str(households))
        if population is None:
            tract_priors, state_priors = tract_and_state_priors(units)
    else:
        assert tables is not None
        tasks = tasks_from_tables(read_tables(tables), block, str(tables))
    if population is not None:
        tract_priors, state_priors = tract_and_state_priors(read_households(population))
    shared = Shared(options, tract_priors, state_priors)
    with run_bar("blocks", "claims", quiet=quiet) as progress:
        records = run_all_blocks(tasks, shared, workers=workers, executor=executor,
                                 progress=progress)
    if as_json:
        json.dump({"blocks": [r.to_json() for r in records]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        from statrecon.report.claims import render_blocks

        render_blocks(records, output_console())
    if any(r.status != "ok" for r in records):
        raise typer.Exit(EXIT_UNKNOWN)


@claims_app.command("tabulate")
def tabulate(
    households: Annotated[Path, typer.Option(help="Housing units CSV.")],
    out: Annotated[Path, typer.Option(help="Tables CSV to write (block, cell, value).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON on "
                                          "stdout.")] = False,
) -> None:
    """Publish every block table cell (zeros included) of a households file, as a CSV."""
    from statrecon.census.households import tables as hht
    from statrecon.census.households.files import read_households, write_tables
    from statrecon.census.households.tabulate import tabulate_sql

    check_writable(out, "--out", inputs_given=(("--households", households),))
    tables = tabulate_sql(read_households(households))
    write_atomically(out, lambda tmp: write_tables(tables, tmp))
    cells = len(hht.table_index().cells)
    if as_json:
        print(json.dumps({"out": str(out), "blocks": len(tables), "cells": cells}))
        return
    Console(stderr=True).print(f"{len(tables)} blocks x {cells} cells -> {out}")


@claims_app.command("experiment")
def experiment(
    out: Annotated[Path, typer.Option(help="Directory for figures, tables and results.")],
    blocks: Annotated[int, typer.Option(help="Synthetic blocks to attack.")] = 50,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the synthetic blocks.")] = 0,
    formulation: Annotated[str, typer.Option(help=formulations_help())] = "fast",
    k: Annotated[int, typer.Option("--k", help="Consistent datasets per block.")] = 100,
    time_limit: Annotated[float | None, typer.Option(
        help="Seconds per block. Default 300; 'inf' for none.")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Blocks solved in parallel; 0 = all "
                                         "cores.")] = 0,
    executor: Annotated[str | None, typer.Option(help="local or dask://HOST:PORT.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """The paper's experiment on synthetic blocks: Figure 2, Tables 2-3, whole blocks.

    Resumable: blocks finished in OUT/blocks.jsonl are not solved again.
    """
    from statrecon.experiments.generate_verify import run_experiment

    options = _options(formulation, k, time_limit, True)
    if blocks < 1:
        raise StatreconError(f"--blocks {blocks}: must be at least 1")
    n_workers = workers_option(workers)
    check_writable_folder(out, "--out")
    command = "statrecon claims experiment " + " ".join(shlex.quote(a) for a in sys.argv[3:]) \
        if len(sys.argv) > 3 else ""
    run = run_experiment(out, blocks=blocks, seed=seed, options=options, workers=n_workers,
                         executor=executor, command=command,
                         progress=lambda: run_bar("blocks", "claims", quiet=quiet))
    if as_json:
        json.dump(run.to_json(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        output_console().print((out / "results.md").read_text(encoding="utf-8"))
        output_console().print(f"wall {run.wall_s} s on {n_workers} workers; files: "
                        + ", ".join(str(p) for p in run.paths))
    if run.summary.sound is False:
        raise StatreconError("a verified claim does not hold in its true block (a bug; "
                             f"see {run.store})")
    if run.summary.unknown_blocks:
        raise typer.Exit(EXIT_UNKNOWN)


@claims_app.command("block-release")
def block_release(
    households: Annotated[Path, typer.Option(help="Housing units CSV.")],
    block: Annotated[str, typer.Option(help="The block to publish.")],
    out: Annotated[Path, typer.Option(help="Release file to write (YAML).")],
) -> None:
    """One block's tables as a statrecon release file, for `statrecon reconstruct`."""
    from statrecon.census.households.files import read_households
    from statrecon.census.households.tabulate import block_release_document
    from statrecon.runs.claims import tasks_from_households

    check_writable(out, "--out", inputs_given=(("--households", households),))
    tasks = tasks_from_households(read_households(households), [block], str(households))
    doc = block_release_document(block, tasks[0].values)
    text = dump_yaml(doc)
    write_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    Console(stderr=True).print(f"block {block}: {len(doc['statistics'])} statistics, "  # type: ignore[arg-type]
                               f"{len(doc['constraints'])} rules -> {out}")  # type: ignore[arg-type]
