"""Query generators: DuckDB, evaluating the generated SQL, must agree with the generated matrix."""

from __future__ import annotations

import math
from functools import cache

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.errors import StatreconError
from statrecon.mechanisms import count_conditions
from statrecon.querygen import (
    DEFAULT_EXPONENTS,
    DEFAULT_OFFSETS,
    DEFAULT_PRIMES,
    QuerySet,
    chosen_subsets,
    cohen_nissim,
    cohen_nissim_row,
    conjunctions,
    difference_attack_subsets,
    quote_identifier,
    random_subsets,
    sql_literal,
)

COUNT_PREFIX = "SELECT COUNT(*) FROM "


def connect(frame: pd.DataFrame, table: str = "t") -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("frame_view", frame)
    con.execute(f"CREATE TABLE {quote_identifier(table)} AS SELECT * FROM frame_view")
    return con


def membership(con: duckdb.DuckDBPyConnection, qs: QuerySet, id_column: str = "id") -> np.ndarray:
    """Which records each statement selects, by DuckDB: COUNT(*) rewritten to the id column.

    Statements are generated with ``secret_condition="keep"`` over an all-TRUE ``keep`` column,
    so the selected set is exactly the public predicate's.
    """
    rows = []
    for sql in qs.sql:
        assert sql.startswith(COUNT_PREFIX)
        select = f"SELECT {quote_identifier(id_column)} FROM " + sql[len(COUNT_PREFIX) :]
        got = [r[0] for r in con.execute(select).fetchall()]
        rows.append(np.isin(qs.ids, np.asarray(got, dtype=qs.ids.dtype)))
    return np.array(rows)


def counts(con: duckdb.DuckDBPyConnection, qs: QuerySet) -> np.ndarray:
    return np.array([con.execute(sql).fetchone()[0] or 0 for sql in qs.sql], dtype=np.float64)


def id_frame(ids: np.ndarray, seed: int = 0, id_column: str = "id") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            id_column: ids,
            "keep": np.ones(len(ids), dtype=bool),
            "dx": np.where(rng.random(len(ids)) < 0.4, "yes", "no"),
            "x": rng.normal(10, 3, size=len(ids)).round(2),
        }
    )


# --- literals and identifiers -----------------------------------------------------------------


@cache
def _literal_database() -> duckdb.DuckDBPyConnection:
    """One database for the literals' round trips (a new one per example cost 13 ms)."""
    return duckdb.connect()


@settings(max_examples=80, deadline=None)
@given(
    value=st.one_of(
        st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(2**62), 2**62),
        st.booleans(),
    )
)
def test_literals_round_trip_through_duckdb(value: object) -> None:
    got = _literal_database().execute(f"SELECT {sql_literal(value)}").fetchall()[0][0]
    assert got == value and type(got) is type(value)


def test_identifier_quoting() -> None:
    assert quote_identifier("client_id") == "client_id"
    assert quote_identifier("ClientId") == '"ClientId"'
    assert quote_identifier("my col") == '"my col"'
    assert quote_identifier('we"ird') == '"we""ird"'
    assert quote_identifier("order") == '"order"'


# --- random and chosen subsets ----------------------------------------------------------------


def test_random_subsets_match_duckdb() -> None:
    rng = np.random.default_rng(1)
    ids = rng.permutation(np.arange(1000, 1300))[:120]
    qs = random_subsets(ids, 40, rng, secret_condition="keep")
    assert qs.matrix.shape == (40, 120)
    con = connect(id_frame(ids))
    assert np.array_equal(membership(con, qs), qs.matrix.toarray().astype(bool))
    assert abs(qs.matrix.mean() - 0.5) < 0.03
    # the full statements, secret included, count what the matrix says
    frame = id_frame(ids)
    secret = (frame["dx"] == "yes").to_numpy(dtype=float)
    qs2 = random_subsets(ids, 40, np.random.default_rng(2), secret_condition="dx = 'yes'")
    assert np.array_equal(counts(con, qs2), qs2.matrix @ secret)


def test_random_subsets_sum_column_and_string_ids() -> None:
    ids = np.array(["a", "o'brien", "Z z", "x;--", "ü"])
    frame = id_frame(ids, id_column="Client Id")
    qs = random_subsets(
        ids,
        20,
        np.random.default_rng(3),
        table="My Table",
        id_column="Client Id",
        sum_column="x",
    )
    assert qs.sql[0].startswith('SELECT SUM(x) FROM "My Table" WHERE "Client Id" IN (')
    con = connect(frame, table="My Table")
    got = counts(con, qs)
    assert np.allclose(got, qs.matrix @ frame["x"].to_numpy())


def test_random_subsets_never_empty() -> None:
    qs = random_subsets(
        np.arange(5), 200, np.random.default_rng(4), p=0.05, secret_condition="keep"
    )
    assert np.all(qs.matrix.sum(axis=1) >= 1)


