"""Issue 14 item 3 (release files): exact rational values and ``decimals:`` rounding.

``value: "565981/6"`` is that rational exactly; ``decimals: d`` is value +- 1/(2*10^d). Every
mistake is one line naming file:line. Filled releases write rounding back as ``decimals`` and
exact rationals that no float states as fractions, and read back to the same answers.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.errors import ReleaseError
from statrecon.release.files import answer_fields, load_release, parse_release, write_filled_release
from statrecon.release.statistic import Bounded, Exact, Noisy
from statrecon.release.tabulate import published

HEAD = """\
version: 1
table: t
columns:
  age: {type: integer, min: 0, max: 100000}
statistics:
"""  # the first statistic starts on line 6


def one(fields: str) -> object:
    release = parse_release(HEAD + f"- {{id: s, sql: 'SELECT SUM(age) FROM t', {fields}}}\n",
                            source=Path("rel.yaml"))
    return release.statistics[0].answer


def fails(fields: str, *parts: str) -> None:
    with pytest.raises(ReleaseError) as info:
        one(fields)
    msg = str(info.value)
    assert msg.startswith("rel.yaml:6:") and "\n" not in msg, msg
    for part in parts:
        assert part in msg, msg


def test_an_exact_rational_value() -> None:
    assert one('value: "565981/6"') == Exact(Fraction(565981, 6))
    assert one('value: "-3/4", error: "1/12"') == Bounded(Fraction(-3, 4), Fraction(1, 12))
    assert one('value: " 12.50 "') == Exact(Fraction(25, 2))


@pytest.mark.parametrize(("decimals", "value", "error"), [
    (2, "31.25", Fraction(1, 200)), (0, "31", Fraction(1, 2)), (1, "31.2", Fraction(1, 20)),
    (3, "31.2", Fraction(1, 2000)), (2, '"565981/20"', Fraction(1, 200)),
])
def test_decimals_is_half_a_unit_of_the_last_place(decimals: int, value: str,
                                                   error: Fraction) -> None:
    answer = one(f"value: {value}, decimals: {decimals}")
    assert isinstance(answer, Bounded)
    assert answer.error == error
    assert answer.value == Fraction(value.strip('"'))


@pytest.mark.parametrize(("fields", "parts"), [
    ('value: "1/0"', ("denominator is zero",)),
    ('value: "1//2"', ("not a number or a fraction",)),
    ('value: "12 apples"', ("not a number or a fraction",)),
    ('value: "1e999999"', ("not a finite number",)),
    ("value: 3.125, decimals: 2", ("more decimals than decimals: 2",)),
    ('value: "1/3", decimals: 5', ("more decimals",)),
    ("value: 3, decimals: -1", ("decimals -1",)),
    ("value: 3, decimals: 400", ("decimals 400",)),
    ("value: 3, decimals: 1.5", ("decimals",)),
    ("value: 3, decimals: true", ("decimals",)),
    ("value: 3, decimals: 2, error: 0.1", ("not error and decimals",)),
    ("value: 3, decimals: 2, noise: {gaussian: 1}", ("not decimals and noise",)),
    ("suppressed: true, decimals: 2", ("suppressed",)),
    ("decimals: 2", ("without a 'value'",)),
    ("value: null, decimals: 2", ("null value",)),
    ('value: 3, error: "-1/2"', ("must be >= 0",)),
])
def test_mistakes_name_the_line(fields: str, parts: tuple[str, ...]) -> None:
    fails(fields, *parts)


def test_answer_fields_write_rounding_as_decimals_and_rationals_exactly() -> None:
    assert answer_fields(Bounded(Fraction(3125, 100), Fraction(1, 200))) == {
        "value": 31.25, "decimals": 2}
    assert answer_fields(Bounded(Fraction(31), Fraction(1, 2))) == {"value": 31, "decimals": 0}
    # a bound that is not a rounding stays an error bound
    assert answer_fields(Bounded(Fraction(3), Fraction(1, 4))) == {"value": 3, "error": 0.25}
    assert answer_fields(Bounded(Fraction(3125, 1000), Fraction(1, 200))) == {
        "value": 3.125, "error": 0.005}
    assert answer_fields(Exact(Fraction(565981, 6))) == {"value": "565981/6"}
    assert answer_fields(Noisy(Fraction(1, 3), {"gaussian": 1.0}))["value"] == "1/3"


def test_tabulate_rounding_is_written_as_decimals_with_the_same_meaning() -> None:
    """``published`` rounds as before; its bound is written as ``decimals`` and read back as
    the very same bound."""
    for value, decimals in ((Fraction(565981, 6), 2), (Fraction(1, 3), 0), (Fraction(7, 8), 1)):
        answer = published(value, decimals)
        assert isinstance(answer, Bounded)
        assert answer.low <= value <= answer.high
        fields = answer_fields(answer)
        assert fields["decimals"] == decimals and "error" not in fields
        text = yaml.safe_dump({"value": fields["value"], "decimals": decimals},
                              default_flow_style=True).strip()[1:-1]
        assert one(text) == answer


@settings(max_examples=200, deadline=None)
@given(st.fractions(max_denominator=10**6).filter(lambda f: abs(f) < 10**6),
       st.one_of(st.none(), st.integers(0, 6), st.fractions(0, 100, max_denominator=1000)))
def test_written_answers_read_back_the_same(value: Fraction, bound: object) -> None:
    if bound is None:
        answer: object = Exact(value)
    elif isinstance(bound, int):
        scale = 10**bound
        answer = Bounded(Fraction(round(value * scale), scale), Fraction(1, 2 * scale))
    else:
        answer = Bounded(value, bound)
    text = yaml.safe_dump(answer_fields(answer), default_flow_style=True).strip()[1:-1]
    assert one(text) == answer


def test_write_filled_release_round_trip(tmp_path: Path) -> None:
    source = tmp_path / "rel.yaml"
    source.write_text(HEAD + "- {id: a, sql: 'SELECT AVG(age) FROM t'}\n"
                      "- {id: b, sql: 'SELECT SUM(age) FROM t'}\n", encoding="utf-8")
    answers = {"a": Bounded(Fraction(94330, 1), Fraction(1, 2)),
               "b": Exact(Fraction(565981, 6))}
    out = tmp_path / "filled.yaml"
    write_filled_release(source, out, answers)  # type: ignore[arg-type]
    assert "decimals: 0" in out.read_text(encoding="utf-8")
    assert {s.id: s.answer for s in load_release(out).statistics} == answers
