"""The linear engine: hospital example of reference 004, exact determinability against an
exact-rational oracle, estimators, integer decoding against brute force, routing and errors."""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statrecon
from statrecon.engines.linear import LinearResult, SolverIncomplete, determine
from statrecon.engines.linear.model import NotLinear, compile_linear
from statrecon.engines.linear.solvers import (
    solve_ip,
    solve_kaczmarz,
    solve_lp_l1,
    solve_lp_linf,
    solve_ls,
    solve_sgd,
)
from statrecon.errors import StatreconError
from statrecon.release.files import load_release, parse_release
from statrecon.release.known import PublicTable, load_public
from statrecon.report.linear import to_json

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
HOSPITAL = EXAMPLES / "hospital.yaml"
# Reference 004: the true blood sugar values, the least-squares (minimum-norm) solution, and
# the constrained estimate with 3 <= x <= 10 and x1 <= 5 (cvxpy in the reference).
TRUTH = [4.3, 5.2, 6.1, 3.2, 7.1, 6.2]
MIN_NORM = [5.7, 5.2, 31 / 6, 31 / 6, 5.7, 31 / 6]
CONSTRAINED = [4.06728662, 5.20000018, 5.1666669, 5.1666669, 7.3327138, 5.1666669]


def hospital_system(bounds: bool = False):  # type: ignore[no-untyped-def]
    rel = load_release(HOSPITAL)
    assert rel.public is not None
    pub = load_public(rel.public, rel.schema)
    pair = (np.full(6, 3.0), np.array([5, 10, 10, 10, 10, 10.0])) if bounds else None
    return compile_linear(rel, pub, pair)


# --------------------------------------------------------------------------- hospital

def test_hospital_matrix_is_the_references() -> None:
    system = hospital_system()
    assert system.matrix.toarray().tolist() == [
        [1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 0, 1], [1, 0, 0, 0, 1, 0]]
    assert system.answers.tolist() == [32.1, 15.5, 11.4]
    assert system.exact_answers == (Fraction("32.1"), Fraction("15.5"), Fraction("11.4"))


def test_hospital_determine_exactly_record_2_with_certificate() -> None:
    result = statrecon.reconstruct(HOSPITAL, method="determine")
    assert isinstance(result, LinearResult)
    assert result.status == "partial"
    data = to_json(result)
    assert data["determined"] == [{
        "index": 1, "value": 5.2,
        "certificate": [{"statistic": "q1", "coefficient": 1},
                        {"statistic": "q2", "coefficient": -1},
                        {"statistic": "q3", "coefficient": -1}],
        "interval": [5.2, 5.2], "proof": "combination"}]
    assert result.determination is not None
    assert result.determination.determined[0].value == Fraction("5.2")  # exact, not 5.2000001


def test_hospital_ls_is_the_minimum_norm_solution() -> None:
    system = hospital_system()
    x = solve_ls(system.matrix, system.answers)
    assert np.allclose(x, MIN_NORM, atol=1e-9)
    result = statrecon.reconstruct(HOSPITAL, method="ls")
    assert isinstance(result, LinearResult)
    assert np.allclose([float(v) for v in result.labels], MIN_NORM, atol=1e-9)


def test_hospital_constrained_estimate_matches_reference() -> None:
    system = hospital_system(bounds=True)
    x = solve_ls(system.matrix, system.answers, system.lower, system.upper)
    assert np.max(np.abs(x - np.array(CONSTRAINED))) < 0.01
    assert np.all(x >= system.lower - 1e-9) and np.all(x <= system.upper + 1e-9)
    # the same through the front door with bounds read from public-table columns
    result = statrecon.reconstruct(HOSPITAL, method="ls", bounds=("sugar_low", "sugar_high"))
    assert isinstance(result, LinearResult)
    assert np.max(np.abs(np.array(result.labels, dtype=float) - CONSTRAINED)) < 0.01


