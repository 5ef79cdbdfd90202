"""Census under DP at scale (issue 16): all 28 bundled tracts at one rho, noise-aware
reconstruction ranked by K re-drawn estimates, persons certain within the noise, and the
comparison with the truth, beside a plain exact-table reconstruction in the same run.

Runs the real CLI, as a user would, and prints the wall time of each stage, the total against
the 10-minute target, and the cost ratio to the plain reconstruction (SF1 tables, no
certification, no scores) timed in this same run.

    .venv/bin/python benchmarks/bench_dp_census.py [--rho 2.63] [--rank 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

# the same CLI runner (one subprocess per stage) and arguments
from bench_census import (
    add_census_arguments,
    parse_census_arguments,
    plain_reconstruction,
    run,
)

TARGET_S = 600.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rho", default="2.63")
    ap.add_argument("--rank", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    add_census_arguments(ap)
    args = parse_census_arguments(ap)
    workers = str(args.workers)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        t_plain = plain_reconstruction(args.persons, d, workers)
        _, t_tab = run("census", "tabulate", "--persons", args.persons, "--out",
                       d / "noisy.parquet", "--dp-rho", args.rho, "--seed", str(args.seed),
                       "--json")
        rec, t_rec = run("census", "reconstruct", d / "noisy.parquet", "--out",
                         d / "recon.parquet", "--workers", workers, "--rank", str(args.rank),
                         "--json")
        cert, t_cert = run("census", "certain", d / "noisy.parquet", "--out",
                           d / "certain.parquet", "--workers", workers, "--json")
        cmp_, t_cmp = run("census", "compare", "--truth", args.persons, "--recon",
                          d / "recon.parquet", "--certain", d / "certain.parquet", "--json")
    total = t_tab + t_rec + t_cert
    scores = cmp_["scores"]
    ranked = cmp_["precision_at_k"]
    assert isinstance(scores, dict) and isinstance(ranked, dict)
    print(f"rho = {args.rho}, K = {args.rank}, {args.workers} workers, "
          f"{rec['tracts']} tracts, {rec['persons']:,} persons reconstructed")
    print(f"  plain exact-table reconstruction (no certify, no rank): {t_plain:7.1f} s")
    print(f"  noisy tabulation:                                       {t_tab:7.1f} s")
    print(f"  noise-aware reconstruction + rank (K = {args.rank}):            "
          f"{t_rec:7.1f} s")
    print(f"  certain within the noise (delta 0.05):                  {t_cert:7.1f} s  "
          f"({cert['certain_within_noise']:,} persons, statuses {cert['statuses']})")
    print(f"  total (tabulate + reconstruct + rank + certify):        {total:7.1f} s  "
          f"target < {TARGET_S:.0f} s: {'met' if total < TARGET_S else 'NOT met'}")
    print(f"  cost ratio to the plain reconstruction:                 {total / t_plain:7.1f}x")
    print(f"  comparison with the truth ({t_cmp:.0f} s): agreement exact "
          f"{scores['agreement_exact']:.3f}, binned {scores['agreement_binned']:.3f}; "
          f"precision top 1% {ranked['1%']:.3f}, top 10% {ranked['10%']:.3f}; certain "
          f"{cmp_['certain_within_noise']} ({cmp_['certain_within_noise_not_in_truth']} not "
          "in the truth)")
    if cmp_["certain_within_noise_not_in_truth"]:
        sys.exit("a person proven certain within the noise is not in the truth")


if __name__ == "__main__":
    main()
