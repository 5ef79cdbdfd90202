"""Issue 14 item 5: statistics in a CSV or Parquet file named by ``statistics_file:``.

Each row is checked exactly as a YAML statistic is (the same answers, the same refusals), its
errors name file:row:column, and the file must lie in the release file's folder.
"""

from __future__ import annotations

import time
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from statrecon.errors import ReleaseError
from statrecon.release.files import load_release
from statrecon.release.statistic import Bounded, Empty, Exact, Noisy, Suppressed

HEAD = """\
version: 1
table: t
columns:
  age: {type: integer, min: 0, max: 100}
  sex: {type: categorical, values: [F, M]}
suppression: {max_count: 2}
"""

ROWS = [
    ("b", "SELECT AVG(age) FROM t", "565981/6000", "", "", "", ""),
    ("c", "SELECT AVG(age) FROM t WHERE sex = 'F'", "31.25", "", "2", "", ""),
    ("d", "SELECT COUNT(*) FROM t WHERE sex = 'M'", "", "", "", "true", ""),
    ("e", "SELECT SUM(age) FROM t", "120", "", "", "", "gaussian:2.5"),
    ("f", "SELECT MEDIAN(age) FROM t", "null", "", "", "", ""),
    ("g", "SELECT AVG(age) FROM t", "40", "0.5", "", "", ""),
    ("h", "SELECT COUNT(*) FROM t WHERE sex = 'F'", "", "", "", "", ""),
]
EXPECTED = {
    "a": Exact(Fraction(7)),
    "b": Exact(Fraction(565981, 6000)),
    "c": Bounded(Fraction(125, 4), Fraction(1, 200)),
    "d": Suppressed(0, 2),
    "e": Noisy(Fraction(120), {"gaussian": 2.5}),
    "f": Empty(),
    "g": Bounded(Fraction(40), Fraction(1, 2)),
    "h": None,
}
HEADER = "id,sql,value,error,decimals,suppressed,noise"


def csv_text(rows: list[tuple[str, ...]]) -> str:
    def cell(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if ("," in v or '"' in v) else v
    return HEADER + "\n" + "".join(",".join(cell(v) for v in r) + "\n" for r in rows)


def release_dir(tmp_path: Path, name: str = "stats.csv") -> Path:
    (tmp_path / "rel.yaml").write_text(
        HEAD + f"statistics_file: {name}\nstatistics:\n"
        "- {id: a, sql: 'SELECT COUNT(*) FROM t', value: 7}\n", encoding="utf-8")
    return tmp_path / "rel.yaml"


def test_csv_rows_are_statistics(tmp_path: Path) -> None:
    rel = release_dir(tmp_path)
    (tmp_path / "stats.csv").write_text(csv_text(ROWS), encoding="utf-8")
    release = load_release(rel)
    assert {s.id: s.answer for s in release.statistics} == EXPECTED
    assert release.statistic("c").query.sql == (
        "SELECT AVG(\"age\") FROM \"t\" WHERE sex = 'F'")


def test_parquet_rows_are_statistics(tmp_path: Path) -> None:
    """Typed Parquet columns: numbers as numbers, decimals as integers, nulls as absent."""
    rel = release_dir(tmp_path, "stats.parquet")
    table = pa.table({
        "id": ["b", "c", "d", "e", "f", "g", "h"],
        "sql": [r[1] for r in ROWS],
        "value": ["565981/6000", "31.25", None, "120", "null", "40", None],
        "error": [None, None, None, None, None, 0.5, None],
        "decimals": pa.array([None, 2, None, None, None, None, None], pa.int64()),
        "suppressed": [None, None, True, None, None, None, None],
        "noise": [None, None, None, "gaussian:2.5", None, None, None],
    })
    pq.write_table(table, tmp_path / "stats.parquet")
    assert {s.id: s.answer for s in load_release(rel).statistics} == EXPECTED


def test_float_values_in_parquet(tmp_path: Path) -> None:
    rel = release_dir(tmp_path, "stats.parquet")
    pq.write_table(pa.table({"id": ["x", "y"], "sql": ["SELECT SUM(age) FROM t"] * 2,
                             "value": [0.1, float("nan")]}), tmp_path / "stats.parquet")
    answers = {s.id: s.answer for s in load_release(rel).statistics}
    assert answers["x"] == Exact(Fraction(1, 10)) and answers["y"] is None


@pytest.mark.parametrize(("row", "where", "part"), [
    (("b", "SELECT AVG(age) FROM t", "1/0", "", "", "", ""), "row 2:value", "denominator"),
    (("b", "SELECT AVG(age) FROM t", "31.255", "", "2", "", ""), "row 2", "more decimals"),
    (("b", "SELECT AVG(age) FROM t", "31.2", "0.1", "2", "", ""), "row 2", "not error and"),
    (("b", "SELECT AVG(age) FROM t", "31", "", "-1", "", ""), "row 2", "decimals -1"),
    (("b", "SELECT AVG(age) FROM t", "31", "", "x", "", ""), "row 2:decimals", "whole"),
    (("b", "SELECT AVG(age) FROM t", "31", "", "", "maybe", ""), "row 2:suppressed", "true"),
    (("b", "SELECT AVG(age) FROM t", "31", "", "", "", "gauss"), "row 2:noise", "kind:scale"),
    (("b", "SELECT AVG(age) FROM t", "31", "", "", "", "gaussian:-1"), "row 2:noise",
     "positive"),
    (("b", "SELECT AVG(agex) FROM t", "31", "", "", "", ""), "row 2", "unknown column"),
    (("b", "SELECT COUNT(*) FROM t; DROP TABLE t", "3", "", "", "", ""), "row 2",
     "one SQL statement"),
    (("a", "SELECT AVG(age) FROM t", "31", "", "", "", ""), "row 2", "id used twice"),
    (("b", "SELECT AVG(age) FROM t", "abc", "", "", "", ""), "row 2:value", "not a number"),
    (("b", "SELECT AVG(age) FROM t", "500", "", "", "", ""), "row 2", "outside the domain"),
    (("b", "SELECT COUNT(*) FROM t", "2.5", "", "", "", ""), "row 2", "not a whole number"),
])
def test_mistakes_name_file_row_and_column(tmp_path: Path, row: tuple[str, ...], where: str,
                                           part: str) -> None:
    rel = release_dir(tmp_path)
    ok = ("z", "SELECT COUNT(*) FROM t", "3", "", "", "", "")
    (tmp_path / "stats.csv").write_text(csv_text([ok, row]), encoding="utf-8")
    with pytest.raises(ReleaseError) as info:
        load_release(rel)
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'stats.csv'}:{where}"), msg
    assert part in msg and "\n" not in msg, msg


