"""The protections experiment's figure and tables (Markdown, Rich): each protection's risk
against its utility, a curve per method."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.table import Table

from statrecon.outputs import write_atomically
from statrecon.report.dp_census import percent
from statrecon.report.figures import agg_figure

METHODS = ("swap", "ckm", "round", "suppress", "dp")
NAMES = {"swap": "record swapping", "ckm": "cell key perturbation", "round": "rounding",
         "suppress": "suppression", "dp": "differential privacy"}
STYLES = {"swap": "o-", "ckm": "s-", "round": "^-", "suppress": "D-", "dp": "v-"}
LEAST_X = 0.01  # where a protection that changes nothing is drawn on the log axis


def _value(value: float | None) -> float:
    return math.nan if value is None else value


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """Two panels against the mean absolute error of the published cells (log scale): the
    reconstruction's agreement by age group, and the persons proven certain (those the
    truth lacks marked with a cross)."""
    fig, (agree, certain) = agg_figure(2, 5.4, 4.2)
    for method in METHODS:
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["mae"])
        if not mine:
            continue
        x = [max(r["mae"], LEAST_X) for r in mine]
        agree.plot(x, [_value(r["agreement_binned"]) for r in mine], STYLES[method],
                   label=NAMES[method], markersize=4)
        certain.plot(x, [r["certain"] or 0 for r in mine], STYLES[method],
                     label=NAMES[method], markersize=4)
        for r, at in zip(mine, x, strict=True):
            if r["agreement_binned"] is not None:
                agree.annotate(r["parameter"], (at, r["agreement_binned"]), fontsize=6,
                               xytext=(3, 3), textcoords="offset points")
            certain.annotate(r["parameter"], (at, r["certain"] or 0), fontsize=6,
                             xytext=(3, 3), textcoords="offset points")
            if r["certain_false"]:
                certain.plot([at], [r["certain_false"]], "x", color="#cc3311")
    certain.plot([], [], "x", color="#cc3311", label="of which the truth lacks")
    agree.set_ylim(0, 1.02)
    agree.set_ylabel("true persons matched, age groups")
    agree.set_title("Reconstruction agreement")
    certain.set_yscale("symlog")
    certain.set_ylabel("persons proven certain")
    certain.set_title("Persons proven")
    for ax in (agree, certain):
        ax.set_xscale("log")
        ax.set_xlabel("mean absolute error of the published cells (less is more useful)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Risk against utility of each protection of the SF1 person tables",
                 fontsize=11)
    write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    return path


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _certain(r: dict[str, Any]) -> str:
    return "–" if r["certain"] is None else f"{r['certain']:,} ({r['certain_false']:,})"


def _parameter(r: dict[str, Any]) -> str:
    """The parameter, and for swapping the share of persons actually moved."""
    moved = r.get("moved")
    return r["parameter"] if moved is None else f"{r['parameter']} ({moved:.0%} moved)"


def markdown(rows: list[dict[str, Any]], header: str) -> str:
    """The README of an experiment folder: one row per setting."""
    lines = [header, "",
             "| method | parameter | MAE | exact cells | MAE race (P8) | MAE age (P12) | "
             "agreement exact | age groups | non-modal uniques | top 10% | certain (false) "
             "| s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['method']} | {_parameter(r)} | {_num(r['mae'])} | "
            f"{percent(r['exact_share'])} | {_num(r['race_mae'])} | {_num(r['age_mae'])} | "
            f"{percent(r['agreement_exact'])} | {percent(r['agreement_binned'])} | "
            f"{percent(r['precision_nonmodal'])} | {percent(r['precision_at_10pct'])} | "
            f"{_certain(r)} | {r.get('seconds', 0):.0f} |")
    scored = [r for r in rows if r["block_majority_binned"] is not None]
    # the baselines guess from the persons per block a reconstruction holds: the true ones
    # where a setting publishes the tables unchanged (DP at rho = inf)
    base = next((r for r in scored if r["mae"] == 0), scored[0] if scored else None)
    if base is not None:
        lines += ["", f"Baselines ({base['method']}, {base['parameter']}: guesses from its "
                  "reconstruction's persons per block): block majority "
                  f"{percent(base['block_majority_exact'])} exact, "
                  f"{percent(base['block_majority_binned'])} by age group; a draw from the "
                  f"tract {percent(base['tract_draw_exact'])} / "
                  f"{percent(base['tract_draw_binned'])}."]
    return "\n".join(lines) + "\n"


def summary_table(rows: list[dict[str, Any]], title: str) -> Table:
    """The experiment's rows as a Rich table (``experiment protections`` without
    ``--json``)."""
    table = Table(title=title)
    for column in ("method", "parameter", "MAE", "exact cells", "agreement", "age groups",
                   "certain (false)"):
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(r["method"], _parameter(r), _num(r["mae"]), percent(r["exact_share"]),
                      percent(r["agreement_exact"]), percent(r["agreement_binned"]), _certain(r))
    return table
