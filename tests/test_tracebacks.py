"""Issue 12, parts 2-4 for release files and public tables: hostile or broken numbers, names and
shapes give one line and exit 1, never a traceback, a hang or a silent change.

(Census, claims and audit-stream inputs have their own modules: test_census_inputs,
test_claims_inputs, test_audit_inputs.)
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import CliRunner, assert_one_line_error

RELEASE = """version: 1
{extra}columns:
  age: {{type: integer, min: 0, max: {max}}}
statistics:
  - {{id: q, sql: "{sql}", value: {value}{tail}}}
"""


def release(tmp_path: Path, *, extra: str = "", max: str = "10",
            sql: str = "SELECT COUNT(*) FROM t", value: str = "1", tail: str = "") -> Path:
    path = tmp_path / "release.yaml"
    path.write_text(RELEASE.format(extra=extra, max=max, sql=sql, value=value, tail=tail),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("fields", "parts"), [
    ({"value": ".nan"}, ("release.yaml:5", "'q'", "value", "not a finite number")),
    ({"value": ".inf"}, ("release.yaml:5", "value", "not a finite number")),
    ({"value": "-.inf"}, ("release.yaml:5", "value", "not a finite number")),
    ({"value": "1e99999"}, ("release.yaml:5", "value", "not a finite number")),
    ({"tail": ", error: .inf"}, ("release.yaml:5", "error", "not a finite number")),
    ({"max": "100000000000000000000"}, ("release.yaml:3", "max", "supported range")),
    ({"max": "1e308"}, ("release.yaml:3", "max", "supported range")),
    ({"max": "-1e308"}, ("release.yaml:3", "max", "supported range")),
    ({"extra": "records: 100000000000000000000\n"}, ("release.yaml:2", "records")),
    ({"extra": 'table: ""\n'}, ("release.yaml:2", "table name", "identifier")),
    ({"tail": ", noise: {gaussian: -1}"}, ("release.yaml:5", "noise", "positive finite")),
    ({"tail": ", noise: {gaussian: .nan}"}, ("release.yaml:5", "noise", "positive finite")),
    ({"tail": ", noise: {laplace: .inf}"}, ("release.yaml:5", "noise", "positive finite")),
    ({"tail": ", noise: {laplace: 0}"}, ("release.yaml:5", "noise", "positive finite")),
])
def test_bad_numbers_and_names_in_a_release(fields: dict[str, str], parts: tuple[str, ...],
                                            tmp_path: Path, run_cli: CliRunner) -> None:
    path = release(tmp_path, **fields)
    for command in (("reconstruct", path), ("reconstruct", path, "--method", "ls")):
        assert_one_line_error(run_cli(*command), *parts)


def test_yaml_alias_bomb_is_refused_at_once(tmp_path: Path, run_cli: CliRunner) -> None:
    """Nine levels of nine aliases: 600 bytes that expand to 387 million strings."""
    text = 'version: 1\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    previous = "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        previous = name
    text += "columns: {age: {type: integer, min: 0, max: 3}}\n"
    path = tmp_path / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    assert len(text) < 700
    start = time.perf_counter()
    assert_one_line_error(run_cli("reconstruct", path), "bomb.yaml:", "aliases")
    assert time.perf_counter() - start < 5


def test_deep_nesting_is_a_clear_limit(tmp_path: Path, run_cli: CliRunner) -> None:
    sql = "SELECT COUNT(*) FROM t WHERE " + "(" * 3000 + "age = 1" + ")" * 3000
    assert_one_line_error(run_cli("reconstruct", release(tmp_path, sql=sql)),
                          "'q'", "nested 3000 deep", "limit is 100")


def test_nesting_within_the_limit_is_read(tmp_path: Path, run_cli: CliRunner) -> None:
    sql = "SELECT COUNT(*) FROM t WHERE " + "(" * 100 + "age = 1" + ")" * 100
    code, _, err = run_cli("reconstruct", release(tmp_path, extra="records: 1\n", sql=sql),
                           "--json")
    assert code == 0, err


def test_twenty_thousand_ors_take_an_iterative_path(tmp_path: Path,
                                                    run_cli: CliRunner) -> None:
    """A flat chain of ORs is walked without recursion: no RecursionError, a real answer."""
    where = " OR ".join(f"age = {i % 10}" for i in range(20_000))
    path = release(tmp_path, extra="records: 2\n", sql=f"SELECT COUNT(*) FROM t WHERE {where}",
                   value="1")
    code, out, err = run_cli("reconstruct", path, "--json")
    assert code == 0, err
    assert "Traceback" not in err
    assert '"status": "multiple"' in out


def test_sql_longer_than_the_limit(tmp_path: Path, run_cli: CliRunner) -> None:
    where = " OR ".join(["age = 1"] * 130_000)
    assert_one_line_error(run_cli("reconstruct", release(tmp_path, sql=f"SELECT COUNT(*) "
                                                                   f"FROM t WHERE {where}")),
                          "'q'", "longer than the limit")


@pytest.mark.parametrize(("cells", "parts"), [
    ("1\ninf\n", ("public.csv:3", "'id'", "not a finite number")),
    ("1\n-inf\n", ("public.csv:3", "not a finite number")),
    ("1\nnan\n", ("public.csv:3", "'id'")),
    ("1\n100000000000000000000\n", ("public.csv:3", "supported range")),
])
def test_bad_numbers_in_a_public_table(cells: str, parts: tuple[str, ...], tmp_path: Path,
                                       run_cli: CliRunner) -> None:
    (tmp_path / "public.csv").write_text("id\n" + cells, encoding="utf-8")
    path = tmp_path / "release.yaml"
    path.write_text("""version: 1
public: public.csv
columns:
  id: {type: real, known: true}
  age: {type: integer, min: 0, max: 10}
statistics:
  - {id: q, sql: "SELECT SUM(age) FROM t WHERE id = 1", value: 3}
""", encoding="utf-8")
    for method in ("exact", "ls"):
        assert_one_line_error(run_cli("reconstruct", path, "--method", method), *parts)


def test_a_non_number_is_reported_on_its_own_line(tmp_path: Path, run_cli: CliRunner) -> None:
    """pandas reads a column with one bad cell as text; the message must still name the bad
    cell (line 4, 'x'), not the first cell of the column (line 2, '1')."""
    (tmp_path / "public.csv").write_text("id\n1\n2\nx\n", encoding="utf-8")
    path = tmp_path / "release.yaml"
    path.write_text("""version: 1
public: public.csv
columns:
  id: {type: integer, known: true}
  age: {type: integer, min: 0, max: 10}
statistics:
  - {id: q, sql: "SELECT SUM(age) FROM t WHERE id = 1", value: 3}
""", encoding="utf-8")
    line = assert_one_line_error(run_cli("reconstruct", path), "public.csv:4", "'x'",
                                 "not a number")
    assert "'1'" not in line
