"""One self-contained HTML report on a census reconstruction, for a data steward.

The page explains what was reconstructed, gives the headline numbers (what was proven unique,
how many persons are certain), plots them by block size, compares with the true persons when
given, and lists the tracts. Plots are PNGs drawn with matplotlib's Agg canvas and embedded as
base64; the page has no scripts and loads nothing. Person records are never printed: only
block and tract aggregates reach the page.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from statrecon.outputs import write_atomically
from statrecon.report.figures import agg_figure
from statrecon.runs.stores import read_recon

NUMERIC = re.compile(r"[-+]?[\d.,]+( %)?|–")
SIZE_EDGES = [-0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 10.5, 20.5, 50.5, np.inf]
SIZE_LABELS = ["0", "1", "2", "3", "4", "5", "6–10", "11–20", "21–50", "51+"]
BLOCK_COLUMNS = ["tract", "block", "status", "persons", "unique", "certain_persons",
                 "unique_binned", "certain_persons_binned"]

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 62rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.8rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; }
th { background: #f2f2f2; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; } figcaption { font-size: 0.9rem; color: #555; }
img { max-width: 100%; }
.note { font-size: 0.9rem; color: #555; }
"""


# --------------------------------------------------------------------------- html helpers


def _e(value: Any) -> str:
    """Escape any value for HTML text or attributes."""
    return html.escape(str(value), quote=True)


def _num(value: Any) -> str:
    """Integers with thousands separators, floats to 4 significant digits, None as a dash."""
    if value is None or (isinstance(value, float | np.floating) and np.isnan(value)):
        return "–"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4g}"


def _pct(part: float, whole: float) -> str:
    """``part`` as a percentage of ``whole`` ("–" when the whole is zero)."""
    return f"{100.0 * part / whole:.1f} %" if whole else "–"


def _rate(value: float) -> str:
    """A share in [0, 1] as a percentage."""
    return f"{100.0 * value:.1f} %"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """An HTML table; numbers formatted and (past the label column) right-aligned; every cell
    escaped."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            text = _num(v)
            cls = ' class="n"' if i and NUMERIC.fullmatch(text) else ""
            cells.append(f"<td{cls}>{_e(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _figure_html(png: bytes | None, alt: str, caption: str) -> str:
    """An embedded PNG with its caption, or a note when there was nothing to plot."""
    if png is None:
        return f'<p class="note">{_e(caption)} (nothing to plot)</p>'
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(alt)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


# --------------------------------------------------------------------------- data


def _blocks(recon: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One row per block (no person records) and the reconstruction's metadata."""
    table, meta = read_recon(recon)
    frame = table.select(BLOCK_COLUMNS).to_pandas()
    for col in ("unique", "unique_binned"):
        frame[col] = frame[col].astype("boolean")
    return frame, meta


def _size_class(persons: pd.Series) -> pd.Series:
    """Block population -> size class label (categorical, ordered small to large)."""
    return pd.cut(persons.astype(float), SIZE_EDGES, labels=SIZE_LABELS)


def _certification_by_size(blocks: pd.DataFrame) -> pd.DataFrame:
    """Per size class of reconstructed blocks: blocks, persons, unique shares, certain shares."""
    ok = blocks[blocks["status"] == "ok"].copy()
    ok["size"] = _size_class(ok["persons"])
    ok["u"] = ok["unique"].fillna(False).astype(int)
    ok["ub"] = ok["unique_binned"].fillna(False).astype(int)
    g = ok.groupby("size", observed=True)
    out = pd.DataFrame({"blocks": g.size(), "persons": g["persons"].sum(),
                        "unique": g["u"].mean(), "unique_binned": g["ub"].mean(),
                        "certain": g["certain_persons"].sum(),
                        "certain_binned": g["certain_persons_binned"].sum()})
    out["certain_share"] = out["certain"] / out["persons"].where(out["persons"] > 0)
    out["certain_binned_share"] = out["certain_binned"] / out["persons"].where(
        out["persons"] > 0)
    return out


def _matches_by_size(scores: pd.DataFrame) -> pd.DataFrame:
    """Per size class of true blocks: person-weighted match rates, attack and baseline."""
    frame = scores.assign(size=_size_class(scores["persons"]))
    g = frame.groupby("size", observed=True)
    sums = g[["persons", "exact", "within_1", "baseline_exact", "baseline_within_1"]].sum()
    out = pd.DataFrame({"blocks": g.size(), "persons": sums["persons"]})
    for col in ("exact", "within_1", "baseline_exact", "baseline_within_1"):
        out[col] = sums[col] / sums["persons"].where(sums["persons"] > 0)
    return out


