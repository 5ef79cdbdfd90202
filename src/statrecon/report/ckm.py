"""Perturbed tables (``tables perturb``) written and told: the publication, the working files,
JSON and the terminal's summary, each saying what the attacker is assumed to know.

The *publication* holds the codes and each cell's published (perturbed) count, ``x`` where
it is withheld below the threshold; never a true count. The *working file*
``<stem>.working<suffix>`` holds every true count, cell key, ptable row and noise, and drawn
record keys go, with their records, to ``<stem>.records.working<suffix>``: the next table of
the same microdata must use them, and neither is ever published.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich.console import Console

from statrecon.report import known_cells, safe_text
from statrecon.runs.ckm import PerturbedAudit, PerturbRun, PublicationAudit
from statrecon.tables.ckm import KNOWLEDGE_TEXT, PTable, ptable_frame
from statrecon.tables.values import show

WITHHELD = "x"
PUBLICATIONS = (".csv", ".parquet")


def working_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.working{out.suffix}")


def records_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.records.working{out.suffix}")


def output_paths(out: Path, drawn: bool) -> tuple[Path, ...]:
    """What ``tables perturb --out out`` writes: the publication, the working file, and the
    records with their drawn keys."""
    paths = [out, working_path(out)]
    if drawn:
        paths.append(records_path(out))
    return tuple(paths)


def _published_cells(run: PerturbRun) -> list[tuple[str, dict[str, str], Any]]:
    """(table, codes, perturbation) of every cell the publication holds: with
    ``margins=False`` only the cells below every total."""
    rows = []
    for table in run.tables.tables:
        totals = {v: table.hierarchies[v].total for v in table.variables}
        for cell in table.cells:
            codes = dict(cell.codes)
            if not run.options.margins and any(codes[v] == totals[v] for v in codes):
                continue
            rows.append((table.name, codes, run.published(table.key(cell))))
    return rows


def frames(run: PerturbRun) -> tuple[Any, Any]:
    """(publication, working file) as data frames, numbers exact (text where they are not
    whole)."""
    # lazy: pandas loads only when perturbed tables are written
    import pandas as pd

    several = len(run.tables.tables) > 1
    variables = list(dict.fromkeys(v for t in run.tables.tables for v in t.variables))
    published, working = [], []
    for name, codes, cell in _published_cells(run):
        head = ({"table": name} if several else {}) | {v: codes.get(v) for v in variables}
        value = WITHHELD if cell.published is None else cell.published
        published.append(head | {"value": value})
        working.append(head | {"count": cell.count, "ckey": show(cell.ckey), "row": cell.row,
                               "noise": cell.noise, "perturbed": cell.count + cell.noise,
                               "published": value})
    return pd.DataFrame(published), pd.DataFrame(working)


def _records(run: PerturbRun) -> Any:
    records = run.records.copy()
    records[run.key_column] = [show(k) for k in records[run.key_column]]
    return records


def write_perturbed(run: PerturbRun, out: Path) -> tuple[Path, ...]:
    """The publication, its working file and (keys drawn) the records with their keys,
    written atomically together; returns the paths."""
    # lazy: the output guard's writers load only when something is written
    from statrecon.outputs import atomic_outputs

    publication, working = frames(run)
    parts = [publication, working]
    if run.records is not None:
        parts.append(_records(run))
    paths = output_paths(out, run.records is not None)
    with atomic_outputs(*paths) as temps:
        for frame, tmp in zip(parts, temps, strict=True):
            _write(frame, tmp, out.suffix.lower() == ".parquet")
    return paths


def _write(frame: Any, path: Path, parquet: bool) -> None:
    if parquet:
        frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object}
                     ).to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)


def write_ptable(ptable: PTable, out: Path) -> Path:
    """A ptable in its own format's columns (CSV or Parquet), atomically."""
    # lazy: the output guard's writers load only when something is written
    from statrecon.outputs import write_atomically

    frame = ptable_frame(ptable)
    return write_atomically(out, lambda tmp: _write(frame, tmp,
                                                    out.suffix.lower() == ".parquet"))


# ------------------------------------------------------------------------- JSON and text


def ptable_json(ptable: PTable) -> dict[str, Any]:
    out: dict[str, Any] = {"format": ptable.format, "D": ptable.noise, "js": ptable.blocked}
    key_range = getattr(ptable, "key_range", None)
    out["cell_keys"] = f"0..{key_range - 1}" if key_range else "[0, 1)"
    return out


