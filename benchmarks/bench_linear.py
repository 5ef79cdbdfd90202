"""Linear engine benchmark: our solvers next to a plain reference, measured in one process.

(a) ``solve_ls`` vs numpy's normal equations (FᵀF, one ``np.linalg.solve``), dense random 0/1
    queries, n = 5000, k = 4n; ratio ours / numpy (target <= 1.5).
(b) ``solve_lp_l1`` (and ``solve_lp_linf``) at n = 1000, k = 4n, Gaussian σ = 0.05·√n: seconds
    (target <= 60) and accuracy; next to it the same LP solved by HiGHS's interior point method
    (``linprog(method="highs-ipm")``), to show what choosing the LP algorithm is worth.
(c) ``determine`` on a census-like instance: 2,560 people with public zip, sex and age, 256
    counts of a secret diagnosis over conjunctions and ranges of those, a few of them
    difference-attack pairs (target <= 10 s); and, separately, a dense random 0/1 instance of
    the same size.
(d) ``solve_kaczmarz`` vs ``solve_ls`` at n = 5000, k = 4n, low noise: seconds for Kaczmarz to
    reach least squares' bit accuracy (checked after every epoch), ratio to ls's seconds.

    .venv/bin/python benchmarks/bench_linear.py [--quick] [--skip-random-determine]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from statrecon.engines.linear import determine
from statrecon.engines.linear.solvers import (
    solve_kaczmarz,
    solve_lp_l1,
    solve_lp_linf,
    solve_ls,
)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def instance(n: int, c: float, factor: float, seed: int) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    """Secret bits, dense random 0/1 queries (k = c·n), answers with noise σ = factor·√n."""
    rng = np.random.default_rng(seed)
    s = (rng.random(n) < 0.5).astype(np.float64)
    F = (rng.random((round(c * n), n)) < 0.5).astype(np.float64)
    a = F @ s + rng.normal(0.0, factor * math.sqrt(n), F.shape[0])
    return F, a, s


def accuracy(x: np.ndarray, s: np.ndarray) -> float:
    return float(np.mean((np.nan_to_num(x) >= 0.5) == (s >= 0.5)))


def lp_ipm(F: np.ndarray, a: np.ndarray, kind: str) -> np.ndarray:
    """The LP of ``solve_lp_l1`` / ``solve_lp_linf`` (same variables and rows), solved by
    HiGHS's interior point method through ``scipy.optimize.linprog(method="highs-ipm")``.

    A what-if for ``solvers._highs``: ``milp`` offers no choice of LP algorithm and HiGHS picks
    simplex on its own, which is slow on these dense systems.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    k, n = F.shape
    Fs, eye = sp.csr_matrix(F), sp.identity(k, format="csr")
    if kind == "l1":  # F x + e+ - e- = a, minimise sum(e+ + e-)
        c = np.concatenate([np.zeros(n), np.ones(2 * k)])
        upper = np.concatenate([np.ones(n), np.full(2 * k, np.inf)])
        bounds = np.column_stack([np.zeros(n + 2 * k), upper])
        res = linprog(c, A_eq=sp.hstack([Fs, eye, -eye], format="csc"), b_eq=a, bounds=bounds,
                      method="highs-ipm")
    else:  # F x + e = a, e - t <= 0, -e - t <= 0, minimise t
        ones, zero_n = sp.csr_matrix(np.ones((k, 1))), sp.csr_matrix((k, n))
        A_eq = sp.hstack([Fs, eye, sp.csr_matrix((k, 1))], format="csc")
        A_ub = sp.vstack([sp.hstack([zero_n, eye, -ones]), sp.hstack([zero_n, -eye, -ones])],
                         format="csc")
        c = np.concatenate([np.zeros(n + k), [1.0]])
        lower = np.concatenate([np.zeros(n), np.full(k, -np.inf), [0.0]])
        upper = np.concatenate([np.ones(n), np.full(k, np.inf), [np.inf]])
        res = linprog(c, A_ub=A_ub, b_ub=np.zeros(2 * k), A_eq=A_eq, b_eq=a,
                      bounds=np.column_stack([lower, upper]), method="highs-ipm")
    return np.asarray(res.x[:n])


# --------------------------------------------------------------------------- (a)


def bench_ls(n: int, repeats: int) -> None:
    F, a, s = instance(n, 4, 0.05, seed=1)
    print(f"(a) least squares, dense random 0/1, n = {n}, k = {F.shape[0]}")
    ours, ref = [], []
    for _ in range(repeats):  # interleaved, so machine noise hits both alike
        t1, x1 = timed(lambda: solve_ls(F, a))
        t2, x2 = timed(lambda: np.linalg.solve(F.T @ F, F.T @ a))
        ours.append(t1)
        ref.append(t2)
    t_ours, t_ref = min(ours), min(ref)
    print(f"    solve_ls                      {t_ours:8.2f} s   accuracy {accuracy(x1, s):.4f}")
    print(f"    numpy FᵀF + np.linalg.solve   {t_ref:8.2f} s   accuracy {accuracy(x2, s):.4f}")
    print(f"    ratio ours / numpy            {t_ours / t_ref:8.2f}x  (target <= 1.5; best of "
          f"{repeats})")


# --------------------------------------------------------------------------- (b)


