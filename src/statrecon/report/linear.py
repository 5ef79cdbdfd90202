"""Linear-engine results as the stable JSON contract and as a Rich view.

Proven facts (``determined``, with their certificates) are kept apart from the estimate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statrecon.engines.linear import LinearResult
from statrecon.errors import StatreconError
from statrecon.release.known import read_table
from statrecon.report import safe_text


def to_json(result: LinearResult) -> dict[str, Any]:
    """``result.to_json()``: kept here for callers of the report module."""
    return result.to_json()


def add_truth(data: dict[str, Any], result: LinearResult, path: Path) -> None:
    """Accuracy (fraction right) and, for numeric secrets, mean absolute error, each next to
    its baseline: one guess for every record, the commonest true value (for the error, the
    median), which needs the truth's distribution but nothing the release says. An attack is
    worth reporting only where it beats that."""
    system = result.system
    name = system.secret.name
    frame = read_table(path, (name,) if system.secret.kind == "indicator" else ())
    if name not in frame.columns:
        raise StatreconError(f"{path}: column '{name}' (the secret) is missing")
    if len(frame) != system.n:
        raise StatreconError(f"{path}: {len(frame)} rows, the public table has {system.n}")
    truth = frame[name].tolist()
    if system.secret.kind == "indicator":
        wanted = [str(v) in system.secret.target for v in truth]
        got = [v >= 0.5 for v in np.round(result.estimate)]
        bad = [i for i, v in enumerate(truth) if str(v) not in system.secret.domain]
        if bad:
            raise StatreconError(f"{path}:{bad[0] + 2}: '{truth[bad[0]]}' is not a value of "
                                 f"{name}")
        data["accuracy"] = float(np.mean(np.array(wanted) == np.array(got)))
        share = float(np.mean(wanted)) if wanted else 0.0
        data["baseline_accuracy"] = max(share, 1.0 - share)
        return
    try:
        t = np.asarray(truth, dtype=float)
    except (TypeError, ValueError):
        raise StatreconError(f"{path}: column '{name}' is not numeric") from None
    est = np.asarray([float(v) for v in result.labels])
    tol = 1e-6 * np.maximum(1.0, np.abs(t))
    if system.secret.kind == "integer":
        tol = np.full_like(t, 0.5)
    data["accuracy"] = float(np.mean(np.abs(est - t) <= tol))
    data["mean_absolute_error"] = float(np.mean(np.abs(est - t)))
    data["baseline_accuracy"] = commonest_share(t, tol)
    data["baseline_mean_absolute_error"] = float(np.mean(np.abs(np.median(t) - t)))


def commonest_share(t: np.ndarray, tol: np.ndarray) -> float:
    """The best accuracy of one value guessed for every record, the guess being a true value:
    record i is right when the guess lies in [t_i - tol_i, t_i + tol_i], so each guess t_j
    scores the intervals that hold it, counted with two sorted searches (O(n log n), not a
    loop over every pair)."""
    if not len(t):
        return 0.0
    starts, ends = np.sort(t - tol), np.sort(t + tol)
    holding = np.searchsorted(starts, t, side="right") - np.searchsorted(ends, t, side="left")
    return float(holding.max() / len(t))


def render(result: LinearResult, console: Console, data: dict[str, Any]) -> None:
    """The human view: what is proven first, then the estimate."""
    system = result.system
    det = result.determination
    name = system.secret.name
    head = {
        "determined": "[bold green]DETERMINED[/]: every record is pinned by the exact "
                      "and bounded statistics.",
        "partial": "[bold yellow]PARTLY DETERMINED[/]: the records below are pinned by linear "
                   "algebra (with rounded answers: their exact interval holds one admissible "
                   "value); the rest are estimated (their domain may pin more: try "
                   "--method exact on small tables).",
        "infeasible": "[bold red]INCONSISTENT[/]: the statistics contradict each other (exact "
                      "ones, bounded ones beyond their error, or the secret's domain).",
        "unknown": "[bold]UNKNOWN[/]: exact determinability was not computed.",
        "optimal": "[bold green]OPTIMAL[/]: the integer decoding is proven optimal.",
        "estimated": f"[bold]ESTIMATED[/] ({result.method}).",
    }[result.status]
    console.print(head)
    console.print(f"{system.n} records, {system.k} statistics"
                  + (f", rank {det.rank}" if det is not None else "")
                  + f"; method {result.method}; {result.elapsed_s:.2f} s")
    if det is not None and not det.consistent:
        console.print("Conflicting statistics: "
                      + _markup(", ".join(data.get("conflict", []))))
    if result.proven:
        _render_records(console, data["determined"], f"Proven: {len(result.proven)} record(s) "
                        f"of {_markup(name)}", name, proven=True)
    elif det is not None and det.consistent:
        console.print("No record is pinned by the exact and bounded statistics alone.")
    if result.intervals:
        _render_records(console, data["bounded_records"], f"Bounded, not pinned: "
                        f"{len(result.intervals)} record(s) of {_markup(name)} lie in a proven "
                        "interval narrower than their domain", name, proven=False)
    for b, block in enumerate(data.get("proof_blocks", [])):
        console.print(f"Block proof {b}: the {len(block['statistics'])} exact statistics "
                      f"{_markup(_listed(block['statistics']))} form a square system on the "
                      f"records whose determinant is non-zero (mod {block['prime']}); its one "
                      f"solution, checked by exact multiplication, pins {len(block['records'])} "
                      "record(s) (coefficients not listed: huge rationals)")
    console.print(f"Estimate of {_markup(name)} ({result.method}, an estimate, not a proof): "
                  f"residual {result.residual:.4g}")
    if "accuracy" in data:
        console.print(f"Against the truth: accuracy {data['accuracy']:.2%} (baseline "
                      f"{data['baseline_accuracy']:.2%})"
                      + (f", mean absolute error {data['mean_absolute_error']:.4g} (baseline "
                         f"{data['baseline_mean_absolute_error']:.4g})"
                         if "mean_absolute_error" in data else "")
                      + "; baseline: one guess for every record, the commonest true value"
                      + (" (for the error, the median)" if "mean_absolute_error" in data
                         else ""))
    for note in result.notes:
        console.print(f"note: {_markup(note)}")


def _render_records(console: Console, entries: list[dict[str, Any]], title: str, name: str,
                    proven: bool) -> None:
    """A table of proven records (value) or bounded ones (interval), 50 at most."""
    t = Table(title=title)
    t.add_column("record")
    if proven:
        t.add_column(_markup(name), justify="right")
    t.add_column("interval (certificate ∩ domain)", justify="right")
    t.add_column("certificate (combination of statistics)")
    for entry in entries[:50]:
        low, high = entry["interval"]
        interval = f"[{_bound(low, '-inf')}, {_bound(high, 'inf')}]"
        if entry["proof"] == "block":
            cert = f"block proof {entry['block']}"
        else:
            cert = " ".join(f"{'+' if c['coefficient'] > 0 else '-'} "
                            f"{_coef(abs(c['coefficient']))}{c['statistic']}"
                            for c in entry["certificate"]).lstrip("+ ")
        cells = [str(entry["index"] + 1), *([_markup(entry["value"])] if proven else []),
                 interval, _markup(cert)]
        t.add_row(*cells)
    console.print(t)
    if len(entries) > 50:
        console.print(f"... and {len(entries) - 50} more (use --json)")


def _bound(v: float | None, missing: str) -> str:
    return missing if v is None else f"{v:g}"


def _listed(ids: list[str], most: int = 8) -> str:
    return ", ".join(ids[:most]) + (f", ... ({len(ids) - most} more)" if len(ids) > most else "")


def _markup(text: object) -> str:
    """User text (ids, values, column names) as literal Rich markup without terminal escapes."""
    return escape(safe_text(text))


def _coef(c: float) -> str:
    return "" if c == 1 else f"{c:g}·"


def render_estimate(data: dict[str, Any], console: Console) -> None:
    """Every record with its estimated secret (only when the user asks: --all)."""
    rows = data["estimate"]
    if not rows:
        return
    t = Table(title="Estimate (public columns, estimated secret)")
    for name in rows[0]:
        t.add_column(_markup(name))
    for row in rows:
        t.add_row(*(_markup(v) for v in row.values()))
    console.print(t)
