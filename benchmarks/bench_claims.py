"""Generate-then-Verify: the default formulation against the paper's, side by side.

For each synthetic block (``claims generate-blocks``, seed 0): compile, generate the
consistent datasets and the candidate claims once (as ``claims verify`` does), then time the
full verify of all the candidates with the default formulation (histogram, batched
refutation, per-claim ranges as fallback) and, on the same candidates and solver, the paper's
one-hot big-M integer programme (one CP-SAT solve per claim), one after the other in this
process.

The paper's formulation takes about a second per claim on a 10-unit block, and blocks have
hundreds to thousands of candidates, so by default it runs on every candidate of blocks with
at most ``--paper-full-units`` units and on a seeded random sample of ``--paper-sample``
candidates elsewhere (up to half of them refuted ones, which are rare); its full time is
then extrapolated (mean seconds per claim x candidates) and marked "~"; a block where the
paper's time limit left claims undecided is marked ">": its estimate extrapolates the claims
the paper did decide, and the conservative ratio counts only the time it spent. Every claim it
decides must get the same status from both.

    python benchmarks/bench_claims.py                  # 50 blocks
    python benchmarks/bench_claims.py --paper-sample 0 # the paper on every candidate (hours)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from statrecon.census.households.synthetic import generate_blocks
from statrecon.census.households.tabulate import tabulate_sql
from statrecon.engines import claims as C
from statrecon.engines.claims import fast as CF
from statrecon.engines.claims import model as CM
from statrecon.engines.claims.paper import (
    breaks_claim,
    build_paper_model,
    dataset_rows,
    verify_paper,
)
from statrecon.engines.solvers.cpsat import Deadline


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--paper-sample", type=int, default=15,
                    help="candidates per block for the paper formulation (0: all of them)")
    ap.add_argument("--paper-full-units", type=int, default=4,
                    help="blocks up to this many units get the paper on every candidate")
    ap.add_argument("--min-units", type=int, default=0,
                    help="only blocks with at least this many units")
    ap.add_argument("--max-units", type=int, default=None,
                    help="only blocks with at most this many units (for a full identity check "
                         "of the paper formulation on the blocks it can finish)")
    ap.add_argument("--shard", default="0/1",
                    help="i/n: only every n-th selected block, starting at the i-th (to run "
                         "the long paper check in n processes side by side)")
    ap.add_argument("--paper-time-limit", type=float, default=20.0,
                    help="seconds per block for the paper formulation; claims it leaves "
                         "undecided make its time a lower bound (marked >=)")
    args = ap.parse_args()

    gen = generate_blocks(args.blocks, args.seed)
    tables = tabulate_sql(gen.targets)
    CF.is_trivial(C.Claim((0,), (0,), 1), next(iter(tables.values())))  # warm the caches
    fast_times: list[float] = []
    paper_times: list[float] = []
    ratios: list[float] = []
    mismatches = 0
    full_ratios: list[float] = []
    lower_ratios: list[float] = []
    rng = np.random.default_rng(args.seed)
    print(f"{'block':>16} {'units':>5} {'types':>5} {'cands':>6} {'verified':>8} "
          f"{'fast s':>8} {'paper s':>9} {'ratio':>7}")
    identical = 0
    refuted_total = confirmed_total = 0
    shard, shards = (int(p) for p in args.shard.split("/"))
    units = gen.targets["block"].value_counts()
    selected = [b for b in sorted(tables)
                if units[b] >= args.min_units
                and (args.max_units is None or units[b] <= args.max_units)]
    for block in selected[shard::shards]:
        release = C.BlockRelease(block, tables[block])
        m = C.compile_block(release)
        sols = CM.generate_solutions(m, args.k, seed=args.seed, patience=10)
        claim_sets = [CM.solution_claims(m, x) for x in sols]
        cand = claim_sets[0]
        for s in claim_sets[1:]:
            cand = np.intersect1d(cand, s, assume_unique=True)
        mult = cand & ((1 << CM.MULT_BITS) - 1)

        t0 = time.perf_counter()
        members = CM.claim_members(m, cand)
        groups = CF.group_claims(members, mult)
        found: list[np.ndarray] = []
        gstatus = CF.refute(m, groups.members, groups.mult, known=sols, witnesses=found)
        fast = gstatus[groups.of_claim]
        fast_s = time.perf_counter() - t0
        fast_times.append(fast_s)
        confirmed = confirm_refutations(release, m, cand, groups, fast, [*sols, *found])
        refuted_total += int((fast == 0).sum())
        confirmed_total += confirmed
        full = args.paper_sample == 0 or release.units <= args.paper_full_units
        if full or len(cand) <= args.paper_sample:
            pick = np.arange(len(cand))
        else:  # refuted candidates are rare: take up to half the sample from them
            refuted = np.flatnonzero(fast != 1)
            some = rng.choice(refuted, min(len(refuted), args.paper_sample // 2), replace=False)
            rest = rng.choice(np.flatnonzero(fast == 1), args.paper_sample - len(some),
                              replace=False)
            pick = np.sort(np.concatenate([some, rest]))
        claims = [CM.decode_claim(int(c)) for c in cand[pick]]
        t0 = time.perf_counter()
        paper = verify_paper(release, claims,
                             end=Deadline.after(args.paper_time_limit).end)
        spent = time.perf_counter() - t0
        n_decided = int((paper >= 0).sum())
        # seconds per decided claim times all candidates; with claims left undecided this
        # is a lower bound (each undecided claim took longer than what was left)
        paper_s = spent / max(n_decided, 1) * len(cand)
        if n_decided == len(cand):
            paper_s = spent
        # proven: the paper needed at least what it spent before its limit cut it short
        lower_ratios.append((spent if n_decided < len(pick) else paper_s) / fast_s)
        paper_times.append(paper_s)
        ratios.append(paper_s / fast_s)
        if n_decided == len(cand):
            full_ratios.append(paper_s / fast_s)
        decided = paper >= 0
        if not np.array_equal(paper[decided], fast[pick][decided]):
            mismatches += 1
            print(f"MISMATCH in block {block}: paper and fast differ on a claim")
        if n_decided == len(cand) and np.array_equal(paper, fast):
            identical += 1
        mark = ">" if n_decided < len(pick) else " " if len(pick) == len(cand) else "~"
        print(f"{block:>16} {release.units:>5} {len(m.types):>5} {len(cand):>6} "
              f"{int((fast == 1).sum()):>8} {fast_s:>8.3f} {mark}{paper_s:>8.1f} "
              f"{paper_s / fast_s:>7.0f}x  ({n_decided} of {len(pick)} decided by the paper; "
              f"refuted {int((fast == 0).sum())}, {confirmed} confirmed in its model)")
        sys.stdout.flush()
    print()
    print(f"blocks: {len(fast_times)}; median fast verify per block: "
          f"{statistics.median(fast_times):.3f} s (total {sum(fast_times):.1f} s)")
    if paper_times:
        print(f"paper formulation (~: extrapolated from its sample): median "
              f"{statistics.median(paper_times):.1f} s per block (total {sum(paper_times):.0f} s)")
        print(f"ratio paper/fast per block: median {statistics.median(ratios):.0f}x, "
              f"min {min(ratios):.0f}x; ratio of the medians "
              f"{statistics.median(paper_times) / statistics.median(fast_times):.0f}x")
        print(f"conservative ratio (a block cut short by the limit counts only the time the "
              f"paper spent): median {statistics.median(lower_ratios):.0f}x, "
              f"min {min(lower_ratios):.1f}x")
        if full_ratios:
            print(f"blocks with the paper on every candidate: {len(full_ratios)}, ratio median "
                  f"{statistics.median(full_ratios):.0f}x, min {min(full_ratios):.0f}x")
        print(f"blocks where the paper decided every candidate and both verified sets are "
              f"identical: {identical}")
        print(f"refutations by the default formulation confirmed in the paper's model (its "
              f"witness solves the paper's count != m model): {confirmed_total} of "
              f"{refuted_total} refuted candidates")
        print(f"blocks where every claim the paper decided agrees: "
              f"{len(paper_times) - mismatches} of {len(paper_times)}")
    return 1 if mismatches or confirmed_total < refuted_total else 0


def confirm_refutations(release: C.BlockRelease, m: CM.BlockModel, cand: np.ndarray,
                        groups: CF.ClaimGroups, fast: np.ndarray,
                        datasets: list[np.ndarray]) -> int:
    """Refuted candidates whose witness also solves the paper's model of "count != m".

    Each refuted claim is shown, with one consistent block that breaks it, to the paper's
    model (X fixed to that block); CP-SAT finding it feasible proves that the paper's
    formulation cannot verify that claim either. So on every block the paper's verified set
    is contained in the default's, however long the paper would take to decide the rest.
    """
    refuted = np.flatnonzero(fast == 0)
    if len(refuted) == 0:
        return 0
    base = build_paper_model(release)
    counts = groups.members.astype(np.int64) @ np.array(datasets).T  # questions x datasets
    ok = 0
    for c in refuted:
        g = groups.of_claim[c]
        d = int(np.flatnonzero(counts[g] != groups.mult[g])[0])
        rows = dataset_rows(base, m.types, datasets[d])
        ok += breaks_claim(base, CM.decode_claim(int(cand[c])), rows) == 1
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
