"""Exact engine benchmark: enumeration time with and without symmetry breaking.

Both variants run side by side in this process, interleaved, so machine noise hits both alike.
Prints a table and the ratio (time without / time with symmetry breaking).

    .venv/bin/python benchmarks/bench_exact.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from statrecon.engines.exact import ExactOptions, enumerate_datasets
from statrecon.release.files import load_release
from statrecon.release.known import compile_known

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CASES = [("2B only (3 males, median 30, mean 44)", "block_2b.yaml"),
         ("census block, all of Figure 1", "block.yaml")]


def run(path: Path, symmetry: bool) -> tuple[float, int, bool]:
    """Seconds, distinct datasets, completeness."""
    release = load_release(path)
    known = compile_known(release, None)
    start = time.perf_counter()
    datasets, complete, _ = enumerate_datasets(
        release, known, ExactOptions(limit=10**7, symmetry_breaking=symmetry))
    return time.perf_counter() - start, len(datasets), complete


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'case':40} {'datasets':>8} {'with SB (s)':>12} {'without SB (s)':>15} "
          f"{'ratio':>7}")
    for label, name in CASES:
        with_sb, without_sb = [], []
        count = None
        for _ in range(args.repeats):
            t1, n1, c1 = run(EXAMPLES / name, True)
            t2, n2, c2 = run(EXAMPLES / name, False)
            assert c1 and c2 and n1 == n2, "both variants must enumerate the same datasets"
            count = n1
            with_sb.append(t1)
            without_sb.append(t2)
        a, b = statistics.median(with_sb), statistics.median(without_sb)
        print(f"{label:40} {count:>8} {a:>12.4f} {b:>15.4f} {b / a:>6.1f}x")
    cli = [str(Path(sys.executable).parent / "statrecon"), "reconstruct",
           str(EXAMPLES / "block.yaml"), "--json"]
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        subprocess.run(cli, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(f"statrecon reconstruct examples/block.yaml, process start included: "
          f"median {statistics.median(times):.2f} s over {args.repeats} runs")


if __name__ == "__main__":
    main()
