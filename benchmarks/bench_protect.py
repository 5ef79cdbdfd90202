"""statrecon's secondary suppression next to easySdcTable's comparison, configuration by
configuration.

For each of the 24 configurations of ``examples/tables/easysdctable/comparison.csv`` (z2, z3,
sosialFiktiv x linked x protectZeros x maxN), the TableSet is built as ProtectTable builds
its table(s) (``benchmarks/peers/easysdctable.py``: ``table_set``), then:

(a) the comparison's own rows: per method, cells suppressed, revealed (all, primary) and
    seconds (R 4.1.0 on a Windows laptop, sdcTable 0.32.0, SSBtools 1.2.0);
(b) when ``statrecon.engines.suppression`` is there: ``protect`` (fast mode, its default
    time limit) on the table set's ``IntervalProblem``, the candidates being the published,
    non-empty cells (zeros included, as in GaussSuppression), and beside the
    GaussSuppression row: statrecon's suppressed cells, the primary cells its returned pattern
    leaves not protected under the integer audit (``result.audit``: verdict other than
    "protected"), and its seconds against the fastest method of the row. The R times come
    from another machine: the ratio says how the two runs compare, not the two algorithms.
(c) with ``--exact SECONDS``, on the tables of at most 1,000 cells (z2, z3): the exact method
    (a master MIP with cuts from failed audits) within that limit: ``optimal`` is proven, a
    ``feasible`` pattern is the best one audited when the limit came.

z2 has a single-child code (region B is fylke 4's only region): its 5 cells repeat fylke 4's,
and sdcTable drops such codes internally, so z2's suppressed counts are also given with each
such pair counted once (in parentheses).

    .venv/bin/python benchmarks/bench_protect.py [--quick] [--only z3] [--time-limit 60]
        [--gauss-audit] [--exact 60]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))

import easysdctable as peer  # noqa: E402  (benchmarks/peers is not a package)
from _machine import describe  # noqa: E402  (benchmarks/, the script's folder)

from statrecon.engines.intervals.tables import problem_from_tables  # noqa: E402
from statrecon.tables import CellStatus, TableSet  # noqa: E402


def _protect_module() -> Any | None:
    """statrecon's secondary suppression, or None (with one line) while it is not there."""
    try:  # by name: the module is being written beside this benchmark
        suppression = importlib.import_module("statrecon.engines.suppression")
    except ImportError as e:
        print(f"(b) skipped: statrecon.engines.suppression cannot be imported ({e})")
        return None
    if not hasattr(suppression, "protect") or not hasattr(suppression, "ProtectOptions"):
        print("(b) skipped: statrecon.engines.suppression has no protect/ProtectOptions")
        return None
    return suppression


@dataclass(frozen=True)
class Ours:
    """statrecon's run on one configuration."""

    status: str
    suppressed: int | None  # None: the result does not say in a form read here
    distinct: int | None  # suppressed, a single-child cell and its parent counted once
    unprotected: int  # primary cells whose integer audit under the pattern is not
    # "protected" (under-protected, disclosed, or unknown: not proven in time)
    seconds: float


def candidates(tables: TableSet) -> tuple[bool, ...]:
    """Per cell, whether it may be suppressed: the published cells that are not empty
    (status SAFE), zeros included, as GaussSuppression's candidates include them (protect's
    own default leaves zeros out)."""
    return tuple(c.status is CellStatus.SAFE for c in tables.cells())


def _suppressed(result: Any, n_cells: int, primaries: Sequence[int]) -> set[int] | None:
    """The suppressed cells of ``protect``'s pattern: ``hidden`` (a flag per cell), or
    ``suppressed`` (flags or indices), or ``secondary`` (indices) with the primary cells."""
    for name in ("hidden", "suppressed"):
        found = getattr(result, name, None)
        if found is None or isinstance(found, int):
            continue
        found = list(found)
        if len(found) == n_cells and all(isinstance(f, bool) for f in found):
            return {j for j, f in enumerate(found) if f}
        return {int(j) for j in found}
    secondary = getattr(result, "secondary", None)
    if secondary is not None:
        return set(primaries) | {int(j) for j in secondary}
    return None


