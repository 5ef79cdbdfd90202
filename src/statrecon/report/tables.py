"""An audit of suppressed table cells as JSON (the contract of ``tables audit --json``), as a
Rich table on the terminal, and as one self-contained HTML page for a data steward.

Only cell codes, published or suppressed cell values and intervals are shown: a table cell is
an aggregate, never a respondent's record.
"""

from __future__ import annotations

import html
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from statrecon.engines.intervals import CellAudit, Interval, Verdict
from statrecon.engines.intervals.singletons import SingletonAudit, worst_by_cell
from statrecon.errors import StatreconError
from statrecon.report import safe_text
from statrecon.report.table_grid import CSS as GRID_CSS
from statrecon.report.table_grid import grids_html, interval_text, legend_html, number_text
from statrecon.runs.tables import EXCLUSION_RULES, TableAudit, TableProtection
from statrecon.tables import TableSet

VERDICTS: tuple[Verdict, ...] = ("disclosed", "under-protected", "unknown", "protected")
_STYLE = {"disclosed": "bold red", "under-protected": "red", "unknown": "yellow",
          "protected": "green"}
MAX_ATTACKS_SHOWN = 10


def _bounds(interval: Interval | None) -> dict[str, Any] | None:
    return None if interval is None else interval.to_json()


def cell_json(audit: TableAudit, i: int) -> dict[str, Any]:
    """One suppressed cell as ``tables audit --json`` gives it."""
    cell: CellAudit = audit.result.cells[i]
    key = audit.keys[i]
    places = audit.tables.where(key)
    table, codes = places[0]
    status = audit.tables.cell(key).status.value
    return {
        "table": table, "codes": codes, "also_in": [name for name, _ in places[1:]],
        "name": cell.name, "value": float(cell.value), "value_exact": str(cell.value),
        "status": status, "lp": _bounds(cell.lp), "integer": _bounds(cell.integer),
        "protection": {"lower": float(cell.protection[0]), "upper": float(cell.protection[1]),
                       "sliding": float(cell.sliding)},
        "verdict": cell.verdict, "tighter_than_lp": cell.tighter,
        "attack": list(cell.attack.equations),
        "attack_published_cells": list(cell.attack.published),
        "elapsed_s": round(cell.elapsed_s, 6),
    }


def to_json(audit: TableAudit) -> dict[str, Any]:
    """``{"tables": [...], "cells": [...], "summary": {...}, "elapsed_s": t}``; numbers as
    floats, each interval end also exact (``lower_exact``) with its status."""
    suppressed = Counter(place[0] for key in audit.keys
                         for place in audit.tables.where(key))
    tables = [{"name": t.name, "cells": len(t.cells), "suppressed": suppressed.get(t.name, 0)}
              for t in audit.tables.tables]
    verdicts = Counter(c.verdict for c in audit.result.cells)
    return {
        "tables": tables,
        "cells": [cell_json(audit, i) for i in range(len(audit.result.cells))],
        "summary": {"suppressed": len(audit.result.cells),
                    **{v: verdicts.get(v, 0) for v in VERDICTS},
                    "integer_tighter_than_lp": len(audit.result.tighter),
                    "all_protected": audit.all_protected,
                    "a_priori_bounds": audit.apriori},
        **singletons_json(audit.singletons, audit.singletons_checked),
        "elapsed_s": round(audit.result.elapsed_s, 6),
    }


def singletons_json(attacks: tuple[SingletonAudit, ...], checked: int | None
                    ) -> dict[str, Any]:
    """``{"singletons": {...}}`` when the singletons were audited (else nothing): how many
    respondents alone in a suppressed cell, the verdicts of their audits, and each primary
    cell's worst one that is not protected."""
    if checked is None:
        return {}
    verdicts = Counter(a.audit.verdict for a in attacks)
    worst = worst_by_cell(attacks)
    return {"singletons": {
        "checked": checked, "audits": {v: verdicts.get(v, 0) for v in VERDICTS},
        "cells": [a.to_json() for _, a in sorted(worst.items())
                  if a.audit.verdict != "protected"]}}