def test_exactly_one_secret_form() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="exactly one"):
        random_subsets(np.arange(5), 2, rng)
    with pytest.raises(ValueError, match="exactly one"):
        random_subsets(np.arange(5), 2, rng, secret_condition="a = 1", sum_column="x")
    with pytest.raises(StatreconError, match="secret_condition"):
        random_subsets(np.arange(5), 2, rng, secret_condition="a = = 1")
    with pytest.raises(ValueError, match="unique"):
        random_subsets(np.array([1, 1, 2]), 2, rng, secret_condition="keep")


def test_or_secret_condition_is_parenthesized() -> None:
    ids = np.arange(10)
    frame = id_frame(ids)
    qs = chosen_subsets(ids, [[0, 1, 2]], secret_condition="dx = 'yes' OR dx = 'no'")
    assert qs.sql[0].endswith("AND (dx = 'yes' OR dx = 'no')")
    assert counts(connect(frame), qs)[0] == 3


def test_chosen_subsets_match_duckdb_and_enforce_min_size() -> None:
    ids = np.arange(100, 150)  # n = 50, n/10 = 5
    subsets = [[100, 101, 102, 103, 104], list(range(120, 150)), [149, 100, 125, 111, 107]]
    qs = chosen_subsets(ids, subsets, min_size="n/10", secret_condition="keep")
    assert np.array_equal(membership(connect(id_frame(ids)), qs), qs.matrix.toarray() == 1)
    with pytest.raises(ValueError, match="fewer than min_size 5"):
        chosen_subsets(ids, [[100, 101, 102, 103]], min_size="n/10", secret_condition="keep")
    with pytest.raises(ValueError, match="min_size 6"):
        chosen_subsets(ids, [range(100, 105)], min_size=6, secret_condition="keep")
    with pytest.raises(ValueError, match="not in the table"):
        chosen_subsets(ids, [[100, 7]], secret_condition="keep")
    with pytest.raises(ValueError, match="empty"):
        chosen_subsets(ids, [[]], secret_condition="keep")
    assert chosen_subsets(ids, [[100]], secret_condition="keep").matrix.sum() == 1


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 60), data=st.data())
def test_difference_attack_subsets_differ_in_exactly_the_target(
    n: int, data: st.DataObject
) -> None:
    ids = np.arange(n) * 3 + 7
    target = data.draw(st.integers(0, n - 1))
    floor = data.draw(st.integers(1, n - 1))
    seed = data.draw(st.one_of(st.none(), st.integers(0, 100)))
    rng = None if seed is None else np.random.default_rng(seed)
    with_t, without = difference_attack_subsets(ids, target, floor, rng)
    assert len(without) >= floor and len(with_t) >= floor
    assert set(with_t) ^ set(without) == {ids[target]}
    assert set(with_t) - set(without) == {ids[target]}
    # the query interface accepts both, and their difference is the target's row
    qs = chosen_subsets(ids, [with_t, without], min_size=floor, secret_condition="keep")
    diff = qs.matrix.toarray()[0] - qs.matrix.toarray()[1]
    assert np.array_equal(diff, np.eye(n)[target])


def test_difference_attack_reveals_secret_through_duckdb() -> None:
    ids = np.arange(1, 201)
    frame = id_frame(ids, seed=5)
    con = connect(frame)
    for target in (0, 57, 199):
        pair = difference_attack_subsets(ids, target, "n/10")
        assert min(len(p) for p in pair) >= 20
        qs = chosen_subsets(ids, pair, min_size="n/10", secret_condition="dx = 'yes'")
        a, b = counts(con, qs)
        assert (a - b == 1) == (frame["dx"].iloc[target] == "yes")


def test_difference_attack_needs_enough_records() -> None:
    with pytest.raises(ValueError, match="besides the target"):
        difference_attack_subsets(np.arange(5), 0, 5)


# --- Cohen–Nissim -----------------------------------------------------------------------------


def test_cohen_nissim_grid_matches_duckdb_exactly() -> None:
    ids = np.arange(1, 201)
    offsets = tuple(range(1, 11))
    qs = cohen_nissim(ids, DEFAULT_PRIMES, offsets, DEFAULT_EXPONENTS, secret_condition="keep")
    assert len(qs) == 5 * 10 * 5
    got = membership(connect(id_frame(ids)), qs)
    assert np.array_equal(got, qs.matrix.toarray() == 1)
    # roughly half the ids per query, as the defaults' comment claims
    cover = qs.matrix.mean(axis=1)
    assert cover.min() > 0.35 and cover.max() < 0.65 and abs(cover.mean() - 0.5) < 0.02


def test_cohen_nissim_sql_shape_and_conditions() -> None:
    qs = cohen_nissim(
        np.arange(1, 11),
        (7,),
        (3,),
        (0.6,),
        id_range=(2, 8),
        id_column="clientId",
        secret_condition="dx = 'yes'",
    )
    assert qs.sql == [
        'SELECT COUNT(*) FROM t WHERE floor(3 * pow("clientId" * 7, 0.6e0) + 0.5) = '
        'floor(3 * pow("clientId" * 7, 0.6e0)) AND "clientId" BETWEEN 2 AND 8 AND dx = \'yes\''
    ]
    assert count_conditions(qs.sql[0]) == 3  # short queries: Diffix-style noise stays O(1)