@pytest.mark.parametrize(("text", "part"), [
    ("id,sql,value,colour\n", "unknown column 'colour'"),
    ("id,value\n", "column 'sql' is missing"),
    ("", "empty"),
])
def test_bad_headers(tmp_path: Path, text: str, part: str) -> None:
    rel = release_dir(tmp_path)
    (tmp_path / "stats.csv").write_text(text, encoding="utf-8")
    with pytest.raises(ReleaseError, match=part):
        load_release(rel)


@pytest.mark.parametrize("name", ["../stats.csv", "/etc/passwd", "missing.csv", "stats.xlsx"])
def test_the_file_must_be_a_table_in_the_release_folder(tmp_path: Path, name: str) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "stats.csv").write_text(csv_text(ROWS), encoding="utf-8")
    (inner / "stats.xlsx").write_text("x", encoding="utf-8")
    rel = release_dir(inner, name)
    with pytest.raises(ReleaseError) as info:
        load_release(rel)
    assert str(info.value).startswith(f"{rel}:7: statistics_file") or "stats.xlsx" in str(
        info.value), str(info.value)


def test_filling_answers_of_a_columnar_release_is_refused(tmp_path: Path) -> None:
    from statrecon.release.files import write_filled_release

    rel = release_dir(tmp_path)
    (tmp_path / "stats.csv").write_text(csv_text(ROWS), encoding="utf-8")
    with pytest.raises(ReleaseError, match="statistics_file"):
        write_filled_release(rel, tmp_path / "out.yaml", {})


def test_many_rows_load_fast(tmp_path: Path) -> None:
    """20,000 rows of a few shapes: one parse per shape keeps the load well under a second
    per 10,000 rows (the benchmark measures 100,000)."""
    rel = tmp_path / "rel.yaml"
    rel.write_text("version: 1\ntable: t\ncolumns:\n  id: {type: integer, known: true}\n"
                   "  dx: {type: categorical, values: ['yes', 'no']}\n"
                   "statistics_file: stats.parquet\n", encoding="utf-8")
    n = 20_000
    pq.write_table(pa.table({
        "id": [f"q{i}" for i in range(n)],
        "sql": [f"SELECT COUNT(*) FROM t WHERE id BETWEEN {i % 50} AND {i % 50 + i % 7} "
                f"AND dx = '{('yes', 'no')[i % 2]}'" for i in range(n)],
        "value": [float(i % 3) for i in range(n)],
    }), tmp_path / "stats.parquet")
    start = time.perf_counter()
    release = load_release(rel)
    assert len(release.statistics) == n
    assert time.perf_counter() - start < 10


def test_a_parquet_bomb_is_refused_from_its_footer(tmp_path: Path) -> None:
    """Three million identical rows compress to a few kilobytes; the footer's row count is
    refused before anything is decompressed, quickly and in one line."""
    rel = release_dir(tmp_path, "stats.parquet")
    n = 3_000_000
    sql = pa.array(["SELECT COUNT(*) FROM t"] * n).dictionary_encode()
    pq.write_table(pa.table({"id": pa.array(["x"] * n).dictionary_encode(), "sql": sql}),
                   tmp_path / "stats.parquet")
    assert (tmp_path / "stats.parquet").stat().st_size < 1_000_000
    start = time.perf_counter()
    with pytest.raises(ReleaseError, match="3,000,000 statistics, over the limit of 2,000,000"):
        load_release(rel)
    assert time.perf_counter() - start < 2


def test_unknown_parquet_columns_are_refused_before_reading(tmp_path: Path) -> None:
    rel = release_dir(tmp_path, "stats.parquet")
    pq.write_table(pa.table({"id": ["a"], "sql": ["SELECT COUNT(*) FROM t"], "x": [1]}),
                   tmp_path / "stats.parquet")
    with pytest.raises(ReleaseError, match="unknown column 'x'"):
        load_release(rel)