def _render_singletons(attacks: tuple[SingletonAudit, ...], checked: int | None,
                       console: Console) -> None:
    if checked is None:
        return
    flagged = [a for _, a in sorted(worst_by_cell(attacks).items())
               if a.audit.verdict != "protected"]
    console.print(f"singletons: {checked} respondent(s) alone in a suppressed cell, "
                  f"{len(attacks)} audit(s) of primary cells with their value known; "
                  f"{len(flagged)} primary cell(s) not protected from one of them")
    for a in flagged[:MAX_ATTACKS_SHOWN]:
        console.print(f"[bold]{safe_text(a.audit.name)}[/bold]: {a.audit.verdict} "
                      f"{interval_text(a.audit.integer or a.audit.lp)} to the single "
                      f"contributor of {safe_text(a.singleton_name)}", highlight=False)


def render(audit: TableAudit, console: Console, show_all: bool = False) -> None:
    """The cells that are not protected (every cell with ``show_all``), the counts, the cells
    the integer audit tightened, and the attack on the first few flagged cells."""
    cells = audit.result.cells
    verdicts = Counter(c.verdict for c in cells)
    counts = ", ".join(f"{verdicts[v]} {v}" for v in VERDICTS if verdicts.get(v))
    console.print(f"{len(cells)} suppressed cells audited in {audit.result.elapsed_s:.2f} s: "
                  f"{counts or 'none'}")
    shown = [i for i, c in enumerate(cells) if show_all or c.verdict != "protected"]
    if shown:
        console.print(_cell_table(audit, shown))
    tighter = audit.result.tighter
    if tighter:
        console.print(f"{len(tighter)} cells have an integer interval strictly inside their LP "
                      "interval (an LP audit misjudges them): "
                      + "; ".join(safe_text(c.name) for c in tighter[:MAX_ATTACKS_SHOWN])
                      + (" …" if len(tighter) > MAX_ATTACKS_SHOWN else ""))
    for i in [i for i in shown if cells[i].verdict != "protected"][:MAX_ATTACKS_SHOWN]:
        cell = cells[i]
        console.print(f"[bold]{safe_text(cell.name)}[/bold]: {cell.verdict} by "
                      + "; ".join(safe_text(e) for e in cell.attack.equations[:4])
                      + (" …" if len(cell.attack.equations) > 4 else ""), highlight=False)
    _render_singletons(audit.singletons, audit.singletons_checked, console)
    if audit.all_protected:
        console.print("[green]every suppressed cell is protected[/green]")


def _cell_table(audit: TableAudit, rows: list[int]) -> RichTable:
    table = RichTable(show_lines=False)
    for column in ("cell", "value", "status", "LP interval", "integer interval",
                   "protection", "verdict"):
        table.add_column(column, justify="left" if column in ("cell", "status", "verdict")
                         else "right")
    for i in rows:
        cell = audit.result.cells[i]
        status = audit.tables.cell(audit.keys[i]).status.value
        table.add_row(safe_text(cell.name), number_text(cell.value), status,
                      interval_text(cell.lp), interval_text(cell.integer),
                      _levels_text(cell),
                      f"[{_STYLE[cell.verdict]}]{cell.verdict}[/]")
    return table


