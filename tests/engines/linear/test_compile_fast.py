"""Issue 14 item 4: public predicates of one shape are evaluated in one joined DuckDB query.
The result must be what evaluating each predicate on its own gives (the old path, kept as
``_evaluate_each``), boolean for boolean, error for error, on random predicates over random
public tables."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.db import hardened
from statrecon.errors import StatreconError
from statrecon.release.evaluate import (
    _evaluate_each,
    _shape_groups,
    evaluate_predicates,
)
from statrecon.release.known import PublicTable
from statrecon.release.model import Release
from statrecon.release.predicate import KnownBool
from statrecon.release.schema import Column, ColumnType, Schema
from statrecon.release.sql import parse_predicate
from statrecon.release.statistic import Aggregate, Query, Statistic

SCHEMA = Schema(table="t", columns=(
    Column("id", ColumnType.INTEGER, known=True),
    Column("age", ColumnType.INTEGER, known=True),
    Column("w", ColumnType.REAL, known=True),
    Column("sex", ColumnType.CATEGORICAL, values=("F", "M", "02138"), known=True),
    Column("dx", ColumnType.CATEGORICAL, values=("yes", "no")),
))
RELEASE = Release(name="r", schema=SCHEMA, statistics=())

numbers = st.one_of(
    st.integers(0, 200).map(str), st.integers(0, 10**12).map(str),
    st.decimals(0, 100, places=2, allow_nan=False, allow_infinity=False).map(str),
    st.floats(0.01, 100, allow_nan=False).map(lambda f: repr(f) + ("" if "e" in repr(f)
                                                                   else "e0")),
    st.sampled_from(["0", "0.5", "1.0e0", "2138", "99999999999999999999"]),
)
TEMPLATES = [
    "floor({a} * pow(id * {b}, 0.5e0) + 0.5) = floor({a} * pow(id * {b}, 0.5e0))",
    "age >= {a}", "age BETWEEN {a} AND {b}", "id IN ({a}, {b})", "w * {a} < {b}",
    "mod(id, {a}) = {b}", "abs(age - {a}) < {b}", "w / {a} > {b}", "age + {a} = w * {b}",
    "sex = {a}", "(age > {a} OR sex = 'F')", "id * {a} > {b} AND sex = 'M'",
    "age = '{a}'", "id / {a} = {b}", "floor(w) = {a}",
]


@st.composite
def predicate(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEMPLATES)).format(a=draw(numbers), b=draw(numbers))
    pred = parse_predicate(text, SCHEMA)  # the re-generated text compile_linear evaluates
    assert isinstance(pred, KnownBool)
    return pred.sql


@st.composite
def public_table(draw: st.DrawFn) -> PublicTable:
    rows = draw(st.integers(0, 12))
    ints = st.integers(-50, 300)
    return PublicTable(source="<random>", rows=rows, columns={
        "id": tuple(range(1, rows + 1)),
        "age": tuple(draw(st.lists(ints, min_size=rows, max_size=rows))),
        "w": tuple(draw(st.lists(st.floats(-10, 1000, allow_nan=False), min_size=rows,
                                 max_size=rows))),
        "sex": tuple(draw(st.lists(st.sampled_from(("F", "M", "02138")), min_size=rows,
                                   max_size=rows))),
    })


def owners(sqls: list[str]) -> list[Statistic]:
    return [Statistic(f"s{i}", sql, Query(Aggregate.COUNT, None), None)
            for i, sql in enumerate(sqls)]


def one_by_one(public: PublicTable, sqls: list[str]) -> list[np.ndarray] | str:
    """The old evaluation: every predicate its own expression."""
    import pandas as pd

    con = hardened({"t": pd.DataFrame({**public.columns, "__row": range(public.rows)})})
    found: dict[str, np.ndarray] = {}
    distinct = list(dict.fromkeys(sqls))
    try:
        _evaluate_each(con, "t", distinct, found, owners(sqls)[:0] + [
            owners(sqls)[sqls.index(s)] for s in distinct])
    except StatreconError as e:
        return str(e)
    finally:
        con.close()
    masks = []
    for s in sqls:  # _evaluate_each keeps the indices of the rows a predicate holds on
        mask = np.zeros(public.rows, dtype=bool)
        mask[found[s]] = True
        masks.append(mask)
    return masks


def shared(public: PublicTable, sqls: list[str]) -> list[np.ndarray] | str:
    try:
        return evaluate_predicates(RELEASE, public, sqls, owners(sqls))
    except StatreconError as e:
        return str(e)


@settings(max_examples=120, deadline=None)
@given(public_table(), st.lists(predicate(), min_size=1, max_size=30))
def test_shared_evaluation_equals_one_by_one(public: PublicTable, sqls: list[str]) -> None:
    expected, got = one_by_one(public, sqls), shared(public, sqls)
    if isinstance(expected, str):
        assert isinstance(got, str)  # an error either way (DuckDB's, naming a statistic)
        assert "DuckDB cannot evaluate" in got or "NULL" in got
        return
    assert not isinstance(got, str), got
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a.dtype == bool and a.shape == (public.rows,)
        assert np.array_equal(a, b)


def test_one_shape_is_one_group() -> None:
    """Cohen–Nissim predicates over many numbers: grouped by shape and number types."""
    sqls = [parse_predicate(TEMPLATES[0].format(a=f"{o}e0", b=m), SCHEMA).sql  # type: ignore
            for o in (1.0, 1.5, 2.0) for m in (2, 3, 5, 7)]
    con = hardened()
    try:
        groups, rest = _shape_groups(con, sqls)
    finally:
        con.close()
    assert rest == [] and len(groups) == 1 and len(groups[0].sqls) == 12
    public = PublicTable("<ids>", 40, {"id": tuple(range(1, 41)), "age": (1,) * 40,
                                       "w": (0.5,) * 40, "sex": ("F",) * 40})
    expected = one_by_one(public, sqls)
    assert not isinstance(expected, str)
    for a, b in zip(shared(public, sqls), expected, strict=True):
        assert np.array_equal(a, b)


def test_an_error_still_names_its_statistic() -> None:
    public = PublicTable("<ids>", 3, {"id": (1, 2, 3), "age": (1, 2, 3), "w": (0.5, 1, 2),
                                      "sex": ("F", "M", "F")})
    sqls = ["age = 1", "age = 2", "CAST('x' || age AS INTEGER) = 3"]
    with pytest.raises(StatreconError, match="statistic 's2'"):
        evaluate_predicates(RELEASE, public, sqls, owners(sqls))


def _plan_fills(texts: list[str]) -> tuple[list[str], list]:
    """Public predicates and their fills (template + literals) as ``compile_linear`` gets them
    from the statement-shape cache, for statements WHERE <text> AND dx = 'yes'."""
    from statrecon.engines.linear.model import linear_plan
    from statrecon.release.sql import QueryParser
    from statrecon.release.statistic import Exact

    parser = QueryParser(SCHEMA)
    stats = tuple(
        Statistic(f"s{i}", sql, parser.parse(sql), Exact(1))  # type: ignore[arg-type]
        for i, sql in enumerate(
            f"SELECT COUNT(*) FROM t WHERE ({text}) AND dx = 'yes'" for text in texts))
    plan, reason = linear_plan(Release(name="r", schema=SCHEMA, statistics=stats))
    assert plan is not None, reason
    return [p.public_sql for p in plan.parsed], [p.public_fill for p in plan.parsed]


@settings(max_examples=80, deadline=None)
@given(public_table(), st.lists(st.tuples(st.sampled_from(TEMPLATES), numbers, numbers),
                                min_size=2, max_size=30))
def test_shapes_read_from_the_parse_equal_shapes_read_from_the_text(
        public: PublicTable, drawn: list[tuple[str, str, str]]) -> None:
    """The shape a statement brings from its parse (``KnownBool.filled``) groups predicates
    as scanning their text does, with the same numbers, and evaluates to the same rows."""
    try:
        sqls, fills = _plan_fills([t.format(a=a, b=b) for t, a, b in drawn])
    except StatreconError:
        return  # a statement the schema refuses (e.g. age = '<text>') is no shape at all
    con = hardened()
    try:
        by_text, rest_text = _shape_groups(con, list(dict.fromkeys(sqls)))
        by_fill, rest_fill = _shape_groups(con, list(dict.fromkeys(sqls)),
                                           dict(zip(sqls, fills, strict=True)))
    finally:
        con.close()
    assert any(f is not None for f in fills[1:]) or len(set(sqls)) < 2

    def partition(groups: list) -> set:
        return {frozenset(zip(g.sqls, map(tuple, g.numbers), strict=True)) for g in groups}

    assert partition(by_fill) == partition(by_text)
    assert sorted(rest_fill) == sorted(rest_text)
    expected = one_by_one(public, sqls)
    try:
        got = evaluate_predicates(RELEASE, public, sqls, owners(sqls))
    except StatreconError as e:
        assert isinstance(expected, str), str(e)
        return
    assert not isinstance(expected, str), expected
    for a, b in zip(got, expected, strict=True):
        assert np.array_equal(a, b)
