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
(c) Start-up (issue 31, item 2): ``statrecon --help``, every ``statrecon <command> --help``
    and ``statrecon reconstruct examples/block.yaml`` as subprocesses, each round interleaved
    with a bare ``python -c pass`` (the machine is shared: medians, and the time over the
    bare interpreter measured in the same rounds). Targets: help <= 0.3 s over the bare
    interpreter, block.yaml <= 1.0 s in all. ``--baseline-src DIR`` runs the same commands
    with ``PYTHONPATH=DIR`` (an older ``src/``, e.g. ``git archive HEAD~N src``) interleaved in
    the same rounds, for a before/after measured side by side.

Generated releases live in a temporary folder.

    .venv/bin/python benchmarks/bench_front_door.py [--repeat 3] [--skip-cli] [--skip-100k]
        [--skip-startup] [--startup-only] [--rounds 5] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import os
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


ROOT = Path(__file__).resolve().parents[1]
HELP_TARGET = 0.3  # seconds over the bare interpreter
BLOCK_TARGET = 1.0  # seconds in all


def every_command() -> list[list[str]]:
    """``--help``, each group's and each command's ``--help``, then ``reconstruct block.yaml``
    (the commands read from the Typer app in a subprocess, so this process stays light)."""
    listing = subprocess.run(
        [sys.executable, "-c",
         "import typer, statrecon.cli as c\n"
         "def walk(g, p):\n"
         "    for name, sub in g.commands.items():\n"
         "        print(' '.join([*p, name]))\n"
         "        if hasattr(sub, 'commands'): walk(sub, [*p, name])\n"
         "walk(typer.main.get_command(c.app), [])\n"],
        capture_output=True, text=True, check=True).stdout.split("\n")
    return [["--help"], *([*line.split(), "--help"] for line in listing if line),
            ["reconstruct", "examples/block.yaml"]]


def _seconds(command: list[str], env: dict[str, str]) -> tuple[float, float] | None:
    """Wall seconds and CPU seconds (user + system) of one run; None if it failed."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (seconds, cpu) if done.returncode == 0 else None


def _bytecode_env(cache: Path) -> dict[str, str]:
    """An installed package runs from compiled bytecode (pip compiles it); a checkout whose
    environment sets PYTHONDONTWRITEBYTECODE would compile every module on every run, so
    bytecode is allowed and kept out of the tree, in ``cache``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def startup(rounds: int, baseline_src: Path | None) -> None:
    """(c): every command's start-up, interleaved with the bare interpreter, median of rounds.
    Wall seconds, and CPU seconds (user + system: on a shared machine, close to what the
    wall clock reads on an idle one for a single-threaded start-up)."""
    script = str(Path(sys.executable).with_name("statrecon"))
    with tempfile.TemporaryDirectory(prefix="statrecon-pyc-") as cache:
        env = _bytecode_env(Path(cache))
        variants = {"now": env}
        if baseline_src is not None:  # its own bytecode: the cache is keyed by source path
            variants["baseline"] = {**env, "PYTHONPATH": str(baseline_src.resolve())}
        commands = every_command()
        for command in commands:  # compile once, untimed
            for variant in variants.values():
                _seconds([script, *command], variant)
        bare: list[tuple[float, float]] = []
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for r in range(rounds):
            for command in commands:
                order = list(variants.items())
                if r % 2:
                    order.reverse()
                bare.append(_seconds([sys.executable, "-c", "pass"], env) or (0.0, 0.0))
                for name, variant in order:
                    t = _seconds([script, *command], variant)
                    if t is not None:  # a command the baseline lacks fails there: left out
                        times.setdefault((" ".join(command), name), []).append(t)
    _print_startup(rounds, commands, list(variants), bare, times)


def _print_startup(rounds: int, commands: list[list[str]], variants: list[str],
                   bare: list[tuple[float, float]],
                   times: dict[tuple[str, str], list[tuple[float, float]]]) -> None:
    pass_s = statistics.median(t for t, _ in bare)
    pass_cpu = statistics.median(c for _, c in bare)
    print(f"(c) start-up, median of {rounds} rounds, each command interleaved with a bare "
          f"`python -c pass` ({pass_s:.3f} s wall, {pass_cpu:.3f} s CPU, median of "
          f"{len(bare)}); load average {os.getloadavg()[0]:.1f} at the end")
    header = "".join(f" | {name:>8}: wall s  over bare  ratio  CPU s" for name in variants)
    print(f"    {'statrecon ...':40}{header}")
    worst: dict[str, tuple[float, float]] = {}
    for command in commands:
        label = " ".join(command)
        cells = []
        for name in variants:
            got = times.get((label, name))
            if not got:
                cells.append(f" | {'n/a':>16}{'':>28}")
                continue
            wall = statistics.median(t for t, _ in got)
            cpu = statistics.median(c for _, c in got)
            cells.append(f" | {wall:16.3f}  {wall - pass_s:9.3f}  {wall / pass_s:5.1f}  "
                         f"{cpu:5.3f}")
            if command[-1] == "--help":
                old = worst.get(name, (0.0, 0.0))
                worst[name] = (max(old[0], wall - pass_s), max(old[1], cpu - pass_cpu))
        print(f"    {label:40}" + "".join(cells))
    for name in variants:
        block = times.get(("reconstruct examples/block.yaml", name))
        wall = statistics.median(t for t, _ in block) if block else float("nan")
        cpu = statistics.median(c for _, c in block) if block else float("nan")
        help_wall, help_cpu = worst.get(name, (float("nan"), float("nan")))
        print(f"    {name}: slowest --help {help_wall:.3f} s wall, {help_cpu:.3f} s CPU over "
              f"bare (target <= {HELP_TARGET}: "
              f"{'met' if help_wall <= HELP_TARGET else 'not met'} on the wall clock); "
              f"reconstruct examples/block.yaml {wall:.3f} s wall, {cpu:.3f} s CPU (target "
              f"<= {BLOCK_TARGET}: {'met' if wall <= BLOCK_TARGET else 'not met'} on the wall "
              f"clock)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--skip-100k", action="store_true")
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--startup-only", action="store_true", help="only (c)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of (c)")
    parser.add_argument("--baseline-src", type=Path, default=None,
                        help="(c) also with PYTHONPATH=DIR, interleaved")
    args = parser.parse_args()
    if not args.skip_startup:
        startup(args.rounds, args.baseline_src)
    if args.startup_only:
        return
    with tempfile.TemporaryDirectory(prefix="statrecon-bench-") as tmp:
        folder = Path(tmp)
        (folder / "a").mkdir()
        front_door(aircloak_like(folder / "a"), args.repeat, not args.skip_cli)
        if not args.skip_100k:
            (folder / "b").mkdir()
            columnar_100k(folder / "b")


if __name__ == "__main__":
    main()
