"""Issue 14 item 4: ``QueryParser`` parses each SQL shape once and must give, statement by
statement, exactly what a fresh ``parse_query`` gives (the same Query, the same re-generated
SQL text, the same error) — on random statements of shared shapes and on hostile ones."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.errors import ReleaseError
from statrecon.release.schema import Column, ColumnType, Schema
from statrecon.release.sql import SHAPE_LITERALS, QueryParser, literal_shape, parse_query

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hostile"))
from test_injection import CONSTRAINTS, STATISTIC_SQL

SCHEMA = Schema(table="t", columns=(
    Column("id", ColumnType.INTEGER, 1, 1000, known=True),
    Column("age", ColumnType.INTEGER, 0, 120, known=True),
    Column("w", ColumnType.REAL, 0, 10, known=True),
    Column("sex", ColumnType.CATEGORICAL, values=("F", "M", "it's"), known=True),
    Column("dx", ColumnType.CATEGORICAL, values=("yes", "no", "a''b")),
    Column("x", ColumnType.INTEGER, 0, 50),
))


def outcome(parse: object, sql: str) -> tuple[str, object]:
    """What parsing gives: the Query with its SQL text, or the error's message."""
    try:
        q = parse(sql)  # type: ignore[operator]
    except ReleaseError as e:
        return "error", str(e)
    return "query", (q, q.sql)


numbers = st.one_of(
    st.integers(0, 10**12).map(str),
    st.decimals(0, 1000, places=3, allow_nan=False, allow_infinity=False).map(str),
    st.floats(0.01, 1e6, allow_nan=False).map(lambda f: repr(f) + ("" if "e" in repr(f)
                                                                     else "e0")),
    st.sampled_from(["0", "007", "1.50", "2e3", "1E-2", "99999999999999999999999"]),
)
strings = st.one_of(st.sampled_from(["F", "M", "it's", "yes", "no", "a''b", "Z", "", "\\",
                                     "'; DROP TABLE t; --", "x\ny", "ä"]),
                    st.text(max_size=6))


def quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@st.composite
def condition(draw: st.DrawFn) -> str:
    """One condition of many kinds: known arithmetic, categories, the unknown secret."""
    n1, n2 = draw(numbers), draw(numbers)
    s1 = quoted(draw(strings))
    return draw(st.sampled_from([
        f"floor({n1} * pow(id * {n2}, 0.5e0) + 0.5) = floor({n1} * pow(id * {n2}, 0.5e0))",
        f"age >= {n1}", f"age BETWEEN {n1} AND {n2}", f"id IN ({n1}, {n2})",
        f"sex = {s1}", f"sex IN ({s1}, 'F')", f"NOT sex = {s1}", f"dx = {s1}",
        f"dx IN ({s1}, 'no')", f"dx <> {s1}", f"x + {n1} > {n2}", f"x * {n1} <= age",
        f"mod(id, {n1}) = {n2}", f"abs(age - {n1}) < {n2}", f"round(w, {n1}) = {n2}",
        f"w / {n1} > {n2}", f"-{n1} < age", f"age = {s1}", f"(age > {n1} OR sex = {s1})",
        f"age > {n1} -- {s1}", f"age > {n1} /* {n2} */", f"x IN ({n1}, {n2})",
        f"ceil(w) = {n1}.{n2}", f"age > {n1}{s1}", f"sex = {s1} {s1}",
    ]))


@st.composite
def statement(draw: st.DrawFn) -> str:
    head = draw(st.sampled_from(["COUNT(*)", "SUM(x)", "AVG(age)", "MEDIAN(w)",
                                 "COUNT(DISTINCT id)"]))
    conds = draw(st.lists(condition(), min_size=0, max_size=3))
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    return f"SELECT {head} FROM t{where}"


