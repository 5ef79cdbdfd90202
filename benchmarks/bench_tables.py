"""statrecon's audit of suppressed table cells next to tau-Argus's (pytauargus), in one run.

(a) tau-Argus's test table pp.tab (TestTable.arb), for the primary cells alone and for the
    patterns of tau-Argus's MOD and OPT secondary suppression: tau-Argus's audit seconds and
    realized intervals next to statrecon's audit (LP, and LP + integer) on the same pattern,
    the largest difference between tau-Argus's interval and statrecon's LP interval rounded
    inward to the table's decimals (tau-Argus rounds its bounds so), and the cells where the
    integer interval is strictly inside that rounded LP interval.
(b) 3-way count tables tau-Argus builds from random microdata (4 x 4 x 3 codes plus totals,
    150 records each counted once, FREQ(3,30)), protected by tau-Argus's MOD: the same
    comparison, plus the suppressed cells tau-Argus's LP audit calls protected that the
    integer audit proves under-protected. Both audits use tau-Argus's a-priori box (smallest
    to largest cell value).
(c) Secondary suppression side by side, from the same primary cells (pp.tab, and the tables
    of (b)): tau-Argus's MOD and OPT (cells suppressed, seconds of the suppression) next to
    statrecon's ``protect`` (fast and exact, fewest cells, tau-Argus's a-priori box), each
    statrecon pattern proven protected under the integer audit; and the total value of the
    secondary cells of tau-Argus's OPT (its cost is the cell value) next to statrecon's exact
    method minimising that total.

    .venv/bin/python benchmarks/bench_tables.py [--seeds 10]

Without pytauargus it says so in one line and exits 0.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
ARB = ROOT / "examples" / "tables" / "tauargus" / "TestTable.arb"


def _ours(cells: pd.DataFrame, dims: list[str], hierarchies: dict[str, Any] | None = None
          ) -> Any:
    """tau-Argus's table (every cell, its final statuses and protection levels) as ours."""
    from statrecon.tables import TableSet
    from statrecon.tables.frames import table_from_frame

    frame = cells.copy()
    for d in dims:
        frame[d] = frame[d].astype(str)
    frame["value"] = [Fraction(str(v)).limit_denominator(100) for v in frame["value"]]
    frame.loc[frame["status"] == "S", ["protection_lower", "protection_upper"]] = 0.0
    table = table_from_frame(frame, dims, "value", frequency="freq", status="status",
                             lower="protection_lower", upper="protection_upper",
                             hierarchies=hierarchies, margins="given", kind="magnitude",
                             name="tau")
    return TableSet((table,))


def _inward(value: Fraction, scale: int, side: str) -> Fraction:
    """A bound rounded inward to the lattice 1/scale (what tau-Argus reports)."""
    units = value * scale
    whole = math.ceil(units) if side == "lower" else math.floor(units)
    return Fraction(whole, scale)


def _compare(tau: Any, ours: Any, audited: Any) -> dict[str, Any]:
    """Per suppressed cell, tau-Argus's realized interval against statrecon's LP interval
    rounded inward to the table's decimals (as tau-Argus rounds), and the cells whose integer
    interval is strictly inside that rounded LP interval (where integrality, not rounding,
    tells the attacker more)."""
    by_codes = {tuple(c.strip() for _, c in ours.cell(k).codes): a
                for k, a in zip(audited.keys, audited.result.cells, strict=True)}
    dims = list(ours.tables[0].variables)
    scale = 10 ** ours.decimals
    diff, tighter, missed = 0.0, 0, 0
    for _, row in tau.cells.iterrows():
        cell = by_codes[tuple(str(row[d]) for d in dims)]
        low = _inward(cell.lp.lower.value, scale, "lower")
        high = _inward(cell.lp.upper.value, scale, "upper")
        diff = max(diff, abs(float(low) - row["realized_lower"]),
                   abs(float(high) - row["realized_upper"]))
        tighter += (cell.integer.lower.value, cell.integer.upper.value) != (low, high)
        missed += bool(row["protected"]) and cell.verdict in ("under-protected", "disclosed")
    return {"cells": len(tau.cells), "lp_diff": diff, "tighter": tighter, "missed": missed}


def _timed_audit(ours: Any, integer: bool) -> tuple[Any, float]:
    from statrecon.engines.intervals import AuditOptions
    from statrecon.runs.tables import audit_tables

    start = time.perf_counter()
    result = audit_tables(ours, AuditOptions(integer=integer), apriori="pytauargus")
    return result, time.perf_counter() - start


def _row(label: str, tau: Any, ours: Any) -> None:
    _, lp_s = _timed_audit(ours, integer=False)
    audited, both_s = _timed_audit(ours, integer=True)
    c = _compare(tau, ours, audited)
    print(f"  {label:<22} {c['cells']:>4} {tau.seconds:9.4f} {lp_s:9.4f} {both_s:9.4f} "
          f"{c['lp_diff']:9.2g} {c['tighter']:>7} {c['missed']:>7}")


