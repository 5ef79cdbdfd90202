"""Rounding-aware exact determinability (issue 14, item 3): a bounded answer (a rounded AVG)
widens each certificate by Σ|c|·e exactly; an integer secret whose interval holds one
admissible integer is proven. Checked against brute force over every integer dataset."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import statrecon
from statrecon.engines.linear import LinearResult, determine
from statrecon.release.files import parse_release
from statrecon.release.known import PublicTable
from statrecon.release.model import Release
from statrecon.release.statistic import Bounded, Exact

MAX_V = 3  # integer secret in 0..MAX_V


def release_text(stats: list[tuple[str, list[int], str, str | None]]) -> str:
    """(aggregate, record ids, value, error) per statistic over an integer secret v."""
    lines = ["version: 1", "table: t", "columns:",
             "  id: {type: integer, known: true}",
             f"  v: {{type: integer, min: 0, max: {MAX_V}}}", "statistics:"]
    for i, (agg, ids, value, error) in enumerate(stats):
        where = f"id IN ({', '.join(map(str, ids))})"
        err = f", error: {error}" if error is not None else ""
        lines.append(f"  - {{id: s{i}, sql: \"SELECT {agg}(v) FROM t WHERE {where}\", "
                     f"value: {value}{err}}}")
    return "\n".join(lines) + "\n"


def consistent_datasets(release: Release, groups: list[list[int]], n: int
                        ) -> list[tuple[int, ...]]:
    """Every integer dataset (v in 0..MAX_V per record) whose statistics (over the record ids
    ``groups``) lie within the published answer ± error: the oracle, reading the release's
    answers directly."""
    checks = []
    for stat, group in zip(release.statistics, groups, strict=True):
        ids = [i - 1 for i in group]
        ans = stat.answer
        value, error = (ans.value, ans.error) if isinstance(ans, Bounded) else (
            ans.value, Fraction(0)) if isinstance(ans, Exact) else (None, None)
        assert value is not None and error is not None
        checks.append((stat.query.aggregate.value, ids, value, error))
    out = []
    for x in itertools.product(range(MAX_V + 1), repeat=n):
        ok = True
        for agg, ids, value, error in checks:
            total = Fraction(sum(x[i] for i in ids))
            got = total / len(ids) if agg == "avg" else total
            if abs(got - value) > error:
                ok = False
                break
        if ok:
            out.append(x)
    return out


@st.composite
def rounded_releases(draw: st.DrawFn) -> tuple[str, list[list[int]], int]:
    n = draw(st.integers(2, 4))
    truth = draw(st.lists(st.integers(0, MAX_V), min_size=n, max_size=n))
    k = draw(st.integers(1, 5))
    stats: list[tuple[str, list[int], str, str | None]] = []
    for _ in range(k):
        ids = sorted(draw(st.sets(st.integers(1, n), min_size=1, max_size=n)))
        agg = draw(st.sampled_from(["AVG", "SUM"]))
        total = sum(truth[i - 1] for i in ids)
        total = min(total + draw(st.sampled_from([0, 0, 0, 0, 1])), MAX_V * len(ids))
        exact = Fraction(total, len(ids)) if agg == "AVG" else Fraction(total)
        decimals = draw(st.sampled_from([None, 0, 1, 2]))
        if decimals is None and exact.denominator == 1:
            stats.append((agg, ids, str(exact.numerator), None))
            continue
        d = 0 if decimals is None else decimals
        rounded = round(exact * 10**d)
        value = f"{Fraction(rounded, 10**d).numerator / 10**d:.{d}f}" if d else str(rounded)
        stats.append((agg, ids, value, f"{0.5 / 10**d:.{d + 1}f}"))
    return release_text(stats), [ids for _, ids, _, _ in stats], n


@settings(max_examples=120, deadline=None)
@given(rounded_releases())
def test_rounding_aware_determination_agrees_with_brute_force(
        case: tuple[str, list[list[int]], int]) -> None:
    text, groups, n = case
    release = parse_release(text)
    public = PublicTable("ids", n, {"id": tuple(range(1, n + 1))})
    result = statrecon.reconstruct(release, public=public, method="determine")
    assert isinstance(result, LinearResult)
    data = result.to_json()
    assert data["determined_checked"]
    fits = consistent_datasets(release, groups, n)
    if result.status == "infeasible":
        assert fits == [], "a conflict is claimed but a dataset fits"
        return
    for r in result.proven:
        assert r.value is not None
        assert all(x[r.index] == r.value for x in fits), (text, r)
    for r in (*result.proven, *result.intervals):
        assert all(r.low <= x[r.index] <= r.high for x in fits)  # type: ignore[operator]
    det = result.determination
    assert det is not None
    for c in (*det.determined, *det.bounded):  # every certificate's own interval holds
        assert all(c.low <= x[c.index] <= c.high for x in fits)
    if not fits:
        return
    if len(result.proven) == n:
        assert result.status == "determined" and len(set(fits)) == 1


def test_a_rounded_avg_pins_an_integer_and_reports_its_interval() -> None:
    """x1 + x2 = 3 exactly; AVG(x1, x2, x3) = 1.67 (± 0.005) → x3 = 5.01 - 3 ± 0.015 = 2."""
    text = release_text([("SUM", [1, 2], "3", None), ("AVG", [1, 2, 3], "1.67", "0.005")])
    result = statrecon.reconstruct(parse_release(text),
                                   public=PublicTable("ids", 3, {"id": (1, 2, 3)}),
                                   method="determine")
    assert isinstance(result, LinearResult) and result.status == "partial"
    data = result.to_json()
    assert data["determined_checked"] is True
    [entry] = data["determined"]
    assert entry["index"] == 2 and entry["value"] == 2
    assert entry["interval"] == [2, 2]  # [1.995, 2.025] cut to the integers
    coefficients = {c["statistic"]: c["coefficient"] for c in entry["certificate"]}
    assert coefficients == {"s0": -1, "s1": 1}  # on the AVG's sum (3 · 1.67 = 5.01)
    c = result.proven[0].certificate
    assert c.value == Fraction("2.01") and c.half_width == Fraction("0.015")


def test_too_few_decimals_leave_a_bounded_interval_not_a_value() -> None:
    """AVG(x1..x3) = 2 to 0 decimals: x3 = 3·AVG - 3 ∈ [1.5, 4.5] → 2..3 (domain 0..3)."""
    text = release_text([("SUM", [1, 2], "3", None), ("AVG", [1, 2, 3], "2", "0.5")])
    result = statrecon.reconstruct(parse_release(text),
                                   public=PublicTable("ids", 3, {"id": (1, 2, 3)}),
                                   method="determine")
    assert isinstance(result, LinearResult)
    data = result.to_json()
    assert data["determined"] == []
    [entry] = data["bounded_records"]
    assert entry["index"] == 2 and entry["interval"] == [2, 3]


def test_rounded_answers_that_cannot_all_hold_are_a_proven_conflict() -> None:
    """SUM(x1, x2) = 3 exactly, AVG(x1, x2) = 1.2 ± 0.05: 1.5 is outside [1.15, 1.25]."""
    text = release_text([("SUM", [1, 2], "3", None), ("AVG", [1, 2], "1.2", "0.05")])
    result = statrecon.reconstruct(parse_release(text),
                                   public=PublicTable("ids", 2, {"id": (1, 2)}),
                                   method="determine")
    assert isinstance(result, LinearResult) and result.status == "infeasible"
    assert sorted(result.to_json()["conflict"]) == ["s0", "s1"]


def test_bounded_rows_within_their_error_are_no_conflict() -> None:
    """The same two statistics, the AVG now 1.5 ± 0.05 (it holds): no conflict."""
    F = np.array([[1, 1], [1, 1]])
    det = determine(F, [Fraction(3), Fraction(3)], [Fraction(0), Fraction("0.1")])
    assert det.consistent and det.determined == () and det.bounded == ()
    det = determine(F, [Fraction(3), Fraction("3.3")], [Fraction(0), Fraction("0.1")])
    assert not det.consistent and det.conflict == (0, 1)


def test_exact_statistics_are_preferred_over_bounded_ones() -> None:
    """x1 is pinned by the exact row alone; a bounded duplicate must not widen it."""
    F = np.array([[1, 0], [1, 0], [1, 1]])
    det = determine(F, [Fraction(2), Fraction("2.04"), Fraction(5)],
                    [Fraction("0.05"), Fraction(0), Fraction(0)])
    found = {c.index: c for c in (*det.determined, *det.bounded)}
    assert found[0].half_width == 0 and found[0].value == Fraction("2.04")
    assert found[0].terms == ((1, Fraction(1)),)
    assert found[1].half_width == 0 and found[1].value == Fraction("2.96")