@settings(max_examples=150, deadline=None)
@given(st.lists(statement(), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_cached_parse_equals_a_fresh_parse(statements: list[str], rnd: object) -> None:
    """Every statement through one parser (so later ones hit the shapes of earlier ones, in
    any order and repeated) gives what parsing it alone gives."""
    parser = QueryParser(SCHEMA)
    order = statements * 2
    rnd.shuffle(order)  # type: ignore[attr-defined]
    for sql in order:
        assert outcome(parser.parse, sql) == outcome(lambda s: parse_query(s, SCHEMA), sql)


@pytest.mark.parametrize("sql", STATISTIC_SQL + [f"SELECT COUNT(*) FROM t WHERE {c}"
                                                 for c in CONSTRAINTS])
def test_hostile_statements_fail_as_they_do_alone(sql: str) -> None:
    """The injection corpus, with harmless statements of similar shapes parsed first."""
    sql = sql.replace("{secret}", "/tmp/secret.csv").replace("{out}", "/tmp/out.db")
    parser = QueryParser(SCHEMA)
    for warm in ("SELECT COUNT(*) FROM t WHERE id = 2", "SELECT COUNT(*) FROM t WHERE id = 3",
                 sql.replace("1", "2")):
        outcome(parser.parse, warm)
    assert outcome(parser.parse, sql) == outcome(lambda s: parse_query(s, SCHEMA), sql)
    assert outcome(parser.parse, sql)[0] == "error"


def test_one_shape_is_parsed_once_and_shared() -> None:
    """Cohen–Nissim statements differ only in numbers: one shape, filled in per statement."""
    parser = QueryParser(SCHEMA)
    sqls = [f"SELECT COUNT(*) FROM t WHERE floor({o}e0 * pow(id * {m}, {e}e0) + 0.5) = "
            f"floor({o}e0 * pow(id * {m}, {e}e0)) AND dx = 'yes'"
            for m in (2, 3, 5) for o in (1.0, 1.5) for e in (0.5, 0.55)]
    for sql in sqls:
        assert parser.parse(sql) == parse_query(sql, SCHEMA)
        assert parser.parse(sql).sql == parse_query(sql, SCHEMA).sql
    assert len(parser.shapes) == 1
    assert all(shape is not None for shape in parser.shapes.values())


def test_a_statement_of_many_literals_is_parsed_once_and_gets_no_shape() -> None:
    """A WHERE of 1,001 ORs is written once: making its shape would parse it twice."""
    parser = QueryParser(SCHEMA)
    for n in (SHAPE_LITERALS, SHAPE_LITERALS + 1):
        sql = "SELECT SUM(x) FROM t WHERE " + " OR ".join(f"id = {i}" for i in range(1, n + 1))
        assert parser.parse(sql) == parse_query(sql, SCHEMA)
        assert len(parser.shapes) == 1  # the first has one, the longer one none


def test_a_bad_category_in_a_shared_shape_gives_the_fresh_error() -> None:
    parser = QueryParser(SCHEMA)
    parser.parse("SELECT COUNT(*) FROM t WHERE dx = 'yes'")
    with pytest.raises(ReleaseError, match="'maybe' is not a value of dx"):
        parser.parse("SELECT COUNT(*) FROM t WHERE dx = 'maybe'")


def test_literals_whose_value_changes_the_parse_are_not_shared() -> None:
    """Round's decimals and affine constants on the secret depend on the literal's value:
    those shapes are parsed every time (and still agree with a fresh parse)."""
    parser = QueryParser(SCHEMA)
    for sql in ("SELECT COUNT(*) FROM t WHERE round(w, 1) = 2",
                "SELECT COUNT(*) FROM t WHERE round(w, 2) = 2",
                "SELECT COUNT(*) FROM t WHERE x + 1 > 2", "SELECT COUNT(*) FROM t WHERE x + 3 > 2"):
        assert parser.parse(sql) == parse_query(sql, SCHEMA)
    assert list(parser.shapes.values()) == [None, None]


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(*) FROM t WHERE sex = E'F'", "SELECT COUNT(*) FROM t WHERE sex = \"F\"",
    "SELECT COUNT(*) FROM t WHERE age > 1 -- '", "SELECT COUNT(*) FROM t WHERE sex = 'a\\'",
    "SELECT COUNT(*) FROM t WHERE sex = $$F$$", "SELECT COUNT(*) FROM t WHERE séx = 'F'",
    "SELECT COUNT(*) FROM t WHERE age > \u0663",
])
def test_the_scanner_gives_up_on_what_it_cannot_read_for_certain(sql: str) -> None:
    assert literal_shape(sql) is None


@pytest.mark.parametrize("sql", ["SELECT COUNT(*) FROM t WHERE age > 1_000",
                                 "SELECT COUNT(*) FROM t WHERE age > 0x10",
                                 "SELECT COUNT(*) FROM t WHERE t.5 > 1e"])
def test_numbers_glued_to_other_text_stay_part_of_the_shape(sql: str) -> None:
    assert literal_shape(sql) == (sql, [])


