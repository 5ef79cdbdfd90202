"""The terminal views of ``experiment dinur-nissim`` and ``experiment diffix``: one Rich table
per part run (phase transition, subsampling, run time, exhaustive attack) and the Diffix
attack's summary. The results are the experiment's (``experiments.dinur_nissim``), read by
their fields: this layer sits below the experiments and never imports them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statrecon.report import fixed


def render_dinur_nissim(phase: Any, sub: Any, timing: Any, exhaustive: Any,
                        console: Console) -> None:
    """One table per part run (``None``: the part was not asked for)."""
    console.print(phase_table(phase))
    if sub is not None:
        console.print(subsampling_table(sub))
    if timing is not None:
        console.print(runtime_table(timing))
    if exhaustive is not None:
        console.print(exhaustive_table(exhaustive))


def phase_table(result: Any) -> Table:
    table = Table(title=f"Dinur–Nissim: n = {result.n}, k = {result.k} random subset counts, "
                        f"Gaussian noise (fraction of bits recovered, mean seconds)")
    table.add_column("σ/√n", justify="right")
    table.add_column("σ", justify="right")
    for m in result.methods:
        table.add_column(m, justify="right")
    table.add_column("baseline", justify="right", style="dim")
    for row in result.rows:
        cells = [f"{row.sigma_in_sqrt_n:g}", f"{row.sigma:.2f}"]
        cells += [f"{row.accuracy[m]:.3f} ({row.seconds[m]:.2f} s)" for m in result.methods]
        cells.append(f"{row.baseline:.3f}")
        table.add_row(*cells)
    return table


def subsampling_table(result: Any) -> Table:
    table = Table(title=f"Subsampling defence ({result.method}): n = {result.n}, k = {result.k}; "
                        f"√(n ln k) = {result.reference_error:.1f}, baseline "
                        f"{result.baseline:.3f}; acc in/out: on sampled/unsampled records")
    for name in ("rate", "sampled", "acc", "acc in", "acc out", "ceiling", "mean err",
                 "max err"):
        table.add_column(name, justify="right")
    for r in result.rows:
        table.add_row(f"{r.rate:g}", f"{r.sampled_fraction:.3f}", fixed(r.accuracy),
                      fixed(r.accuracy_sampled), fixed(r.accuracy_unsampled), fixed(r.ceiling),
                      f"{r.mean_abs_error:.1f}", f"{r.max_abs_error:.1f}")
    return table


def runtime_table(result: Any) -> Table:
    table = Table(title=f"Run time (seconds; accuracy) at σ = {result.sigma_in_sqrt_n:g}·√n, "
                        f"k = {result.c:g}·n")
    table.add_column("n", justify="right")
    table.add_column("k", justify="right")
    for m in result.methods:
        table.add_column(m, justify="right")
    for row in result.rows:
        table.add_row(str(row["n"]), str(row["k"]), *(
            f"{row['seconds'][m]:.2f} s; {row['accuracy'][m]:.3f}" for m in result.methods))
    return table


def exhaustive_table(result: Any) -> Table:
    table = Table(title=f"All 2^{result.n} = {result.queries} subset counts, errors within "
                        f"±αn = {result.error_bound:g} ({result.noise})")
    table.add_column("", style="bold")
    table.add_column("value", justify="right")
    rows: Sequence[tuple[str, str]] = [
        ("wrong bits (attack output)", str(result.wrong_bits)),
        ("worst wrong bits, any consistent candidate", str(result.worst_consistent_wrong_bits)),
        ("Theorem 2.4 bound 4αn", f"{result.bound:g}"),
        ("bound holds", "yes" if result.bound_holds else "NO"),
        ("consistent candidates", str(result.consistent)),
        ("tied minimisers", str(result.minimisers)),
        ("seconds", f"{result.seconds:.2f}"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table


def render_diffix(result: Any, console: Console) -> None:
    """The Diffix attack's summary table and one of its queries."""
    table = Table(title=f"Cohen–Nissim attack on a Diffix-like interface ({result.method})")
    table.add_column("", style="bold")
    table.add_column("value", justify="right")
    for key, value in [
        ("records (public ids)", str(result.n_ids)),
        ("queries (primes × offsets × exponents)", str(result.n_queries)),
        ("noise std per answer", f"{result.noise_std:.3f}"),
        ("accuracy", f"{result.accuracy:.3f}"),
        ("baseline (majority guess)", f"{result.baseline:.3f}"),
        ("matrix from SQL (DuckDB) = generator's", "yes" if result.matrix_matches_generator
         else "NO"),
        ("seconds: compile / solve", f"{result.compile_s:.2f} / {result.solve_s:.2f}"),
    ]:
        table.add_row(key, value)
    console.print(table)
    console.print(f"example query: {escape(result.example_sql)}", highlight=False,
                  soft_wrap=True)
