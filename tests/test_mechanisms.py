"""Mechanisms: each perturbation does what its docstring promises, measured with fixed seeds."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.errors import StatreconError
from statrecon.mechanisms import (
    BoundedUniform,
    DiffixLike,
    ExactMechanism,
    Gaussian,
    Laplace,
    MechanismError,
    MechanismOutput,
    Rounding,
    Subsampling,
    ThresholdSuppression,
    count_conditions,
    mechanism_from_spec,
)


def problem(k: int, n: int, seed: int = 0) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(seed)
    F = sp.csr_matrix((rng.random((k, n)) < 0.5).astype(np.float64))
    s = (rng.random(n) < 0.5).astype(np.int64)
    return F, s


F_BIG, S_BIG = problem(20_000, 40)


def test_exact_dense_and_sparse_agree() -> None:
    F, s = problem(30, 12)
    rng = np.random.default_rng(1)
    sparse = ExactMechanism().answer(F, s, rng)
    dense = ExactMechanism().answer(F.toarray().astype(np.int8), s.astype(np.int8), rng)
    expected = F.toarray() @ s
    assert np.array_equal(sparse.answers, expected)
    assert np.array_equal(dense.answers, expected)  # no int8 overflow path
    assert sparse.answers.dtype == np.float64 and sparse.noise_scale == 0.0
    assert sparse.suppressed is None and sparse.sample_mask is None


def test_int8_matrix_does_not_overflow() -> None:
    F = np.ones((1, 300), dtype=np.int8)
    s = np.ones(300, dtype=np.int8)
    assert ExactMechanism().answer(F, s, np.random.default_rng(0)).answers[0] == 300.0


def test_shape_mismatch_is_a_clear_error() -> None:
    F, _ = problem(3, 5)
    with pytest.raises(ValueError, match="5"):
        ExactMechanism().answer(F, np.zeros(4), np.random.default_rng(0))


def test_gaussian_empirical_std() -> None:
    out = Gaussian(2.5).answer(F_BIG, S_BIG, np.random.default_rng(7))
    err = out.answers - out.true_answers
    assert abs(err.std() - 2.5) < 0.05  # std of the sample std ≈ 2.5/sqrt(40000) ≈ 0.0125
    assert abs(err.mean()) < 0.06
    assert out.noise_scale == 2.5
    assert np.array_equal(out.true_answers, F_BIG @ S_BIG)


def test_gaussian_zero_sigma_is_exact() -> None:
    out = Gaussian(0.0).answer(F_BIG, S_BIG, np.random.default_rng(7))
    assert np.array_equal(out.answers, out.true_answers)


def test_uniform_noise_bounded_and_fills_the_interval() -> None:
    out = BoundedUniform(3.0).answer(F_BIG, S_BIG, np.random.default_rng(3))
    err = out.answers - out.true_answers
    assert np.all(np.abs(err) <= 3.0)
    assert err.max() > 2.99 and err.min() < -2.99
    assert abs(err.std() - 3.0 / math.sqrt(3)) < 0.03


@settings(max_examples=60, deadline=None)
@given(
    base=st.sampled_from([0.1, 0.5, 1.0, 2.0, 5.0, 7.0, 10.0]),
    seed=st.integers(0, 10_000),
)
def test_rounding_gives_multiples_within_half_base(base: float, seed: int) -> None:
    F, s = problem(25, 30, seed)
    values = np.random.default_rng(seed).normal(0, 20, size=30)
    out = Rounding(base).answer(F, values if seed % 2 else s, np.random.default_rng(0))
    ratio = out.answers / base
    assert np.allclose(ratio, np.round(ratio), atol=1e-9)
    assert np.all(np.abs(out.answers - out.true_answers) <= base / 2 + 1e-9)
    assert out.noise_scale == base / 2


def test_laplace_fallback_std_and_name() -> None:
    out = Laplace(1.5, use_opendp=False).answer(F_BIG, S_BIG, np.random.default_rng(5))
    err = out.answers - out.true_answers
    assert abs(err.std() - math.sqrt(2) * 1.5) < 0.06
    assert "numpy" in out.name
    assert out.noise_scale == pytest.approx(math.sqrt(2) * 1.5)


def test_laplace_without_opendp_falls_back_reproducibly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the dev install has OpenDP (the [dp] extra); a user's install may not: make it absent
    monkeypatch.setitem(sys.modules, "opendp", None)
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)
    a = Laplace(1.0).answer(F_BIG, S_BIG, np.random.default_rng(9))
    b = Laplace(1.0).answer(F_BIG, S_BIG, np.random.default_rng(9))
    assert "numpy" in a.name
    assert np.array_equal(a.answers, b.answers)


def test_laplace_draws_with_opendp_when_installed() -> None:
    pytest.importorskip("opendp")
    out = Laplace(1.5).answer(F_BIG, S_BIG, np.random.default_rng(5))
    assert "opendp" in out.name
    assert abs((out.answers - out.true_answers).std() - math.sqrt(2) * 1.5) < 0.1


def test_subsampling_bernoulli_mask_and_unbiased() -> None:
    F, s = problem(50, 200, seed=2)
    rng = np.random.default_rng(11)
    mech = Subsampling(0.2)
    trials = [mech.answer(F, s, rng) for _ in range(1500)]
    for out in trials[:20]:
        assert out.sample_mask is not None and out.sample_mask.dtype == bool
        assert np.allclose(out.answers, F @ (s * out.sample_mask) / 0.2)
    mean = np.mean([t.answers for t in trials], axis=0)
    true = trials[0].true_answers
    scale = np.asarray(trials[0].noise_scale)
    # per-answer std of the mean is scale/sqrt(1500); 5 of those is a generous tolerance
    assert np.all(np.abs(mean - true) <= 5 * scale / math.sqrt(1500) + 1e-9)
    empirical = np.std([t.answers for t in trials], axis=0)
    assert np.allclose(empirical, scale, rtol=0.12)
    rate = np.mean([t.sample_mask.mean() for t in trials if t.sample_mask is not None])
    assert abs(rate - 0.2) < 0.005


def test_subsampling_answers_ignore_unsampled_records() -> None:
    F, s = problem(40, 100, seed=4)
    out = Subsampling(0.3).answer(F, s, np.random.default_rng(21))
    assert out.sample_mask is not None
    flipped = np.where(out.sample_mask, s, 1 - s)  # change every record outside the sample
    again = Subsampling(0.3).answer(F, flipped, np.random.default_rng(21))
    assert np.array_equal(out.answers, again.answers)
    assert not np.array_equal(out.true_answers, again.true_answers)


def test_subsampling_with_replacement_counts_and_unbiased() -> None:
    F, s = problem(30, 100, seed=6)
    rng = np.random.default_rng(13)
    mech = Subsampling(0.2, with_replacement=True)
    trials = [mech.answer(F, s, rng) for _ in range(1500)]
    first = trials[0]
    assert first.sample_counts is not None and first.sample_mask is not None
    assert first.sample_counts.sum() == 20
    assert np.array_equal(first.sample_mask, first.sample_counts > 0)
    assert np.allclose(first.answers, F @ (s * first.sample_counts) * 5)
    mean = np.mean([t.answers for t in trials], axis=0)
    scale = np.asarray(first.noise_scale)
    assert np.all(np.abs(mean - first.true_answers) <= 5 * scale / math.sqrt(1500) + 1e-9)
    assert np.allclose(np.std([t.answers for t in trials], axis=0), scale, rtol=0.12)


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5, float("nan")])
def test_subsampling_rate_validated(rate: float) -> None:
    with pytest.raises(ValueError, match="rate"):
        Subsampling(rate)
    with pytest.raises(StatreconError):
        Subsampling(rate)


@settings(max_examples=40, deadline=None)
@given(threshold=st.integers(0, 20), seed=st.integers(0, 1000))
def test_suppression_masks_exactly_small_answers(threshold: int, seed: int) -> None:
    F, s = problem(60, 25, seed)
    out = ThresholdSuppression(threshold).answer(F, s, np.random.default_rng(0))
    true = F @ s
    assert out.suppressed is not None
    assert np.array_equal(out.suppressed, true < threshold)
    assert np.all(np.isnan(out.answers[out.suppressed]))
    assert np.array_equal(out.answers[~out.suppressed], true[~out.suppressed])


def test_parameter_validation() -> None:
    for make in (
        lambda: Gaussian(-1),
        lambda: BoundedUniform(-0.5),
        lambda: Laplace(-2),
        lambda: Rounding(0),
        lambda: Rounding(-3),
        lambda: ThresholdSuppression(-1),
        lambda: DiffixLike(-1.0),
    ):
        with pytest.raises(ValueError):
            make()


@pytest.mark.parametrize("scale", [-1, -0.0001, float("nan"), float("inf"), float("-inf"),
                                   True, "2", None])
@pytest.mark.parametrize("make", [Gaussian, Laplace, BoundedUniform, DiffixLike, Rounding,
                                  Subsampling])
def test_scales_that_are_no_finite_number_are_refused(make: Any, scale: Any) -> None:
    """Issue 12: a negative, NaN or infinite noise scale must never be taken silently."""
    with pytest.raises(MechanismError) as info:
        make(scale)
    assert "must be" in str(info.value) and "\n" not in str(info.value)


# --- Diffix -----------------------------------------------------------------------------------


def in_query(values: list[int]) -> str:
    return f"SELECT COUNT(*) FROM t WHERE id IN ({', '.join(map(str, values))})"


def test_count_conditions() -> None:
    assert count_conditions("SELECT COUNT(*) FROM t WHERE a = 1") == 1
    assert count_conditions(in_query([1, 2, 3, 4])) == 4
    assert (
        count_conditions("SELECT COUNT(*) FROM t WHERE (id = 1 OR id = 2 OR id = 3) AND dx = 'yes'")
        == 4
    )
    assert (
        count_conditions(
            "SELECT COUNT(*) FROM t WHERE a <> 1 AND b < 2 AND c <= 3 AND d > 4 AND e >= 5 "
            "AND f BETWEEN 1 AND 9"
        )
        == 6
    )
    cn = (
        "SELECT COUNT(*) FROM t WHERE floor(3 * pow(id * 7, 0.6e0) + 0.5) = "
        "floor(3 * pow(id * 7, 0.6e0)) AND id BETWEEN 1 AND 100 AND dx = 'yes'"
    )
    assert count_conditions(cn) == 3
    assert count_conditions("SELECT COUNT(*) FROM t") == 0


def test_diffix_is_sticky() -> None:
    F, s = problem(5, 10)
    queries = [in_query([i, i + 1]) for i in range(5)]
    mech = DiffixLike(2.0, seed=3)
    a = mech.answer(F, s, np.random.default_rng(0), queries)
    b = mech.answer(F, s, np.random.default_rng(12345), queries)
    assert np.array_equal(a.answers, b.answers)
    # same text modulo whitespace and keyword case: same noise
    respelled = [q.replace("SELECT", "select").replace(", ", ",   ") for q in queries]
    c = mech.answer(F, s, np.random.default_rng(99), respelled)
    assert np.array_equal(a.answers, c.answers)
    # each query's noise is its own, whatever the batch
    alone = mech.answer(F[2:3], s, np.random.default_rng(1), queries[2:3])
    assert alone.answers[0] == a.answers[2]
    # different texts, seeds: different noise
    noise = a.answers - a.true_answers
    assert len(set(noise.round(12))) == 5
    other = DiffixLike(2.0, seed=4).answer(F, s, np.random.default_rng(0), queries)
    assert not np.array_equal(other.answers, a.answers)


def test_diffix_noise_grows_with_sqrt_conditions() -> None:
    mech = DiffixLike(1.5, seed=0)
    stds = {}
    for c in (1, 4, 16):
        # 1500 distinct query texts with exactly c conditions each
        noise = np.array([mech.noise_for(in_query(list(range(i, i + c))))[0] for i in range(1500)])
        assert mech.noise_for(in_query(list(range(c))))[1] == pytest.approx(1.5 * math.sqrt(c))
        stds[c] = noise.std()
    for c, std in stds.items():
        assert abs(std / (1.5 * math.sqrt(c)) - 1) < 0.08, stds


def test_diffix_needs_query_texts() -> None:
    F, s = problem(3, 4)
    with pytest.raises(ValueError, match="queries"):
        DiffixLike().answer(F, s, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\(3\), got 2"):
        DiffixLike().answer(F, s, np.random.default_rng(0), ["SELECT 1", "SELECT 2"])
    with pytest.raises(StatreconError, match="query 1 is not valid SQL"):
        DiffixLike().answer(F, s, np.random.default_rng(0), ["SELECT 1", "SELEC (", "SELECT 2"])


# --- specs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("exact", ExactMechanism()),
        ("round:5", Rounding(5.0)),
        ("uniform:3", BoundedUniform(3.0)),
        ("gaussian:2.5", Gaussian(2.5)),
        ("laplace:1", Laplace(1.0)),
        ("subsample:0.2", Subsampling(0.2)),
        ("suppress:5", ThresholdSuppression(5)),
        ("diffix:1.0", DiffixLike(1.0, 0)),
        ("diffix:2:7", DiffixLike(2.0, 7)),
        (" Gaussian:2.5 ", Gaussian(2.5)),
    ],
)
def test_mechanism_from_spec(spec: str, expected: object) -> None:
    assert mechanism_from_spec(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "nope",
        "gaussian",
        "gaussian:x",
        "gaussian:-1",
        "round:0",
        "subsample:2",
        "exact:1",
        "suppress:2.5",
        "laplace:inf",
        "uniform:1:2",
    ],
)
def test_bad_spec_is_one_line_user_error(spec: str) -> None:
    with pytest.raises(StatreconError) as info:
        mechanism_from_spec(spec)
    message = str(info.value)
    assert "\n" not in message
    assert repr(spec) in message and "accepted forms" in message


def test_outputs_are_frozen() -> None:
    F, s = problem(3, 4)
    out = ExactMechanism().answer(F, s, np.random.default_rng(0))
    assert isinstance(out, MechanismOutput)
    with pytest.raises(AttributeError):
        out.name = "x"  # type: ignore[misc]