def test_hospital_other_estimators_respect_the_equations_and_bounds() -> None:
    system = hospital_system(bounds=True)
    F, a, lo, hi = system.matrix, system.answers, system.lower, system.upper
    for x in (solve_lp_l1(F, a, lo, hi), solve_lp_linf(F, a, lo, hi)):
        assert np.allclose(F @ x, a, atol=1e-6)
        assert np.all(x >= lo - 1e-9) and np.all(x <= hi + 1e-9)
        assert x[1] == pytest.approx(5.2, abs=1e-6)
    xk = solve_kaczmarz(F, a, lo, hi, epochs=3000, block=1, rng=np.random.default_rng(1))
    assert np.allclose(F @ xk, a, atol=0.05) and xk[1] == pytest.approx(5.2, abs=0.05)
    xs = solve_sgd(F, a, lo, hi, epochs=400, rng=np.random.default_rng(1), backend="numpy")
    assert np.allclose(F @ xs, a, atol=0.1)
    assert np.max(np.abs(xs - np.array(CONSTRAINED))) < 0.3  # the reference's SGD is this close


# --------------------------------------------------------------------------- determinability

def rank(rows: list[list[Fraction]]) -> int:
    """Exact rank by Gaussian elimination over the rationals (the oracle)."""
    m = [list(r) for r in rows]
    r = 0
    cols = len(m[0]) if m else 0
    for c in range(cols):
        pivot = next((i for i in range(r, len(m)) if m[i][c] != 0), None)
        if pivot is None:
            continue
        m[r], m[pivot] = m[pivot], m[r]
        for i in range(len(m)):
            if i != r and m[i][c] != 0:
                f = m[i][c] / m[r][c]
                m[i] = [a - f * b for a, b in zip(m[i], m[r], strict=True)]
        r += 1
    return r


matrices = st.integers(1, 6).flatmap(lambda k: st.integers(1, 7).flatmap(
    lambda n: st.lists(st.lists(st.sampled_from([0, 0, 1, 1, 1, -1, 2]), min_size=n,
                                max_size=n), min_size=k, max_size=k)))


@settings(max_examples=200, deadline=None)
@given(matrices, st.integers(0, 10**6), st.sampled_from(["auto", "rref"]),
       st.booleans(), st.booleans())
def test_determine_agrees_with_exact_oracle(rows: list[list[int]], seed: int, algorithm: str,
                                            dependent: bool, corrupt: bool) -> None:
    rng = np.random.default_rng(seed)
    if dependent and len(rows) >= 2:  # a statistic that is the sum of two others
        rows = [*rows, [a + b for a, b in zip(rows[0], rows[-1], strict=True)]]
    A = np.array(rows, dtype=float)
    n = A.shape[1]
    x_true = rng.integers(-5, 6, size=n)
    b = [Fraction(int(v)) for v in np.array(rows, dtype=np.int64) @ x_true]
    if corrupt:
        b[int(rng.integers(len(b)))] += Fraction(1, 3)
    det = determine(A, b, algorithm=algorithm)
    frac = [[Fraction(v) for v in r] for r in rows]
    r_a = rank(frac)
    consistent = rank([[*r, bi] for r, bi in zip(frac, b, strict=True)]) == r_a
    assert det.consistent == consistent
    if not consistent:
        assert det.determined == ()
        # the conflict is a set of statistics that is itself inconsistent
        sub = [frac[i] for i in det.conflict]
        assert rank([[*frac[i], b[i]] for i in det.conflict]) > rank(sub)
        return
    assert det.rank == r_a
    found = {c.index: c for c in det.determined}
    for j in range(n):
        unit = [Fraction(int(i == j)) for i in range(n)]
        in_row_space = rank([*frac, unit]) == r_a
        assert (j in found) == in_row_space, (rows, j)
        if j in found:
            # every solution shares x_j, so it must be the true value; the certificate
            # must reproduce it from the answers
            c = found[j]
            assert sum(co * b[i] for i, co in c.terms) == c.value
            if not corrupt:
                assert c.value == int(x_true[j])


@settings(max_examples=60, deadline=None)
@given(matrices, st.integers(0, 10**6))
def test_never_determined_when_two_solutions_differ(rows: list[list[int]], seed: int) -> None:
    """Build a second solution from a null-space vector; it must agree on determined records."""
    from scipy.linalg import null_space

    A = np.array(rows, dtype=float)
    n = A.shape[1]
    x = np.random.default_rng(seed).integers(-5, 6, size=n).astype(float)
    b = [Fraction(round(v)) for v in A @ x]
    det = determine(A, b)
    N = null_space(A)
    for c in det.determined:
        if N.size:
            assert np.allclose(N[c.index], 0, atol=1e-9)