# --------------------------------------------------------------------------- plots


def _png(fig: Any) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return buf.getvalue()


def _ticks(ax: Any, by_size: pd.DataFrame) -> None:
    """Size classes on the x axis, with the number of blocks under each."""
    ax.set_xticks(range(len(by_size)))
    ax.set_xticklabels([f"{s}\n({n:,})" for s, n in zip(by_size.index, by_size["blocks"],
                                                         strict=True)], fontsize=8)
    ax.set_xlabel("persons in block (number of blocks)")
    ax.set_ylim(0, 1.05)
    ax.grid(axis="y", alpha=0.3)


def _bars(ax: Any, by_size: pd.DataFrame, series: list[tuple[str, str]], title: str) -> None:
    """Grouped bars, one group per size class, one bar per (column, label)."""
    x = np.arange(len(by_size))
    width = 0.8 / len(series)
    for i, (col, label) in enumerate(series):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, by_size[col].fillna(0), width,
               label=label)
    _ticks(ax, by_size)
    ax.set_title(title, fontsize=10)


def _certification_plot(by_size: pd.DataFrame) -> bytes | None:
    """Left: share of blocks certified unique; right: share of persons certain."""
    if by_size.empty:
        return None
    fig, (left, right) = agg_figure(2, 5.2, 4.0)
    _bars(left, by_size, [("unique", "full records"), ("unique_binned", "age-bin resolution")],
          "blocks certified unique")
    left.set_ylabel("share of reconstructed blocks")
    _bars(right, by_size, [("certain_share", "full records"),
                           ("certain_binned_share", "age-bin resolution")],
          "persons certain (in every consistent dataset)")
    right.set_ylabel("share of reconstructed persons")
    fig.legend(*left.get_legend_handles_labels(), loc="outside upper center", ncols=2,
               fontsize=9)
    return _png(fig)


def _match_plot(by_size: pd.DataFrame) -> bytes | None:
    """Exact and within-one-year match rates by block size, attack against baseline."""
    if by_size.empty:
        return None
    fig, (ax,) = agg_figure(1, 5.2, 4.0)
    x = np.arange(len(by_size))
    ax.plot(x, by_size["exact"], marker="o", label="reconstruction: exact")
    ax.plot(x, by_size["within_1"], marker="s", label="reconstruction: age within 1")
    ax.plot(x, by_size["baseline_exact"], marker="o", linestyle="--", color="grey",
            label="baseline: exact")
    ax.plot(x, by_size["baseline_within_1"], marker="s", linestyle=":", color="grey",
            label="baseline: age within 1")
    _ticks(ax, by_size)
    ax.set_ylabel("share of true persons matched")
    ax.set_title("match rate against the true persons", fontsize=10)
    fig.legend(loc="outside upper center", ncols=2, fontsize=9)
    return _png(fig)


def _ranking_plot(curve: dict[str, list[list[float]]]) -> bytes | None:
    """Precision of the top-n scored persons against n, exact and binned age; the last point
    is the average row."""
    if not curve.get("exact"):
        return None
    fig, (ax,) = agg_figure(1, 5.2, 4.0)
    for name, label in (("exact", "exact age"), ("binned", "age groups")):
        points = np.asarray(curve[name], dtype=float)
        total = points[-1, 0]
        ax.plot(100 * points[:, 0] / total, points[:, 1], label=label)
        ax.axhline(points[-1, 1], linestyle=":", color="grey")
    ax.set_xlabel("top share of the reconstructed persons, by score (%)")
    ax.set_ylabel("share that are true persons")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.set_title("precision of the ranked persons (dotted: the average row)", fontsize=10)
    fig.legend(loc="outside upper center", ncols=2, fontsize=9)
    return _png(fig)


# --------------------------------------------------------------------------- sections


