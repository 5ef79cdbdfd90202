"""Every protection on the 28 bundled tracts (issue 30, item 5): `statrecon experiment
protections` run as a user would, timed against its 30-minute target, beside a plain
exact-table reconstruction (SF1 tables, no certification, no scores) timed in the same run.

Prints each setting's seconds, utility and risk from the experiment's ``summary.json`` and
exits 1 if any person proven under CKM, rounding or suppression is missing from the truth
(swapping's proofs are facts of the swapped file, so its "false" persons are expected).

    .venv/bin/python benchmarks/bench_protections.py [--rank 5] [--certain-time-limit 1]
        [--workers 2] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from _machine import describe
from bench_census import (
    add_census_arguments,
    parse_census_arguments,
    plain_reconstruction,
    run,
)

TARGET_S = 1800.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, default=5, help="K re-drawn estimates per tract")
    ap.add_argument("--certain-time-limit", default="1",
                    help="seconds per block of a proof of certain persons")
    ap.add_argument("--keep", type=Path, help="write the experiment here (resumes it)")
    add_census_arguments(ap)
    args = parse_census_arguments(ap)
    workers = str(args.workers)
    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        t_plain = plain_reconstruction(args.persons, d, workers)
        out = args.keep or d / "protections"
        t0 = time.perf_counter()
        run("experiment", "protections", "--truth", args.persons, "--out", out,
            "--workers", workers, "--rank", str(args.rank), "--certain-time-limit",
            args.certain_time_limit, "--quiet", "--json")
        total = time.perf_counter() - t0
        rows = json.loads((out / "summary.json").read_text(encoding="utf-8"))["rows"]
    print(f"experiment protections, 28 tracts, K = {args.rank}, certain time limit "
          f"{args.certain_time_limit} s per block, {args.workers} workers")
    print(f"{'setting':<22}{'seconds':>9}{'MAE':>7}{'age groups':>12}{'certain':>9}"
          f"{'(false)':>9}{'blocks unknown':>16}")
    false = 0
    for r in rows:
        unknown = (r.get("certain_blocks") or {}).get("unknown", 0)
        agree = r.get("agreement_binned")
        print(f"{r['method'] + ' ' + r['parameter']:<22}{r.get('seconds', 0):>9.1f}"
              f"{r['mae']:>7.2f}{'-' if agree is None else f'{agree:.1%}':>12}"
              f"{r['certain'] or 0:>9,}{r['certain_false'] or 0:>9,}{unknown:>16,}")
        if r["method"] != "swap":
            false += r["certain_false"] or 0
    print(f"  plain exact-table reconstruction (same run): {t_plain:7.1f} s")
    print(f"  the experiment: {total:7.1f} s = {total / t_plain:.1f}x the plain "
          f"reconstruction; target {TARGET_S:.0f} s: "
          f"{'met' if total <= TARGET_S else 'NOT met'}")
    if false:
        sys.exit(f"{false} persons proven under CKM, rounding or suppression are not in "
                 "the truth")


if __name__ == "__main__":
    main()
