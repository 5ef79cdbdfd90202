"""Cell key perturbation audited at scale (issue 30): about 100,000 distinct cells of three
linked count tables with a hierarchy, perturbed with an ABS-style ptable (sdcTools'
maximum-entropy construction, D = 2 by default, V = 1.08, js = 1), published, and audited
from the publication and the ptable alone (``tables audit --ptable``'s library call,
``runs/ckm.audit_publication``): the release checked against its ptable, one additive
integer table found within the published values' sets, then every true count's LP and
integer interval.

How the data are made (``--seed``, default 1; ``--persons``, default 1,000,000): each person
gets a district (21 regions x 21 districts, Zipf-weighted), an age band (16 bands, flat with
fewer old), a sex and an occupation (9 groups, Zipf-weighted), and a record key drawn
uniformly from the 8-decimal keys in [0, 1) (as sdcTools' ``ck_generate_rkeys``). Tables:
district (region > district, an .hrc file) x age x sex, district x occupation x sex and
district x age x occupation, with every total; the three share their district x age,
district x sex, district x occupation margins, so a cell is perturbed once, the same in
every table that shows it.

The cells of the one large component are first settled by bound propagation and moves
inside the tables' windows (``engines/intervals/settle``: BENCHMARKS.md, "the CKM audit of
102,786 linked cells, complete"); what that leaves goes to the per-cell LPs.

The audit runs within ``--time-limit`` seconds (one deadline shared by every cell, so the
cells past it are ``unknown``: never called proven), ``--cell-limit`` seconds per cell.
Every proven interval is then checked against the true counts (which the auditor never
sees): a true count outside would be a soundness bug, and the script fails.

    .venv/bin/python benchmarks/bench_ckm_audit.py [--persons 1000000] [--d 2]
        [--time-limit 600] [--cell-limit 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
from _machine import describe  # benchmarks/ is the script's folder

from statrecon.engines.ckm import PTableParams, build_ptable
from statrecon.engines.intervals import AuditOptions
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.report.ckm import frames, write_ptable
from statrecon.runs.ckm import (
    PerturbOptions,
    PerturbRun,
    PublicationOptions,
    audit_publication,
)
from statrecon.tables import Hierarchy, TableSet
from statrecon.tables.ckm import perturb_tables
from statrecon.tables.model import Cell, Table
from statrecon.tables.rules import TableSpec, tabulate

KEY_SCALE = 10**8  # record keys k / 10**8, 8 decimals
REGIONS = 21  # regions of 21 districts each
TABLES = (("district", "age", "sex"), ("district", "occupation", "sex"),
          ("district", "age", "occupation"))


def _zipf(rng: np.random.Generator, n: int, size: int, a: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** a
    return rng.choice(n, size=size, p=weights / weights.sum())


def microdata(persons: int, seed: int, regions: int = REGIONS) -> pd.DataFrame:
    """One row per person (module docstring; ``regions`` regions of as many districts);
    ``rk`` the record key times 10**8."""
    rng = np.random.default_rng(seed)
    district = _zipf(rng, regions * regions, persons, 0.7)
    ages = np.r_[np.full(12, 1.0), 0.8, 0.6, 0.4, 0.2]
    age = rng.choice(16, size=persons, p=ages / ages.sum())
    return pd.DataFrame({
        "district": np.array([f"R{d // regions:02d}D{d % regions:02d}"
                              for d in range(regions * regions)])[district],
        "age": np.array([f"A{a:02d}" for a in range(16)])[age],
        "sex": np.array(["f", "m"])[rng.integers(0, 2, persons)],
        "occupation": np.array([f"O{o}" for o in range(9)])[_zipf(rng, 9, persons, 0.8)],
        "rk": rng.integers(0, KEY_SCALE, size=persons),
    })


def district_hierarchy(codes: list[str]) -> Hierarchy:
    regions: dict[str, list[str]] = {}
    for code in sorted(set(codes)):
        regions.setdefault(code[:3], []).append(code)
    return Hierarchy("district", "Total", {"Total": tuple(regions),
                                           **{r: tuple(k) for r, k in regions.items()}})


def hrc_text(hierarchy: Hierarchy) -> str:
    """The hierarchy as a tau-Argus .hrc file (lead @)."""
    lines = []
    for region in hierarchy.children["Total"]:
        lines.append(region)
        lines += [f"@{d}" for d in hierarchy.children[region]]
    return "\n".join(lines) + "\n"


def count_tables(frame: pd.DataFrame, district: Hierarchy) -> tuple[TableSet, list[Fraction]]:
    """The three linked count tables and each cell's record-key sum (``keys()`` order)."""
    built, sums = [], {}
    for variables in TABLES:
        spec = TableSpec(variables, hierarchies={"district": district}, response="rk",
                         tops=0, name=" x ".join(variables))
        keyed = tabulate(frame, spec, "bench")
        cells = tuple(Cell(c.codes, Fraction(c.frequency or 0), c.frequency or 0, c.status)
                      for c in keyed.cells)
        table = Table(keyed.name, keyed.variables, keyed.hierarchies, "freq", "frequency", 0,
                      cells, source="bench")
        built.append(table)
        for cell, summed in zip(table.cells, keyed.cells, strict=True):
            sums.setdefault(table.key(cell), Fraction(summed.value) / KEY_SCALE)
    linked = TableSet(tuple(built))
    order = linked.keys()
    return linked, [sums[k] for k in order]