def test_determine_reports_inconsistency() -> None:
    A = np.array([[1, 1, 0], [0, 1, 1], [1, 2, 1]])
    det = determine(A, [Fraction(1), Fraction(2), Fraction(4)])
    assert not det.consistent and det.determined == ()
    assert set(det.conflict) == {0, 1, 2}


def test_duplicate_columns_are_never_determined() -> None:
    A = np.array([[1, 1, 0], [0, 0, 1]])
    det = determine(A, [Fraction(1), Fraction(1)])
    assert [c.index for c in det.determined] == [2]


# --------------------------------------------------------------------------- integer decoding

@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**6))
def test_ip_is_proven_optimal_and_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = 7, 9
    F = (rng.random((k, n)) < 0.5).astype(float)
    s = rng.integers(0, 2, n)
    a = F @ s + rng.integers(-1, 2, k)
    x, status = solve_ip(F, a, np.zeros(n), np.ones(n), time_limit=30)
    assert status == "optimal"
    best = min(np.abs(F @ np.array(v) - a).sum() for v in itertools.product((0, 1), repeat=n))
    assert np.abs(F @ np.round(x) - a).sum() == pytest.approx(best)


def test_ip_reports_unknown_on_a_time_limit() -> None:
    rng = np.random.default_rng(0)
    n, k = 400, 300
    F = (rng.random((k, n)) < 0.5).astype(float)
    a = F @ rng.integers(0, 2, n) + rng.normal(0, 6, k)
    _, status = solve_ip(F, a, np.zeros(n), np.ones(n), time_limit=0.2)
    assert status == "unknown"


# --------------------------------------------------------------------------- releases

def categorical_release(stats: str) -> str:
    return (
        "version: 1\ntable: loans\ncolumns:\n"
        "  client_id: {type: integer, known: true}\n"
        "  status: {type: categorical, values: [C, A, B]}\n"
        "statistics:\n" + stats)


def test_categorical_secret_indicator_and_labels() -> None:
    rng = np.random.default_rng(3)
    n = 60  # above EXACT_MAX_ROWS, so auto picks the linear engine
    ids = list(range(1, n + 1))
    truth = ["C" if v else ("A" if rng.random() < 0.5 else "B") for v in rng.random(n) < 0.4]
    stats = []
    for i in range(1, n + 1):
        members = [j for j in ids if j <= i]
        value = sum(1 for j in members if truth[j - 1] == "C")
        stats.append(f"  - {{id: p{i}, sql: \"SELECT COUNT(*) FROM loans WHERE status = 'C' "
                     f"AND client_id <= {i}\", value: {value}}}\n")
    rel = parse_release(categorical_release("".join(stats)))
    public = PublicTable("ids", n, {"client_id": tuple(ids)})
    result = statrecon.reconstruct(rel, public=public)
    assert isinstance(result, LinearResult) and result.method == "determine"
    assert result.status == "determined"
    assert result.labels == ["C" if t == "C" else "other" for t in truth]


def test_count_of_complement_and_avg_are_linear() -> None:
    text = (
        "version: 1\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  ill: {type: categorical, values: ['no', 'yes']}\n"
        "statistics:\n"
        "  - {id: a, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id < 3\", value: 1}\n"
        "  - {id: b, sql: \"SELECT COUNT(*) FROM t WHERE ill <> 'yes' AND id < 2\", value: 0}\n")
    public = PublicTable("ids", 3, {"id": (1, 2, 3)})
    result = statrecon.reconstruct(parse_release(text), public=public, method="determine")
    assert isinstance(result, LinearResult)
    det = {c.index: c.value for c in result.determination.determined}  # type: ignore[union-attr]
    assert det == {0: 1, 1: 0}
    assert result.labels[:2] == ["yes", "no"]
    avg = (
        "version: 1\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  pay: {type: real, min: 0, max: 100}\n"
        "statistics:\n"
        "  - {id: m, sql: \"SELECT AVG(pay) FROM t WHERE id <= 2\", value: 15}\n"
        "  - {id: s, sql: \"SELECT SUM(pay) FROM t WHERE id = 1\", value: 10}\n")
    result = statrecon.reconstruct(parse_release(avg), public=public)
    assert isinstance(result, LinearResult)
    det = {c.index: c.value for c in result.determination.determined}  # type: ignore[union-attr]
    assert det == {0: 10, 1: 20}


