"""Rounded tables (``tables round``) written and told: the publication, its working file,
JSON and the terminal's summary, each saying what the attacker is assumed to know.

The *publication* holds the codes and each cell's rounded value (a multiple of the base),
never a true value. The *working file* ``<stem>.working<suffix>`` holds every true value
beside its rounded value and the change, for the publisher's records: never to publish.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from rich.console import Console

from statrecon.report import known_cells, safe_text
from statrecon.runs.known_cells import KnownCellsAudit
from statrecon.runs.rounding import RoundRun
from statrecon.tables.rounding import METHOD_TEXT, knowledge_text
from statrecon.tables.values import show

PUBLICATIONS = (".csv", ".parquet")
MAX_CORE_SHOWN = 12


def working_path(out: Path) -> Path:
    return out.with_name(f"{out.stem}.working{out.suffix}")


def output_paths(out: Path) -> tuple[Path, Path]:
    """What ``tables round --out out`` writes: the publication and its working file."""
    return out, working_path(out)


def frames(run: RoundRun) -> tuple[Any, Any]:
    """(publication, working file) as data frames: one row per cell of every table (a
    ``table`` column when there are several), the rounded value; the working file adds the
    true value and the change, exactly."""
    # lazy: pandas loads only when rounded tables are written
    import pandas as pd

    assert run.rounded is not None
    several = len(run.tables.tables) > 1
    variables = list(dict.fromkeys(v for t in run.tables.tables for v in t.variables))
    published: list[dict[str, Any]] = []
    working: list[dict[str, Any]] = []
    for table in run.tables.tables:
        for cell in table.cells:
            codes = dict(cell.codes)
            head = ({"table": table.name} if several else {}) | {v: codes.get(v)
                                                                 for v in variables}
            rounded = run.rounded[run.tables.column(table.key(cell))]
            published.append(head | {"value": known_cells.number(rounded)})
            working.append(head | {"value": show(cell.value),
                                   "rounded": known_cells.number(rounded),
                                   "change": show(rounded - cell.value)})
    return pd.DataFrame(published), pd.DataFrame(working)


def write_rounded(run: RoundRun, out: Path) -> tuple[Path, ...]:
    """The publication and its working file, written atomically together."""
    # lazy: the output guard's writers load only when something is written
    from statrecon.outputs import atomic_outputs

    parts = frames(run)
    paths = output_paths(out)
    parquet = out.suffix.lower() == ".parquet"
    with atomic_outputs(*paths) as temps:
        for frame, tmp in zip(parts, temps, strict=True):
            if parquet:
                frame.astype({c: "string" for c in frame.columns if frame[c].dtype == object}
                             ).to_parquet(tmp, index=False)
            else:
                frame.to_csv(tmp, index=False)
    return paths


# ------------------------------------------------------------------------- JSON and text


def knows_text(run: RoundRun) -> str:
    return knowledge_text(run.options.method, run.options.knowledge, run.options.base)


def _core(run: RoundRun) -> list[str]:
    if run.controlled is None:
        return []
    names = run.tables.equations().names
    return [names[k] for k in run.controlled.core]


def to_json(run: RoundRun, written: Sequence[Path],
            checked: KnownCellsAudit | None = None) -> dict[str, Any]:
    """``tables round --json``: the method, base, seed, status, what the attacker is assumed
    to know, per table its cells and those changed, the total change, the files; for an
    infeasible controlled rounding the equations that admit none together."""
    rounded = run.rounded
    tables = []
    for table in run.tables.tables:
        changed = 0 if rounded is None else sum(
            1 for c in table.cells if rounded[run.tables.column(table.key(c))] != c.value)
        tables.append({"name": table.name, "cells": len(table.cells), "changed": changed})
    values = run.tables.values()
    return {
        "method": run.options.method, "base": run.options.base, "seed": run.options.seed,
        "status": run.status,
        "attacker_knows": run.options.knowledge,
        "attacker_knows_text": knows_text(run),
        "tables": tables, "cells": len(values),
        "changed": None if rounded is None else sum(
            1 for r, v in zip(rounded, values, strict=True) if r != v),
        "change": known_cells.number(run.change),
        "core": _core(run),
        "core_minimal": bool(run.controlled and run.controlled.core_minimal),
        "publication": str(written[0]) if written else None,
        "working_files": [str(p) for p in written[1:]],
        "elapsed_s": round(run.elapsed_s, 6),
        **({"audit": audit_json(run, checked)} if checked is not None else {}),
    }


def render(run: RoundRun, written: Sequence[Path], console: Console,
           time_limit: float | None = None) -> None:
    """The summary: what was rounded and how, the assumption about the attacker, the files;
    or why nothing was written."""
    report = to_json(run, written)
    base, method = run.options.base, run.options.method
    how = f"to base {base} by {METHOD_TEXT[method]}"
    if run.status == "infeasible":
        _render_infeasible(run, console, f"to base {base}")
        return
    if run.status == "unknown":
        limit = "" if time_limit is None else f" ({time_limit:g} s)"
        console.print(f"unknown: no controlled rounding to base {base} found within the "
                      f"time limit{limit}; nothing written", highlight=False)
        return
    seed = f", seed {run.options.seed}" if run.options.seed is not None else ""
    verdict = {"optimal": "optimal (the least total change, proven)",
               "feasible": "feasible (found within the time limit; not proven the least "
                           "total change)"}.get(run.status, "rounded")
    console.print(f"{verdict}: {len(run.tables.tables)} table(s), {report['cells']} distinct "
                  f"cells rounded {how}{seed}: {report['changed']} changed, total change "
                  f"{show(run.change or Fraction(0))}, in {run.elapsed_s:.2f} s", highlight=False)
    console.print(f"the attacker is assumed to know {knows_text(run)}", highlight=False)
    console.print(f"wrote {safe_text(written[0])} (the publication: rounded values) and "
                  f"{safe_text(written[1])} (the working file: true values, never to "
                  "publish)", highlight=False)


def _render_infeasible(run: RoundRun, console: Console, how: str) -> None:
    core = _core(run)
    console.print(f"infeasible: no controlled rounding {how} exists (CP-SAT proves it); "
                  "nothing written", highlight=False)
    if not core:
        return
    which = ("no one of them can be left out" if run.controlled and
             run.controlled.core_minimal else "perhaps not the fewest")
    shown = "; ".join(safe_text(n) for n in core[:MAX_CORE_SHOWN])
    more = f"; ... and {len(core) - MAX_CORE_SHOWN} more" if len(core) > MAX_CORE_SHOWN \
        else ""
    console.print(f"these {len(core)} equations admit no rounding together ({which}): "
                  f"{shown}{more}", highlight=False)


# ---------------------------------------------------------------------------- the audit


def _published(run: RoundRun) -> list[Any]:
    assert run.rounded is not None
    return [known_cells.number(r) for r in run.rounded]


def audit_json(run: RoundRun, checked: KnownCellsAudit) -> dict[str, Any]:
    """``tables round --audit --json``'s ``audit`` (``report/known_cells.py``, shared with
    cell key perturbation)."""
    return known_cells.audit_json(checked, run.tables.cell_names(), run.tables.values(),
                                  _published(run))


def render_audit(run: RoundRun, checked: KnownCellsAudit, console: Console) -> None:
    noun = "true counts" if run.tables.kind == "frequency" else "true values"
    known_cells.render_audit(checked, run.tables.cell_names(), run.tables.values(),
                             _published(run), console, noun)
