"""Issue 14 item 7: noisy statistics in the exact engine, against brute force.

``bounds``: each noisy answer read as value ± K standard deviations. The oracle enumerates
every dataset of a tiny release and keeps those whose exact answers hold and whose noisy
answers lie within K sd of the dataset's own answer; the engine must return that set, and
say its claims hold only on that event. The standard deviations are written out here from the
distributions' definitions, not taken from the engine.

``ml``: the engine's dataset must minimise the negative log-likelihood (laplace/geometric
|dev|/b, gaussian dev²/2σ²; uniform noise a hard ±w) over every dataset the exact answers
allow, as brute force computes it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon import reconstruct
from statrecon.engines.exact import ExactOptions, ExactProgress
from statrecon.errors import StatreconError
from statrecon.release.files import parse_release

X_MAX, Y_MAX = 3, 2
ROWS = list(itertools.product(range(X_MAX + 1), range(Y_MAX + 1)))

# (sql, python answer on a dataset of (x, y) rows)
QUERIES: list[tuple[str, Any]] = [
    *[(f"SELECT COUNT(*) FROM t WHERE x >= {c}", lambda d, c=c: sum(x >= c for x, _ in d))
      for c in range(1, X_MAX + 1)],
    *[(f"SELECT COUNT(*) FROM t WHERE y = {c}", lambda d, c=c: sum(y == c for _, y in d))
      for c in range(Y_MAX + 1)],
    *[(f"SELECT SUM(x) FROM t WHERE y = {c}", lambda d, c=c: sum(x for x, y in d if y == c))
      for c in range(Y_MAX + 1)],
    ("SELECT SUM(x) FROM t", lambda d: sum(x for x, _ in d)),
    ("SELECT COUNT(*) FROM t WHERE x + y <= 2", lambda d: sum(x + y <= 2 for x, y in d)),
]


def sd(kind: str, scale: float) -> float:
    """Standard deviation of each noise from its scale, by definition."""
    if kind == "gaussian":
        return scale
    if kind == "laplace":  # density exp(-|x|/b) / 2b: variance 2b²
        return math.sqrt(2 * scale**2)
    if kind == "geometric":  # P(k) ∝ a^|k|, a = e^(-1/b): variance 2a / (1 - a)²
        a = math.exp(-1 / scale)
        return math.sqrt(2 * a / (1 - a) ** 2)
    return scale / math.sqrt(3)  # uniform on [-w, w]: variance w²/3


def nll(kind: str, scale: float, dev: float) -> float:
    if kind == "gaussian":
        return dev * dev / (2 * scale * scale)
    return abs(dev) / scale  # laplace, geometric


@st.composite
def cases(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 3))
    truth = draw(st.lists(st.sampled_from(ROWS), min_size=n, max_size=n))
    chosen = draw(st.lists(st.integers(0, len(QUERIES) - 1), min_size=1, max_size=4,
                           unique=True))
    stats = []
    for i, q in enumerate(chosen):
        sql, fn = QUERIES[q]
        true = fn(truth)
        if draw(st.booleans()):
            stats.append({"id": f"s{i}", "sql": sql, "value": true, "kind": None})
            continue
        kind = draw(st.sampled_from(["gaussian", "laplace", "geometric", "uniform"]))
        scale = draw(st.sampled_from([0.4, 0.7, 1.0, 1.5]))
        value = true + draw(st.sampled_from([-2, -1, -0.5, 0, 0.5, 1, 2, 3]))
        stats.append({"id": f"s{i}", "sql": sql, "value": value, "kind": kind,
                      "scale": scale, "fn": fn})
    for s in stats:
        s.setdefault("fn", QUERIES[[q[0] for q in QUERIES].index(s["sql"])][1])
    return {"n": n, "stats": stats}


def release_of(case: dict[str, Any]) -> Any:
    spec = {"version": 1, "table": "t", "records": case["n"],
            "columns": {"x": {"type": "integer", "min": 0, "max": X_MAX},
                        "y": {"type": "integer", "min": 0, "max": Y_MAX}},
            "statistics": [
                {"id": s["id"], "sql": s["sql"], "value": s["value"],
                 **({"noise": {s["kind"]: s["scale"]}} if s["kind"] else {})}
                for s in case["stats"]]}
    return parse_release(yaml.safe_dump(spec, sort_keys=False))


def datasets(n: int) -> list[tuple[tuple[int, int], ...]]:
    return list(itertools.combinations_with_replacement(ROWS, n))


def exact_ok(case: dict[str, Any], d: Any) -> bool:
    return all(s["fn"](d) == s["value"] for s in case["stats"] if s["kind"] is None)


def within(case: dict[str, Any], d: Any, k: float) -> bool:
    for s in case["stats"]:
        if s["kind"] is None:
            continue
        half = k * sd(s["kind"], s["scale"])
        if s["kind"] == "uniform":
            half = min(half, s["scale"])
        if abs(s["fn"](d) - s["value"]) > half + 1e-12:
            return False
    return True


def found(result: Any) -> set[tuple[tuple[int, int], ...]]:
    return {tuple(sorted((r["x"], r["y"]) for r in sol)) for sol in result.solutions}


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases(), st.sampled_from([0.5, 1.0, 2.0, 3.0]))
def test_noise_as_bounds_equals_brute_force(case: dict[str, Any], k: float) -> None:
    expected = {d for d in datasets(case["n"]) if exact_ok(case, d) and within(case, d, k)}
    options = ExactOptions(noise_mode="bounds", noise_k=k, keep_solutions=None,
                           time_limit=60)
    result = reconstruct(release_of(case), method="exact", options=options)
    noisy = [s["id"] for s in case["stats"] if s["kind"]]
    assert result.noise.mode == "bounds" and list(result.noise.statistics) == noisy
    assert result.ignored == []
    if not expected:
        assert result.status == "infeasible"
        return
    assert result.complete and found(result) == expected
    assert result.status == ("unique" if len(expected) == 1 else "multiple")
    if noisy and any(s["kind"] != "uniform" for s in case["stats"] if s["kind"]):
        assert result.noise.condition is not None  # never certain without the qualifier
        assert "within" in result.to_json()["noise"]["claims_hold"]
        assert 0 < result.noise.event_probability < 1


@SETTINGS
@given(cases())
def test_maximum_likelihood_equals_brute_force(case: dict[str, Any]) -> None:
    def hard(d: Any) -> bool:
        return exact_ok(case, d) and all(
            abs(s["fn"](d) - s["value"]) <= s["scale"] for s in case["stats"]
            if s["kind"] == "uniform")

    def cost(d: Any) -> float:
        return sum(nll(s["kind"], s["scale"], s["value"] - s["fn"](d)) for s in case["stats"]
                   if s["kind"] not in (None, "uniform"))

    allowed = [d for d in datasets(case["n"]) if hard(d)]
    options = ExactOptions(noise_mode="ml", time_limit=60)
    result = reconstruct(release_of(case), method="exact", options=options)
    assert result.noise.mode == "ml"
    if not allowed:
        assert result.status == "infeasible"
        return
    assert result.status == "estimated" and result.noise.optimal  # never unique/certain
    (best,) = found(result)
    assert hard(best)
    least = min(cost(d) for d in allowed)
    assert cost(best) <= least + 1e-5 * max(1.0, least)
    assert result.noise.objective == pytest.approx(least, rel=1e-4, abs=1e-6)


def test_a_mixed_release_uses_both_kinds_of_answer() -> None:
    """Exact answers pin the rows; a noisy sum, read as ±1 sd, chooses between the rest."""
    case = {"n": 2, "stats": [
        {"id": "rows-x2", "sql": "SELECT COUNT(*) FROM t WHERE x >= 2", "value": 1,
         "kind": None},
        {"id": "sum", "sql": "SELECT SUM(x) FROM t", "value": 3.2, "kind": "gaussian",
         "scale": 0.5},
    ]}
    for s in case["stats"]:
        s["fn"] = QUERIES[[q[0] for q in QUERIES].index(s["sql"])][1]
    release = release_of(case)
    ignored = reconstruct(release, method="exact",
                          options=ExactOptions(keep_solutions=None))
    assert ignored.ignored == ["sum"] and ignored.noise.mode == "ignore"
    bounded = reconstruct(release, method="exact", options=ExactOptions(
        noise_mode="bounds", noise_k=1.0, keep_solutions=None))
    # sum in [2.7, 3.7]: x values {1, 2} or {0, 3}; y free
    assert {tuple(sorted(r["x"] for r in sol)) for sol in bounded.solutions} == {(1, 2), (0, 3)}
    assert bounded.solution_count < ignored.solution_count
    ml = reconstruct(release, method="exact", options=ExactOptions(noise_mode="ml"))
    assert ml.status == "estimated"
    assert sum(r["x"] for r in ml.solutions[0]) == 3


def test_ml_refuses_a_noisy_average_with_a_clear_error() -> None:
    spec = {"version": 1, "table": "t", "records": 2,
            "columns": {"x": {"type": "integer", "min": 0, "max": 3}},
            "statistics": [{"id": "mean", "sql": "SELECT AVG(x) FROM t", "value": 1.5,
                            "noise": {"laplace": 1.0}}]}
    release = parse_release(yaml.safe_dump(spec))
    with pytest.raises(StatreconError, match=r"mean.*noise-mode bounds") as e:
        reconstruct(release, method="exact", options=ExactOptions(noise_mode="ml"))
    assert e.value.statistic == "mean"
    bounded = reconstruct(release, method="exact",
                          options=ExactOptions(noise_mode="bounds", noise_k=1))
    assert bounded.status in ("unique", "multiple")


def test_a_noisy_count_star_bounds_the_rows_under_bounds() -> None:
    spec = {"version": 1, "table": "t",
            "columns": {"x": {"type": "integer", "min": 0, "max": 1}},
            "statistics": [{"id": "n", "sql": "SELECT COUNT(*) FROM t", "value": 2,
                            "noise": {"uniform": 1.0}}]}
    release = parse_release(yaml.safe_dump(spec))
    with pytest.raises(StatreconError, match="not bounded"):
        reconstruct(release, method="exact")
    result = reconstruct(release, method="exact", options=ExactOptions(
        noise_mode="bounds", noise_k=2.0, keep_solutions=None))
    # uniform noise: |noise| <= 1 always, so 1..3 rows, of 0/1 values: 2 + 3 + 4 datasets
    assert result.solution_count == 9 and result.complete
    assert result.noise.event_probability == 1.0 and result.noise.condition is None


def test_progress_reports_phases_and_time_left() -> None:
    spec = {"version": 1, "table": "t", "records": 3,
            "columns": {"x": {"type": "integer", "min": 0, "max": 3}},
            "statistics": [{"id": "s", "sql": "SELECT SUM(x) FROM t", "value": 4}]}
    seen: list[ExactProgress] = []
    reconstruct(parse_release(yaml.safe_dump(spec)), method="exact",
                options=ExactOptions(time_limit=30, on_progress=seen.append, limit=2))
    phases = [p.phase for p in seen]
    assert phases[0] == "building" and "enumerating" in phases
    assert any(p.phase.startswith("proving") and p.total for p in seen)  # limit 2: proofs
    assert max(p.found for p in seen) == 2
    assert all(p.left is not None and 0 <= p.left <= 30 for p in seen)
