"""``statrecon claims tabulate | verify | experiment | block-release``: Generate-then-Verify
from the command line.

Thin layer: options, progress bars, printing and exit codes live here; the files
(``census.households.files``), the runs (``runs.claims``) and the experiment
(``experiments.generate_verify``) do the work.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statrecon.commands.progress import run_bar
from statrecon.engines.claims.formulations import FORMULATIONS, formulations_help
from statrecon.errors import StatreconError
from statrecon.exitcodes import EXIT_UNKNOWN
from statrecon.outputs import (
    check_writable,
    check_writable_folder,
    dump_yaml,
    write_atomically,
)
from statrecon.report import output_console, safe_text

if TYPE_CHECKING:  # the records' module loads with the run, not at CLI start-up
    from statrecon.runs.records import BlockRecord


def _options(formulation: str, k: int, time_limit: float | None, negative: bool) -> Any:
    from statrecon.engines.claims import ClaimsOptions

    if formulation not in FORMULATIONS:
        raise StatreconError(f"--formulation {formulation!r}: expected "
                             f"{' or '.join(FORMULATIONS)}")
    if k < 1:
        raise StatreconError(f"--k {k}: need at least one generated dataset")
    if time_limit is not None and not time_limit > 0:  # NaN too
        raise StatreconError(f"--time-limit {time_limit}: must be positive")
    if time_limit is None:
        return ClaimsOptions(formulation=formulation, k_solutions=k, negative=negative)
    return ClaimsOptions(formulation=formulation, k_solutions=k, negative=negative,
                         time_limit=None if math.isinf(time_limit) else time_limit)


def _markup(text: str) -> str:
    """A block id from a user's CSV, literal in Rich markup and without terminal escapes."""
    return escape(safe_text(text))


def _human(records: list[BlockRecord]) -> None:
    out = output_console()
    table = Table(title="Generate-then-Verify: verified claims per block (trivial ones aside)")
    for name in ("block", "units", "status", "claims", "singletons", "max k (singleton)",
                 "negative", "negative open", "whole block", "seconds"):
        table.add_column(name, justify="left" if name in ("block", "status") else "right",
                         no_wrap=name == "block")  # a block id cut short names no block
    for r in records:
        nontrivial = r.nontrivial()
        single = [c.columns for c in nontrivial if c.singleton]
        table.add_row(_markup(r.block), str(r.households), r.status,
                      str(len(nontrivial)),
                      str(len(single)), str(max(single, default=0)),
                      str(sum(not c.trivial for c in r.negative_claims)),
                      str(r.negative_undecided),
                      "certain" if r.reconstructed else "-", f"{r.elapsed_s:.2f}")
    out.print(table)
    left_open = sum(r.negative_undecided for r in records)
    if left_open:
        out.print(f"{left_open:,} 'at least one' questions left open by the per-block work "
                  "budget (negative open): neither proven nor refuted.")
    unsound = [r.block for r in records if r.truth is not None and not r.truth.sound]
    if unsound:
        out.print(f"[red]UNSOUND: a verified claim fails in the true block "
                  f"{_markup(unsound[0])}[/red]")
    out.print("The claims themselves: --json (they describe real housing units).")


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
    workers = workers or (os.cpu_count() or 1)
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
        _human(records)
    if any(r.status != "ok" for r in records):
        raise typer.Exit(EXIT_UNKNOWN)


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
    n_workers = workers or (os.cpu_count() or 1)
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


def register(app: typer.Typer) -> None:
    """Add these commands to the ``claims`` sub-app."""
    command: Callable[..., Any]
    for name, command in (("verify", verify), ("tabulate", tabulate),
                          ("experiment", experiment), ("block-release", block_release)):
        app.command(name)(command)


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
