"""Secondary suppression at scale (issue 28): a linked pair of 3-way tables with hierarchies,
about 100,000 cells, generated from synthetic enterprise microdata, protected by
``tables protect``'s fast method; every primary cell of the returned pattern is proven
protected under the integer audit (or the run says so).

How the data are made (``--seed``, default 1; ``--firms``, default 200,000): each firm gets
a district (10 regions x 10 districts, Zipf-weighted), an economic activity (8 sections x 8
divisions, Zipf-weighted), a size class (6 classes, geometric: small firms are common), a
legal form (5 forms) and a turnover (lognormal, larger with the size class; whole units).
Table A: district (region > district) x activity (section > division) x size class;
table B: district x activity x legal form; both publish turnover, and they share their
district x activity margins. Primary cells: 1 or 2 contributors (minimum frequency 3, as
tau-Argus's FREQ(3, ...)) or the p%-rule with p = 10 (the two largest contributions known
to within 10 %); no protection levels beyond "not exactly disclosed".

With pytauargus installed (``--tau-argus``), tau-Argus's MOD protects each table on its own
(pytauargus's headless engine takes one table at a time), and statrecon's integer audit
checks the union of the two patterns on the linked tables.

    .venv/bin/python benchmarks/bench_protect_scale.py [--firms 200000] [--time-limit 300]
        [--tau-argus]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from statrecon.engines.suppression import ProtectOptions
from statrecon.runs.tables import protect_tables
from statrecon.tables import Hierarchy, TableSet
from statrecon.tables.rules import MinFrequency, PPercent, TableSpec, table_from_microdata


def _zipf(rng: np.random.Generator, n: int, size: int, a: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** a
    return rng.choice(n, size=size, p=weights / weights.sum())


def microdata(firms: int, seed: int, regions: int = 10) -> pd.DataFrame:
    """One row per firm (see the module docstring; ``regions`` of 10 districts each)."""
    rng = np.random.default_rng(seed)
    district = _zipf(rng, 10 * regions, firms, 0.8)
    division = _zipf(rng, 64, firms, 0.9)
    size = np.minimum(rng.geometric(0.45, firms) - 1, 5)
    legal = _zipf(rng, 5, firms, 1.5)
    turnover = np.rint(rng.lognormal(3.0 + 0.9 * size, 1.0)).astype(np.int64) + 1
    return pd.DataFrame({
        "district": [f"R{d // 10:02d}D{d % 10}" for d in district],
        "division": [f"S{v // 8}N{v % 8}" for v in division],
        "size": [f"K{s}" for s in size],
        "legal": [f"L{v}" for v in legal],
        "turnover": turnover,
    })


def _nested(variable: str, codes: list[str], cut: int) -> Hierarchy:
    """Total > the code's first ``cut`` characters > the code."""
    children: dict[str, list[str]] = {"Total": []}
    for code in sorted(set(codes)):
        parent = code[:cut]
        if parent not in children:
            children["Total"].append(parent)
            children[parent] = []
        children[parent].append(code)
    return Hierarchy(variable, "Total", {p: tuple(k) for p, k in children.items()})


def tables(micro: pd.DataFrame) -> TableSet:
    hierarchies = {"district": _nested("district", list(micro["district"]), 3),
                   "division": _nested("division", list(micro["division"]), 2)}
    rules = (MinFrequency(2), PPercent(10))
    made = [table_from_microdata(micro, TableSpec(
        variables=("district", "division", third), hierarchies=hierarchies,
        response="turnover", name=name, tops=2), rules)
        for name, third in (("A", "size"), ("B", "legal"))]
    return TableSet(tuple(made))


def _line(stage: str, done: int, total: int, start: float) -> None:
    print(f"\r  {time.perf_counter() - start:7.1f} s  {stage:<8} {done:>7}/{total:<7}",
          end="", file=sys.stderr, flush=True)


def run_statrecon(ts: TableSet, time_limit: float) -> dict[str, Any]:
    start = time.perf_counter()
    done = protect_tables(ts, ProtectOptions(
        method="fast", time_limit=time_limit,
        on_progress=lambda s, d, t: _line(s, d, t, start)))
    print(file=sys.stderr)
    result = done.result
    verdicts = pd.Series([c.verdict for c in result.audit.cells]).value_counts().to_dict()
    return {"status": result.status, "seconds": time.perf_counter() - start,
            "primary": len(result.primary), "secondary": len(result.secondary),
            "audited": len(result.audit.cells), "verdicts": verdicts, "note": result.note}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--firms", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--regions", type=int, default=10, help="10 districts each")
    parser.add_argument("--time-limit", type=float, default=300.0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    micro = microdata(args.firms, args.seed, args.regions)
    ts = tables(micro)
    built = time.perf_counter() - start
    sizes = [len(t.cells) for t in ts.tables]
    print(f"{args.firms:,} firms -> tables A {sizes[0]:,} and B {sizes[1]:,} cells, "
          f"{len(ts.keys()):,} distinct (linked), {len(ts.equations().names):,} equations; "
          f"built in {built:.1f} s")
    got = run_statrecon(ts, args.time_limit)
    print(f"statrecon fast: {got['status']} in {got['seconds']:.1f} s: {got['primary']:,} "
          f"primary, {got['secondary']:,} secondary; integer audit of {got['audited']:,} "
          f"primary cells: {got['verdicts']}")
    if got["note"]:
        print(f"  note: {got['note']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
