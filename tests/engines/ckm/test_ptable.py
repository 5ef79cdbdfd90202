"""The maximum-entropy ptable (engines/ckm/ptable.py) against sdcTools' published example and
against its own definition: each row a distribution with mean 0, variance at most V, noise
within D and no count published as 1..js, and no distribution satisfying the same constraints
has more entropy (hypothesis: moves inside the feasible set never raise it)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from statrecon.engines.ckm import PTableParams, build_ptable, maximum_entropy
from statrecon.errors import OptionError, StatreconError


def test_the_published_example_d2_v108_js1() -> None:
    """ptable's vignette: D = 2, V = 1.08, js = 1 publishes a 1 as 0, 2 or 3 with
    probabilities 0.5133, 0.46 and 0.0267."""
    table = build_ptable(PTableParams(2, Fraction("1.08"), 1))
    one = table.rows[1]
    assert [t.j for t in one] == [0, 2, 3]
    assert [round(float(t.p), 4) for t in one] == [0.5133, 0.46, 0.0267]
    assert [round(float(t.p), 3) for t in one] == [0.513, 0.460, 0.027]
    # ncat = D + js + 1 rows; the last one is symmetric and serves every larger count
    assert sorted(table.rows) == [1, 2, 3, 4]
    last = table.rows[4]
    assert [t.v for t in last] == [-2, -1, 0, 1, 2]
    assert abs(last[0].p - last[-1].p) <= Fraction(1, 10**8)
    assert table.row(1000) == 4 and table.noise == 2 and table.blocked == 1


def test_rows_are_exact_distributions_with_key_intervals() -> None:
    table = build_ptable(PTableParams(5, Fraction(3), 2))
    for i, row in table.rows.items():
        assert row[0].lower == 0 and row[-1].upper == 1
        assert all(a.upper == b.lower for a, b in itertools.pairwise(row))
        assert sum(t.p for t in row) == 1
        assert all((t.p * 10**8).denominator == 1 for t in row)  # 8 decimals, as ptable
        assert all(not 1 <= t.j <= 2 for t in row)
        assert all(abs(t.v) <= 5 and t.j >= 0 and t.i == i for t in row)
        mean = sum(t.p * t.v for t in row)
        variance = sum(t.p * t.v**2 for t in row)
        assert abs(mean) < Fraction(1, 10**6)
        assert variance <= 3 + Fraction(1, 10**6)


def _entropy(p: np.ndarray) -> float:
    return float(-(p * np.log(p)).sum())


def _null_space(a: np.ndarray) -> np.ndarray:
    _, s, vt = np.linalg.svd(a)
    return vt[int((s > 1e-12).sum()):]


@settings(max_examples=40, deadline=None)
@example(d=2, variance=0.5, i=3, js=2, seed=0).via("noises [0, 1, 2], seen in CI")
@given(d=st.integers(1, 4), variance=st.sampled_from([0.5, 1.0, 1.08, 1.5, 2.0, 3.0]),
       i=st.integers(1, 8), js=st.integers(0, 2), seed=st.integers(0, 2**31))
def test_no_feasible_distribution_has_more_entropy(d: int, variance: float, i: int, js: int,
                                                   seed: int) -> None:
    params = PTableParams(d, Fraction(variance), js, mono=False)
    v = np.array([j - i for j in params.targets(i)], dtype=float)
    try:
        p = maximum_entropy(v, variance, mono=False)
    except StatreconError:
        # refused: then no distribution over v with every probability at least 2e-8 has
        # mean 0 and a variance clearly below V (an LP's answer, checked by hand)
        from scipy.optimize import linprog

        lp = linprog(v * v, A_eq=np.vstack([np.ones_like(v), v]), b_eq=[1, 0],
                     bounds=[(2e-8, 1)] * len(v))
        # HiGHS keeps bounds only to its tolerance (1e-7): over noises [0, 1, 2] it returns
        # x = (1, 0, 0), a "witness" below the floor; a witness must keep the floor itself
        witness = (lp.status == 0 and abs(v @ lp.x) < 1e-12 and lp.fun < variance - 1e-6
                   and lp.x.min() >= 1e-8)
        assert not witness
        return
    assert abs(p.sum() - 1) < 1e-6 and abs(v @ p) < 1e-6 and v * v @ p <= variance + 1e-6
    rng = np.random.default_rng(seed)
    moves = _null_space(np.vstack([np.ones_like(v), v]))
    best = _entropy(p)
    for _ in range(50):
        if not len(moves):
            break
        step = rng.normal(size=len(moves)) @ moves * 10 ** rng.uniform(-6, -2)
        q = p + step
        if q.min() < 1e-8 or (v * v) @ q > max(variance, (v * v) @ p):
            continue
        assert _entropy(q) <= best + 1e-9


def test_monotony_holds_on_the_negative_side() -> None:
    table = build_ptable(PTableParams(4, Fraction(1)))
    for row in table.rows.values():
        negative = [t.p for t in row if t.v <= 0]
        assert all(a <= b + Fraction(1, 10**7) for a, b in itertools.pairwise(negative))


def test_a_variance_too_small_is_one_clear_error() -> None:
    with pytest.raises(StatreconError, match="choose a larger V or D"):
        build_ptable(PTableParams(2, Fraction(1, 2), 1))


@pytest.mark.parametrize("params", [dict(D=0, V=1), dict(D=2, V=0), dict(D=2, V=1, js=-1)])
def test_parameters_out_of_range_are_refused(params: dict[str, int]) -> None:
    with pytest.raises(OptionError):
        PTableParams(**params)  # type: ignore[arg-type]


def test_the_last_row_has_the_variance_v() -> None:
    table = build_ptable(PTableParams(3, Fraction(2)))
    last = table.rows[max(table.rows)]
    variance = sum(float(t.p) * t.v**2 for t in last)
    assert math.isclose(variance, 2, abs_tol=1e-6)
