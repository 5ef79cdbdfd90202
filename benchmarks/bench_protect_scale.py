"""Secondary suppression at scale (issue 28): a linked pair of 3-way tables with hierarchies,
97,236 distinct cells, generated from synthetic enterprise microdata, protected by
``tables protect``'s fast method; every primary cell of the returned pattern is proven
protected under the integer audit (or the run says which is not).

How the data are made (``--seed``, default 1; ``--firms``, default 1,000,000): each firm gets
a district (10 regions x 10 districts, Zipf-weighted), an economic activity (8 sections x 8
divisions, Zipf-weighted), a size class (6 classes, geometric: small firms are common), a
legal form (5 forms) and a turnover (lognormal, larger with the size class; whole units).
Table A: district (region > district) x activity (section > division) x size class;
table B: district x activity x legal form; both publish turnover, and they share their
district x activity margins. Primary cells: 1 or 2 contributors (minimum frequency 3, as
tau-Argus's FREQ(3, ...)) or the p%-rule with p = 10 (tau-Argus's P(10, 1): the largest
contribution known to within 10 % by the second largest); no protection levels beyond "not
exactly disclosed" (GaussSuppression's convention). Empty cells (no firm) are never
suppressed (tau-Argus's and ``tables protect``'s default).

Why 1,000,000 firms: the grid is the same whatever the number of firms (every code occurs),
only how full its cells are changes. The share of primary cells among the non-empty cells is
65 % with 20,000 firms, 40 % with 200,000 (most cells hold one or two firms), 18.5 % with
1,000,000 and 10 % with 2,000,000; tau-Argus practice is a few to about 20 %, so the default
is the realistic instance with the most primary cells (17,254 of 93,154 non-empty cells).

``--baseline-src DIR`` protects the same tables with another checkout's ``src`` (the code
before a change) in a child process, then this code in another, one after the other, and
prints the ratio (the 2-core machines these run on are shared: compare within one run).

With pytauargus installed, ``--tau-argus`` also protects each table on its own with
tau-Argus's MOD (pytauargus's headless engine takes one table at a time; the tables are
written as .asc/.rda microdata with .hrc hierarchies and tau-Argus's rules
``P(10,1)|FREQ(3,30)``, so tau-Argus's protection levels are its own, from those rules),
and statrecon's integer audit checks the union of the two patterns on the linked tables,
against statrecon's primary cells (witness tables first, then the full audit of each cell
they leave, within ``--audit-time-limit``).

    .venv/bin/python benchmarks/bench_protect_scale.py [--firms 1000000] [--time-limit 120]
        [--baseline-src DIR] [--tau-argus] [--tau-time-limit 7200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _machine import describe  # benchmarks/ is the script's folder

from statrecon.engines.suppression import ProtectOptions
from statrecon.runs.tables import protect_tables
from statrecon.tables import CellStatus, Hierarchy, TableSet
from statrecon.tables.rules import MinFrequency, PPercent, TableSpec, table_from_microdata

ROOT = Path(__file__).resolve().parents[1]
TAU_RULES = "P(10,1)|FREQ(3,30)"


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
    districts = np.array([f"R{d // 10:02d}D{d % 10}" for d in range(10 * regions)])
    divisions = np.array([f"S{v // 8}N{v % 8}" for v in range(64)])
    return pd.DataFrame({
        "district": districts[district],
        "division": divisions[division],
        "size": np.array([f"K{s}" for s in range(6)])[size],
        "legal": np.array([f"L{v}" for v in range(5)])[legal],
        "turnover": turnover,
    })


def _parents(codes: list[str], cut: int) -> dict[str, list[str]]:
    """The code's first ``cut`` characters -> the codes under it."""
    children: dict[str, list[str]] = {}
    for code in sorted(set(codes)):
        children.setdefault(code[:cut], []).append(code)
    return children


def _nested(variable: str, codes: list[str], cut: int) -> Hierarchy:
    """Total > the code's first ``cut`` characters > the code."""
    below = _parents(codes, cut)
    children = {"Total": tuple(below), **{p: tuple(k) for p, k in below.items()}}
    return Hierarchy(variable, "Total", children)


THIRD = {"A": "size", "B": "legal"}
CUTS = {"district": 3, "division": 2}


def tables(micro: pd.DataFrame) -> TableSet:
    hierarchies = {v: _nested(v, list(micro[v].unique()), cut) for v, cut in CUTS.items()}
    rules = (MinFrequency(2), PPercent(10))
    made = [table_from_microdata(micro, TableSpec(
        variables=("district", "division", third), hierarchies=hierarchies,
        response="turnover", name=name, tops=2), rules)
        for name, third in THIRD.items()]
    return TableSet(tuple(made))


