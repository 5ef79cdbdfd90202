"""``statrecon claims ...``: Generate-then-Verify claims about housing units (reference 003).

This module holds the ``claims`` sub-app and ``generate-blocks`` (synthetic target blocks and
the tracts around them, written as households CSV files).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from statrecon.errors import StatreconError
from statrecon.outputs import atomic_outputs, check_writable

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