def run_ours(module: Any, tables: TableSet, time_limit: float | None = None,
             method: str = "fast") -> Ours:
    problem = problem_from_tables(tables)
    cells = tables.cells()
    primaries = [j for j, c in enumerate(cells) if c.status is CellStatus.PRIMARY]
    start = time.perf_counter()
    options = module.ProtectOptions(method=method) if time_limit is None else \
        module.ProtectOptions(method=method, time_limit=time_limit)
    result = module.protect(problem, candidates=candidates(tables), options=options)
    seconds = time.perf_counter() - start
    primary = set(primaries)
    unprotected = sum(1 for a in result.audit.cells
                      if a.cell in primary and a.verdict != "protected")
    hidden = _suppressed(result, len(cells), primaries)
    distinct = None
    if hidden is not None:
        column = {k: j for j, k in enumerate(tables.keys())}
        repeats = {column[c] for c in peer.single_child_cells(tables)}
        distinct = len(hidden - repeats)
    return Ours(str(getattr(result, "status", "?")), None if hidden is None else len(hidden),
                distinct, unprotected, seconds)


def gauss_alone(tables: TableSet) -> tuple[int, int]:
    """statrecon's Gaussian pass alone (what GaussSuppression guards against: a primary cell,
    or a sum of primary zeros, determined by the equations), then the integer audit of its
    pattern: (cells suppressed, primary cells it leaves not protected). Witness tables
    first, the full audit on the rest, as the repair loop does."""
    from statrecon.engines.intervals.reach import reach
    from statrecon.engines.solvers.cpsat import Deadline  # lazy: only with --gauss-audit
    from statrecon.engines.suppression import ProtectOptions, prepare_run
    from statrecon.engines.suppression.fast import gauss_secondaries

    problem = problem_from_tables(tables)
    run = prepare_run(problem, candidates(tables), None, ProtectOptions(time_limit=None))
    secondary = gauss_secondaries(run)
    pattern = frozenset((*run.primaries, *secondary))
    prep = run.oracle.prepared(pattern)
    rest = [i for i, r in reach(prep, list(run.primaries), Deadline.after(None)).items()
            if not r.met()]
    _, audits = run.oracle.audit(pattern, Deadline.after(None), True, rest)
    return len(pattern), sum(a.verdict != "protected" for a in audits.values())


def _theirs(rows: pd.DataFrame) -> None:
    print(f"    {'method':22s} {'suppressed':>10s} {'revealed (primary)':>19s} "
          f"{'seconds':>8s}")
    for r in rows.to_dict("records"):
        if r["error"]:
            print(f"    {r['method']:22s} {'Error':>10s}")
            continue
        revealed = f"{int(r['revealed'])} ({int(r['revealed_primary'])})"
        print(f"    {r['method']:22s} {int(r['suppressed']):10d} {revealed:>19s} "
              f"{r['seconds']:8.1f}")


def _ours_line(ours: Ours, gauss: pd.Series, fastest: float) -> str:
    """statrecon's row, and whether it meets the issue's goal on it: no more cells than
    GaussSuppression, no primary cell unprotected by the integer audit, faster than the
    fastest method of the row."""
    counted = "?" if ours.suppressed is None else str(ours.suppressed)
    if ours.distinct is not None and ours.distinct != ours.suppressed:
        counted += f" ({ours.distinct})"
    unprotected = f"{ours.unprotected} not protected"
    line = (f"    {'statrecon fast':22s} {counted:>10s} {unprotected:>19s} "
            f"{ours.seconds:8.2f}  {ours.status}; time / fastest ({fastest:.1f} s) = "
            f"{ours.seconds / fastest:.3f}")
    if ours.suppressed is None:
        return line + "; suppressed cells not read from the result"
    fewer = ours.suppressed <= int(gauss["suppressed"])
    met = fewer and ours.unprotected == 0 and ours.seconds < fastest
    return (line + f"; {ours.suppressed - int(gauss['suppressed']):+d} vs Gauss; goal "
            f"{'met' if met else 'not met'}")


EXACT_MAX_CELLS = 1000  # --exact runs on the tables up to this size (z2, z3)


