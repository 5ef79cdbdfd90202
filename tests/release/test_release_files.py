"""Release files (YAML, version 1): what parses, and how each user mistake is reported.

Every mistake must raise ReleaseError with one line that names the file, the line and, where
there is one, the statistic.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest

from statrecon.errors import ReleaseError
from statrecon.release.files import load_release, parse_release
from statrecon.release.model import RecordCount, SuppressionRule
from statrecon.release.schema import ColumnType
from statrecon.release.statistic import (
    Aggregate,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Suppressed,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

HEAD = """\
version: 1
table: t
columns:
  age: {type: integer, min: 0, max: 100}
  sex: {type: categorical, values: [F, M]}
"""  # five lines: a statistic listed after "statistics:" on line 6 starts on line 7


def fails(text: str, *parts: str, line: int, name: str = "rel.yaml") -> str:
    """Parse ``text`` as file ``name``; it must fail naming name:line and every part."""
    with pytest.raises(ReleaseError) as info:
        parse_release(text, source=Path(name))
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(f"{name}:{line}:"), msg
    for part in parts:
        assert part in msg, msg
    return msg


# ---------------------------------------------------------------- valid files


VALID = """\
version: 1
name: toy-block
description: a toy
table: people
records: 7
columns:
  age:     {type: integer, min: 0, max: 115}
  sex:     {type: categorical, values: [F, M]}
  married: {type: categorical, values: ["no", "yes"]}
  income:  {type: real, min: 0, max: 500000}
constraints:
  - "married = 'no' OR age >= 15"
suppression: {max_count: 2}
statistics:
  - {id: n,     sql: "SELECT COUNT(*) FROM people WHERE sex = 'F'", value: 4}
  - {id: md,    sql: "SELECT MEDIAN(age) FROM people WHERE sex = 'F'", value: 30}
  - {id: mn,    sql: "SELECT AVG(age) FROM people WHERE sex = 'F'", value: 33.5}
  - {id: supp,  sql: "SELECT COUNT(*) FROM people WHERE married = 'no' AND age >= 18",
     suppressed: true}
  - {id: bound, sql: "SELECT SUM(age) FROM people WHERE sex = 'M'", value: 130, error: 2}
  - {id: noisy, sql: "SELECT COUNT(*) FROM people WHERE age > 40", value: 3.4,
     noise: {gaussian: 1.5}}
  - {id: empty, sql: "SELECT MAX(age) FROM people WHERE age > 110", value: null}
  - {id: todo,  sql: "SELECT MIN(age) FROM people"}
  - {id: 17,    sql: "SELECT COUNT(*) FROM people", value: 7}
