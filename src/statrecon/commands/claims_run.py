"""``statrecon claims tabulate | verify | experiment``: Generate-then-Verify from the command line.

Thin layer: reading files, progress bars and output live here; the engine
(``engines.claims``) and the per-block runner (``census.household_run``) do the work.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statrecon.census.geography import BLOCK_GEOID, state_of, tract_of
from statrecon.commands.progress import work_bar
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


def _options(formulation: str, k: int, time_limit: float | None, negative: bool) -> Any:
    from statrecon.engines.claims import ClaimsOptions

    if formulation not in FORMULATIONS:
        raise StatreconError(f"--formulation {formulation!r}: expected "
                             f"{' or '.join(FORMULATIONS)}")
    if k < 1:
        raise StatreconError(f"--k {k}: need at least one generated dataset")
    if time_limit is not None and not time_limit > 0:  # NaN too
        raise StatreconError(f"--time-limit {time_limit}: must be positive")
    return ClaimsOptions(formulation=formulation, k_solutions=k, time_limit=time_limit,
                         negative=negative)


def _priors(units: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Tract and state priors (the baselines' P) from a households table."""
    from statrecon.census.households.synthetic import encode
    from statrecon.runs.claims import Prior

    codes = encode(units)
    tracts = {str(t): Prior.of(codes[idx]) for t, idx in units.groupby("tract").indices.items()}
    states = {str(s): Prior.of(codes[idx]) for s, idx in units.groupby("state").indices.items()}
    return tracts, states


def tasks_from_households(units: Any, blocks: list[str] | None, source: str) -> list[Any]:
    """One task per block: its tables (DuckDB) and its true units (for soundness checks)."""
    from statrecon.census.households.synthetic import encode
    from statrecon.census.households.tabulate import tabulate_sql
    from statrecon.runs.claims import BlockTask

    known = sorted(units["block"].unique())
    if blocks:
        missing = [b for b in blocks if b not in set(known)]
        if missing:
            raise StatreconError(f"{source}: unknown block id {missing[0]}; the file has "
                                 f"{len(known)} blocks (for example {known[0]})")
        units = units[units["block"].isin(blocks)]
    tables = tabulate_sql(units)
    codes = encode(units)
    by_block = units.groupby("block").indices
    first = units.groupby("block").first()
    return [BlockTask(b, str(first.loc[b, "tract"]), str(first.loc[b, "state"]), tables[b],
                      codes[by_block[b]]) for b in sorted(tables)]


COUNT = re.compile(r"[0-9]+")


def _count(path: Path, line: int, cell: str, value: str | None) -> int:
    """A published count as written: digits only (no sign, fraction, exponent or blanks)."""
    from statrecon.census.households.synthetic import MAX_BLOCK_UNITS

    text = (value or "").strip()
    if not COUNT.fullmatch(text):
        raise StatreconError(f"{path}: line {line}: cell {cell} has value {text[:40]!r}, not a "
                             "count (a whole number >= 0)")
    if len(text) > 9 or int(text) > MAX_BLOCK_UNITS:
        shown = f"{int(text):,}" if len(text) <= 9 else text[:40] + ("..." * (len(text) > 40))
        raise StatreconError(f"{path}: line {line}: cell {cell} has value {shown}, more housing "
                             f"units than a census block holds (at most {MAX_BLOCK_UNITS:,})")
    return int(text)


def read_tables(path: Path) -> dict[str, np.ndarray]:
    """Published block tables in long form (block, cell, value), every cell of every block.

    Every cell must appear exactly once per block: a second value for the same cell is an
    error (never "the last one wins"), as is a missing one.
    """
    from statrecon.census.households import tables as hht

    position = {c.cell: i for i, c in enumerate(hht.table_index().cells)}
    out: dict[str, np.ndarray] = {}
    first_line: dict[str, np.ndarray] = {}  # block -> line of each cell (0: not yet seen)
    try:
        f = path.open(encoding="utf-8", newline="")
    except OSError as e:
        raise StatreconError(f"{path}: cannot read ({e.strerror})") from None
    line = 1
    try:
        with f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or \
                    not {"block", "cell", "value"} <= set(reader.fieldnames):
                raise StatreconError(f"{path}: expected the columns block, cell, value")
            for line, row in enumerate(reader, start=2):
                block, cell = (row["block"] or "").strip(), (row["cell"] or "").strip()
                if not BLOCK_GEOID.fullmatch(block):
                    raise StatreconError(f"{path}: line {line}: block id {block[:30]!r} is not "
                                         "15 digits (state 2, county 3, tract 6, block 4)")
                if cell not in position:
                    raise StatreconError(f"{path}: line {line}: unknown cell {cell[:30]!r} "
                                         "(cells look like H13A_004; see `statrecon claims "
                                         "tabulate`)")
                v = _count(path, line, cell, row["value"])
                if block not in out:
                    out[block] = np.zeros(len(position), dtype=np.int64)
                    first_line[block] = np.zeros(len(position), dtype=np.int64)
                seen = int(first_line[block][position[cell]])
                if seen:
                    raise StatreconError(f"{path}: line {line}: block {block} cell {cell} "
                                         f"appears again (first at line {seen}); publish "
                                         "each cell once")
                out[block][position[cell]] = v
                first_line[block][position[cell]] = line
    except csv.Error as e:
        raise StatreconError(f"{path}: line {line}: not a valid CSV file: {e}") from None
    except UnicodeDecodeError:
        raise StatreconError(f"{path}: not UTF-8 text") from None
    if not out:
        raise StatreconError(f"{path}: no rows")
    for block, lines in first_line.items():
        mask = lines > 0
        if not mask.all():
            missing = hht.table_index().cells[int(np.flatnonzero(~mask)[0])].cell
            raise StatreconError(f"{path}: block {block} lacks {int((~mask).sum())} of the "
                                 f"{len(mask)} cells (for example {missing}); publish zeros too")
    return out


