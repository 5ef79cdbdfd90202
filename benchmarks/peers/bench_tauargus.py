"""tau-Argus (pytauargus) on its own test table: suppression and audit, figures and timings.

For each method the headless engine runs (MOD, OPT) and for the primary cells alone: the
number of suppressed cells, the seconds of the suppression and of the audit (median of
``--repeat`` runs), and the audit's realized intervals next to a plain LP over the same
equations solved by scipy's HiGHS in the same process (the baseline: ratio tau-Argus audit /
scipy LP seconds, and the largest difference between the two intervals).

    .venv/bin/python benchmarks/peers/bench_tauargus.py [--arb PATH] [--repeat 5] [--json OUT]

Without pytauargus it says so in one line and exits 0 (nothing to compare).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tauargus as peer  # this folder, not an installed package

ROOT = Path(__file__).resolve().parents[2]
ARB = ROOT / "examples" / "tables" / "tauargus" / "TestTable.arb"  # bundled, see its README


def _median_seconds(fn: Any, repeat: int) -> tuple[Any, float, float]:
    """The last result, and the median of the two timings ``fn`` reports."""
    runs = [fn() for _ in range(repeat)]
    first = [r[1] for r in runs]
    second = [r[2] for r in runs]
    return runs[-1][0], statistics.median(first), statistics.median(second)


def run_method(table: peer.TauTable, method: str | None, repeat: int) -> dict[str, Any]:
    def once() -> tuple[peer.AuditResult, float, float]:
        result = peer.audit(table, method)
        return result, result.suppress_seconds, result.seconds

    audited, suppress_s, audit_s = _median_seconds(once, repeat)
    cells = peer.suppress(table, method).cells if method else peer.read(table)
    trees = peer.hierarchies(table)
    peer.reference_lp(cells, trees, table.explanatory, audited.apriori)  # warm-up (imports)
    start = time.perf_counter()
    lp = peer.reference_lp(cells, trees, table.explanatory, audited.apriori)
    lp_s = time.perf_counter() - start
    both = audited.cells.merge(lp, on="cell")
    diff = max((both["realized_lower"] - both["lp_lower"]).abs().max(),
               (both["realized_upper"] - both["lp_upper"]).abs().max())
    rows = audited.cells
    return {
        "method": method or "primary only",
        "suppressed": len(rows),
        "primary": int((rows["status"] == "U").sum()),
        "secondary": int((rows["status"] == "M").sum()),
        "secondary_value": float(rows.loc[rows["status"] == "M", "value"].sum()),
        "suppress_seconds": suppress_s,
        "audit_seconds": audit_s,
        "scipy_lp_seconds": lp_s,
        "audit_over_scipy": audit_s / lp_s if lp_s else float("nan"),
        "max_abs_realized_minus_lp": float(diff),
        "disclosed": int((rows["width"] == 0).sum()),
        "under_protected": int((~rows["protected"]).sum()),
        "apriori": list(audited.apriori),
        "cells": json.loads(rows.drop(columns=["shadow", "cost", "native_status"]).to_json(
            orient="records")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arb", type=Path, default=ARB)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if not peer.available():
        print("pytauargus is not installed: nothing to compare (pip install pytauargus)")
        return 0
    import pytauargus  # lazy: version for the record

    table = peer.TauTable.from_arb(args.arb)
    print(f"pytauargus {pytauargus.__version__}, {platform.processor() or platform.machine()}"
          f", Python {platform.python_version()}; table {table.tab.name} "
          f"({' x '.join(table.explanatory)}, READTABLE {table.additivity})")
    results = [run_method(table, m, args.repeat) for m in (None, *peer.METHODS)]
    print(f"{'method':14s} {'supp':>5s} {'prim':>5s} {'sec':>4s} {'suppress s':>11s} "
          f"{'audit s':>9s} {'scipy LP s':>10s} {'ratio':>6s} {'|tau-LP|':>9s} "
          f"{'width 0':>7s} {'under':>5s} {'sec. value':>11s}")
    for r in results:
        print(f"{r['method']:14s} {r['suppressed']:5d} {r['primary']:5d} {r['secondary']:4d} "
              f"{r['suppress_seconds']:11.4f} {r['audit_seconds']:9.4f} "
              f"{r['scipy_lp_seconds']:10.4f} {r['audit_over_scipy']:6.2f} "
              f"{r['max_abs_realized_minus_lp']:9.2g} {r['disclosed']:7d} "
              f"{r['under_protected']:5d} {r['secondary_value']:11.2f}")
    print(f"GH (hypercube), NET, CTA: not run by the headless engine ({', '.join(peer.REJECTED)}"
          " are rejected)")
    if args.json:
        args.json.write_text(json.dumps({"table": str(table.tab), "results": results},
                                        indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