# ------------------------------------------------------------------------------ statrecon

def run_statrecon(ts: TableSet, time_limit: float, quiet: bool = False) -> dict[str, Any]:
    """``protect_tables`` (fast), with the progress it reports on stderr and the moment
    each stage first and last reported."""
    start = time.perf_counter()
    stages: dict[str, list[float]] = {}

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter() - start
        stages.setdefault(stage, [now, now])[1] = now
        if not quiet:
            print(f"\r  {now:7.1f} s  {stage:<8} {done:>7}/{total:<7}", end="",
                  file=sys.stderr, flush=True)

    done = protect_tables(ts, ProtectOptions(method="fast", time_limit=time_limit,
                                             on_progress=progress))
    seconds = time.perf_counter() - start
    if not quiet:
        print(file=sys.stderr)
    result = done.result
    verdicts = Counter(c.verdict for c in result.audit.cells)
    return {"status": result.status, "seconds": round(seconds, 1),
            "primary": len(result.primary), "secondary": len(result.secondary),
            "audited": len(result.audit.cells), "verdicts": dict(verdicts),
            "all_protected": verdicts.get("protected", 0) == len(result.primary),
            "stages": {k: [round(a, 1), round(b, 1)] for k, (a, b) in stages.items()},
            "note": result.note}


def _child(src: Path, args: argparse.Namespace) -> dict[str, Any]:
    """This script's statrecon run in a child process over ``src`` (a checkout's src)."""
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--firms",
           str(args.firms), "--seed", str(args.seed), "--regions", str(args.regions),
           "--time-limit", str(args.time_limit)]
    got = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False,
                         timeout=args.time_limit * 3 + 600)
    lines = [line for line in got.stdout.splitlines() if line.startswith("{")]
    if got.returncode or not lines:
        return {"status": f"failed ({got.stderr.strip().splitlines()[-1:]})"}
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def _summary(label: str, got: dict[str, Any]) -> str:
    if "seconds" not in got:
        return f"{label}: {got['status']}"
    stages = ", ".join(f"{k} {a}-{b} s" for k, (a, b) in got["stages"].items())
    return (f"{label}: {got['status']} in {got['seconds']} s: {got['primary']:,} primary, "
            f"{got['secondary']:,} secondary; integer audit of {got['audited']:,} primary "
            f"cells: {got['verdicts']}\n    stages (first-last report): {stages}"
            + (f"\n    note: {got['note']}" if got["note"] else ""))


# ------------------------------------------------------------------- the command, as a job

WIDTHS = {"district": 5, "division": 4, "size": 2, "legal": 2}


def write_job(micro: pd.DataFrame, directory: Path) -> Path:
    """The microdata as a tau-Argus job: a fixed-width ``scale.asc``, its ``scale.rda`` (the
    district and the activity hierarchical by .hrc files), and ``scale.arb`` specifying both
    tables with tau-Argus's rules and ``<SUPPRESS> MOD(0)`` (every table, linked)."""
    width = len(str(int(micro["turnover"].max())))
    fields = [micro[v].str.pad(w, side="left") for v, w in WIDTHS.items()]
    fields.append(micro["turnover"].astype(str).str.pad(width, side="left"))
    lines = fields[0]
    for f in fields[1:]:
        lines = lines + f
    (directory / "scale.asc").write_text("\n".join(lines) + "\n")
    rda, start = [], 1
    for v, w in WIDTHS.items():
        rda += [f"{v} {start} {w}", "  <RECODEABLE>"]
        if v in CUTS:
            _write_hrc(directory / f"{v}.hrc", list(micro[v].unique()), CUTS[v])
            rda += ["  <HIERARCHICAL>", f'  <HIERCODELIST> "{v}.hrc"',
                    '  <HIERLEADSTRING> "@"']
        start += w
    rda += [f"turnover {start} {width}", "  <NUMERIC>"]
    (directory / "scale.rda").write_text("\n".join(rda) + "\n")
    arb = ['<OPENMICRODATA> "scale.asc"', '<OPENMETADATA> "scale.rda"']
    for third in THIRD.values():
        arb += [f'<SPECIFYTABLE> "district""division""{third}"|"turnover"||',
                f"<SAFETYRULE> {TAU_RULES}"]
    arb += ["<READMICRODATA>", "<SUPPRESS> MOD(0)"]
    (directory / "scale.arb").write_text("\n".join(arb) + "\n")
    return directory / "scale.arb"


