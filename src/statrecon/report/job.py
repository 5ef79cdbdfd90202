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
from statrecon.tables import CellStatus


def _is_working(path: Path) -> bool:
    return ".working" in path.name


def render_job(run: JobRun, console: Console) -> None:
    for done in run.protected:
        names = ", ".join(f"{n} ({_name(run, n)})" for n in done.tables)
        console.print(f"table{'s' if len(done.tables) > 1 else ''} {names}, "
                      f"{done.method}:", highlight=False)
        render_pattern(done.protection, console)
    for note in run.notes:
        console.print(safe_text(note), style="dim")
    if run.status != "written":
        console.print("nothing written: a table of the job could not be protected",
                      style="yellow")
        return
    for path in run.written:
        kind = ("working file: true values, never to publish" if _is_working(path)
                else "tau-Argus metadata of the working file" if path.suffix.lower() in
                (".rda", ".hrc") else "publication: suppressed cells shown as x")
        console.print(f"wrote {safe_text(path)} ({kind})", highlight=False)
    if not run.written:
        console.print("the job writes no table (<WRITETABLE>)", style="dim")


def _name(run: JobRun, number: int) -> str:
    return " x ".join(run.job.tables[number - 1].explanatory)


def job_json(run: JobRun) -> dict[str, Any]:
    """``{"status", "tables", "protected", "written", "notes", "elapsed_s"}``."""
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
    return {"status": run.status, "tables": tables, "protected": protected,
            "written": [{"path": str(p), "working": _is_working(p)} for p in run.written],
            "notes": list(run.notes), "elapsed_s": round(run.elapsed_s, 6)}
