"""Experiments: the Dinur–Nissim phase transition, subsampling, the exhaustive attack of
Theorem 2.4, the Cohen–Nissim attack on a Diffix-like interface, plots and the CLI sub-app.

Fixed seeds throughout. The n = 600 phase transition is the slow part (LP decoding of
2,400 dense counts); it runs once per module and every assertion on it shares the run.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from statrecon.commands.experiment import experiment_app
from statrecon.errors import StatreconError
from statrecon.experiments import (
    ExperimentError,
    PhaseTransitionResult,
    diffix_attack,
    exhaustive_attack,
    phase_transition,
    plot_phase_transition,
    plot_runtime,
    plot_subsampling,
    runtime_scaling,
    subsampling_defence,
)
from statrecon.experiments.dinur_nissim import _all_vectors

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
METHODS = ("ls", "lp-l1", "lp-linf")
LOW, HIGH = 0.05, 2.0  # noise σ in units of √n: far below and far above the threshold √n
N = 400  # 3.5 s of CPU (n = 600: 9 s, n = 1000: 32 s for the same finding; issue 29)
# Measured at seed 0, σ = 2√n: n = 400: ls 0.593, lp-l1 0.578, lp-linf 0.525 against a
# majority baseline of 0.510, at most 0.083 above it (n = 500, 600, 700, 1000: at most 0.098,
# 0.085, 0.096, 0.068 above); the margin leaves room for solver and platform differences.
FALL_MARGIN = 0.12


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000, path
    assert data[:8] == PNG_SIGNATURE, path


def strict_json(data: dict[str, Any]) -> dict[str, Any]:
    """The JSON round trip, rejecting NaN/Infinity (not JSON)."""
    out = json.loads(json.dumps(data, allow_nan=False))
    assert isinstance(out, dict)
    return out


# --------------------------------------------------------------------------- phase transition


@pytest.fixture(scope="module")
def dinur_nissim() -> PhaseTransitionResult:
    return phase_transition(n=N, c=4, sigmas_in_sqrt_n=(LOW, HIGH), methods=METHODS, seed=0)


@pytest.mark.parametrize("method", METHODS)
def test_reconstruction_below_sqrt_n(dinur_nissim: PhaseTransitionResult,
                                     method: str) -> None:
    """σ = 0.05·√n with k = 4n random subset counts: at least 99% of the bits come back."""
    assert dinur_nissim.k == 4 * N
    assert dinur_nissim.accuracy(method, LOW) >= 0.99


@pytest.mark.parametrize("method", METHODS)
def test_reconstruction_fails_above_sqrt_n(dinur_nissim: PhaseTransitionResult,
                                           method: str) -> None:
    """σ = 2·√n: the attack falls to within a few points of the majority-guess baseline."""
    result = dinur_nissim
    baseline = result.baseline(HIGH)
    assert 0.5 <= baseline <= 0.55
    assert result.accuracy(method, HIGH) <= baseline + FALL_MARGIN
    assert result.accuracy(method, LOW) - result.accuracy(method, HIGH) >= 0.3


def test_phase_transition_json_and_times(dinur_nissim: PhaseTransitionResult) -> None:
    data = strict_json(dinur_nissim.to_json())
    assert data["experiment"] == "dinur-nissim" and data["methods"] == list(METHODS)
    assert [r["sigma_in_sqrt_n"] for r in data["rows"]] == [LOW, HIGH]
    row = data["rows"][0]
    assert math.isclose(row["sigma"], LOW * math.sqrt(N))
    for m in METHODS:
        assert row["seconds"][m] > 0 and len(row["trial_accuracy"][m]) == 1


def test_trials_average_and_common_secret() -> None:
    result = phase_transition(n=60, c=3, sigmas_in_sqrt_n=(0, 1), methods=("ls",), seed=3,
                              trials=3)
    assert result.trials == 3 and result.k == 180
    for row in result.rows:
        assert math.isclose(row.accuracy["ls"], float(np.mean(row.trial_accuracy["ls"])))
    assert result.accuracy("ls", 0) == 1.0  # exact answers, full column rank


def test_progress_is_reported() -> None:
    seen: list[tuple[int, int, str]] = []
    phase_transition(n=30, c=2, sigmas_in_sqrt_n=(0, 1), methods=("ls", "lp-l1"), seed=0,
                     progress=lambda done, total, label: seen.append((done, total, label)))
    assert [d for d, _, _ in seen] == [1, 2, 3, 4] and all(t == 4 for _, t, _ in seen)


@pytest.mark.parametrize("kwargs", [
    {"methods": ("magic",)}, {"methods": ()}, {"methods": ("ls", "ls")}, {"n": 1},
    {"c": 0}, {"sigmas_in_sqrt_n": (-1,)}, {"sigmas_in_sqrt_n": ()}, {"trials": 0},
])
def test_bad_parameters_are_user_errors(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"n": 20, "c": 2, "sigmas_in_sqrt_n": (0,), "methods": ("ls",)}
    args.update(kwargs)
    with pytest.raises(ExperimentError):
        phase_transition(**args)


# --------------------------------------------------------------------------- subsampling


def test_subsampling_defeats_reconstruction_of_unsampled_records() -> None:
    result = subsampling_defence(n=500, c=4, rates=(1, 0.1), method="ls", seed=0)
    full, low = result.rows
    assert full.accuracy == 1.0 and full.max_abs_error < 1e-6
    assert full.accuracy_unsampled is None  # every record sampled at rate 1
    assert 0.05 <= low.sampled_fraction <= 0.15
    assert low.accuracy_sampled is not None and low.accuracy_unsampled is not None
    assert low.accuracy_sampled >= 0.95  # the sample itself is reconstructed
    assert abs(low.accuracy_unsampled - result.baseline) <= 0.08  # the rest: a guess
    assert low.accuracy <= low.ceiling + 0.05
    # Answers stay useful: errors of the order √(n ln k) (Exercise 2.8), far below n.
    assert low.max_abs_error <= 3 * result.reference_error
    assert low.mean_abs_error < low.max_abs_error
    strict_json(result.to_json())


def test_subsampling_with_replacement() -> None:
    result = subsampling_defence(n=300, c=3, rates=(0.2,), seed=1, with_replacement=True)
    (row,) = result.rows
    assert result.with_replacement
    assert row.accuracy_sampled is not None and row.accuracy_sampled >= 0.95
    assert row.accuracy_unsampled is not None and row.accuracy_unsampled <= 0.7


# --------------------------------------------------------------------------- exhaustive


def brute_force(n: int, alpha: float, seed: int, noise: str) -> tuple[int, int, int]:
    """(wrong bits of the lowest minimiser, consistent count, worst consistent wrong bits),
    with the full 2^n × 2^n error table and no pruning: the oracle for the pruned search."""
    rng = np.random.default_rng([seed, n])
    V = _all_vectors(n)
    s = (rng.random(n) < 0.5).astype(float)
    truth = V @ s
    if noise == "uniform":
        answers = truth + rng.uniform(-alpha * n, alpha * n, size=V.shape[0])
    else:
        flips = math.floor(2 * alpha * n + 1e-9)
        decoy = s.copy()
        decoy[rng.permutation(np.flatnonzero(s == 1))[:flips]] = 0
        decoy[rng.permutation(np.flatnonzero(s == 0))[:flips]] = 1
        answers = (truth + V @ decoy) / 2
    worst = np.abs(V @ V.T - answers[:, None]).max(axis=0)  # [candidate]
    best = int(np.flatnonzero(worst <= worst.min() + 1e-9).min())
    consistent = np.flatnonzero(worst <= alpha * n + 1e-9)
    wrong = (V[consistent] != s).sum(axis=1)
    return int((V[best] != s).sum()), int(consistent.size), int(wrong.max())


@pytest.mark.parametrize("noise", ["uniform", "adversarial"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_theorem_2_4_bound_holds(noise: str, seed: int, alpha: float) -> None:
    for n in (8, 12):
        r = exhaustive_attack(n, alpha, seed, noise)
        assert r.queries == 2**n and r.bound == pytest.approx(4 * alpha * n)
        assert r.bound_holds
        assert r.wrong_bits <= r.worst_consistent_wrong_bits <= 4 * alpha * n
        assert r.max_error_of_truth <= alpha * n + 1e-9
        assert r.max_error_of_output <= r.max_error_of_truth + 1e-9  # Claim 2.2
        if noise == "adversarial":
            # The decoy is as consistent as the truth: the bound is nearly met.
            assert r.decoy_wrong_bits is not None
            assert r.worst_consistent_wrong_bits >= r.decoy_wrong_bits


@pytest.mark.parametrize("noise", ["uniform", "adversarial"])
@pytest.mark.parametrize("seed", [0, 5])
def test_pruned_search_matches_brute_force(noise: str, seed: int) -> None:
    n, alpha = 8, 0.2
    r = exhaustive_attack(n, alpha, seed, noise)
    assert (r.wrong_bits, r.consistent, r.worst_consistent_wrong_bits) == brute_force(
        n, alpha, seed, noise)


def test_exhaustive_n16_is_fast_and_n17_refused() -> None:
    r = exhaustive_attack(16, 0.1, 0, "adversarial")
    assert r.bound_holds and r.seconds < 30
    with pytest.raises(ExperimentError, match=re.escape("1..16")):
        exhaustive_attack(17, 0.1)
    with pytest.raises(ExperimentError):
        exhaustive_attack(8, 0.1, noise="gaussian")


# --------------------------------------------------------------------------- Diffix


def test_cohen_nissim_attack_on_diffix_reaches_99_percent() -> None:
    """200 ids, 5 primes × 10 offsets × 5 exponents = 250 queries of 2 conditions each.

    base_sigma = 0.5 gives each answer noise std 0.71 (≈ 0.05·√n, the O(1) noise the notes
    describe). At base_sigma = 1 (std √2) LP decoding gets ~96% (next test); 250 queries are
    too few for 99% at that noise whatever the predicate parameters (see the report)."""
    r = diffix_attack(n_ids=200, base_sigma=0.5, seed=0)
    assert r.n_queries == 250 and r.n_ids == 200 and r.method == "lp-l1"
    assert r.matrix_matches_generator  # DuckDB evaluated the SQL into the generator's matrix
    assert r.conditions_per_query == 2 and r.noise_std == pytest.approx(0.5 * math.sqrt(2))
    assert r.accuracy >= 0.99 and r.accuracy > r.baseline + 0.4
    assert "pow(client_id * 2" in r.example_sql and r.example_sql.endswith("= 'C'")
    strict_json(r.to_json())


def test_cohen_nissim_attack_default_noise() -> None:
    r = diffix_attack(seed=0)
    assert r.noise_std == pytest.approx(math.sqrt(2))
    assert r.accuracy >= 0.94 and r.accuracy > r.baseline + 0.4


# --------------------------------------------------------------------------- plots


def test_plots_are_png(tmp_path: Path) -> None:
    phase = phase_transition(n=40, c=2, sigmas_in_sqrt_n=(0, 0.5, 2), methods=("ls",), seed=0)
    sub = subsampling_defence(n=40, c=2, rates=(1, 0.5), seed=0)
    timing = runtime_scaling(ns=(20, 40), c=2, methods=("ls", "lp-l1"), seed=0)
    assert_png(plot_phase_transition(phase, tmp_path / "a.png"))
    assert_png(plot_subsampling(sub, tmp_path / "b.png"))
    assert_png(plot_runtime(timing, tmp_path / "sub" / "c.png"))
    # The JSON written by the CLI plots the same.
    assert_png(plot_phase_transition(strict_json(phase.to_json()), tmp_path / "d.png"))


# --------------------------------------------------------------------------- CLI


def cli_app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(experiment_app, name="experiment")
    return app


def test_cli_dinur_nissim_writes_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(cli_app(), [
        "experiment", "dinur-nissim", "--n", "60", "--c", "3", "--sigmas", "0,0.5,2",
        "--methods", "ls,lp-l1", "--seed", "1", "--out", str(out), "--subsampling",
        "--rates", "1,0.2", "--runtime", "--runtime-ns", "20,40", "--exhaustive-n", "8",
        "--exhaustive-alpha", "0.1"])
    assert result.exit_code == 0, result.output
    for name in ("dinur_nissim", "subsampling", "runtime"):
        assert_png(out / f"{name}.png")
        assert strict_json(json.loads((out / f"{name}.json").read_text()))
    exhaustive = json.loads((out / "exhaustive.json").read_text())
    assert exhaustive["n"] == 8 and exhaustive["bound_holds"] is True
    assert "Dinur–Nissim" in result.stdout and "baseline" in result.stdout


def test_cli_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app(), [
        "experiment", "dinur-nissim", "--n", "40", "--c", "2", "--sigmas", "0,1",
        "--methods", "ls", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"dinur_nissim", "files"} and data["files"] == []
    assert data["dinur_nissim"]["n"] == 40


def test_cli_diffix(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app(), [
        "experiment", "diffix", "--ids", "60", "--exponents", "0.5,0.6", "--base-sigma",
        "0.5", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["n_queries"] == 5 * 10 * 2 and data["matrix_matches_generator"] is True
    assert json.loads((tmp_path / "diffix.json").read_text())["accuracy"] == data["accuracy"]


@pytest.mark.parametrize("args,part", [
    (["dinur-nissim", "--sigmas", "0,abc"], "--sigmas"),
    (["dinur-nissim", "--methods", "ls,magic"], "magic"),
    (["dinur-nissim", "--exhaustive-n", "20"], "--exhaustive-n"),
    (["dinur-nissim", "--n", "1"], "n must be"),
    (["dinur-nissim", "--subsampling", "--rates", "0.5,0"], "rate"),
    (["dinur-nissim", "--runtime", "--runtime-ns", "1,10"], "--runtime-ns"),
    (["diffix", "--offsets", "1,,2"], "--offsets"),
])
def test_cli_user_errors(args: list[str], part: str) -> None:
    result = CliRunner().invoke(cli_app(), ["experiment", *args])
    assert isinstance(result.exception, StatreconError), result.output
    message = str(result.exception)
    assert part in message and "\n" not in message