def run_job(micro: pd.DataFrame, time_limit: float) -> None:
    """``statrecon tables protect scale.arb`` as a user runs it (a child process: reading
    the microdata, building the tables, protecting, auditing and writing all counted)."""
    with tempfile.TemporaryDirectory(prefix="scale_job_") as tmp:
        arb = write_job(micro, Path(tmp))
        size = (Path(tmp) / "scale.asc").stat().st_size
        (Path(tmp) / "out").mkdir()
        cmd = [str(Path(sys.executable).with_name("statrecon")), "tables", "protect",
               str(arb), "--time-limit", f"{time_limit:g}", "--out",
               str(Path(tmp) / "out" / "protected.arb")]
        start = time.perf_counter()
        got = subprocess.run(cmd, capture_output=True, text=True, check=False,
                             timeout=time_limit * 3 + 600)
        seconds = time.perf_counter() - start
    print(f"statrecon tables protect scale.arb (a tau-Argus job: {size / 1e6:.0f} MB of "
          f"fixed-width microdata, rules {TAU_RULES} with their protection levels, "
          f"<SUPPRESS> MOD(0)): exit {got.returncode} in {seconds:.1f} s")
    for line in (got.stdout.strip().splitlines() + got.stderr.strip().splitlines())[-12:]:
        if line.strip() and "\r" not in line:
            print(f"    {line.rstrip()}")


# ------------------------------------------------------------------------------ tau-Argus

def _write_hrc(path: Path, codes: list[str], cut: int) -> str:
    """A tau-Argus .hrc: each parent code, then its children after one '@'."""
    lines = []
    for parent, kids in _parents(codes, cut).items():
        lines += [parent, *(f"@{k}" for k in kids)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def tau_argus(micro: pd.DataFrame, ts: TableSet, time_limit: float) -> dict[str, Any]:
    """tau-Argus's MOD on each table (a child process each, killed past ``time_limit``
    seconds): its seconds, primary and secondary cells, and the suppressed keys."""
    out: dict[str, Any] = {}
    for name, third in THIRD.items():
        with tempfile.TemporaryDirectory(prefix="scale_tau_") as tmp:
            frame = micro[["district", "division", third, "turnover"]]
            path = Path(tmp) / "micro.parquet"
            frame.to_parquet(path)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--tau-child", str(path),
                   third]
            start = time.perf_counter()
            try:
                got = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                     timeout=time_limit)
            except subprocess.TimeoutExpired:
                out[name] = {"error": f"MOD did not finish within {time_limit:.0f} s"}
                continue
            lines = [line for line in got.stdout.splitlines() if line.startswith("{")]
            if got.returncode or not lines:
                tail = (got.stderr.strip().splitlines() or ["no output"])[-1]
                out[name] = {"error": f"exit {got.returncode}: {tail}"}
                continue
            found = json.loads(lines[-1])
            found["wall_s"] = round(time.perf_counter() - start, 1)
            out[name] = found
    return out