def bench_lp(n: int) -> None:
    F, a, s = instance(n, 4, 0.05, seed=2)
    lo, hi = np.zeros(n), np.ones(n)
    print(f"(b) LP decoding, dense random 0/1, n = {n}, k = {F.shape[0]}, σ = 0.05·√n")
    for name, fn, kind in (("solve_lp_l1", solve_lp_l1, "l1"),
                           ("solve_lp_linf", solve_lp_linf, "linf")):
        t_ours, x_ours = timed(lambda fn=fn: fn(F, a, lo, hi))
        t_ipm, x_ipm = timed(lambda kind=kind: lp_ipm(F, a, kind))
        print(f"    {name:14} {t_ours:8.2f} s  accuracy {accuracy(x_ours, s):.4f}  (target <= "
              f"60 s) | same LP, linprog highs-ipm {t_ipm:7.2f} s  accuracy "
              f"{accuracy(x_ipm, s):.4f} | ratio {t_ours / t_ipm:5.1f}x")


# --------------------------------------------------------------------------- (c)


def census_like(people: int = 2560, stats: int = 256, seed: int = 3
                ) -> tuple[np.ndarray, list[Fraction], int]:
    """A public roster (zip, sex, age) and counts of a secret diagnosis over it.

    Statistics: every zip × sex × age-band cell (8 × 2 × 10), the zip, sex and age-band
    margins, and then difference-attack pairs ``zip = z AND age <= A`` / ``... age <= A - 1``
    until there are ``stats`` rows. Returns the matrix, the exact answers and how many pairs
    isolate exactly one person (each of those pins a record).
    """
    rng = np.random.default_rng(seed)
    zips = rng.integers(0, 8, people)
    sex = rng.integers(0, 2, people)
    age = np.minimum(rng.gamma(4.0, 10.0, people).astype(int), 99)
    band = np.minimum(age // 10, 9)
    secret = (rng.random(people) < 0.3).astype(np.int64)
    rows: list[np.ndarray] = []
    for z in range(8):
        for x in range(2):
            for b in range(10):
                rows.append((zips == z) & (sex == x) & (band == b))
    rows += [zips == z for z in range(8)]
    rows += [sex == x for x in range(2)]
    rows += [band == b for b in range(10)]
    singles = 0
    tries = 0
    while len(rows) + 2 <= stats and tries < 100_000:
        tries += 1
        z, A = int(rng.integers(0, 8)), int(rng.integers(1, 100))
        upper, lower = (zips == z) & (age <= A), (zips == z) & (age <= A - 1)
        diff = int(upper.sum() - lower.sum())
        if diff == 0 or not lower.any():
            continue
        singles += diff == 1
        rows += [upper, lower]
    F = np.array(rows[:stats], dtype=np.float64)
    answers = [Fraction(int(v)) for v in F @ secret]
    return F, answers, singles


def bench_determine(skip_random: bool) -> None:
    F, answers, singles = census_like()
    print(f"(c) determine: census-like, {F.shape[1]} people, {F.shape[0]} counts "
          f"({singles} difference pairs isolate one person)")
    t, det = timed(lambda: determine(F, answers))
    print(f"    {t:8.2f} s   rank {det.rank}, {len(det.determined)} records proven "
          f"(target <= 10 s)")
    if skip_random:
        return
    rng = np.random.default_rng(4)
    R = (rng.random(F.shape) < 0.5).astype(np.float64)
    s = (rng.random(F.shape[1]) < 0.5).astype(np.int64)
    answers_r = [Fraction(int(v)) for v in R @ s]
    t, det = timed(lambda: determine(R, answers_r))
    print(f"    dense random 0/1, same size: {t:8.2f} s   rank {det.rank}, "
          f"{len(det.determined)} records proven")


# --------------------------------------------------------------------------- (d)


def bench_kaczmarz(n: int, max_epochs: int) -> None:
    F, a, s = instance(n, 4, 0.05, seed=5)
    print(f"(d) Kaczmarz vs least squares, n = {n}, k = {F.shape[0]}, σ = 0.05·√n")
    t_ls, x_ls = timed(lambda: solve_ls(F, a))
    t_np, _ = timed(lambda: np.linalg.solve(F.T @ F, F.T @ a))
    target = accuracy(x_ls, s)
    rng = np.random.default_rng(0)
    lo, hi = np.zeros(n), np.ones(n)
    x = np.zeros(n)
    spent, reached, epochs = 0.0, None, 0
    for epoch in range(1, max_epochs + 1):
        t, x = timed(lambda x=x: solve_kaczmarz(F, a, lo, hi, epochs=1.0, rng=rng, x0=x))
        spent += t
        epochs = epoch
        if accuracy(x, s) >= target:
            reached = epoch
            break
    got = accuracy(x, s)
    print(f"    solve_ls {t_ls:.2f} s (numpy normal equations {t_np:.2f} s), accuracy {target:.4f}")
    if reached is None:
        print(f"    solve_kaczmarz did not reach it in {epochs} epochs ({spent:.2f} s, accuracy "
              f"{got:.4f})")
    else:
        print(f"    solve_kaczmarz reached {got:.4f} after {reached} epoch(s): {spent:.2f} s")
    print(f"    ratio kaczmarz / solve_ls {spent / t_ls:6.2f}x; kaczmarz / numpy "
          f"{spent / t_np:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (about a minute)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--skip-random-determine", action="store_true",
                        help="skip the dense random determine instance")
    args = parser.parse_args()
    n_ls = 1000 if args.quick else 5000
    repeats = args.repeats or (3 if args.quick else 1)
    bench_ls(n_ls, repeats)
    bench_lp(300 if args.quick else 1000)
    bench_determine(args.skip_random_determine or args.quick)
    bench_kaczmarz(n_ls, 30)


if __name__ == "__main__":
    main()