def _intro(recon: Path, meta: dict[str, Any]) -> str:
    """Title and a plain-language explanation."""
    solver = meta.get("solver", "CP-SAT")
    noisy = _noisy(meta)
    if noisy:
        return f"""<h1>Census reconstruction report: {_e(recon.name)}</h1>
<p>This report is about a <em>reconstruction</em> from <strong>noisy measurements</strong>:
published block and tract person tables with discrete Gaussian noise on every cell were turned
back into person-level records, one set per block, whose tables come as close as possible to
the measurements, each cell weighted by its noise (solver: {_e(solver)}). No true records were
used to build it. It is an estimate: nothing in it is certified, since noisy tables fit many
datasets; the persons that stay certain within the noise come from
<code>statrecon census certain</code>. Person records themselves are not shown in this
report.</p>"""
    return f"""<h1>Census reconstruction report: {_e(recon.name)}</h1>
<p>This report is about a <em>reconstruction</em>: the published block and tract person tables
(counts by sex, age, race and Hispanic origin) were turned back into person-level records,
one set per block, by finding a dataset that reproduces every published cell
(solver: {_e(solver)}). No true records were used to build it.</p>
<p>A block is <strong>certified unique</strong> when its reconstructed records (sex,
single-year age, race combination, Hispanic origin) are the <em>only</em> ones consistent with
the published tables: the solver proved that every alternative is INFEASIBLE. For such a block
the tables disclose its full records exactly. "At age-bin resolution" is the same proof with
ages only as fine as the block tables' age bins. A <strong>certain person</strong> is a record
present in every dataset consistent with the tables, even when the block as a whole is not
unique. Person records themselves are not shown in this report.</p>"""


def _noisy(meta: dict[str, Any]) -> bool:
    """A reconstruction from noisy measurements (the top-down estimate), as its store
    records it."""
    return meta.get("estimate") is True


def _headline(blocks: pd.DataFrame, meta: dict[str, Any]) -> str:
    """The headline numbers table."""
    tracts = meta.get("tracts", {})
    statuses = pd.Series([s.get("status", "?") for s in tracts.values()]).value_counts()
    ok = blocks[blocks["status"] == "ok"]
    n_blocks, persons = len(blocks), int(ok["persons"].sum())
    unique, unique_b = ok["unique"].fillna(False), ok["unique_binned"].fillna(False)
    uncertified = int(ok["unique"].isna().sum())
    certain = int(ok["certain_persons"].fillna(0).sum())
    certain_b = int(ok["certain_persons_binned"].fillna(0).sum())
    in_unique = int(ok.loc[unique.astype(bool), "persons"].sum())
    in_unique_b = int(ok.loc[unique_b.astype(bool), "persons"].sum())
    rows: list[tuple[str, Any, str]] = [
        ("tracts", len(tracts), ", ".join(f"{k}: {v}" for k, v in statuses.items())),
        ("blocks", n_blocks, f"{len(ok):,} reconstructed (tract status ok)"),
        ("persons reconstructed", persons, ""),
        ("reconstructed blocks not certified", uncertified,
         ("an estimate from noisy measurements certifies nothing (census certain proves "
          "what stays certain within the noise)" if _noisy(meta) else
          "certification was not run for them (reconstruct with --certify)")
         if uncertified else ""),
        ("blocks certified unique, full records", int(unique.sum()),
         _pct(unique.sum(), len(ok)) + " of reconstructed blocks"),
        ("blocks certified unique, age-bin resolution", int(unique_b.sum()),
         _pct(unique_b.sum(), len(ok)) + " of reconstructed blocks"),
        ("persons in blocks certified unique, full records", in_unique,
         _pct(in_unique, persons) + " of persons"),
        ("persons in blocks certified unique, age-bin resolution", in_unique_b,
         _pct(in_unique_b, persons) + " of persons"),
        ("certain persons, full records", certain, _pct(certain, persons) + " of persons"),
        ("certain persons, age-bin resolution", certain_b,
         _pct(certain_b, persons) + " of persons"),
    ]
    rows += _solver_rows(meta)
    return "<h2>Headline numbers</h2>" + _table(["measure", "value", "note"], rows)


