"""Front-door benchmark (issue 14 items 4 and 5): what reading a release costs next to solving it.

(a) A 4,000-statistic Aircloak-like release over 73 records: Cohen–Nissim and conjunction
    queries (``statrecon.querygen``) answered by the Diffix-like mechanism
    (``statrecon.mechanisms.DiffixLike``), written as a YAML release with a public table. Timed
    side by side in one process: the whole ``reconstruct --method lp-l1`` path in process
    (``statrecon.api.reconstruct``: load_release + public table + compile + solve, with the
    parts timed apart too) and as a CLI subprocess, against the same LP (same matrix, answers,
    weights and box) given straight to HiGHS (``scipy.optimize.linprog(method="highs-ipm")``).
    Ratio whole / LP, target <= 1.5.
(b) 100,000 statistics in a Parquet ``statistics_file`` over 300 public ids: load + compile
    seconds (target < 10).

Generated releases live in a temporary folder.

    .venv/bin/python benchmarks/bench_front_door.py [--repeat 3] [--skip-cli] [--skip-100k]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def aircloak_like(folder: Path, k: int = 4000, n: int = 73, seed: int = 0) -> Path:
    """The release of (a): YAML plus public.csv in ``folder``."""
    import pandas as pd
    import scipy.sparse as sp

    from statrecon import querygen
    from statrecon.mechanisms import DiffixLike
    from statrecon.outputs import dump_yaml

    rng = np.random.default_rng(seed)
    ids = np.arange(1, n + 1)
    frame = pd.DataFrame({"id": ids, "age": rng.integers(18, 90, n),
                          "sex": rng.choice(["F", "M"], n),
                          "zip": rng.choice(["z02138", "z02139", "z02140", "z02141"], n)})
    secret = rng.random(n) < 0.5
    offsets = tuple(float(x) for x in np.linspace(1, 10, 20))
    exponents = tuple(float(x) for x in np.linspace(0.5, 0.8, 15))
    cn = querygen.cohen_nissim(ids, (2, 3, 5, 7, 11, 13, 17, 19, 23, 29), offsets, exponents,
                               secret_condition="dx = 'yes'")
    cj = querygen.conjunctions(frame, ["age", "sex", "zip"], k - len(cn), rng,
                               secret_condition="dx = 'yes'")
    sql = cn.sql + cj.sql
    out = DiffixLike(1.0, seed=seed).answer(sp.vstack([cn.matrix, cj.matrix]),
                                            secret.astype(float), rng, queries=sql)
    stds = np.broadcast_to(np.asarray(out.noise_scale, dtype=float), out.answers.shape)
    doc = {
        "version": 1, "name": "aircloak-like", "table": "t", "records": n,
        "public": "public.csv",
        "columns": {"id": {"type": "integer", "known": True},
                    "age": {"type": "integer", "known": True},
                    "sex": {"type": "categorical", "values": ["F", "M"], "known": True},
                    "zip": {"type": "categorical", "known": True,
                            "values": ["z02138", "z02139", "z02140", "z02141"]},
                    "dx": {"type": "categorical", "values": ["yes", "no"]}},
        "statistics": [{"id": f"q{i + 1}", "sql": s, "value": round(float(v), 2),
                        "noise": {"gaussian": float(sd)}}
                       for i, (s, v, sd) in enumerate(zip(sql, out.answers, stds, strict=True))],
    }
    (folder / "release.yaml").write_text(dump_yaml(doc, width=10_000), encoding="utf-8")
    frame.to_csv(folder / "public.csv", index=False)
    return folder / "release.yaml"


def straight_lp(system: Any) -> float:
    """Seconds for the lp-l1 LP of ``system`` given straight to HiGHS (no statrecon code):
    F x + e+ - e- = a, box on x, minimise sum w (e+ + e-), w as the engine weighs noise."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    F, a = system.matrix, system.answers
    k, n = F.shape
    scales = np.where(system.scales > 0, system.scales, 0.0)
    floor = scales[scales > 0].min() / 10 if (scales > 0).any() else 1.0
    w = 1.0 / np.maximum(scales, floor) ** 2
    start = time.perf_counter()
    eye = sp.identity(k, format="csr")
    res = linprog(np.concatenate([np.zeros(n), w, w]),
                  A_eq=sp.hstack([sp.csr_matrix(F), eye, -eye], format="csc"), b_eq=a,
                  bounds=np.column_stack([np.concatenate([system.lower, np.zeros(2 * k)]),
                                          np.concatenate([system.upper, np.full(2 * k, np.inf)])]),
                  method="highs-ipm")
    seconds = time.perf_counter() - start
    assert res.status == 0, res.message
    return seconds