def _tau_child(path: str, third: str) -> None:
    """Run in a child process: MOD on one table, one JSON line on stdout."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    import tauargus as peer  # this repository's peer driver, not an installed package

    micro = pd.read_parquet(path)
    variables = ["district", "division", third]
    with tempfile.TemporaryDirectory(prefix="scale_tau_files_") as tmp:
        hrc = {v: _write_hrc(Path(tmp) / f"{v}.hrc", list(micro[v].unique()), cut)
               for v, cut in CUTS.items()}
        table = peer.TauTable.from_microdata(micro, variables, "turnover", TAU_RULES, tmp,
                                             hrc=hrc, hierleadstring="@", decimals=0)
        done = peer.suppress(table, "MOD")
    cells = done.cells
    hidden = cells[cells["status"].isin(["U", "M"])]
    keys = [[[v, str(row[v])] for v in variables if str(row[v]) != "Total"]
            for _, row in hidden.iterrows()]
    print(json.dumps({"seconds": round(done.seconds, 1), "cells": len(cells),
                      "primary": int((cells["status"] == "U").sum()),
                      "secondary": int((cells["status"] == "M").sum()), "suppressed": keys}))


def audit_pattern(ts: TableSet, suppressed: set[Any], time_limit: float) -> dict[str, Any]:
    """statrecon's integer audit of every primary cell of ``ts`` under the pattern
    ``suppressed`` (keys): witness tables first, then the full audit (LP certificates and
    integer bounds) of each cell they leave, until ``time_limit``."""
    from statrecon.engines.intervals.tables import problem_from_tables
    from statrecon.engines.suppression.entry import prepare_run
    from statrecon.engines.suppression.run import Repair, by_witness

    start = time.perf_counter()
    problem = problem_from_tables(ts, "nonnegative")
    run = prepare_run(problem, None, None, ProtectOptions(time_limit=time_limit))
    column = {k: j for j, k in enumerate(ts.keys())}
    pattern = frozenset(column[k] for k in suppressed if k in column) | set(run.primaries)
    state = Repair(frozenset(pattern), [])
    todo = by_witness(run, state)
    witnessed = len(state.proven)
    _, audits = run.oracle.audit(state.suppressed, run.deadline, True, todo) if todo \
        else (None, {})
    verdicts = Counter(a.verdict for a in (*state.proven.values(), *audits.values()))
    return {"suppressed": len(pattern), "primary": len(run.primaries),
            "by_witness": witnessed, "verdicts": dict(verdicts),
            "seconds": round(time.perf_counter() - start, 1)}


def run_tau(micro: pd.DataFrame, ts: TableSet, args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks" / "peers"))
    import tauargus as peer  # this repository's peer driver, not an installed package

    if not peer.available():
        print("tau-Argus: pytauargus is not installed (pip install 'statrecon[sdc]'): "
              "not compared")
        return
    got = tau_argus(micro, ts, args.tau_time_limit)
    union: set[Any] = set()
    for name, found in got.items():
        if "error" in found:
            print(f"tau-Argus MOD, table {name}: {found['error']}")
            continue
        print(f"tau-Argus MOD, table {name}: {found['cells']:,} cells, {found['primary']:,} "
              f"primary (tau-Argus's rules {TAU_RULES}), {found['secondary']:,} secondary, "
              f"suppression {found['seconds']} s (reading the microdata and writing the "
              f"files included: {found['wall_s']} s)")
        union |= {frozenset((v, c) for v, c in key) for key in found["suppressed"]}
    if not union or any("error" in f for f in got.values()):
        return
    prim = {k for k, c in zip(ts.keys(), ts.cells(), strict=True)
            if c.status is CellStatus.PRIMARY}
    print(f"  union on the linked tables: {len(union):,} cells suppressed, "
          f"{len(prim - union):,} of statrecon's {len(prim):,} primary cells not among them")
    audited = audit_pattern(ts, union, args.audit_time_limit)
    print(f"  statrecon's integer audit of the union (statrecon's primary cells, levels 0): "
          f"{audited['suppressed']:,} cells hidden, {audited['by_witness']:,} of "
          f"{audited['primary']:,} primary cells proven by witness tables, verdicts "
          f"{audited['verdicts']} in {audited['seconds']} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--firms", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--regions", type=int, default=10, help="10 districts each")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="another checkout's src: its run first, then this one's")
    parser.add_argument("--tau-argus", action="store_true",
                        help="tau-Argus MOD on each table and the audit of their union")
    parser.add_argument("--tau-time-limit", type=float, default=7200.0,
                        help="seconds for each table's MOD")
    parser.add_argument("--audit-time-limit", type=float, default=600.0,
                        help="seconds for statrecon's audit of MOD's pattern")
    parser.add_argument("--job", action="store_true",
                        help="also run `statrecon tables protect` on the data as a tau-Argus "
                             "job (microdata, .rda, .hrc, .arb with tau-Argus's rules)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tau-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tau_child:
        _tau_child(*args.tau_child)
        return 0
    start = time.perf_counter()
    micro = microdata(args.firms, args.seed, args.regions)
    ts = tables(micro)
    built = time.perf_counter() - start
    if args.child:
        print(json.dumps(run_statrecon(ts, args.time_limit, quiet=True)))
        return 0
    sizes = [len(t.cells) for t in ts.tables]
    cells = ts.cells()
    primary = sum(c.status is CellStatus.PRIMARY for c in cells)
    empty = sum(c.value == 0 and not c.frequency for c in cells)
    print(f"machine: {describe()}")
    print(f"{args.firms:,} firms (seed {args.seed}) -> tables A {sizes[0]:,} and B "
          f"{sizes[1]:,} cells, {len(ts.keys()):,} distinct (linked), "
          f"{len(ts.equations().names):,} equations; {primary:,} primary "
          f"({primary / len(cells):.1%} of all cells, {primary / (len(cells) - empty):.1%} "
          f"of the {len(cells) - empty:,} non-empty); built in {built:.1f} s")
    if args.baseline_src is not None:
        before = _child(args.baseline_src, args)
        after = _child(ROOT / "src", args)
        print(_summary(f"baseline ({args.baseline_src})", before))
        print(_summary("this code", after))
        if "seconds" in before and "seconds" in after:
            print(f"  time ratio baseline / this code: {before['seconds'] / after['seconds']:.2f}"
                  f" (each within --time-limit {args.time_limit:g} s)")
    else:
        print(_summary(f"statrecon fast (--time-limit {args.time_limit:g})",
                       run_statrecon(ts, args.time_limit)))
    if args.job:
        run_job(micro, args.time_limit)
    if args.tau_argus:
        run_tau(micro, ts, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