def test_auto_prefers_the_exact_engine_for_a_small_discrete_secret() -> None:
    """Two 0/1 secrets summing to 2: linear algebra pins neither, the domain pins both."""
    text = (
        "version: 1\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  ill: {type: categorical, values: ['no', 'yes']}\n"
        "statistics:\n"
        "  - {id: a, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id < 3\", value: 2}\n")
    public = PublicTable("ids", 3, {"id": (1, 2, 3)})
    rel = parse_release(text)
    linear = statrecon.reconstruct(rel, public=public, method="determine")
    assert isinstance(linear, LinearResult) and linear.status == "partial"
    assert linear.determination is not None and linear.determination.determined == ()
    exact = statrecon.reconstruct(rel, public=public)
    assert not isinstance(exact, LinearResult)
    cells = {(c.row["id"], c.value) for c in exact.certain_cells}
    assert {(1, "yes"), (2, "yes")} <= cells


def test_auto_keeps_non_linear_releases_on_the_exact_engine() -> None:
    result = statrecon.reconstruct(EXAMPLES / "clinic.yaml")  # two unknown columns
    assert not isinstance(result, LinearResult)
    with pytest.raises(StatreconError, match="exactly one unknown column"):
        statrecon.reconstruct(EXAMPLES / "clinic.yaml", method="ls")


def test_secret_condition_inside_or_is_not_linear() -> None:
    text = (
        "version: 1\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  ill: {type: categorical, values: ['no', 'yes']}\n"
        "statistics:\n"
        "  - {id: bad, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' OR id < 3\", value: 1}\n")
    public = PublicTable("ids", 3, {"id": (1, 2, 3)})
    with pytest.raises(NotLinear, match="statistic 'bad'"):
        compile_linear(parse_release(text), public)


# --------------------------------------------------------------------------- soundness at the edges

@pytest.mark.parametrize("solver", [solve_lp_l1, solve_lp_linf])
def test_lp_without_an_optimum_raises_instead_of_guessing(solver) -> None:  # type: ignore[no-untyped-def]
    """HiGHS's real status decides: an empty box has no optimum, and no x comes back."""
    F = np.array([[1.0, 1.0], [0.0, 1.0]])
    with pytest.raises(SolverIncomplete, match="infeasible"):
        solver(F, np.array([1.0, 0.5]), np.array([0.0, 2.0]), np.array([1.0, 1.0]))


def test_determined_value_outside_the_domain_is_infeasible() -> None:
    text = HOSPITAL.read_text().replace("{type: real, min: 0, max: 40}",
                                        "{type: real, min: 0, max: 5}")
    rel = parse_release(text, source=HOSPITAL)
    for method in ("determine", "ls"):
        result = statrecon.reconstruct(rel, method=method)
        assert isinstance(result, LinearResult)
        assert result.status == "infeasible"  # x2 = 5.2 is proven, but the domain says <= 5
        assert sorted(to_json(result)["conflict"]) == ["q1", "q2", "q3"]


def test_fractional_count_is_infeasible() -> None:
    text = (
        "version: 1\ntable: t\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  ill: {type: categorical, values: ['no', 'yes']}\n"
        "statistics:\n"
        "  - {id: a, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id < 3\", value: 1}\n"
        "  - {id: b, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id > 1\", value: 1}\n"
        "  - {id: c, sql: \"SELECT COUNT(*) FROM t WHERE ill = 'yes' AND id <> 2\", value: 1}\n")
    public = PublicTable("ids", 3, {"id": (1, 2, 3)})
    result = statrecon.reconstruct(parse_release(text), public=public, method="determine")
    assert isinstance(result, LinearResult) and result.status == "infeasible"  # x = 1/2 each
    assert sorted(to_json(result)["conflict"]) == ["a", "b", "c"]