def test_the_shape_keeps_everything_but_the_literals() -> None:
    shape, literals = literal_shape("SELECT COUNT(*) FROM t WHERE a1 = 12 AND b = 'x''y' "
                                    "AND c < 1.5e3") or ("", [])
    assert literals == ["12", "'x''y'", "1.5e3"]
    assert shape == "SELECT COUNT(*) FROM t WHERE a1 = \x00i AND b = \x00s AND c < \x00f"


def reselected(sql: str, select: str) -> str:
    """The statement re-parsed with ``select`` as its aggregate (what tabulating did)."""
    import sqlglot

    tree = sqlglot.parse_one(sql, read="duckdb")
    tree.set("expressions", [sqlglot.parse_one(select, read="duckdb")])
    return tree.sql(dialect="duckdb")


@settings(max_examples=100, deadline=None)
@given(statement(), st.sampled_from(["COUNT(*)", 'SUM("x")', 'SUM("age")']))
def test_a_statement_with_another_aggregate_equals_its_reparse(sql: str, select: str) -> None:
    """``with_select`` cuts the re-generated text instead of parsing it: the same statement
    as parsing it and swapping the aggregate, which DuckDB then runs."""
    from statrecon.release.sql import with_select

    try:
        query = parse_query(sql, SCHEMA)
    except ReleaseError:
        return
    assert with_select(query, select) == reselected(query.sql, select)


def test_a_statement_not_written_by_the_parser_is_parsed_to_swap_its_aggregate() -> None:
    from dataclasses import replace

    from statrecon.release.sql import with_select

    query = parse_query("SELECT SUM(x) FROM t WHERE age > 3", SCHEMA)
    by_hand = replace(query, sql="select sum(x) from t where age > 3")
    assert with_select(by_hand, "COUNT(*)") == reselected(by_hand.sql, "COUNT(*)")
    assert with_select(by_hand, "COUNT(*)").startswith("SELECT COUNT(*) FROM t")


# ------------------------------------------- statements remembered across parsers, per schema


def test_a_statement_is_parsed_once_per_process_for_each_schema() -> None:
    """A second parser over the same schema gets the first one's Query (the same object);
    over another schema the same text is parsed again and means what that schema says."""
    sql = "SELECT SUM(x) FROM t WHERE dx = 'yes' AND age > 7"
    first = QueryParser(SCHEMA).parse(sql)
    assert QueryParser(SCHEMA).parse(sql) is first
    assert first == parse_query(sql, SCHEMA)
    public_dx = Schema(table="t", columns=tuple(
        Column(c.name, c.type, c.min, c.max, c.values, known=True) if c.name == "dx" else c
        for c in SCHEMA.columns))
    other = QueryParser(public_dx).parse(sql)
    assert other == parse_query(sql, public_dx) and other != first
    without_yes = Schema(table="t", columns=tuple(
        Column(c.name, c.type, values=("no",)) if c.name == "dx" else c
        for c in SCHEMA.columns))
    with pytest.raises(ReleaseError, match="yes"):  # not in this schema's domain of dx
        QueryParser(without_yes).parse(sql)
    assert QueryParser(SCHEMA).parse(sql) is first


def test_the_memory_is_bounded_and_keeps_no_long_statement(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    from statrecon.release import sql as module

    monkeypatch.setattr(module, "_remembered", {})
    monkeypatch.setattr(module, "REMEMBERED", 5)
    parser = QueryParser(SCHEMA)
    for i in range(12):
        parser.parse(f"SELECT COUNT(*) FROM t WHERE age > {i}")
        assert len(module._remembered) <= 5
    kept = [sql for _, sql in module._remembered]
    assert kept == [f"SELECT COUNT(*) FROM t WHERE age > {i}" for i in range(7, 12)]
    parser.parse("SELECT COUNT(*) FROM t WHERE age > 7")  # used again: kept the longest now
    parser.parse("SELECT COUNT(*) FROM t WHERE age > 99")
    kept = [sql for _, sql in module._remembered]
    assert kept == [f"SELECT COUNT(*) FROM t WHERE age > {i}" for i in (9, 10, 11, 7, 99)]
    long = "SELECT COUNT(*) FROM t WHERE " + " OR ".join(f"age = {i}" for i in range(400))
    assert len(long) > module.REMEMBERED_LENGTH
    assert parser.parse(long) == parse_query(long, SCHEMA)
    assert all(sql != long for _, sql in module._remembered)