def bench(names: Sequence[str], time_limit: float | None = None,
          gauss_audit: bool = False, exact: float | None = None) -> None:
    print(f"machine: {describe()}")
    rows = peer.load_comparison()
    module = _protect_module()
    summary = []
    for name, linked, zeros, max_n in peer.configurations(rows):
        if name not in names:
            continue
        start = time.perf_counter()
        tables = peer.table_set(name, linked, zeros, max_n)
        built = time.perf_counter() - start
        primaries = len(peer.primary_keys(tables))
        print(f"\n{name} linked={linked} protectZeros={zeros} maxN={max_n}: "
              f"{len(tables.keys())} cells in {len(tables.tables)} table(s), {primaries} "
              f"primary (built in {built:.2f} s)")
        mine = rows[(rows["table"] == name) & (rows["linked"] == linked)
                    & (rows["protectZeros"] == zeros) & (rows["maxN"] == max_n)]
        _theirs(mine)
        gauss = mine[mine["method"] == "Gauss"].iloc[0]
        fastest = float(mine.loc[~mine["error"], "seconds"].min())
        ours = None if module is None else run_ours(module, tables, time_limit)
        if ours is not None:
            print(_ours_line(ours, gauss, fastest))
            if gauss_audit and ours.suppressed is not None \
                    and ours.suppressed > int(gauss["suppressed"]):
                cells, exposed = gauss_alone(tables)
                print(f"    {'statrecon Gauss alone':22s} {cells:10d} {exposed:>6d} primary "
                      "cells not protected (integer audit)")
        best = None
        if module is not None and exact is not None \
                and len(tables.keys()) <= EXACT_MAX_CELLS:
            best = run_ours(module, tables, exact, method="exact")
            print(_ours_line(best, gauss, fastest).replace("statrecon fast ",
                                                             "statrecon exact"))
        summary.append(_row(name, linked, zeros, max_n, len(tables.keys()), primaries, gauss,
                            fastest, ours, best))
    _summary(summary)


def _row(name: str, linked: bool, zeros: bool, max_n: int, cells: int, primaries: int,
         gauss: pd.Series, fastest: float, ours: Ours | None, best: Ours | None = None
         ) -> list[str]:
    mine = ["", "", "", ""] if ours is None else [ours.status,
        "?" if ours.suppressed is None else str(ours.suppressed), str(ours.unprotected),
        f"{ours.seconds:.2f}"]
    exact = ["", "", ""] if best is None else [
        best.status, "?" if best.suppressed is None else str(best.suppressed),
        f"{best.seconds:.2f}"]
    return [name, "yes" if linked else "no", str(zeros).upper(), str(max_n), str(cells),
            str(primaries), str(int(gauss["suppressed"])), f"{gauss['seconds']:.1f}",
            f"{fastest:.1f}", *mine, *exact]


def _summary(rows: list[list[str]]) -> None:
    """The configurations as one Markdown table (for BENCHMARKS.md)."""
    head = ["data", "linked", "protectZeros", "maxN", "cells", "primary", "Gauss suppressed",
            "Gauss s", "fastest s", "statrecon status", "statrecon suppressed",
            "primary not protected", "statrecon s", "exact status", "exact suppressed",
            "exact s"]
    print("\n| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="z2 and z3 only")
    parser.add_argument("--only", choices=["z2", "z3", "sosialFiktiv"], action="append",
                        help="these data sets only (repeatable)")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds per protect run (default: ProtectOptions' own)")
    parser.add_argument("--gauss-audit", action="store_true",
                        help="where statrecon suppresses more cells than GaussSuppression, "
                        "audit statrecon's Gaussian pass alone with the integer audit")
    parser.add_argument("--exact", type=float, default=None, metavar="SECONDS",
                        help=f"also the exact method (this time limit) on the tables of at "
                        f"most {EXACT_MAX_CELLS} cells")
    args = parser.parse_args(argv)
    names = args.only or (["z2", "z3"] if args.quick else ["z2", "z3", "sosialFiktiv"])
    bench(names, args.time_limit, args.gauss_audit, args.exact)


if __name__ == "__main__":
    main()