"""


def test_valid_release_columns_records_constraints_suppression() -> None:
    rel = parse_release(VALID, source=Path("toy.yaml"))
    assert rel.name == "toy-block"
    assert rel.schema.table == "people"
    assert rel.schema.names == ("age", "sex", "married", "income")
    age, sex, married, income = rel.schema.columns
    assert (age.type, age.min, age.max, age.known) == (ColumnType.INTEGER, 0, 115, False)
    assert (sex.type, sex.values) == (ColumnType.CATEGORICAL, ("F", "M"))
    assert married.values == ("no", "yes")  # quoted: strings, not YAML booleans
    assert (income.type, income.min, income.max) == (ColumnType.REAL, 0, 500000)
    assert rel.records == RecordCount(7, 7)
    assert [c.sql for c in rel.constraints] == ["married = 'no' OR age >= 15"]
    assert rel.constraints[0].line == 12
    assert rel.suppression == SuppressionRule(max_count=2, min_count=0)
    assert rel.source == Path("toy.yaml")


def test_valid_release_answer_kinds() -> None:
    rel = parse_release(VALID)
    answers = {s.id: s.answer for s in rel.statistics}
    assert answers["n"] == Exact(Fraction(4))
    assert answers["md"] == Exact(Fraction(30))
    assert answers["mn"] == Exact(Fraction(67, 2))  # 33.5 read exactly, not as a float
    assert answers["supp"] == Suppressed(min_count=0, max_count=2)
    assert answers["bound"] == Bounded(Fraction(130), Fraction(2))
    assert (answers["bound"].low, answers["bound"].high) == (128, 132)
    assert answers["noisy"] == Noisy(Fraction(17, 5), {"gaussian": 1.5})
    assert answers["empty"] == Empty()
    assert answers["todo"] is None  # not yet tabulated
    assert answers["17"] == Exact(Fraction(7))  # a numeric id becomes text
    assert [s.query.aggregate for s in rel.statistics] == [
        Aggregate.COUNT, Aggregate.MEDIAN, Aggregate.AVG, Aggregate.COUNT, Aggregate.SUM,
        Aggregate.COUNT, Aggregate.MAX, Aggregate.MIN, Aggregate.COUNT,
    ]
    # each statistic remembers its line, for messages
    assert [s.line for s in rel.statistics][:4] == [15, 16, 17, 18]


def test_records_range_and_suppression_min_count() -> None:
    rel = parse_release(HEAD + "records: {min: 5, max: 9}\n"
                        "suppression: {max_count: 4, min_count: 1}\n")
    assert rel.records == RecordCount(5, 9)
    assert rel.suppression == SuppressionRule(max_count=4, min_count=1)
    sup = parse_release(
        HEAD + "suppression: {max_count: 4, min_count: 1}\nstatistics:\n"
        '  - {id: s, sql: "SELECT COUNT(*) FROM t", suppressed: true}\n'
    ).statistics[0].answer
    assert sup == Suppressed(min_count=1, max_count=4)


def test_records_omitted_and_block_style_statistics() -> None:
    rel = parse_release(HEAD + "statistics:\n"
                        "  - id: a\n"
                        "    sql: SELECT COUNT(*) FROM t WHERE age BETWEEN 1 AND 5\n"
                        "    value: 2\n"
                        "  - id: b\n"
                        "    sql: SELECT AVG(age) FROM t\n"
                        "    value: 12.5\n"
                        "    error: 0.05\n")
    assert rel.records is None
    assert [s.line for s in rel.statistics] == [7, 10]
    assert rel.statistics[1].answer == Bounded(Fraction(25, 2), Fraction(1, 20))


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_bundled_examples_load(path: Path) -> None:
    rel = load_release(path)
    assert rel.statistics
    assert rel.source == path


def test_public_path_is_relative_to_the_release_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    f = tmp_path / "sub" / "r.yaml"
    f.write_text("version: 1\npublic: rows.csv\ncolumns:\n  id: {type: integer, known: true}\n")
    assert load_release(f).public == (tmp_path / "sub" / "rows.csv").resolve()


# ---------------------------------------------------------------- user mistakes


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ReleaseError, match=r"nope\.yaml: no such file"):
        load_release(path)


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text(HEAD + "statistics:\n"
                 '  - {id: a, sql: "SELECT COUNT(*) FROM t", value: 3\n'
                 '  - {id: b, sql: "SELECT COUNT(*) FROM t", value: 3}\n')
    with pytest.raises(ReleaseError) as info:
        load_release(f)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}:8:"), msg  # the parser notices the unclosed '{' on line 8
    assert "malformed YAML" in msg


def test_malformed_yaml_bad_indentation() -> None:
    fails(HEAD + "statistics:\n  - id: a\n   sql: x\n", "malformed YAML", line=8)


def test_not_a_mapping() -> None:
    fails("- just\n- a list\n", "mapping", line=1)
    fails("", "mapping", line=1)


def test_unknown_top_level_key() -> None:
    fails(HEAD + "colour: red\n", "colour", "unknown key", line=6)


def test_unknown_key_inside_a_statistic() -> None:
    msg = fails(HEAD + "statistics:\n"
                '  - {id: a, sql: "SELECT COUNT(*) FROM t", value: 3}\n'
                '  - {id: b, sql: "SELECT COUNT(*) FROM t", valeu: 3}\n',
                "statistic 'b'", "valeu", "unknown key", line=8)
    assert "statistic 'a'" not in msg


def test_unknown_key_inside_a_block_style_statistic_names_its_line() -> None:
    fails(HEAD + "statistics:\n"
          "  - id: b\n"
          "    sql: SELECT COUNT(*) FROM t\n"
          "    value: 3\n"
          "    supressed: true\n",
          "statistic 'b'", "supressed", "unknown key", line=10)


def test_unknown_key_inside_a_column() -> None:
    fails(HEAD + "  w: {type: integer, min: 0, max: 3, maximum: 4}\n", "maximum", "unknown key",
          line=6)


def test_duplicate_statistic_id() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: a, sql: "SELECT COUNT(*) FROM t", value: 3}\n'
          '  - {id: b, sql: "SELECT COUNT(*) FROM t", value: 3}\n'
          '  - {id: a, sql: "SELECT COUNT(*) FROM t WHERE age > 3", value: 1}\n',
          "statistic 'a'", "twice", line=9)


def test_missing_sql() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: a, sql: "SELECT COUNT(*) FROM t", value: 3}\n'
          "  - {id: b, value: 3}\n",
          "statistic 'b'", "sql", "missing", line=8)


def test_missing_version() -> None:
    fails("columns:\n  a: {type: integer, min: 0, max: 3}\n", "version", "missing", line=1)


def test_suppressed_without_a_suppression_rule() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: cell, sql: "SELECT COUNT(*) FROM t", suppressed: true}\n',
          "statistic 'cell'", "suppressed", "suppression", line=7)


@pytest.mark.parametrize("extra", ["value: 3", "error: 1", "value: 3, error: 1",
                                   "value: 3, noise: {gaussian: 1}"])
def test_value_or_error_on_a_suppressed_statistic(extra: str) -> None:
    fails(HEAD + "suppression: {max_count: 2}\nstatistics:\n"
          f'  - {{id: cell, sql: "SELECT COUNT(*) FROM t", suppressed: true, {extra}}}\n',
          "statistic 'cell'", "suppressed", line=8)


def test_error_without_a_value() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: m, sql: "SELECT AVG(age) FROM t", error: 0.5}\n',
          "statistic 'm'", "without a 'value'", line=7)


def test_negative_error() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: m, sql: "SELECT AVG(age) FROM t", value: 3, error: -1}\n',
          "statistic 'm'", "error", line=7)


def test_bare_no_in_categorical_values() -> None:
    msg = fails(HEAD + "  married: {type: categorical, values: [no, yes]}\n",
                "married", "boolean", line=6)
    assert '"no"' in msg  # tells the user how to fix it


def test_bare_yes_as_a_published_value() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: c, sql: "SELECT COUNT(*) FROM t", value: yes}\n',
          "statistic 'c'", "value", "boolean", line=7)


def test_integer_column_without_min_max() -> None:
    fails(HEAD + "  height: {type: integer, min: 0}\n", "height", "min and max", line=6)
    fails(HEAD + "  height: {type: integer}\n", "height", "min and max", line=6)


def test_known_integer_column_needs_no_bounds() -> None:
    rel = parse_release(HEAD + "  id: {type: integer, known: true}\n")
    assert rel.schema.column("id").known


def test_bad_column_declarations() -> None:
    fails(HEAD + "  w: {type: integer, min: 5, max: 3}\n", "'w'", "above", line=6)
    fails(HEAD + "  w: {type: categorical, values: [a, a]}\n", "'w'", "repeated", line=6)
    fails(HEAD + "  w: {type: categorical}\n", "'w'", "values", line=6)
    fails(HEAD + "  w: {type: integr, min: 0, max: 3}\n", "w", "type", line=6)
    fails(HEAD + "  w: {type: integer, min: 0.5, max: 3}\n", "'w'", "whole", line=6)


def test_column_name_starting_with_int_is_named_in_messages() -> None:
    fails(HEAD + "  intake: {type: integr, min: 0, max: 3}\n", "columns.intake.type", line=6)


def test_median_outside_the_columns_domain() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: ok, sql: "SELECT COUNT(*) FROM t", value: 3}\n'
          '  - {id: med, sql: "SELECT MEDIAN(age) FROM t WHERE sex = \'F\'", value: 130}\n',
          "statistic 'med'", "130", "domain", "age", line=8)


def test_bounded_mean_outside_the_domain_but_overlapping_is_accepted() -> None:
    rel = parse_release(HEAD + "statistics:\n"
                        '  - {id: m, sql: "SELECT AVG(age) FROM t", value: 100.4, error: 0.5}\n')
    assert rel.statistics[0].answer == Bounded(Fraction(502, 5), Fraction(1, 2))
    fails(HEAD + "statistics:\n"
          '  - {id: m, sql: "SELECT AVG(age) FROM t", value: 101, error: 0.5}\n',
          "statistic 'm'", "domain", line=7)


def test_min_below_the_domain() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: lo, sql: "SELECT MIN(age) FROM t", value: -1}\n',
          "statistic 'lo'", "domain", line=7)


def test_count_not_a_whole_number() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: c, sql: "SELECT COUNT(*) FROM t WHERE age < 5", value: 2.5}\n',
          "statistic 'c'", "2.5", "whole number", line=7)


@pytest.mark.parametrize("answer", ["value: -1", "value: -3, error: 1"])
def test_negative_count(answer: str) -> None:
    fails(HEAD + "statistics:\n"
          f'  - {{id: c, sql: "SELECT COUNT(*) FROM t", {answer}}}\n',
          "statistic 'c'", "negative", line=7)


def test_noisy_count_may_be_negative_or_fractional() -> None:
    rel = parse_release(HEAD + "statistics:\n"
                        '  - {id: c, sql: "SELECT COUNT(*) FROM t", value: -0.7, '
                        "noise: {laplace: 2}}\n")
    assert rel.statistics[0].answer == Noisy(Fraction(-7, 10), {"laplace": 2.0})


def test_null_count_is_an_error() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: c, sql: "SELECT COUNT(*) FROM t", value: null}\n',
          "statistic 'c'", "never null", line=7)


def test_bad_noise() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: c, sql: "SELECT COUNT(*) FROM t", value: 1, noise: {cauchy: 1}}\n',
          "statistic 'c'", "noise", line=7)
    fails(HEAD + "statistics:\n"
          '  - {id: c, sql: "SELECT COUNT(*) FROM t", value: 1, error: 1, '
          "noise: {gaussian: 1}}\n",
          "statistic 'c'", "either", line=7)


def test_sql_errors_name_the_statistic_and_line() -> None:
    fails(HEAD + "statistics:\n"
          '  - {id: ok, sql: "SELECT COUNT(*) FROM t", value: 3}\n'
          '  - {id: grp, sql: "SELECT COUNT(*) FROM t GROUP BY sex", value: 3}\n',
          "statistic 'grp'", "GROUP BY", line=8)
    fails(HEAD + "statistics:\n"
          """  - {id: typo, sql: "SELECT COUNT(*) FROM t WHERE sex = 'f'", value: 3}\n""",
          "statistic 'typo'", "'f'", line=7)


def test_bad_constraint_names_its_line() -> None:
    fails(HEAD + "constraints:\n  - \"age >= 0\"\n  - \"sex LIKE 'F%'\"\n",
          "constraint[1]", "LIKE", line=8)


def test_bad_records_and_suppression() -> None:
    fails(HEAD + "records: -1\n", "records", line=6)
    fails(HEAD + "records: {min: 9, max: 5}\n", "records", "above", line=6)
    fails(HEAD + "suppression: {max_count: 1, min_count: 2}\n", "suppression", line=6)
    fails(HEAD + "suppression: {max: 2}\n", "suppression", line=6)


def test_messages_use_the_given_file_name() -> None:
    msg = fails(HEAD + "colour: red\n", "colour", line=6, name="some/dir/census.yaml")
    assert re.match(r"some/dir/census\.yaml:6: ", msg)


def test_without_a_source_the_message_still_has_a_line() -> None:
    with pytest.raises(ReleaseError, match=r"^<release>:6: .*colour"):
        parse_release(HEAD + "colour: red\n")