def test_cohen_nissim_id_range_and_float_offsets_match_duckdb() -> None:
    ids = np.random.default_rng(8).permutation(np.arange(1, 3001))[:400]
    qs = cohen_nissim(
        ids,
        (13, 17),
        (1.5, 100, 0.37),
        (0.7, 0.45),
        id_range=(500, 2500),
        secret_condition="keep",
    )
    got = membership(connect(id_frame(ids)), qs)
    matrix = qs.matrix.toarray() == 1
    assert np.array_equal(got, matrix)
    assert not matrix[:, (ids < 500) | (ids > 2500)].any()


def test_cohen_nissim_row_matches_libm_pow_everywhere() -> None:
    """numpy's pow may differ from C's by an ulp; the row must still follow C's (DuckDB's)."""
    ids = np.arange(1, 3001)
    for m in DEFAULT_PRIMES:
        for o in DEFAULT_OFFSETS:
            for e in DEFAULT_EXPONENTS:
                x = [o * math.pow(float(i * m), e) for i in ids]
                expected = np.array([math.floor(v + 0.5) == math.floor(v) for v in x])
                assert np.array_equal(cohen_nissim_row(ids, m, o, e), expected), (m, o, e)


def test_cohen_nissim_row_repairs_an_ulp_off_vectorized_pow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """If numpy's pow is one ulp low right at a half-integer, the row still follows C's pow."""
    true_power = np.power
    monkeypatch.setattr(np, "power", lambda a, b: np.nextafter(true_power(a, b), 0))
    # 1.25 * (2 * 2) ** 0.5 = 2.5 exactly: floor(3.0) != floor(2.5), so id 2 is not covered
    assert cohen_nissim_row(np.array([2]), 2, 1.25, 0.5).tolist() == [False]
    monkeypatch.undo()
    assert (
        duckdb.connect()
        .execute(
            "SELECT floor(1.25e0 * pow(2 * 2, 0.5e0) + 0.5) = floor(1.25e0 * pow(2 * 2, 0.5e0))"
        )
        .fetchall()[0][0]
        is False
    )


def test_cohen_nissim_needs_integer_ids() -> None:
    with pytest.raises(ValueError, match="integer ids"):
        cohen_nissim(np.array(["a", "b"]), secret_condition="keep")


# --- conjunctions -----------------------------------------------------------------------------


def people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": np.arange(n) + 1,
            "keep": np.ones(n, dtype=bool),
            "sex": rng.choice(["F", "M"], size=n),
            "age": rng.integers(0, 90, size=n),
            "zip": rng.choice(["02445", "02446", "O'Hare"], size=n),
            "Eye Color": pd.Categorical(rng.choice(["blue", "brown"], size=n)),
            "income": rng.normal(50_000, 9_000, size=n).round(1) / 3,
            "right_handed": rng.random(n) < 0.9,
        }
    )


def test_conjunctions_match_duckdb() -> None:
    frame = people(300, 1)
    columns = ["sex", "age", "zip", "Eye Color", "income", "right_handed"]
    qs = conjunctions(frame, columns, 150, np.random.default_rng(2), secret_condition="keep")
    got = membership(connect(frame), qs)
    matrix = qs.matrix.toarray() == 1
    assert np.array_equal(got, matrix)
    assert matrix.any(axis=1).all()  # every query covers at least its anchor record
    assert any("'O''Hare'" in q for q in qs.sql)
    assert any('"Eye Color" = ' in q for q in qs.sql)
    assert any("income <= " in q or "income >= " in q for q in qs.sql)
    # ranges are never put on text columns
    assert not any("sex <" in q or "sex >" in q for q in qs.sql)


def test_conjunctions_condition_counts_and_sum() -> None:
    frame = people(80, 3)
    qs = conjunctions(
        frame,
        ["sex", "age", "zip"],
        30,
        np.random.default_rng(4),
        conditions=(2, 3),
        sum_column="income",
    )
    for q in qs.sql:
        assert count_conditions(q) in (2, 3)
    got = counts(connect(frame), qs)
    assert np.allclose(got, qs.matrix @ frame["income"].to_numpy())
    fixed = conjunctions(
        frame, ["sex", "age"], 5, np.random.default_rng(4), conditions=2, secret_condition="keep"
    )
    assert all(count_conditions(q) == 2 for q in fixed.sql)  # a bare column is no comparison


def test_conjunctions_errors() -> None:
    frame = people(10, 0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="not in the frame"):
        conjunctions(frame, ["nope"], 1, rng, secret_condition="keep")
    with pytest.raises(ValueError, match="conditions"):
        conjunctions(frame, ["sex"], 1, rng, conditions=2, secret_condition="keep")
    frame.loc[3, "sex"] = None
    with pytest.raises(ValueError, match="missing"):
        conjunctions(frame, ["sex"], 1, rng, secret_condition="keep")