def _progress() -> Callable[[int, int], None]:
    """Cells audited so far, on stderr every 30 s."""
    start = last = time.perf_counter()

    def tell(done: int, total: int) -> None:
        nonlocal last
        now = time.perf_counter()
        if now - last >= 30 or done == total:
            last = now
            print(f"  {done:,} of {total:,} cells at {now - start:.0f} s", file=sys.stderr,
                  flush=True)
    return tell


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--d", type=int, default=2, choices=(2, 3))
    parser.add_argument("--time-limit", type=float, default=600.0,
                        help="seconds for the whole audit (one deadline for every cell)")
    parser.add_argument("--cell-limit", type=float, default=10.0)
    parser.add_argument("--no-integer", action="store_true",
                        help="LP intervals only (no CP-SAT integer interval)")
    parser.add_argument("--regions", type=int, default=REGIONS,
                        help="regions of as many districts (21: 102,786 distinct cells)")
    parser.add_argument("--posterior", action="store_true",
                        help="also every true count's posterior, scored against the truth")
    parser.add_argument("--posterior-limit", type=float, default=None,
                        help="seconds for the posteriors (default: the time limit, at least "
                             "120)")
    args = parser.parse_args()
    print(f"machine: {describe()}")
    t0 = time.perf_counter()
    frame = microdata(args.persons, args.seed, args.regions)
    district = district_hierarchy(list(frame["district"].unique()))
    linked, sums = count_tables(frame, district)
    variance = Fraction("1.08") if args.d == 2 else Fraction("2.25")
    ptable = build_ptable(PTableParams(args.d, variance, 1))
    cells = perturb_tables(linked, sums, ptable, 0)
    made_s = time.perf_counter() - t0
    truth = [c.count for c in cells]
    print(f"{args.persons:,} persons (seed {args.seed}) -> {len(linked.tables)} linked "
          f"tables, {sum(len(t.cells) for t in linked.tables):,} table cells, "
          f"{len(cells):,} distinct cells, {linked.equations().matrix.shape[0]:,} equations; "
          f"ABS ptable D = {args.d}, V = {variance}, js = 1: "
          f"{sum(1 for c in cells if c.noise):,} changed ({made_s:.1f} s to make)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run = PerturbRun(linked, cells, ptable, 0, PerturbOptions(TABLES, record_key="rk"))
        publication, _ = frames(run)
        publication.to_csv(folder / "published.csv", index=False)
        write_ptable(ptable, folder / "ptable.csv")
        (folder / "district.hrc").write_text(hrc_text(district))
        options = PublicationOptions(("district", "age", "sex", "occupation"),
                                     hierarchies=(("district", folder / "district.hrc"),),
                                     posterior=args.posterior,
                                     posterior_time_limit=args.posterior_limit)
        audit = AuditOptions(time_limit=args.cell_limit, on_progress=_progress(),
                             integer=not args.no_integer,
                             deadline=Deadline.after(args.time_limit))
        start = time.perf_counter()
        checked = audit_publication(folder / "published.csv", folder / "ptable.csv",
                                    options, audit)
        total_s = time.perf_counter() - start
    assert checked.cells is not None
    order = checked.cells.tables.keys()
    true_of = dict(zip(linked.keys(), truth, strict=True))
    truth_in_order = [true_of[k] for k in order]
    if args.posterior:
        report_posteriors(checked, truth_in_order)
    return report(checked, truth_in_order, total_s, args.time_limit)


def report_posteriors(checked: object, truth: list[int]) -> None:
    """How the posteriors fare against the truth: the most probable count right, the
    probability given to the true count, and the ranking's top cells, beside taking each
    published value at its word."""
    from statrecon.runs.ckm import PublicationAudit

    assert isinstance(checked, PublicationAudit) and checked.cells is not None
    found = checked.posteriors
    statuses = [p.status for p in found]
    modes = {c: p.mode for c, p in enumerate(found) if p.mode is not None}
    right = sum(1 for c, (value, _) in modes.items() if value == truth[c])
    shown = sum(1 for c in modes if checked.cells.published[c] == truth[c])
    given = sum(float(dict(found[c].distribution).get(truth[c], 0)) for c in modes)
    by_probability, by_added = checked.rankings
    print(f"posteriors in {checked.posterior_s:.1f} s: "
          + ", ".join(f"{statuses.count(s):,} {s}" for s in sorted(set(statuses)))
          + f"; steps of both chains {max((p.steps for p in found), default=0):,}")
    if not modes:
        return
    print(f"most probable count = true count: {right / len(modes):.1%} of {len(modes):,} "
          f"cells (the published value taken at its word: {shown / len(modes):.1%}); "
          f"mean probability given to the true count {given / len(modes):.3f}, to the most "
          f"probable {sum(float(m[1]) for m in modes.values()) / len(modes):.3f}")
    published = checked.cells.published
    for by, ranked in (("probability", by_probability), ("what the tables add", by_added)):
        for share in (0.01, 0.1):
            top = ranked[:max(1, int(len(ranked) * share))]
            hits = sum(1 for c in top if modes[c][0] == truth[c])
            least = min(float(modes[c][1]) for c in top)
            zeros = sum(1 for c in top if published[c] == 0)
            print(f"  top {share:.0%} by {by} ({len(top):,} cells, probability >= "
                  f"{least:.3f}): {hits / len(top):.1%} right; {zeros:,} of them published "
                  "as 0")
    zero = [c for c in modes if published[c] == 0]
    if zero:  # the flat prior favours a true 0 behind a published 0 (BENCHMARKS.md)
        every = [c for c, p in enumerate(published) if p == 0]
        print(f"  cells published as 0: {len(zero):,} estimated, the most probable count "
              f"given {sum(float(modes[c][1]) for c in zero) / len(zero):.3f} on average, "
              f"right {sum(1 for c in zero if modes[c][0] == truth[c]) / len(zero):.1%}; "
              f"the truth is 0 behind {sum(1 for c in every if truth[c] == 0):,} of all "
              f"{len(every):,} published zeros")


def report(checked: object, truth: list[int], total_s: float, limit: float) -> int:
    from statrecon.runs.ckm import PublicationAudit

    assert isinstance(checked, PublicationAudit)
    done = [c for c in checked.result.cells if c.verdict != "unknown"]
    lp_done = [c for c in checked.result.cells if c.lp.lower.proven and c.lp.upper.proven]
    bad = []
    for c in checked.result.cells:
        for interval in (c.lp, c.integer):
            if interval is None:
                continue
            lo, hi = interval.lower, interval.upper
            if (lo.proven and lo.value is not None and truth[c.cell] < lo.value) or \
                    (hi.proven and hi.value is not None and truth[c.cell] > hi.value):
                bad.append(c.name)
    pinned = checked.pinned
    wrong_pins = [c.name for c in pinned if checked.shown_value(c.cell) != truth[c.cell]]
    print(f"audit from the publication and ptable alone (attacker knows the ptable), "
          f"{total_s:.1f} s in all: consistency check (an additive integer table within "
          f"the sets) {checked.stand_in_s:.1f} s, the audit {checked.result.elapsed_s:.1f} s "
          f"within a limit of {limit:.0f} s")
    print(f"cells audited (both ends decided) within the limit: {len(done):,} of "
          f"{len(checked.result.cells):,}; the other {len(checked.unknown):,} unknown "
          f"(time limit), never called proven; LP interval proven at both ends: "
          f"{len(lp_done):,}")
    print(f"pinned exactly: {len(pinned):,} (each equal to its true count: "
          f"{not wrong_pins}); narrowed by the equations beyond their own set: "
          f"{len(checked.narrowed) - len(pinned):,}")
    print(f"every proven bound holds for the true counts: {not bad}"
          + (f" (violated at {bad[:5]})" if bad else ""))
    return 1 if bad or wrong_pins else 0


if __name__ == "__main__":
    sys.exit(main())
