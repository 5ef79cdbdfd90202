"""SQL text -> Query: every supported aggregate and operator, and a named error for the rest.

Parsing is checked for its meaning, not just for success: predicates are run through the real
exact engine on one-row releases and compared with a Python brute force, and known-column
functions are evaluated by DuckDB on a public table in a difference-attack release.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import statrecon
from statrecon.engines.exact import ExactOptions
from statrecon.release.files import parse_release
from statrecon.release.predicate import TRUE, Compare, InSet, KnownBool, Not
from statrecon.release.schema import Column, ColumnType, Schema
from statrecon.release.sql import SQLError, parse_predicate, parse_query
from statrecon.release.statistic import Aggregate

SCHEMA = Schema("t", (
    Column("id", ColumnType.INTEGER, known=True),
    Column("zip", ColumnType.CATEGORICAL, values=("02118", "02445"), known=True),
    Column("age", ColumnType.INTEGER, min=0, max=100),
    Column("inc", ColumnType.REAL, min=0, max=10),
    Column("sex", ColumnType.CATEGORICAL, values=("F", "M")),
))


# ---------------------------------------------------------------- aggregates


@pytest.mark.parametrize(("select", "aggregate", "column"), [
    ("COUNT(*)", Aggregate.COUNT, None),
    ("count(*)", Aggregate.COUNT, None),
    ("COUNT(age)", Aggregate.COUNT, None),  # no NULLs in the model: COUNT(col) = COUNT(*)
    ("COUNT(DISTINCT zip)", Aggregate.COUNT_DISTINCT, "zip"),
    ("COUNT(DISTINCT id)", Aggregate.COUNT_DISTINCT, "id"),
    ("SUM(age)", Aggregate.SUM, "age"),
    ("SUM(inc)", Aggregate.SUM, "inc"),
    ("AVG(age)", Aggregate.AVG, "age"),
    ("MEAN(age)", Aggregate.AVG, "age"),
    ("MEDIAN(age)", Aggregate.MEDIAN, "age"),
    ("MIN(age)", Aggregate.MIN, "age"),
    ("MAX(inc)", Aggregate.MAX, "inc"),
    ("AVG(age) AS mean_age", Aggregate.AVG, "age"),
])
def test_aggregates(select: str, aggregate: Aggregate, column: str | None) -> None:
    q = parse_query(f"SELECT {select} FROM t", SCHEMA)
    assert (q.aggregate, q.column, q.where) == (aggregate, column, TRUE)


def test_table_name_and_keywords_are_case_insensitive() -> None:
    q = parse_query("select avg(AGE) from T where SEX = 'F'", SCHEMA)
    assert (q.aggregate, q.column) == (Aggregate.AVG, "age")
    assert q.where == InSet("sex", frozenset({"F"}))


# ---------------------------------------------------------------- predicate shapes


def where(sql: str) -> Any:
    return parse_query(f"SELECT COUNT(*) FROM t WHERE {sql}", SCHEMA).where


def test_comparisons_normalise_to_affine_op_zero() -> None:
    # age > 3  <=>  3 - age < 0
    gt = where("age > 3")
    assert isinstance(gt, Compare) and gt.op == "<"
    assert dict(gt.affine.columns) == {"age": -1} and gt.affine.constant == 3
    le = where("age <= 3")
    assert isinstance(le, Compare) and le.op == "<="
    assert dict(le.affine.columns) == {"age": 1} and le.affine.constant == -3
    assert where("age != 3") == where("age <> 3")
    assert where("age <> 3").op == "<>"


def test_arithmetic_on_unknown_columns_is_affine() -> None:
    # 2*age + 1 > id  <=>  id - 2*age - 1 < 0 ; id stays SQL for DuckDB
    p = where("2*age + 1 > id")
    assert isinstance(p, Compare) and p.op == "<"
    assert dict(p.affine.columns) == {"age": -2}
    assert dict(p.affine.known) == {"id": 1}
    assert p.affine.constant == -1
    q = where("(age - 1) / 2 >= 3")
    assert dict(q.affine.columns) == {"age": Fraction(-1, 2)}
    assert q.affine.constant == Fraction(7, 2)


def test_categorical_membership() -> None:
    assert where("sex = 'F'") == InSet("sex", frozenset({"F"}))
    assert where("'F' = sex") == InSet("sex", frozenset({"F"}))
    assert where("sex <> 'F'") == Not(InSet("sex", frozenset({"F"})))
    assert where("sex IN ('F', 'M')") == InSet("sex", frozenset({"F", "M"}))
    assert where("sex NOT IN ('F')") == Not(InSet("sex", frozenset({"F"})))


@pytest.mark.parametrize("sql", [
    "mod(id, 2) = 0", "id % 2 = 0", "floor(id / 2) = 1", "ceil(id / 2) = 1", "pow(id, 2) < 10",
    "abs(id - 3) <= 1", "round(id / 3) = 1", "zip = '02445'", "zip IN ('02118')",
])
def test_known_only_predicates_stay_sql_for_duckdb(sql: str) -> None:
    assert isinstance(where(sql), KnownBool)


def test_parse_predicate_for_constraints() -> None:
    assert parse_predicate("sex = 'M'", SCHEMA) == InSet("sex", frozenset({"M"}))
    with pytest.raises(SQLError, match="LIKE"):
        parse_predicate("sex LIKE 'M%'", SCHEMA)


# ---------------------------------------------------------------- unsupported SQL


@pytest.mark.parametrize(("sql", "named"), [
    ("SELECT COUNT(*) FROM t GROUP BY sex", "GROUP BY"),
    ("SELECT COUNT(*) FROM t HAVING COUNT(*) > 1", "HAVING"),
    ("SELECT COUNT(*) FROM t ORDER BY 1", "ORDER BY"),
    ("SELECT COUNT(*) FROM t LIMIT 1", "LIMIT"),
    ("SELECT COUNT(*) FROM t JOIN u ON t.id = u.id", "JOIN"),
    ("SELECT COUNT(*) FROM t, u", "JOIN"),
    ("WITH x AS (SELECT 1) SELECT COUNT(*) FROM t", "WITH"),
    ("SELECT COUNT(*) FROM (SELECT * FROM t)", "subquery"),
    ("SELECT COUNT(*) FROM t WHERE age IN (SELECT age FROM t)", "subquery"),
    ("SELECT COUNT(*) FROM t WHERE id IN (SELECT 1)", "subquery"),
    ("SELECT COUNT(*) FROM t WHERE age > (SELECT 1)", "subquery"),
    ("SELECT COUNT(*) FROM t WHERE EXISTS (SELECT 1)", "EXISTS"),
    ("SELECT COUNT(*) FROM t WHERE sex LIKE 'F%'", "LIKE"),
    ("SELECT COUNT(*) FROM t WHERE id LIKE '1%'", "LIKE"),
    ("SELECT COUNT(*) FROM t WHERE age IS NULL", "IS NULL"),
    ("SELECT COUNT(*) FROM t WHERE abs(age) > 3", "ABS(age)"),
    ("SELECT COUNT(*) FROM t WHERE mod(age, 2) = 0", "age"),
    ("SELECT COUNT(*) FROM t WHERE sqrt(age) > 1", "SQRT(age)"),
    ("SELECT COUNT(*) FROM t WHERE sqrt(id) > 1", "SQRT(id)"),
    ("SELECT COUNT(*) FROM t WHERE age * age > 3", "age * age"),
    ("SELECT COUNT(*) FROM t WHERE age * inc > 3", "age * inc"),
    ("SELECT COUNT(*) FROM t WHERE age * id > 3", "age * id"),
    ("SELECT COUNT(*) FROM t WHERE age / 0 > 1", "division by zero"),
    ("SELECT COUNT(*) FROM t WHERE height > 3", "unknown column 'height'"),
    ("SELECT AVG(height) FROM t", "unknown column 'height'"),
    ("SELECT COUNT(*) FROM t WHERE x.age > 1", "x.age"),
    ("SELECT COUNT(*) FROM u", "FROM u"),
    ("SELECT COUNT(*) FROM s.t", "s.t"),
    ("SELECT COUNT(*) FROM t WHERE sex = 'X'", "'X' is not a value of sex"),
    ("SELECT COUNT(*) FROM t WHERE sex IN ('F', 'X')", "'X' is not a value of sex"),
    ("SELECT COUNT(*) FROM t WHERE zip = '02119'", "'02119' is not a value of zip"),
    ("SELECT COUNT(*) FROM t WHERE zip IN ('02118', '2445')", "'2445' is not a value of zip"),
    ("SELECT COUNT(*) FROM t WHERE sex = 1", "quoted"),
    ("SELECT COUNT(*) FROM t WHERE sex > 'F'", "only =, <>, IN"),
    ("SELECT COUNT(*) FROM t WHERE sex + 1 > 2", "sex"),
    ("SELECT AVG(sex) FROM t", "AVG(sex)"),
    ("SELECT MEDIAN(sex) FROM t", "MEDIAN(sex)"),
    ("SELECT SUM(sex) FROM t", "SUM(sex)"),
    ("SELECT COUNT(DISTINCT age) FROM t", "COUNT(DISTINCT age)"),
    ("SELECT COUNT(DISTINCT sex) FROM t", "COUNT(DISTINCT sex)"),
    ("SELECT STDDEV(age) FROM t", "STDDEV(age)"),
    ("SELECT age FROM t", "unsupported aggregate"),
    ("SELECT SUM(age + 1) FROM t", "SUM(age + 1)"),
    ("SELECT COUNT(*), SUM(age) FROM t", "exactly one aggregate"),
    ("SELECT DISTINCT COUNT(*) FROM t", "DISTINCT"),
    ("DELETE FROM t", "SELECT"),
    ("SELECT COUNT(*) FROM t; SELECT 1", "one SQL statement"),
    ("SELECT COUNT(*) FROM", "cannot parse"),
    ("SELECT COUNT(*) FROM t WHERE age", "age"),
])
def test_unsupported_sql_names_the_construct(sql: str, named: str) -> None:
    with pytest.raises(SQLError) as info:
        parse_query(sql, SCHEMA)
    msg = str(info.value)
    assert named in msg, msg
    assert "\n" not in msg


def test_sql_error_is_a_release_error() -> None:
    assert issubclass(SQLError, statrecon.ReleaseError)


# ---------------------------------------------------------------- semantics, unknown columns

ONE_ROW = """\
version: 1
table: t
records: 1
columns:
  age: {type: integer, min: 0, max: 9}
  sex: {type: categorical, values: [F, M]}