HEADER = ("  pattern               cells  tau-audit  ours-LP  ours-LP+int  max|dLP|  "
          "tighter  missed")


def pp(peer: Any) -> None:
    table = peer.TauTable.from_arb(ARB)
    hierarchies = {v: {p: tuple(c) for p, c in tree.items()}
                   for v, tree in peer.hierarchies(table).items()}
    print("(a) pp.tab (tau-Argus test table), seconds; 'missed': cells tau-Argus calls "
          "protected that the integer audit proves are not")
    print(HEADER)
    for method in (None, "MOD", "OPT"):
        tau = peer.audit(table, method)
        cells = tau.suppression.cells if tau.suppression is not None else peer.read(table)
        _row(method or "primary cells only", tau, _ours(cells, list(table.explanatory),
                                                         hierarchies))


def records(seed: int) -> pd.DataFrame:
    """150 random records over A (4 codes) x B (4) x C (3), each counted once."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"A": rng.choice(list("1234"), 150), "B": rng.choice(list("1234"), 150),
                         "C": rng.choice(list("123"), 150), "V": 1.0})


def generated(peer: Any, seeds: int) -> None:
    print(f"(b) {seeds} random 3-way count tables (150 records, FREQ(3,30)), tau-Argus MOD")
    print(HEADER)
    totals = {"tighter": 0, "missed": 0, "cells": 0}
    for seed in range(seeds):
        micro = records(seed)
        with tempfile.TemporaryDirectory() as tmp:
            table = peer.TauTable.from_microdata(micro, ["A", "B", "C"], "V", "FREQ(3,30)",
                                                 tmp)
            tau = peer.audit(table, "MOD")
        ours = _ours(tau.suppression.cells, ["A", "B", "C"])
        _row(f"seed {seed}", tau, ours)
        audited, _ = _timed_audit(ours, integer=True)
        c = _compare(tau, ours, audited)
        for k in totals:
            totals[k] += c[k]
    print(f"  all: {totals['cells']} suppressed cells, integer interval strictly tighter for "
          f"{totals['tighter']}, protected by tau-Argus's LP but not by the integer audit: "
          f"{totals['missed']}")


def _protect(tables: Any, method: str, cost: str = "count") -> tuple[int, float, str, float]:
    """statrecon's pattern: (cells suppressed, seconds, status, total value of the
    secondary cells)."""
    from statrecon.engines.suppression import ProtectOptions
    from statrecon.runs.tables import protect_tables

    start = time.perf_counter()
    done = protect_tables(tables, ProtectOptions(method=method),  # type: ignore[arg-type]
                          cost=cost, apriori="pytauargus")  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    assert done.result.audit.all_protected or done.result.status not in ("optimal", "feasible")
    cells = tables.cells()
    value = float(sum(cells[j].value for j in done.result.secondary))
    return sum(done.result.hidden), seconds, done.result.status, value


def _tau_value(run: Any) -> float:
    cells = run.suppression.cells
    return float(cells.loc[cells["status"] == "M", "value"].sum())


def suppression(peer: Any, seeds: int) -> None:
    print("(c) secondary suppression from the same primary cells. Cells suppressed (seconds);"
          " then, minimising the total value, the secondary cells' total value")
    print("  table     prim  tau MOD         tau OPT         statrecon fast        "
          "statrecon exact         | tau OPT value  statrecon exact value")
    table = peer.TauTable.from_arb(ARB)
    hierarchies = {v: {p: tuple(c) for p, c in tree.items()}
                   for v, tree in peer.hierarchies(table).items()}
    cases = [("pp.tab", table, list(table.explanatory), hierarchies, None)]
    for seed in range(seeds):
        cases.append((f"seed {seed}", None, ["A", "B", "C"], None, records(seed)))
    for label, tab, dims, hier, micro in cases:
        with tempfile.TemporaryDirectory() as tmp:
            if micro is not None:
                tab = peer.TauTable.from_microdata(micro, dims, "V", "FREQ(3,30)", tmp)
            runs = {m: peer.audit(tab, m) for m in ("MOD", "OPT")}
            ours = _ours(peer.read(tab), dims, hier)
        primary = sum(c.status.suppressed for c in ours.cells())
        tau = [f"{len(r.cells):4d} ({r.suppress_seconds:5.3f} s)" for r in runs.values()]
        mine = [_protect(ours, m) for m in ("fast", "exact")]
        cells = [f"{n:4d} ({t:5.3f} s) {st:<8}" for n, t, st, _ in mine]
        by_value = _protect(ours, "exact", "value")
        print(f"  {label:<9} {primary:>4}  {tau[0]}  {tau[1]}  {cells[0]}  {cells[1]} | "
              f"{_tau_value(runs['OPT']):>13,.0f}  {by_value[3]:>13,.0f} {by_value[2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    import tauargus as peer  # this folder, not an installed package

    if not peer.available():
        print("pytauargus is not installed (pip install 'statrecon[tables]'): nothing to compare")
        return
    pp(peer)
    generated(peer, args.seeds)
    suppression(peer, args.seeds)


if __name__ == "__main__":
    main()