def _solver_rows(meta: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """Solver time totals from the tract summaries."""
    tracts = meta.get("tracts", {}).values()
    solve = sum(float(t.get("solve_s") or 0) for t in tracts)
    certify = sum(float(t.get("certify_s") or 0) for t in tracts)
    rounds = sum(int(t.get("certify_rounds") or 0) for t in tracts)
    limit = meta.get("time_limit")
    return [
        ("solver time, reconstruction (s, all tracts)", round(solve, 2), ""),
        ("solver time, certification (s, all tracts)", round(certify, 2),
         f"{rounds:,} certification rounds"),
        ("time limit per tract (s)", "none" if limit is None else limit, ""),
    ]


def _certification_section(blocks: pd.DataFrame) -> str:
    """The by-size plot of what was proven, with its numbers."""
    by_size = _certification_by_size(blocks)
    ok = blocks[blocks["status"] == "ok"]
    if len(ok) and ok["unique"].isna().all():
        return ("<h2>What was proven, by block size</h2><p>Certification was not run for this "
                "reconstruction, so nothing was proven (reconstruct with --certify).</p>")
    not_ok = int((blocks["status"] != "ok").sum())
    caption = ("Share of reconstructed blocks certified unique (left) and share of "
               "reconstructed persons that are certain (right), by block population."
               + (f" {not_ok:,} blocks in tracts not reconstructed are left out."
                  if not_ok else ""))
    rows = [(str(s), int(r["blocks"]), int(r["persons"]), _pct(r["unique"], 1),
             _pct(r["unique_binned"], 1), _pct(r["certain"], r["persons"]),
             _pct(r["certain_binned"], r["persons"])) for s, r in by_size.iterrows()]
    headers = ["persons in block", "blocks", "persons", "unique (full)", "unique (age bins)",
               "certain persons (full)", "certain persons (age bins)"]
    return ("<h2>What was proven, by block size</h2>"
            + _figure_html(_certification_plot(by_size), "certified unique share by block "
                           "size", caption) + _table(headers, rows))


LABELS = {
    "exact_match_rate": "persons matched exactly (share of true persons)",
    "age_within_1_rate": "persons matched with age within 1 year",
    "binned_match_rate": "persons matched at age-bin resolution",
    "blocks_exact": "blocks reconstructed exactly",
    "blocks_exact_binned": "blocks reconstructed exactly at age-bin resolution",
    "blocks_certified_unique": "blocks certified unique",
    "persons_in_certified_blocks": "persons in blocks certified unique",
    "certified_blocks_mismatched": "certified-unique blocks that do not match the truth",
    "blocks_certified_unique_binned": "blocks certified unique at age-bin resolution",
    "persons_in_certified_binned_blocks": "persons in blocks certified unique (age bins)",
    "certified_binned_blocks_mismatched": "certified-unique (age bins) blocks not matching",
    "certain_persons": "certain persons",
    "certain_persons_not_in_truth": "certain persons not in the truth",
    "blocks_not_reconstructed": "true blocks in tracts not reconstructed",
    "blocks_not_in_truth": "reconstructed blocks absent from the truth",
    "seed": "seed of the random baseline",
}
# The measures of ``experiments.census_scores`` shown for the reconstruction and each baseline.
SCORE_ROWS = (("agreement, exact age", "agreement_exact"),
              ("agreement, binned age", "agreement_binned"),
              ("block uniques guessed", "unique_rows"),
              ("precision on uniques, exact age", "precision_unique"),
              ("precision on uniques, binned age", "precision_unique_binned"),
              ("non-modal uniques guessed", "nonmodal_unique_rows"),
              ("precision on non-modal uniques, exact age", "precision_nonmodal"),
              ("precision on non-modal uniques, binned age", "precision_nonmodal_binned"))

PAIRS = [("exact match rate", "exact_match_rate", "baseline_exact_match_rate"),
         ("age within 1 year", "age_within_1_rate", "baseline_age_within_1_rate")]


@dataclass(frozen=True)
class TruthScores:
    """A reconstruction scored against the true persons (``experiments.census_match``)."""

    truth_name: str  # the true persons file's name, shown on the page
    summary: dict[str, Any]  # ``census_match.compare``: rates beside the baseline
    scores: pd.DataFrame  # ``census_match.block_scores``: one row per true block


def _guesses_html(summary: dict[str, Any]) -> str:
    """The reconstruction's agreement and precision beside each baseline's (when the
    summary carries them), then agreement by block size."""
    if "scores" not in summary:
        return ""
    guesses = {"reconstruction": summary["scores"], **summary.get("baselines", {})}
    names = [n.replace("_", " ") for n in guesses]

    def shown(value: Any) -> str:
        if value is None:
            return "–"
        return _rate(value) if isinstance(value, float) else _num(value)

    table = _table(["measure", *names], [(label, *(shown(g[key]) for g in guesses.values()))
                                         for label, key in SCORE_ROWS])
    rows = {n: {r["size"]: r for r in g["by_block_size"]} for n, g in guesses.items()}
    sizes = _table(["persons per block", "blocks", *names], [
        (row["size"], _num(row["blocks"]), *(
            f"{_rate(rows[n][row['size']]['agreement_exact'])} / "
            f"{_rate(rows[n][row['size']]['agreement_binned'])}"
            if row["size"] in rows[n] else "–" for n in guesses))
        for row in summary["scores"]["by_block_size"]])
    return ("<h3>Beside the baselines</h3><p class=\"note\">Block majority: each block's "
            "published persons given its most common race/origin, sex and age drawn from the "
            "tract; tract draw: each person drawn from the tract's joint distribution; "
            "microdata: a persons file scored as if it were a reconstruction. Precision: of the "
            "persons a guess makes unique in their block (sex, age group, race, origin), the "
            "share found in the true block.</p>" + table
            + "<h3>Agreement by block size (exact / binned age)</h3>" + sizes)


def _truth_section(truth: TruthScores) -> str:
    """Match rates against the true persons, next to the random baseline."""
    summary, scores = truth.summary, truth.scores
    pairs = _table(["measure", "reconstruction", "baseline (random draw from tract)"],
                   [(label, _rate(summary[a]), _rate(summary[b])) for label, a, b in PAIRS])
    paired = {k for _, a, b in PAIRS for k in (a, b)}
    others = _table(["measure", "value"],
                    [(LABELS.get(k, k), _rate(v) if k.endswith("_rate") else v)
                     for k, v in summary.items()
                     if k not in paired and v is not None and not isinstance(v, dict | list)])
    by_size = _matches_by_size(scores)
    caption = ("Share of true persons matched by a reconstructed person of the same block, by "
               "block population; grey: the baseline, which draws every person at random "
               "from its tract's own distribution.")
    ranked = ""
    if summary.get("precision_curve"):
        ranked = _figure_html(
            _ranking_plot(summary["precision_curve"]), "precision of the ranked persons",
            "Each reconstructed person is scored by its share of other consistent datasets "
            "that hold it (census reconstruct --rank K); the curve is the share of the "
            "top-scored persons that are true persons.")
    return (f"<h2>Against the true persons ({_e(truth.truth_name)})</h2>"
            f"<p>{_num(summary['persons'])} true persons in {_num(summary['blocks'])} blocks. "
            f"Exact match: same sex, single-year age, race combination and Hispanic origin."
            f"</p>" + pairs + others
            + _figure_html(_match_plot(by_size), "match rate by block size", caption)
            + _guesses_html(summary) + ranked)


def _tract_section(blocks: pd.DataFrame, meta: dict[str, Any]) -> str:
    """One row per tract: size, status, model size and solver times."""
    tracts: dict[str, Any] = meta.get("tracts", {})
    g = blocks.groupby("tract")
    n_blocks, persons = g.size(), g["persons"].sum(min_count=1)
    rows = []
    for tract in sorted(set(tracts) | set(n_blocks.index)):
        s = tracts.get(tract, {})
        p = persons.get(tract)
        rows.append((tract, int(n_blocks.get(tract, 0)),
                     int(p) if p is not None and not pd.isna(p) else None,
                     s.get("status", "?"), s.get("variables"), s.get("solve_s"),
                     s.get("certify_s"), "; ".join(s.get("conflict") or [])))
    headers = ["tract", "blocks", "persons", "status", "variables", "solve s", "certify s",
               "conflicting cells"]
    return "<h2>Tracts</h2>" + _table(headers, rows)


def _page(recon: Path, truth: TruthScores | None) -> str:
    """The whole HTML document."""
    blocks, meta = _blocks(recon)
    parts = [_intro(recon, meta), _headline(blocks, meta), _certification_section(blocks)]
    if truth is not None:
        parts.append(_truth_section(truth))
    parts.append(_tract_section(blocks, meta))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e('Census reconstruction report: ' + recon.name)}</title>"
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(parts)
            + "\n</body></html>\n")


def write_report(recon: Path, out: Path, *, truth: TruthScores | None = None) -> None:
    """Write the HTML report on reconstruction ``recon`` to ``out`` (see module docstring).

    With ``truth`` (``census_match.truth_scores``) it adds match rates against the random
    baseline. Raises StatreconError for a file that is not a reconstruction or an ``out`` that
    cannot be written.
    """
    page = _page(recon, truth)
    write_atomically(out, lambda tmp: tmp.write_text(page, encoding="utf-8"))
