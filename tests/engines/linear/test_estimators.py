"""The estimator registry of the linear engine: one class per method, and every part of the
package (engine, API, CLI help, experiments) reads the methods from it."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from statrecon.engines.linear import (
    ESTIMATORS,
    METHODS,
    Estimate,
    LinearOptions,
    Problem,
    reconstruct_linear,
)
from statrecon.engines.linear.estimators import Estimator, estimators_help
from statrecon.engines.linear.model import LinearSystem, compile_linear
from statrecon.release.files import parse_release
from statrecon.release.known import PublicTable

HOSPITAL = Path(__file__).resolve().parents[3] / "examples" / "hospital.yaml"

# x = (1, 0, 1, 1, 0): five records, five independent subset counts
F = np.array([[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1],
              [1, 0, 0, 0, 1]], dtype=float)
TRUTH = np.array([1.0, 0.0, 1.0, 1.0, 0.0])


def test_the_registry_lists_the_linear_methods_but_determine() -> None:
    assert METHODS == ("determine", "ls", "lp-l1", "lp-linf", "ip", "kaczmarz", "sgd")
    assert tuple(ESTIMATORS) == METHODS[1:]
    for name, estimator in ESTIMATORS.items():
        assert estimator.name == name
        assert estimator.summary and "\n" not in estimator.summary


def test_the_api_and_the_experiments_take_their_methods_from_the_registry() -> None:
    from statrecon.api import METHODS as API_METHODS
    from statrecon.experiments.dinur_nissim import ESTIMATORS as EXPERIMENT_METHODS

    assert ("auto", "exact", *METHODS) == API_METHODS
    assert tuple(ESTIMATORS) == EXPERIMENT_METHODS


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_recovers_an_exactly_determined_system(name: str) -> None:
    """The only 0/1 vector with these exact answers (brute force says so) is read back."""
    a = F @ TRUTH
    fits = [v for v in itertools.product((0.0, 1.0), repeat=5) if np.allclose(F @ v, a)]
    assert fits == [tuple(TRUTH)]
    problem = Problem(F, a, np.zeros(5), np.ones(5), epochs=200.0,
                      rng=np.random.default_rng(0))
    estimate = ESTIMATORS[name].estimate(problem)
    assert np.array_equal(np.round(estimate.x), TRUTH), estimate.x
    assert estimate.status in ("estimated", "optimal")


@dataclass(frozen=True)
class Midpoint:
    """A registered estimator that ignores the statistics."""

    name: ClassVar[str] = "midpoint"
    summary: ClassVar[str] = "the middle of the box"
    highs: ClassVar[bool] = False

    def estimate(self, problem: Problem) -> Estimate:
        return Estimate((problem.lo + problem.hi) / 2, "estimated", ("midpoint: a guess",))


def _system() -> LinearSystem:
    release = parse_release("""
version: 1
table: t
columns:
  id: {type: integer, known: true}
  v:  {type: real, min: 0, max: 10}
statistics:
  - {id: q1, sql: "SELECT SUM(v) FROM t WHERE id < 3", value: 7}
""")
    return compile_linear(release, PublicTable(source="<ids>", rows=4,
                                               columns={"id": (1, 2, 3, 4)}))


def test_a_new_estimator_is_one_class_in_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    new: Estimator = Midpoint()
    monkeypatch.setitem(ESTIMATORS, new.name, new)
    result = reconstruct_linear(_system(), LinearOptions(method="midpoint"))
    assert result.method == "midpoint" and result.status == "estimated"
    assert result.estimate.tolist() == [5.0, 5.0, 5.0, 5.0]
    assert result.notes == ["midpoint: a guess"]
    assert "midpoint: the middle of the box" in estimators_help()


def test_an_unknown_method_names_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="choose from determine, ls, lp-l1, lp-linf, ip, "
                                         "kaczmarz, sgd"):
        reconstruct_linear(_system(), LinearOptions(method="nope"))


def test_the_cli_help_names_every_registered_estimator(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli("reconstruct", "--help")
    assert code == 0
    text = " ".join(out.replace("│", " ").split())
    for estimator in ESTIMATORS.values():
        assert f"{estimator.name}: {estimator.summary}" in text
    code, out, _ = run_cli("experiment", "dinur-nissim", "--help")
    assert code == 0
    text = " ".join(out.replace("│", " ").split())
    assert f"Attacks, comma separated: {', '.join(ESTIMATORS)}." in text


def test_the_registry_loads_no_solver_at_cli_start_up() -> None:
    """The CLI builds its help from the registry; scipy waits for the first estimate."""
    import subprocess
    import sys

    code = ("import sys, statrecon.cli; "
            "print([m for m in ('scipy', 'highspy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("method", "started"), [("lp-l1", True), ("lp-linf", True), ("ls", False),
                                                  ("kaczmarz", False), ("determine", False)])
def test_the_solver_worker_is_started_ahead_only_for_highs_methods(
        monkeypatch: pytest.MonkeyPatch, method: str, started: bool) -> None:
    """A time-limited HiGHS solve runs in a worker process, started while the release loads;
    the other methods never use it, so none is started for them."""
    import statrecon
    from statrecon.engines.linear import solvers

    calls: list[None] = []
    monkeypatch.setattr(solvers, "prestart_worker", lambda: calls.append(None))
    statrecon.reconstruct(HOSPITAL, method=method)
    assert bool(calls) is started