def front_door(release: Path, repeat: int, cli: bool) -> None:
    from statrecon.api import reconstruct
    from statrecon.engines.linear import LinearOptions, reconstruct_linear
    from statrecon.engines.linear.model import compile_linear
    from statrecon.release.files import load_release
    from statrecon.release.known import load_public

    rows: dict[str, list[float]] = {k: [] for k in ("whole", "lp", "load", "public", "compile",
                                                      "solve", "cli")}
    for _ in range(repeat):
        whole, result = timed(partial(reconstruct, release, method="lp-l1"))
        rows["whole"].append(whole)
        t_load, rel = timed(partial(load_release, release))
        assert rel.public is not None
        t_public, public = timed(partial(load_public, rel.public, rel.schema))
        t_compile, system = timed(partial(compile_linear, rel, public))
        t_solve, _ = timed(partial(reconstruct_linear, system, LinearOptions(method="lp-l1")))
        rows["load"].append(t_load)
        rows["public"].append(t_public)
        rows["compile"].append(t_compile)
        rows["solve"].append(t_solve)
        rows["lp"].append(straight_lp(system))
        if cli:
            command = [str(Path(sys.executable).with_name("statrecon")), "reconstruct",
                       str(release), "--method", "lp-l1", "--json"]
            t_cli, done = timed(partial(subprocess.run, command, capture_output=True,
                                        check=False))
            assert done.returncode == 0, done.stderr.decode()[-400:]
            rows["cli"].append(t_cli)
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    print(f"(a) {system.k} statistics x {system.n} records, lp-l1, status {result.status}, "
          f"median of {repeat}")
    print(f"    LP straight to HiGHS (linprog highs-ipm)  {med['lp']:7.3f} s")
    print(f"    whole path in process (api.reconstruct)    {med['whole']:7.3f} s   "
          f"ratio {med['whole'] / med['lp']:5.2f}  (target <= 1.5)")
    print(f"      load_release {med['load']:.3f}  public table {med['public']:.3f}  "
          f"compile {med['compile']:.3f}  reconstruct_linear {med['solve']:.3f}")
    if "cli" in med:
        print(f"    CLI subprocess (statrecon reconstruct)     {med['cli']:7.3f} s   "
              f"ratio {med['cli'] / med['lp']:5.2f}")


def columnar_100k(folder: Path, k: int = 100_000, n: int = 300, seed: int = 0) -> None:
    """(b): 100,000 Cohen–Nissim-like statistics in Parquet, load and compile timed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from statrecon.engines.linear.model import compile_linear
    from statrecon.release.files import load_release
    from statrecon.release.known import PublicTable

    rng = np.random.default_rng(seed)
    primes = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29)
    offsets = [float(x) for x in np.round(np.linspace(1, 10, 100), 6)]
    exponents = [float(x) for x in np.round(np.linspace(0.5, 0.8, 100), 6)]
    sql = [f"SELECT COUNT(*) FROM t WHERE floor({o!r}e0 * pow(id * {m}, {e!r}e0) + 0.5) = "
           f"floor({o!r}e0 * pow(id * {m}, {e!r}e0)) AND dx = 'yes'"
           for m in primes for o in offsets for e in exponents][:k]
    values = np.round(rng.normal(n / 4, 2.0, len(sql)), 2)
    pq.write_table(pa.table({"id": [f"q{i}" for i in range(len(sql))], "sql": sql,
                             "value": [f"{v:.2f}" for v in values],
                             "noise": ["gaussian:2.0"] * len(sql)}), folder / "stats.parquet")
    (folder / "release.yaml").write_text(
        "version: 1\nname: columnar-100k\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  dx: {type: categorical, values: ['yes', 'no']}\n"
        "statistics_file: stats.parquet\n", encoding="utf-8")
    public = PublicTable("<ids>", n, {"id": tuple(range(1, n + 1))})
    t_load, release = timed(lambda: load_release(folder / "release.yaml"))
    t_compile, system = timed(lambda: compile_linear(release, public))
    total = t_load + t_compile
    print(f"(b) {len(release.statistics):,} statistics (Parquet) x {n} records: load "
          f"{t_load:.2f} s + compile {t_compile:.2f} s = {total:.2f} s  (target < 10); "
          f"matrix {system.matrix.shape}, {system.matrix.nnz:,} nonzeros")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--skip-100k", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="statrecon-bench-") as tmp:
        folder = Path(tmp)
        (folder / "a").mkdir()
        front_door(aircloak_like(folder / "a"), args.repeat, not args.skip_cli)
        if not args.skip_100k:
            (folder / "b").mkdir()
            columnar_100k(folder / "b")


if __name__ == "__main__":
    main()
