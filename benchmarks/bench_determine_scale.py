"""Exact determinability at scale, and rounding as a defence (issue 14, items 3 and 6).

(a) Dense Dinur–Nissim release: n = 1000 secret bits, k = 4n random subset counts, exact
    answers (target <= 10 s, every certificate checked exactly). Baseline side by side: numpy's
    floating-point rank of the same matrix (no proof; what a float check costs).
(b) Census-like sparse release: 20,000 people in 40 tracts of 10 blocks of 50; public block,
    sex and age; secret indicator. Per block 40 counts (per sex: 15 nested ``age <= A`` and 5
    age bands), per tract 100 counts of ``sex AND age band`` over the whole tract (at most 50
    people each): 20,000 statistics, <= 50 non-zeros per row (target <= 60 s). The wider
    counts join a tract's blocks, so the statistic–record graph has one component per tract.
    Baseline: scipy's sparse float LU rank surrogate is not exact either, so the baseline is
    numpy's float rank of one tract's block times the number of tracts.
(c) Rounding as a defence: a Dinur–Nissim-like release of AVG over random halves of n = 60
    integer secrets in 0..9 (k = 2n), each AVG published to d decimals (error 0.5·10^-d); for
    d = 0..4: records pinned (their exact interval holds one integer), records bounded more
    narrowly than 0..9, and seconds.

    .venv/bin/python benchmarks/bench_determine_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

from statrecon.engines.linear import determine


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def dense_release(n: int, seed: int = 1) -> tuple[np.ndarray, list[Fraction], np.ndarray]:
    rng = np.random.default_rng(seed)
    F = (rng.random((4 * n, n)) < 0.5).astype(np.float64)
    s = (rng.random(n) < 0.5).astype(np.int64)
    return F, [Fraction(int(v)) for v in F.astype(np.int64) @ s], s


def census_like(tracts: int = 40, seed: int = 2
                ) -> tuple[sp.csr_matrix, list[Fraction], np.ndarray]:
    """The instance of (b): rows over people, 0/1, <= 50 non-zeros each."""
    rng = np.random.default_rng(seed)
    blocks_per_tract, per_block = 10, 50
    n = tracts * blocks_per_tract * per_block
    sex = rng.integers(0, 2, n)
    age = rng.integers(0, 100, n)
    secret = (rng.random(n) < 0.3).astype(np.int64)
    rows: list[np.ndarray] = []
    for t in range(tracts):
        tract = np.arange(t * 500, (t + 1) * 500)
        for b in range(blocks_per_tract):
            people = tract[b * per_block:(b + 1) * per_block]
            for s in (0, 1):
                mine = people[sex[people] == s]
                for a in np.sort(rng.choice(100, 15, replace=False)):
                    rows.append(mine[age[mine] <= a])
                for lo in rng.choice(np.arange(0, 100, 10), 5, replace=False):
                    rows.append(mine[(age[mine] >= lo) & (age[mine] < lo + 20)])
        for _ in range(100):
            s, lo, width = int(rng.integers(0, 2)), int(rng.integers(0, 100)), 10
            chosen = tract[(sex[tract] == s) & (age[tract] >= lo) & (age[tract] < lo + width)]
            rows.append(chosen[:50])
    indptr = np.cumsum([0, *(len(r) for r in rows)])
    F = sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(rows), indptr),
                      shape=(len(rows), n))
    answers = [Fraction(int(v)) for v in F @ secret]
    return F, answers, secret


def bench_dense(n: int) -> None:
    F, b, s = dense_release(n)
    print(f"(a) dense Dinur–Nissim, n = {n}, k = {4 * n}, exact answers")
    t, det = timed(lambda: determine(F, b))
    right = all(c.value == s[c.index] for c in det.determined)
    print(f"    determine {t:8.2f} s   rank {det.rank}, {len(det.determined)} proven "
          f"({'all equal the truth' if right else 'MISMATCH'}), block proofs {len(det.blocks)}"
          f" (target <= 10 s)")
    t_np, rank = timed(lambda: np.linalg.matrix_rank(F))
    print(f"    numpy float rank {t_np:8.2f} s   rank {rank} (no proof);   ratio {t / t_np:.1f}x")


def bench_census(tracts: int) -> None:
    F, b, s = census_like(tracts)
    print(f"(b) census-like sparse: {F.shape[1]:,} people, {F.shape[0]:,} counts, "
          f"max {int(np.diff(F.indptr).max())} non-zeros per row")
    t, det = timed(lambda: determine(F, b))
    right = all(c.value == s[c.index] for c in det.determined)
    listed = sum(1 for c in det.determined if c.block is None)
    print(f"    determine {t:8.2f} s   rank {det.rank}, {len(det.determined):,} proven "
          f"({listed:,} with listed coefficients; "
          f"{'all equal the truth' if right else 'MISMATCH'}) (target <= 60 s)")
    one = F[:500].toarray()
    one = one[:, np.any(one != 0, axis=0)]
    t_np, _ = timed(lambda: np.linalg.matrix_rank(one))
    print(f"    numpy float rank of one tract x {tracts}: {t_np * tracts:8.2f} s (no proof, "
          f"no certificates);   ratio {t / (t_np * tracts):.1f}x")


def avg_release(n: int, d: int, seed: int = 3
                ) -> tuple[np.ndarray, list[Fraction], list[Fraction], np.ndarray]:
    """SUM rows of AVGs over random halves, each AVG rounded to d decimals."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 10, n)
    F = (rng.random((2 * n, n)) < 0.5).astype(np.int64)
    F = F[F.sum(axis=1) > 0]
    answers, errors = [], []
    for row in F:
        g = int(row.sum())
        avg = Fraction(int(row @ x), g)
        published = Fraction(round(avg * 10**d), 10**d)
        answers.append(published * g)
        errors.append(Fraction(1, 2 * 10**d) * g)
    return F.astype(np.float64), answers, errors, x


def bench_rounding(n: int) -> None:
    print(f"(c) rounding as a defence: AVG over random halves of {n} integers in 0..9, "
          f"k = {2 * n}")
    print("    decimals   pinned   bounded   all true   seconds")
    for d in range(5):
        F, b, e, x = avg_release(n, d)
        t, det = timed(lambda F=F, b=b, e=e: determine(F, b, e))
        pinned, bounded, true = 0, 0, True
        for c in (*det.determined, *det.bounded):
            low, high = max(c.low, Fraction(0)), min(c.high, Fraction(9))
            ints = int(np.floor(float(high))) - int(np.ceil(float(low))) + 1
            true &= low <= int(x[c.index]) <= high
            pinned += ints == 1
            bounded += 1 < ints < 10
        print(f"    {d:8d} {pinned:8d} {bounded:9d} {true!s:>10} {t:9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller instances")
    args = parser.parse_args()
    bench_dense(300 if args.quick else 1000)
    bench_census(8 if args.quick else 40)
    bench_rounding(40 if args.quick else 60)


if __name__ == "__main__":
    main()
