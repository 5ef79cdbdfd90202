"""What ``tables protect job.arb`` says about a tau-Argus job it carried out: each protected
group of tables, the files written (publications and working files apart), and what the job
had that statrecon set aside; and the same as JSON."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console

from statrecon.report import safe_text
from statrecon.report.tables import VERDICTS, render_pattern
from statrecon.runs.job import JobRun
from statrecon.runs.job_round import Rounded
from statrecon.tables import CellStatus
from statrecon.tables.values import show


def _is_working(path: Path) -> bool:
    return ".working" in path.name


def render_job(run: JobRun, console: Console) -> None:
    for done in run.protected:
        names = ", ".join(f"{n} ({_name(run, n)})" for n in done.tables)
        console.print(f"table{'s' if len(done.tables) > 1 else ''} {names}, "
                      f"{done.method}:", highlight=False)
        render_pattern(done.protection, console)
    for step in run.rounded:
        console.print(_rounded_line(run, step), highlight=False)
    for note in run.notes:
        console.print(safe_text(note), style="dim")
    if run.status != "written":
        console.print("nothing written: a table of the job could not be protected",
                      style="yellow")
        return
    bases = _rounded_paths(run)
    for path in run.written:
        kind = ("working file: true values, never to publish" if _is_working(path)
                else "tau-Argus metadata of the working file" if path.suffix.lower() in
                (".rda", ".hrc") else f"publication: rounded to base {bases[path]}"
                if path in bases else "publication: suppressed cells shown as x")
        console.print(f"wrote {safe_text(path)} ({kind})", highlight=False)
    if not run.written:
        console.print("the job writes no table (<WRITETABLE>)", style="dim")


def _rounded_line(run: JobRun, done: Rounded) -> str:
    answer = done.answer
    head = (f"table {done.table} ({_name(run, done.table)}), controlled rounding to base "
            f"{done.base}: {answer.status}")
    if answer.change is not None:
        least = " (the least)" if answer.status == "optimal" else " (not proven the least)"
        return f"{head}, total change {show(answer.change)}{least} in {answer.elapsed_s:.2f} s"
    if answer.status == "infeasible":
        return f"{head}: no rounding to a multiple next to each cell adds up (CP-SAT proves it)"
    return f"{head}: no rounding found within {done.time_limit:g} s"


def _rounded_paths(run: JobRun) -> dict[Path, int]:
    bases = {r.table: r.base for r in run.rounded}
    return {w.path: bases[w.table] for w in run.job.writes if w.table in bases}


def _name(run: JobRun, number: int) -> str:
    return " x ".join(run.job.tables[number - 1].explanatory)


def job_json(run: JobRun) -> dict[str, Any]:
    """``{"status", "tables", "protected", "rounded", "written", "notes", "elapsed_s"}``."""
    tables = []
    for jt in run.tables:
        count = Counter(c.status for c in jt.table.cells)
        tables.append({"number": jt.spec.number, "name": jt.table.name,
                       "variables": list(jt.table.variables), "response": jt.table.response,
                       "cells": len(jt.table.cells),
                       "primary": count.get(CellStatus.PRIMARY, 0),
                       "secondary": count.get(CellStatus.SECONDARY, 0)})
    protected = []
    for done in run.protected:
        result = done.protection.result
        verdicts = Counter(c.verdict for c in result.audit.cells)
        protected.append({"tables": list(done.tables), "method": done.method,
                          "status": result.status, "primary": len(result.primary),
                          "secondary": len(done.protection.secondary),
                          "cost": float(result.cost), "cost_exact": str(result.cost),
                          "audit": {v: verdicts.get(v, 0) for v in VERDICTS},
                          "elapsed_s": round(result.elapsed_s, 6)})
    rounded = [{"table": r.table, "base": r.base, "status": r.answer.status,
                "change": None if r.answer.change is None else str(r.answer.change),
                "elapsed_s": round(r.answer.elapsed_s, 6)} for r in run.rounded]
    return {"status": run.status, "tables": tables, "protected": protected,
            "rounded": rounded,
            "written": [{"path": str(p), "working": _is_working(p)} for p in run.written],
            "notes": list(run.notes), "elapsed_s": round(run.elapsed_s, 6)}