def to_json(run: PerturbRun, out: Path, written: Sequence[Path],
            checked: PerturbedAudit | None = None) -> dict[str, Any]:
    """``tables perturb --json``: the ptable, what the attacker is assumed to know, the
    threshold, per table its cells, those changed and those withheld; the files."""
    tables = []
    for table in run.tables.tables:
        cells = [run.published(table.key(c)) for c in table.cells]
        tables.append({"name": table.name, "cells": len(cells),
                       "changed": sum(1 for c in cells if c.noise),
                       "withheld": sum(1 for c in cells if c.published is None)})
    knows = run.options.knowledge
    return {
        "ptable": ptable_json(run.ptable),
        "attacker_knows": knows, "attacker_knows_text": _knows(run),
        "threshold": run.threshold, "margins": run.options.margins,
        "record_keys": {"column": run.key_column, "drawn": run.records is not None,
                        "seed": run.options.seed, "from_ids": run.options.ons_id},
        "tables": tables,
        "cells": len(run.cells), "changed": sum(1 for c in run.cells if c.noise),
        "withheld": sum(1 for c in run.cells if c.published is None),
        "publication": str(out), "working_files": [str(p) for p in written[1:]],
        **({"audit": audit_json(run, checked)} if checked is not None else {}),
    }


def _knows(run: PerturbRun) -> str:
    knows = run.options.knowledge
    text = KNOWLEDGE_TEXT[knows]
    if knows == "d":
        text = text.replace("D,", f"D = {run.ptable.noise},")
    return text


def render(run: PerturbRun, written: Sequence[Path], console: Console) -> None:
    """The summary: cells perturbed, changed and withheld, the assumption about the
    attacker, and the files written."""
    report = to_json(run, written[0], written)
    ptable = report["ptable"]
    console.print(f"perturbed {len(run.tables.tables)} table(s), {report['cells']} distinct "
                  f"cells, with an {ptable['format'].upper()} ptable (D = {ptable['D']}, js = "
                  f"{ptable['js']}, cell keys {ptable['cell_keys']}): {report['changed']} "
                  f"changed, "
                  f"{report['withheld']} withheld below the threshold {run.threshold}",
                  highlight=False)
    console.print(f"the attacker is assumed to know {_knows(run)}", highlight=False)
    console.print(f"wrote {safe_text(written[0])} (the publication: perturbed counts, "
                  f"{WITHHELD} withheld) and {safe_text(written[1])} (the working file: true "
                  "counts, never to publish)", highlight=False)
    if run.options.ons_id is not None:
        console.print(f"record keys: each record's {safe_text(run.options.ons_id)} modulo "
                      "4096, as ONS's package makes them from ons_id", highlight=False)
    if len(written) > 2:
        console.print(f"record keys drawn with seed {run.options.seed}: kept with the records "
                      f"in {safe_text(written[2])} (give it and --record-key "
                      f"{run.key_column} to every later table of these records)",
                      highlight=False)


# ---------------------------------------------------------------------------- the audit


def _shown(run: PerturbRun, checked: PerturbedAudit) -> list[Any]:
    """Each cell's published count as the publication has it (x withheld), None for a cell
    the publication leaves out."""
    return [(WITHHELD if cell.published is None else cell.published) if shown else None
            for cell, shown in zip(run.cells, checked.published, strict=True)]


def audit_json(run: PerturbRun, checked: PerturbedAudit) -> dict[str, Any]:
    """``tables perturb --audit --json``'s ``audit``: per cell (true count included: the
    steward's view, never a publication) its published count, the a-priori interval it
    allows, the proven LP and integer intervals, whether it is pinned, and the attack
    (``report/known_cells.py``, shared with rounding)."""
    return known_cells.audit_json(checked, run.tables.cell_names(),
                                  [c.count for c in run.cells], _shown(run, checked))


def render_audit(run: PerturbRun, checked: PerturbedAudit, console: Console) -> None:
    """How many true counts the attacker pins or narrows, and the first pinned ones with
    the equations that pin them."""
    known_cells.render_audit(checked, run.tables.cell_names(), [c.count for c in run.cells],
                             _shown(run, checked), console)


# ------------------------------------------------- the audit of someone else's publication


def _publication_values(checked: PublicationAudit) -> list[int | None]:
    """Per cell the true count where the audit pins it (proven), None elsewhere: the
    auditor has no true counts, and the stand-in table is never shown as them."""
    return [checked.shown_value(i) for i in range(len(checked.result.cells))]


def _knows_publication(checked: PublicationAudit) -> str:
    text = KNOWLEDGE_TEXT[checked.knowledge]  # type: ignore[index]
    if checked.knowledge == "d" and checked.ptable is not None:
        text = text.replace("D,", f"D = {checked.ptable.noise},")
    return text


