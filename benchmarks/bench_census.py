"""Census at scale: all 28 tracts of the bundled file, tabulated, reconstructed, certified.

Runs the real CLI (as a user would) and prints wall time per stage, peak memory, persons per
core-second, and the ratio to the Bureau's published scale (308,745,538 persons; about three
days on 30 machines of 96 vCPUs for the reconstruction, and a separate campaign for solution
variability). With ``--dask`` it repeats the reconstruction on a local Dask cluster and checks
that the results are identical.

    .venv/bin/python benchmarks/bench_census.py [--workers 2] [--dask]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "census" / "census2010_reconstructed_persons.csv.gz"
SCRIPT = [str(Path(sys.executable).parent / "statrecon")]
BUREAU_PERSONS = 308_745_538
BUREAU_CORE_SECONDS = 3 * 24 * 3600 * 30 * 96  # about three days on 30 x 96 vCPUs


def run(*args: str | Path) -> tuple[dict[str, object], float]:
    t0 = time.perf_counter()
    proc = subprocess.run([*SCRIPT, *map(str, args)], capture_output=True, text=True,
                          check=False)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))} failed ({proc.returncode}): {proc.stderr}")
    return (json.loads(proc.stdout) if proc.stdout.strip() else {}), elapsed


def plain_reconstruction(persons: Path, folder: Path, workers: str) -> float:
    """The baseline the census benchmarks set their runs against: the exact SF1 tables of
    ``persons`` tabulated into ``folder``, then reconstructed without certification or
    scores; its wall seconds."""
    run("census", "tabulate", "--persons", persons, "--out", folder / "exact.parquet",
        "--json")
    _, seconds = run("census", "reconstruct", folder / "exact.parquet", "--out",
                     folder / "plain.parquet", "--workers", workers, "--no-certify", "--json")
    return seconds


def add_census_arguments(ap: argparse.ArgumentParser) -> None:
    """``--workers`` and ``--persons``, as every census benchmark takes them."""
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--persons", type=Path, default=DATA)


def parse_census_arguments(ap: argparse.ArgumentParser) -> argparse.Namespace:
    """The arguments, or exit naming the persons file when it is not there."""
    args = ap.parse_args()
    if not args.persons.exists():
        sys.exit(f"{args.persons}: not found (the bundled file is {DATA.relative_to(ROOT)})")
    return args


def main() -> None:
    ap = argparse.ArgumentParser()
    add_census_arguments(ap)
    ap.add_argument("--dask", action="store_true", help="also run on a local Dask cluster")
    args = parse_census_arguments(ap)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        tab, t_tab = run("census", "tabulate", "--persons", args.persons, "--out",
                         d / "release.parquet", "--json")
        rec, t_rec = run("census", "reconstruct", d / "release.parquet", "--out",
                         d / "recon.parquet", "--workers", str(args.workers), "--json")
        _, t_plain = run("census", "reconstruct", d / "release.parquet", "--out",
                         d / "recon_plain.parquet", "--workers", str(args.workers),
                         "--no-certify", "--json")
        cmp_, t_cmp = run("census", "compare", "--truth", args.persons, "--recon",
                          d / "recon.parquet", "--json")
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        persons = int(tab["persons"])  # type: ignore[call-overload]
        total = t_tab + t_rec
        core_s = total * args.workers
        ours = persons / core_s
        bureau = BUREAU_PERSONS / BUREAU_CORE_SECONDS
        print(f"persons {persons:,}  blocks {tab['blocks']:,}  tracts {tab['tracts']}")
        print(f"tabulate      {t_tab:7.1f} s")
        print(f"reconstruct   {t_rec:7.1f} s  (workers {args.workers}; solve + certify, "
              f"statuses {rec['statuses']})")
        print(f"reconstruct --no-certify {t_plain:7.1f} s in the same run: certification costs "
              f"{t_rec / t_plain:.2f}x a plain reconstruction (the Bureau needed a second "
              f"campaign for it)")
        print(f"compare       {t_cmp:7.1f} s")
        print(f"tabulate + reconstruct + certify: {total:.1f} s wall "
              f"({'within' if total <= 600 else 'OVER'} the 10-minute target)")
        print(f"peak memory of one process (max RSS): {peak_mib:,.0f} MiB")
        print(f"persons per core-second: {ours:,.1f}; Bureau (reconstruction only, "
              f"{BUREAU_PERSONS:,} persons / {BUREAU_CORE_SECONDS:,} core-s): {bureau:.2f}; "
              f"ratio {ours / bureau:,.0f}x (theirs excludes the uniqueness campaign, ours "
              f"includes certification)")
        print("compare:", json.dumps(cmp_, indent=None))
        if cmp_["certified_blocks_mismatched"] or cmp_["certain_persons_not_in_truth"] or \
                cmp_["certified_binned_blocks_mismatched"]:
            sys.exit("SOUNDNESS FAILURE: a certified block or person differs from the truth")
        if args.dask:
            import pyarrow.parquet as pq
            from distributed import LocalCluster

            with LocalCluster(n_workers=args.workers, threads_per_worker=1,
                              host="127.0.0.1", dashboard_address=None) as cluster:
                address = cluster.scheduler_address.replace("tcp://", "dask://")
                _, t_dask = run("census", "reconstruct", d / "release.parquet", "--out",
                                d / "recon_dask.parquet", "--executor", address, "--json")
            same = pq.read_table(d / "recon.parquet").to_pylist() == \
                pq.read_table(d / "recon_dask.parquet").to_pylist()
            print(f"dask LocalCluster ({args.workers} workers): {t_dask:.1f} s, "
                  f"{t_dask / t_rec:.2f}x the local pool; identical results: {same}")
            if not same:
                sys.exit(1)


if __name__ == "__main__":
    main()