statistics:
  - {id: q, sql: "SELECT COUNT(*) FROM t WHERE %s", value: 1}
"""


# (SQL predicate, the same predicate in Python over one row)
PREDICATES: list[tuple[str, Any]] = [
    ("age = 3", lambda a, s: a == 3),
    ("age <> 3", lambda a, s: a != 3),
    ("age < 3", lambda a, s: a < 3),
    ("age <= 3", lambda a, s: a <= 3),
    ("age > 3", lambda a, s: a > 3),
    ("age >= 3", lambda a, s: a >= 3),
    ("3 < age", lambda a, s: a > 3),
    ("age > 3.5", lambda a, s: a > 3.5),
    ("age BETWEEN 2 AND 4", lambda a, s: 2 <= a <= 4),
    ("age NOT BETWEEN 2 AND 4", lambda a, s: not 2 <= a <= 4),
    ("age IN (1, 5, 7)", lambda a, s: a in (1, 5, 7)),
    ("age NOT IN (1, 5, 7)", lambda a, s: a not in (1, 5, 7)),
    ("sex = 'F'", lambda a, s: s == "F"),
    ("sex <> 'F'", lambda a, s: s != "F"),
    ("sex IN ('M')", lambda a, s: s == "M"),
    ("NOT sex = 'F'", lambda a, s: s != "F"),
    ("sex = 'F' AND age < 4", lambda a, s: s == "F" and a < 4),
    ("sex = 'F' OR age < 4", lambda a, s: s == "F" or a < 4),
    ("(sex = 'F' OR age > 6) AND age <> 8", lambda a, s: (s == "F" or a > 6) and a != 8),
    ("sex = 'F' OR age > 6 AND age <> 8", lambda a, s: s == "F" or (a > 6 and a != 8)),
    ("NOT (sex = 'M' AND age >= 5)", lambda a, s: not (s == "M" and a >= 5)),
    ("2 * age + 1 > 8", lambda a, s: 2 * a + 1 > 8),
    ("age - 1 >= 3 / 2", lambda a, s: a - 1 >= 1.5),
    ("age / 2 = 3", lambda a, s: a / 2 == 3),
    ("-age < -6", lambda a, s: -a < -6),
    ("age * 3 - 2 * age <= 2", lambda a, s: a <= 2),
    ("age + age = 8", lambda a, s: a == 4),
    ("TRUE", lambda a, s: True),
]


@pytest.mark.parametrize(("sql", "holds"), PREDICATES, ids=[p[0] for p in PREDICATES])
def test_predicate_selects_exactly_the_rows_it_should(sql: str, holds: Any) -> None:
    """A one-row table whose row satisfies the predicate: every satisfying row, no other."""
    rel = parse_release(ONE_ROW % sql)
    result = statrecon.reconstruct(rel, options=ExactOptions(keep_solutions=None))
    assert result.complete
    found = {(d[0]["age"], d[0]["sex"]) for d in result.solutions}
    expected = {(a, s) for a, s in itertools.product(range(10), "FM") if holds(a, s)}
    assert found == expected
    assert result.solution_count == len(expected)


# ---------------------------------------------------------------- semantics, known columns

ROSTER_IDS = [1, 2, 3, 4, 5, 6, 7]

ROSTER = """\
version: 1
table: patients
public: roster.csv
columns:
  id:   {type: integer, known: true}
  zip:  {type: categorical, values: ["02118", "02445"], known: true}
  ill:  {type: categorical, values: ["no", "yes"]}