def _levels_text(cell: CellAudit) -> str:
    """-lower / +upper, and the sliding level (the least width) when there is one."""
    text = f"-{number_text(cell.protection[0])} / +{number_text(cell.protection[1])}"
    return f"{text}, width >= {number_text(cell.sliding)}" if cell.sliding else text


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.8rem 0; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; vertical-align: top; }
th { background: #f2f2f2; text-align: left; } td.n { text-align: right; }
.disclosed { color: #b00; font-weight: bold; } .under-protected { color: #b00; }
.unknown { color: #a60; } .protected { color: #070; }
.note { font-size: 0.9rem; color: #555; }
.working { border-left: 4px solid #b00; padding: 0.3rem 0.8rem; background: #fff4f4; }
""" + GRID_CSS


def html_page(audit: TableAudit) -> str:
    """The audit as one HTML page (no scripts, nothing loaded): each table drawn as a grid of
    its codes (suppressed cells coloured by verdict, never showing their value), then every
    suppressed cell in a list with its true value: the data steward's working report."""
    e = html.escape
    data = to_json(audit)
    summary = data["summary"]
    rows = []
    for i, cell in enumerate(audit.result.cells):
        item = data["cells"][i]
        attack = "<br>".join(e(x) for x in cell.attack.equations)
        rows.append(
            f"<tr><td>{e(item['table'])}</td><td>{e(cell.name)}</td>"
            f"<td class=n>{e(number_text(cell.value))}</td><td>{e(item['status'])}</td>"
            f"<td class=n>{e(interval_text(cell.lp))}</td>"
            f"<td class=n>{e(interval_text(cell.integer))}</td>"
            f"<td class=n>{e(_levels_text(cell))}</td>"
            f"<td class='{e(cell.verdict)}'>{e(cell.verdict)}"
            f"{' (integer tighter)' if cell.tighter else ''}</td><td>{attack}</td></tr>")
    names = ", ".join(e(t["name"]) for t in data["tables"])
    counts = ", ".join(f"{summary[v]} {v}" for v in VERDICTS)
    audits = {key: cell for key, cell in zip(audit.keys, audit.result.cells, strict=True)}
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Suppression audit: {names}</title><style>{_CSS}</style></head><body>"
        f"<h1>Suppression audit: {names}</h1>"
        "<p class=working><b>Working report for the data steward, not a publication.</b> "
        "The list of suppressed cells at the end gives each one's true value; never publish "
        "this page. The grids show each table as it is published (a suppressed cell's value "
        "is not in them) with what the audit proves an attacker learns of each suppressed "
        "cell.</p>"
        f"<p>{summary['suppressed']} suppressed cells: {counts}. "
        f"{summary['integer_tighter_than_lp']} cells have an integer interval strictly "
        "inside their LP interval.</p>"
        "<p class=note>Each interval is the least and greatest value a suppressed cell can "
        "take given every published cell and the table's additivity (cells at least 0). The LP "
        "interval allows fractions, as tau-Argus and sdcTable audit; the integer interval is "
        "what an attacker who knows values are whole units can prove. Every end is proven (an "
        "exact dual certificate, or a witness table plus a solver's INFEASIBLE beyond it); "
        "'?' marks an end not proven within the time limit. A cell is under-protected when "
        "its interval does not cover its value minus its lower and plus its upper protection "
        "level. A grid shows the integer interval where the integer audit ran, else the LP "
        "one.</p>"
        f"<h2>The tables</h2>{legend_html()}{grids_html(audit.tables, audits)}"
        "<h2>Suppressed cells (true values: working report)</h2>"
        "<table><thead><tr><th>table</th><th>cell</th><th>value</th><th>status</th>"
        "<th>LP interval</th><th>integer interval</th><th>protection</th><th>verdict</th>"
        f"<th>attack (equations used)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<p class=note>Audited in {audit.result.elapsed_s:.2f} s.</p></body></html>")


# ----------------------------------------------------------------------------- protection


def protection_json(done: TableProtection, out: Path | None = None) -> dict[str, Any]:
    """``tables protect --json``: the status, the secondary cells (table, codes, value), the
    cost, and the integer audit of every primary cell under the returned pattern."""
    result = done.result
    secondary = []
    for key in done.secondary:
        table, codes = done.tables.where(key)[0]
        secondary.append({"table": table, "codes": codes, "name": done.tables.cell_name(key),
                          "value": float(done.tables.cell(key).value)})
    verdicts = Counter(c.verdict for c in result.audit.cells)
    return {
        "status": result.status, "note": result.note,
        "primary": len(result.primary), "secondary": secondary,
        "suppressed": len(result.primary) + len(secondary),
        "excluded": {rule: [done.tables.cell_name(k) for k in keys]
                     for rule, keys in done.excluded.items()},
        "cost": float(result.cost), "cost_exact": str(result.cost),
        "audit": {v: verdicts.get(v, 0) for v in VERDICTS},
        "primary_cells": [c.to_json() for c in result.audit.cells],
        **singletons_json(done.singletons, done.singletons_checked),
        "rounds": result.rounds, "out": None if out is None or not done.protected else str(out),
        "working": (str(working_path(out)) if out is not None and done.protected
                    and out.suffix.lower() in PUBLICATIONS else None),
        "elapsed_s": round(result.elapsed_s, 6),
    }


def render_protection(done: TableProtection, out: Path, console: Console) -> None:
    render_pattern(done, console)
    if done.protected and out.suffix.lower() in PUBLICATIONS:
        console.print(f"wrote {safe_text(out)} (the publication: suppressed cells shown as "
                      f"{SUPPRESSED_FLAG}) and {safe_text(working_path(out))} (the working "
                      "file: true values, never to publish)")
    elif done.protected:
        console.print(f"wrote {safe_text(out)} (tau-Argus input: true values, a working file)")
    else:
        console.print("nothing written: no pattern that protects every primary cell was "
                      "proven", style="yellow")


def render_pattern(done: TableProtection, console: Console) -> None:
    """The pattern found: its status, cells, cost and audit, and the cells not offered."""
    result = done.result
    primary = len(result.primary)
    verdicts = Counter(c.verdict for c in result.audit.cells)
    audited = ", ".join(f"{verdicts[v]} {v}" for v in VERDICTS if verdicts.get(v))
    if len(result.audit.cells) < primary:
        audited = (f"{audited} ({len(result.audit.cells)} of {primary} audited)" if audited
                   else "none audited")
    console.print(f"{result.status}: {primary} primary and {len(done.secondary)} secondary "
                  f"cells suppressed (cost {number_text(result.cost)}) in "
                  f"{result.elapsed_s:.2f} s; integer audit of the primary cells: {audited}")
    if result.note:
        console.print(safe_text(result.note), style="dim")
    if done.singletons_checked is not None and not done.protected:
        _render_singletons(done.singletons, done.singletons_checked, console)
    for rule, keys in done.excluded.items():
        count = f"{len(keys)} cell{'s' if len(keys) != 1 else ''}"
        line = f"not offered for suppression: {count} ({EXCLUSION_RULES[rule]})"
        if result.status == "infeasible":  # the proof holds over the cells left: name these
            names = [done.tables.cell_name(k) for k in keys[:5]]
            more = f"; and {len(keys) - 5} more" if len(keys) > 5 else ""
            line += ": " + "; ".join(names) + more
        console.print(safe_text(line), style="dim")


SUPPRESSED_FLAG = "x"  # what a publication shows for a suppressed cell
PUBLICATIONS = (".csv", ".parquet")  # outputs written as a publication and a working file


def working_path(out: Path) -> Path:
    """Where the working file of a CSV/Parquet publication goes: beside it, named as one."""
    return out.with_name(f"{out.stem}.working{out.suffix}")


PUBLISH = ("values", "masked", "pivot")  # the forms of a CSV/Parquet publication


def write_protected(tables: TableSet, out: Path, publish: str = "values") -> tuple[Path, ...]:
    """The protected table(s), written atomically; returns the paths written.

    CSV or Parquet: the *publication* ``out`` and, beside it, the *working file*
    ``<stem>.working<suffix>`` (every true value, status, frequency, protection level and
    largest contribution, for the audit and the publisher's records; never to be published).
    A publication never carries a suppressed cell's true value; ``publish`` chooses its form:
    ``values`` the codes and each cell's value, a suppressed one ``x``; ``masked`` the codes,
    the value (blank where suppressed or empty) and a ``flag`` column (``x`` suppressed, ``-``
    empty); ``pivot`` (CSV) the table's layout, tau-Argus's CSV (``tables/writetable.py``),
    one block per table. tau-Argus ``.tab`` (one table) or ``.arb`` (linked tables: a ``.tab``
    and ``.rda`` per table and the batch file that links them): tau-Argus's input, which is a
    working file too."""
    # lazy: the writers (and pandas) load only when a protected table is written
    from statrecon.outputs import atomic_outputs
    from statrecon.tables.tauargus import write_arb, write_tab

    if out.suffix.lower() == ".tab":
        return write_tab(tables.tables[0], out)
    if out.suffix.lower() == ".arb":
        return write_arb(tables, out)
    parquet = out.suffix.lower() == ".parquet"
    if publish not in PUBLISH or (publish == "pivot" and parquet):
        raise StatreconError(f"--publish {publish!r}: values, masked, or pivot (CSV only)")
    working, published = _frames(tables, parquet, publish)
    paths = (out, working_path(out))
    with atomic_outputs(*paths) as (tmp_out, tmp_working):
        if publish == "pivot":
            tmp_out.write_text(_pivot(tables), encoding="utf-8")
        for frame, tmp in ((published, tmp_out), (working, tmp_working)):
            if frame is None:
                continue
            if parquet:
                frame.to_parquet(tmp, index=False)
            else:
                frame.to_csv(tmp, index=False)
    return paths


def _pivot(tables: TableSet) -> str:
    """Each table in its layout (tau-Argus's CSV), a ``"table",name`` line above each of
    linked tables."""
    # lazy: the writers load only when a protected table is written
    from statrecon.tables.writetable import Output, csv_text

    blocks = []
    for table in tables.tables:
        statuses = [3 if c.status.suppressed else 14 if c.status.value == "empty" else 1
                    for c in table.cells]
        text = csv_text(Output(table, statuses, table.decimals))
        blocks.append(text if len(tables.tables) == 1 else
                      f'"table","{table.name}"\n{text}')
    return "".join(blocks)


def _frames(tables: TableSet, parquet: bool, publish: str = "values") -> tuple[Any, Any]:
    """The working frame (every column of ``to_frame``, exact numbers) and the publication
    (codes and values, suppressed values replaced by the flag; ``masked``: blank, with a
    flag column; ``pivot``: none, written apart)."""
    # lazy: pandas loads only when a protected table is written
    import pandas as pd

    from statrecon.tables.frames import to_frame, written_numbers

    frames = []
    for table in tables.tables:
        frame = written_numbers(to_frame(table), parquet)  # exact, never a float
        if len(tables.tables) > 1:
            frame.insert(0, "table", table.name)
        frames.append(frame)
    working = pd.concat(frames, ignore_index=True)
    codes = [c for c in working.columns if c in {v for t in tables.tables for v in t.variables}]
    published = working[(["table"] if len(tables.tables) > 1 else []) + codes].copy()
    suppressed = working["status"].isin(["primary", "secondary"])
    if publish == "pivot":
        return working, None
    if publish == "masked":
        empty = working["status"] == "empty"
        published["value"] = ["" if hidden or none else str(v) for v, hidden, none
                              in zip(working["value"], suppressed, empty, strict=True)]
        published["flag"] = [SUPPRESSED_FLAG if hidden else "-" if none else ""
                             for hidden, none in zip(suppressed, empty, strict=True)]
        return working, published
    published["value"] = [SUPPRESSED_FLAG if hidden else str(v)
                          for v, hidden in zip(working["value"], suppressed, strict=True)]
    return working, published