def run_with_progress(tasks: list[Any], shared: Any, *, workers: int, executor: str | None,
                      store: Path | None, quiet: bool) -> list[dict[str, Any]]:
    from statrecon.runs.claims import run_blocks

    err = Console(stderr=True)
    records: list[dict[str, Any]] = []
    with work_bar(err, "blocks", "claims", quiet=quiet) as bar:
        task = bar.add_task("blocks", total=len(tasks), count=0)
        claims = 0

        def progress(rec: dict[str, Any]) -> None:
            nonlocal claims
            claims += sum(not c["trivial"] for c in rec["claims"])
            bar.update(task, advance=1, count=claims)

        records = list(run_blocks(tasks, shared, workers=workers, executor=executor,
                                  store=store, progress=progress))
    order = {t.block: i for i, t in enumerate(tasks)}
    return sorted(records, key=lambda r: order.get(r["block"], 0))


def _markup(text: str) -> str:
    """A block id from a user's CSV, literal in Rich markup and without terminal escapes."""
    return escape(safe_text(text))


def _human(records: list[dict[str, Any]]) -> None:
    out = output_console()
    table = Table(title="Generate-then-Verify: verified claims per block (trivial ones aside)")
    for name in ("block", "units", "status", "claims", "singletons", "max k (singleton)",
                 "negative", "negative open", "whole block", "seconds"):
        table.add_column(name, justify="left" if name in ("block", "status") else "right",
                         no_wrap=name == "block")  # a block id cut short names no block
    for r in records:
        nontrivial = [c for c in r["claims"] if not c["trivial"]]
        single = [c["columns"] for c in nontrivial if c["singleton"]]
        table.add_row(_markup(r["block"]), str(r["households"]), r["status"],
                      str(len(nontrivial)),
                      str(len(single)), str(max(single, default=0)),
                      str(sum(not c["trivial"] for c in r["negative_claims"])),
                      str(r.get("negative_undecided", 0)),
                      "certain" if r["reconstructed"] else "-", f"{r['elapsed_s']:.2f}")
    out.print(table)
    left_open = sum(r.get("negative_undecided", 0) for r in records)
    if left_open:
        out.print(f"{left_open:,} 'at least one' questions left open by the per-block work "
                  "budget (negative open): neither proven nor refuted.")
    unsound = [r["block"] for r in records if r.get("sound") is False]
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
                                                     "short is 'unknown'.")] = None,
    negative: Annotated[bool, typer.Option(help="Also prove negative claims.")] = True,
    workers: Annotated[int, typer.Option(min=0, help="Blocks solved in parallel; 0 = all "
                                         "cores.")] = 1,
    executor: Annotated[str | None, typer.Option(help="local or dask://HOST:PORT.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Prove claims R(a, m) about housing units from the published block tables."""
    from statrecon.census.households.synthetic import read_households
    from statrecon.runs.claims import BlockTask, Shared

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
            tract_priors, state_priors = _priors(units)
    else:
        assert tables is not None
        published = read_tables(tables)
        wanted = block or sorted(published)
        for b in wanted:
            if b not in published:
                raise StatreconError(f"{tables}: unknown block id {b}")
        tasks = [BlockTask(b, tract_of(b), state_of(b), published[b], None) for b in wanted]
    if population is not None:
        tract_priors, state_priors = _priors(read_households(population))
    shared = Shared(options, tract_priors, state_priors)
    records = run_with_progress(tasks, shared, workers=workers, executor=executor, store=None,
                                quiet=quiet)
    if as_json:
        json.dump({"blocks": records}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _human(records)
    if any(r["status"] != "ok" for r in records):
        raise typer.Exit(EXIT_UNKNOWN)


def tabulate(
    households: Annotated[Path, typer.Option(help="Housing units CSV.")],
    out: Annotated[Path, typer.Option(help="Tables CSV to write (block, cell, value).")],
) -> None:
    """Publish every block table cell (zeros included) of a households file, as a CSV."""
    from statrecon.census.households import tables as hht
    from statrecon.census.households.synthetic import read_households
    from statrecon.census.households.tabulate import tabulate_sql

    check_writable(out, "--out")
    tables = tabulate_sql(read_households(households))
    cells = hht.table_index().cells

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="") as f:
            w = csv.writer(f)
            w.writerow(["block", "cell", "value"])
            for b in sorted(tables):
                for c, v in zip(cells, tables[b], strict=True):
                    w.writerow([b, c.cell, int(v)])

    write_atomically(out, write)
    Console(stderr=True).print(f"{len(tables)} blocks x {len(cells)} cells -> {out}")


def _previous_params(meta: Path) -> object:
    """The parameters a previous run in the same folder recorded (None if unreadable)."""
    try:
        return json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def experiment(
    out: Annotated[Path, typer.Option(help="Directory for figures, tables and results.")],
    blocks: Annotated[int, typer.Option(help="Synthetic blocks to attack.")] = 50,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the synthetic blocks.")] = 0,
    formulation: Annotated[str, typer.Option(help=formulations_help())] = "fast",
    k: Annotated[int, typer.Option("--k", help="Consistent datasets per block.")] = 100,
    time_limit: Annotated[float | None, typer.Option(help="Seconds per block.")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Blocks solved in parallel; 0 = all "
                                         "cores.")] = 0,
    executor: Annotated[str | None, typer.Option(help="local or dask://HOST:PORT.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """The paper's experiment on synthetic blocks: Figure 2, Tables 2-3, whole blocks.

    Resumable: blocks finished in OUT/blocks.jsonl are not solved again.
    """
    import os

    from statrecon.census.households.synthetic import generate_blocks, write_households_csv
    from statrecon.experiments.generate_verify import summarise, write_outputs
    from statrecon.runs.claims import Shared

    options = _options(formulation, k, time_limit, True)
    if blocks < 1:
        raise StatreconError(f"--blocks {blocks}: must be at least 1")
    n_workers = workers or (os.cpu_count() or 1)
    check_writable_folder(out, "--out")
    params = {"blocks": blocks, "seed": seed, "formulation": formulation, "k": k,
              "time_limit": time_limit}
    meta = out / "run.json"
    store = out / "blocks.jsonl"
    if meta.exists() and _previous_params(meta) != params:
        raise StatreconError(f"{out} holds results of a different run "
                             f"({meta.read_text(encoding='utf-8').strip()[:200]}); use another "
                             "--out")
    write_atomically(meta, lambda tmp: tmp.write_text(json.dumps(params), encoding="utf-8"))
    t0 = time.perf_counter()
    gen = generate_blocks(blocks, seed)
    write_atomically(out / "blocks.csv", lambda tmp: write_households_csv(gen.targets, tmp))
    write_atomically(out / "population.csv",
                     lambda tmp: write_households_csv(gen.population, tmp))
    tasks = tasks_from_households(gen.targets, None, "generated blocks")
    tract_priors, state_priors = _priors(gen.population)
    shared = Shared(options, tract_priors, state_priors)
    records = run_with_progress(tasks, shared, workers=n_workers, executor=executor,
                                store=store, quiet=quiet)
    command = "statrecon claims experiment " + " ".join(shlex.quote(a) for a in sys.argv[3:]) \
        if len(sys.argv) > 3 else ""
    paths = write_outputs(records, out, command)
    summary = summarise(records).to_json() | {"wall_s": round(time.perf_counter() - t0, 2),
                                               "workers": n_workers,
                                               "files": [str(p) for p in paths]}
    text = json.dumps(summary, indent=1)
    write_atomically(out / "summary.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    if as_json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        output_console().print((out / "results.md").read_text(encoding="utf-8"))
        output_console().print(f"wall {summary['wall_s']} s on {n_workers} workers; files: "
                        + ", ".join(str(p) for p in paths))
    if summary["sound"] is False:
        raise StatreconError("a verified claim does not hold in its true block (a bug; "
                             f"see {store})")
    if summary["unknown_blocks"]:
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
    from statrecon.census.households.synthetic import read_households
    from statrecon.census.households.tabulate import block_release_document

    check_writable(out, "--out")
    tasks = tasks_from_households(read_households(households), [block], str(households))
    doc = block_release_document(block, tasks[0].values)
    text = dump_yaml(doc)
    write_atomically(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    Console(stderr=True).print(f"block {block}: {len(doc['statistics'])} statistics, "  # type: ignore[arg-type]
                               f"{len(doc['constraints'])} rules -> {out}")  # type: ignore[arg-type]