statistics:
%s
"""


def _roster(tmp_path: Path, stats: list[tuple[str, str, int]]) -> Path:
    """Write the public roster and a release with COUNT statistics (id, WHERE, value)."""
    zips = ["02118" if i % 3 == 0 else "02445" for i in ROSTER_IDS]
    (tmp_path / "roster.csv").write_text(
        "id,zip\n" + "".join(f"{i},{z}\n" for i, z in zip(ROSTER_IDS, zips, strict=True)))
    lines = "\n".join(
        f'  - {{id: {sid}, sql: "SELECT COUNT(*) FROM patients WHERE {w}", value: {v}}}'
        for sid, w, v in stats)
    path = tmp_path / "release.yaml"
    path.write_text(ROSTER % lines)
    return path


# (known-only predicate, the ids it selects, computed by hand)
KNOWN: list[tuple[str, set[int]]] = [
    ("mod(id, 2) = 0", {2, 4, 6}),
    ("id % 3 = 1", {1, 4, 7}),
    ("floor(id / 2) = 1", {2, 3}),
    ("ceil(id / 3) = 2", {4, 5, 6}),
    ("pow(id, 2) < 10", {1, 2, 3}),
    ("abs(id - 4) <= 1", {3, 4, 5}),
    ("round(id / 3) = 1", {2, 3, 4}),  # 0.67, 1, 1.33 round to 1; no ties
    ("id BETWEEN 3 AND 5", {3, 4, 5}),
    ("id IN (1, 7)", {1, 7}),
    ("NOT id > 2", {1, 2}),
    ("id * 2 + 1 > 12", {6, 7}),
    ("zip = '02118'", {3, 6}),
    ("zip <> '02118' AND id > 4", {5, 7}),
]


@pytest.mark.parametrize(("pred", "ids"), KNOWN, ids=[k[0] for k in KNOWN])
def test_known_column_predicate_selects_the_right_rows(pred: str, ids: set[int],
                                                       tmp_path: Path) -> None:
    """Everyone the predicate selects is ill, everyone else is not: one dataset, and DuckDB's
    reading of the predicate decides which."""
    path = _roster(tmp_path, [
        ("sel", f"ill = 'yes' AND ({pred})", len(ids)),
        ("rest", f"ill = 'yes' AND NOT ({pred})", 0),
    ])
    result = statrecon.reconstruct(path)
    assert result.status == "unique"
    ill = {row["id"] for row in result.solutions[0] if row["ill"] == "yes"}
    assert ill == ids


def test_difference_attack_reveals_one_person(tmp_path: Path) -> None:
    """Two counts over the even ids, one leaving out id 6, prove that patient 6 is ill and
    nothing else about anyone."""
    path = _roster(tmp_path, [
        ("even", "ill = 'yes' AND mod(id, 2) = 0", 2),
        ("even-but-6", "ill = 'yes' AND mod(id, 2) = 0 AND id <> 6", 1),
    ])
    result = statrecon.reconstruct(path)
    assert result.status == "multiple" and result.complete
    # ids 2 and 4: exactly one is ill (2 ways); odd ids 1, 3, 5, 7: free (16 ways)
    assert result.solution_count == 2 * 2**4
    certain = [(c.row["id"], c.row["ill"], c.multiplicity) for c in result.certain_rows]
    assert certain == [(6, "yes", 1)]
    for dataset in result.solutions:
        assert sorted(r["id"] for r in dataset) == ROSTER_IDS
        ill = {r["id"] for r in dataset if r["ill"] == "yes"}
        assert 6 in ill and len(ill & {2, 4, 6}) == 2


def test_count_of_a_known_predicate_that_disagrees_with_the_roster_is_infeasible(
        tmp_path: Path) -> None:
    """Three even ids in the roster: a published count of 4 cannot hold."""
    ok = statrecon.reconstruct(_roster(tmp_path, [("n", "mod(id, 2) = 0", 3)]))
    assert ok.status in ("unique", "multiple")
    bad = statrecon.reconstruct(_roster(tmp_path, [("n", "mod(id, 2) = 0", 4)]))
    assert bad.status == "infeasible"
    assert bad.conflict == ["n"]


def test_count_distinct_of_a_known_column(tmp_path: Path) -> None:
    """Ill people span both zips, and only id 3 and 6 live in 02118: one of them is ill."""
    path = _roster(tmp_path, [("n", "ill = 'yes'", 1)])
    text = path.read_text() + (
        '  - {id: zips, sql: "SELECT COUNT(DISTINCT zip) FROM patients '
        "WHERE ill = 'yes'\", value: 1}\n"
        '  - {id: far, sql: "SELECT COUNT(*) FROM patients '
        "WHERE ill = 'yes' AND zip = '02118'\", value: 1}\n")
    path.write_text(text)
    result = statrecon.reconstruct(path, options=ExactOptions(keep_solutions=None))
    assert result.complete
    assert sorted(next(r["id"] for r in d if r["ill"] == "yes") for d in result.solutions) == [
        3, 6]


def test_round_half_follows_duckdb_not_python(tmp_path: Path) -> None:
    """round(2.5) is 3 in DuckDB (Python's round gives 2): DuckDB evaluates known SQL."""
    path = _roster(tmp_path, [
        ("sel", "ill = 'yes' AND round(id / 2) = 3", 2),  # ids 5 (2.5 -> 3) and 6 (3.0)
        ("rest", "ill = 'yes' AND NOT round(id / 2) = 3", 0),
    ])
    result = statrecon.reconstruct(path)
    assert result.status == "unique"
    assert {r["id"] for r in result.solutions[0] if r["ill"] == "yes"} == {5, 6}


# ---------------------------------------------------------------- public combinations


def test_a_public_boolean_combination_is_one_public_predicate() -> None:
    """AND/OR/NOT over known columns only is one KnownBool (DuckDB evaluates it once); a
    combination that touches a secret column keeps its structure."""
    q = parse_query("SELECT COUNT(*) FROM t WHERE (id = 1 OR id = 3) AND NOT id = 2 "
                    "AND age = 2", SCHEMA)
    either, other, secret = q.where.args  # type: ignore[union-attr]
    assert isinstance(either, KnownBool) and "OR" in either.sql
    assert isinstance(other, KnownBool) and "NOT" in other.sql
    assert isinstance(secret, Compare)
    mixed = parse_query("SELECT COUNT(*) FROM t WHERE id = 1 OR age = 2", SCHEMA)
    assert not isinstance(mixed.where, KnownBool)


def test_a_long_public_or_is_fast_and_exact(tmp_path: Path) -> None:
    """5,000 ORs on a known column: one DuckDB evaluation, and the same answer as the short
    form. One query per OR took 38 s for 20,000 (about 9 s for these); a chain of 20,000
    ORs is read in tests/hostile/test_resource_limits.py."""
    import time

    long = " OR ".join(f"id = {i}" for i in range(3, 5_003))
    (tmp_path / "p.csv").write_text("id\n1\n2\n3\n4\n", encoding="utf-8")
    head = ("version: 1\npublic: p.csv\ncolumns:\n  id: {type: integer, known: true}\n"
            "  age: {type: integer, min: 0, max: 3}\nstatistics:\n")
    answers = []
    for where in (long, "id >= 3"):
        path = tmp_path / "r.yaml"
        path.write_text(head + f'  - {{id: q, sql: "SELECT SUM(age) FROM t WHERE {where}", '
                        "value: 5}\n", encoding="utf-8")
        start = time.perf_counter()
        result = statrecon.reconstruct(path, method="exact",
                                       options=ExactOptions(keep_solutions=None))
        answers.append(sorted(map(str, result.solutions)))  # type: ignore[union-attr]
        assert time.perf_counter() - start < 8
    assert answers[0] == answers[1]
