"""The terminal view of ``census compare``: the Bureau's measures, the reconstruction beside
the baselines, agreement by block size, the precision of the top-scored persons, and what
the comparison left out (the HTML report is :mod:`statrecon.report.census`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from statrecon.report.census import SCORE_ROWS


def render_compare(result: dict[str, Any], recon: Path, truth: Path, console: Console) -> None:
    """Everything ``census compare`` prints without ``--json``."""
    table = Table(title=f"{recon} against {truth}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for key, value in result.items():
        if value is None or isinstance(value, dict | list):
            continue
        table.add_row(key, f"{value:.4f}" if isinstance(value, float) else f"{value:,}")
    console.print(table)
    for extra in score_tables(result):
        console.print(extra)
    if result["truth_blocks_left_out"]:
        console.print(f"Left out: {result['truth_blocks_left_out']:,} blocks "
                      f"({result['truth_persons_left_out']:,} persons) in "
                      f"{result['truth_tracts_left_out']:,} tracts of {truth} that {recon} "
                      "does not cover; the rates are over the common tracts only "
                      "(--strict refuses)", highlight=False, soft_wrap=True)


def score_tables(result: dict[str, Any]) -> list[Table]:
    """The reconstruction's measures beside each baseline's, and agreement by block size."""
    guesses = {"reconstruction": result["scores"], **result["baselines"]}
    table = Table(title="The reconstruction beside the baselines (they know only what the "
                  "release publishes; microdata: the persons file given with --microdata)")
    table.add_column("measure")
    for name in guesses:
        table.add_column(name.replace("_", " "), justify="right")
    for label, key in SCORE_ROWS:
        table.add_row(label, *(_shown(g[key]) for g in guesses.values()))
    sizes = Table(title="Agreement by true block size (exact / binned age)")
    sizes.add_column("persons per block")
    sizes.add_column("blocks", justify="right")
    for name in guesses:
        sizes.add_column(name.replace("_", " "), justify="right")
    rows = {name: {r["size"]: r for r in g["by_block_size"]} for name, g in guesses.items()}
    for row in result["scores"]["by_block_size"]:
        size = row["size"]
        sizes.add_row(size, f"{row['blocks']:,}", *(
            f"{rows[n][size]['agreement_exact']:.3f} / {rows[n][size]['agreement_binned']:.3f}"
            if size in rows[n] else "–" for n in guesses))
    out = [table, sizes]
    if result["precision_at_k"] is not None:
        ranked = Table(title="Precision of the top-scored")
        ranked.add_column("top")
        ranked.add_column("exact age", justify="right")
        ranked.add_column("age groups", justify="right")
        for share, value in result["precision_at_k"].items():
            ranked.add_row(share, f"{value:.4f}",
                           f"{result['precision_at_k_binned'][share]:.4f}")
        out.append(ranked)
    return out


def _shown(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.4f}" if isinstance(value, float) else f"{value:,}"