def publication_json(checked: PublicationAudit, source: Path) -> dict[str, Any]:
    """``tables audit --ptable --json``: the publication, the ptable, the threshold, what
    the attacker is assumed to know, and the audit (per cell: its published value, the
    a-priori interval, the proven LP and integer intervals, pinned, the attack; ``value``
    only where it is pinned)."""
    assert checked.cells is not None and checked.ptable is not None
    shown = [None if p is None else p for p in checked.cells.published]
    return {
        "publication": str(source), "tables": [t.name for t in checked.cells.tables.tables],
        "ptable": ptable_json(checked.ptable), "threshold": checked.threshold,
        "attacker_knows": checked.knowledge,
        "attacker_knows_text": _knows_publication(checked),
        "cells": len(shown), "not_published": sum(1 for p in shown if p is None),
        "withheld": sum(1 for p in shown if p == WITHHELD),
        "consistent": True, "consistency_s": round(checked.stand_in_s, 6),
        "audit": known_cells.audit_json(checked, checked.cells.tables.cell_names(),
                                        _publication_values(checked), shown),
        **({"posterior": posterior_json(checked)} if checked.posteriors else {}),
    }


POSTERIOR_ASSUMES = ("a flat prior over the integer tables that add up, each cell's "
                     "perturbation independent of the others' (its cell key uniform and "
                     "unknown)")
RANKED_SHOWN = 10
ADDED_TITLE = ("the cells the linked tables make surest (their probability less what their "
               "own published value alone gives):")


def posterior_json(checked: PublicationAudit) -> dict[str, Any]:
    """Per cell its posterior's status (exact: enumerated; sampled: a Markov chain's
    estimate), most probable true count and its probability, and the distribution (value ->
    probability, rounded to 6 decimals); the cells most surely recovered first."""
    assert checked.cells is not None
    names = checked.cells.tables.cell_names()
    cells = []
    for name, post in zip(names, checked.posteriors, strict=True):
        mode = post.mode
        cells.append({"cell": name, "status": post.status, "tables": post.tables,
                      "steps": post.steps,
                      "most_probable": None if mode is None else mode[0],
                      "probability": None if mode is None else round(float(mode[1]), 6),
                      "alone": _rounded(post.alone), "added": _rounded(post.added),
                      "distribution": {str(v): round(float(p), 6)
                                       for v, p in post.distribution}})
    statuses = [p.status for p in checked.posteriors]
    by_probability, by_added = checked.rankings
    return {"assumes": POSTERIOR_ASSUMES, "seconds": round(checked.posterior_s, 6),
            "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
            "ranking": [names[c] for c in by_probability],
            "ranking_by_added": [names[c] for c in by_added],
            "cells": cells}


def _rounded(p: Fraction | None) -> float | None:
    return None if p is None else round(float(p), 6)


def render_posteriors(checked: PublicationAudit, console: Console) -> None:
    """How many posteriors are exact, and the cells most surely recovered."""
    report = posterior_json(checked)
    counts = ", ".join(f"{n} {s}" for s, n in report["statuses"].items())
    console.print(f"posteriors ({counts}; {POSTERIOR_ASSUMES}), in "
                  f"{checked.posterior_s:.2f} s", highlight=False)
    assert checked.cells is not None
    for order, title in zip(checked.rankings, (None, ADDED_TITLE), strict=True):
        if title is not None and order:
            console.print(title, highlight=False)
        for c in order[:RANKED_SHOWN]:
            cell, shown = report["cells"][c], checked.cells.published[c]
            told = "not published" if shown is None else f"published {shown}"
            how = "" if cell["status"] == "exact" else ", sampled"
            alone = "" if cell["alone"] is None else \
                f"; from that value alone {cell['alone']:.4f}"
            console.print(f"  {safe_text(cell['cell'])}: {cell['most_probable']} with "
                          f"probability {cell['probability']:.4f} ({told}{how}{alone})",
                          highlight=False)
        if len(order) > RANKED_SHOWN:
            console.print(f"  ... and {len(order) - RANKED_SHOWN} more "
                          "(--json gives every cell's posterior)", highlight=False)


def render_publication(checked: PublicationAudit, source: Path, console: Console) -> None:
    """The publication audited, the assumption about the attacker, and the audit: how many
    true counts are pinned or narrowed, the pinned ones with the equations that pin them."""
    report = publication_json(checked, source)
    ptable = report["ptable"]
    console.print(f"audited {safe_text(source)}: {report['cells']} distinct cells in "
                  f"{len(report['tables'])} table(s) ({report['withheld']} withheld, "
                  f"{report['not_published']} not published), an {ptable['format'].upper()} "
                  f"ptable (D = {ptable['D']}, js = {ptable['js']}), threshold "
                  f"{checked.threshold}; consistent with the ptable (an integer table "
                  f"adding up within every cell's set, checked exactly, in "
                  f"{checked.stand_in_s:.2f} s)", highlight=False)
    console.print(f"the attacker is assumed to know {_knows_publication(checked)}",
                  highlight=False)
    assert checked.cells is not None
    known_cells.render_audit(checked, checked.cells.tables.cell_names(),
                             _publication_values(checked),
                             list(checked.cells.published), console)
    if checked.posteriors:
        render_posteriors(checked, console)
