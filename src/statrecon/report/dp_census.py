"""The DP census experiment's figure and tables (Markdown, Rich): what a reconstruction
recovers, how well its scores rank, and what stays proven, against the privacy budget rho."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.table import Table

from statrecon.outputs import write_atomically
from statrecon.report import fixed
from statrecon.report.figures import agg_figure

INF_AT = 1e4  # where rho = inf is drawn on the log axis (labelled "inf")


def _x(rho: str) -> float:
    return INF_AT if rho == "inf" else float(rho)


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Three panels against rho (log scale): agreement with the truth beside the baselines,
    precision of the top-ranked persons, persons certain within the noise."""
    rows = sorted(rows, key=lambda r: _x(r["rho"]))
    x = [_x(r["rho"]) for r in rows]
    fig, (agree, ranked, certain) = agg_figure(3, 4.6, 3.8)
    for key, label, style in (("agreement_exact", "reconstruction, exact age", "o-"),
                              ("agreement_binned", "reconstruction, age groups", "s-"),
                              ("block_majority_exact", "block majority, exact age", "o:"),
                              ("block_majority_binned", "block majority, age groups", "s:"),
                              ("tract_draw_binned", "tract draw, age groups", "^--")):
        agree.plot(x, [r[key] for r in rows], style, label=label, markersize=4)
    agree.set_title("Persons matched in their block")
    agree.set_ylabel("share of true persons")
    for key, label, style in (("precision_at_1pct", "top 1%, exact age", "o-"),
                              ("precision_at_10pct", "top 10%, exact age", "s-"),
                              ("precision_at_10pct_binned", "top 10%, age groups", "^-"),
                              ("agreement_exact", "all persons, exact age", "k:")):
        values = [r[key] if r[key] is not None else math.nan for r in rows]
        ranked.plot(x, values, style, label=label, markersize=4)
    ranked.set_title("Precision of the top-scored persons")
    certain.bar(range(len(rows)), [r["certain_within_noise"] or 0 for r in rows],
                color="#4477aa", label="certain (proven within the noise)")
    certain.bar(range(len(rows)), [r["certain_within_noise_not_in_truth"] or 0 for r in rows],
                color="#cc3311", label="of which not in the truth")
    certain.set_xticks(range(len(rows)), [r["rho"] for r in rows])
    certain.set_yscale("symlog")
    top = max([r["certain_within_noise"] or 0 for r in rows] + [1])
    certain.set_ylim(0, top * 3)
    certain.set_title("Persons certain within the noise")
    certain.set_xlabel("rho (zCDP)")
    for ax in (agree, ranked):
        ax.set_xscale("log")
        ax.set_xticks(x, [r["rho"] for r in rows])
        ax.set_xlabel("rho (zCDP)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in (agree, ranked, certain):
        ax.legend(fontsize=7)
    fig.suptitle("Reconstruction from noisy SF1 person tables, against the privacy budget",
                 fontsize=11)
    write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    return path


def percent(value: float | None) -> str:
    """A share as ``12.3%``, or ``–`` where there is none (the experiments' tables)."""
    return "–" if value is None else f"{100 * value:.1f}%"


def markdown(rows: list[dict[str, Any]], header: str) -> str:
    """The README of an experiment folder: one row per rho."""
    lines = [header, "",
             "| rho | agreement exact | binned | block majority exact / binned | "
             "non-modal uniques | top 1% | top 10% | top 10% binned | certain within noise "
             "(not in truth) | reconstruct + rank, CPU s | certain, CPU s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: _x(r["rho"])):
        certain = r["certain_within_noise"]
        lines.append(
            f"| {r['rho']} | {percent(r['agreement_exact'])} | {percent(r['agreement_binned'])} | "
            f"{percent(r['block_majority_exact'])} / {percent(r['block_majority_binned'])} | "
            f"{percent(r['precision_nonmodal'])} | {percent(r['precision_at_1pct'])} | "
            f"{percent(r['precision_at_10pct'])} | {percent(r['precision_at_10pct_binned'])} | "
            + ("–" if certain is None else
               f"{certain:,} ({r['certain_within_noise_not_in_truth']:,})")
            + f" | {r['tracts_cpu_s']:.0f} | {r['certain_cpu_s']:.0f} |")
    return "\n".join(lines) + "\n"


def summary_table(rows: list[dict[str, Any]], title: str) -> Table:
    """The experiment's rows as a Rich table (``experiment dp-census`` without ``--json``)."""
    table = Table(title=title)
    for column in ("rho", "agreement exact", "binned", "block majority binned", "top 10%",
                   "certain (not in truth)"):
        table.add_column(column, justify="right")
    for r in rows:
        certain = r["certain_within_noise"]
        table.add_row(r["rho"], fixed(r["agreement_exact"]), fixed(r["agreement_binned"]),
                      fixed(r["block_majority_binned"]), fixed(r["precision_at_10pct"]),
                      "–" if certain is None else
                      f"{certain:,} ({r['certain_within_noise_not_in_truth']:,})")
    return table
