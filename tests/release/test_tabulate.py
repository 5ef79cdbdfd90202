"""Tabulation: microdata + statistic definitions -> the answers a publisher would print.

Expected answers are computed here by hand from the same rows, never by DuckDB.
"""

from __future__ import annotations

import statistics
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

import statrecon
from statrecon.errors import StatreconError
from statrecon.release.files import load_release, parse_release, write_filled_release
from statrecon.release.model import SuppressionRule
from statrecon.release.statistic import Bounded, Empty, Exact, Suppressed
from statrecon.release.tabulate import load_microdata, published, tabulate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

ROWS = [  # age, sex, income
    (10, "F", 1.5), (21, "F", 2.25), (35, "F", 3.0), (40, "M", 0.5), (7, "M", 10.0),
    (64, "F", 4.0),
]
FRAME = pd.DataFrame(ROWS, columns=["age", "sex", "inc"])

RELEASE = """\
version: 1
table: t
columns:
  age: {type: integer, min: 0, max: 100}
  sex: {type: categorical, values: [F, M]}
  inc: {type: real, min: 0, max: 100}
statistics:
%s
"""

GROUPS = {  # WHERE clause -> the same selection in Python
    "sex = 'F'": lambda a, s, i: s == "F",
    "sex = 'M'": lambda a, s, i: s == "M",
    "age >= 18 AND sex = 'F'": lambda a, s, i: a >= 18 and s == "F",
    "age BETWEEN 10 AND 40": lambda a, s, i: 10 <= a <= 40,
    "age > 99": lambda a, s, i: a > 99,  # empty
}
AGGREGATES = ["COUNT(*)", "SUM(age)", "AVG(age)", "MEAN(age)", "MEDIAN(age)", "MIN(age)",
              "MAX(age)", "SUM(inc)", "MAX(inc)"]


def release_of(stats: dict[str, str]) -> Any:
    lines = "\n".join(f'  - {{id: "{sid}", sql: "{sql}"}}' for sid, sql in stats.items())
    return parse_release(RELEASE % lines)


def by_hand(agg: str, values: list[Any]) -> Fraction | None:
    """The true value of an aggregate, as an exact rational (None for an empty group)."""
    if agg == "COUNT(*)":
        return Fraction(len(values))
    col = 0 if "age" in agg else 2
    xs = [Fraction(str(v[col])) for v in values]
    if agg.startswith("SUM"):
        return sum(xs, Fraction(0))
    if not xs:
        return None
    if agg.startswith(("AVG", "MEAN")):
        return sum(xs, Fraction(0)) / len(xs)
    if agg.startswith("MEDIAN"):
        return Fraction(statistics.median(xs))
    return min(xs) if agg.startswith("MIN") else max(xs)


CASES = [(agg, w) for agg in AGGREGATES for w in GROUPS]


def test_every_aggregate_on_every_group_matches_a_hand_computation() -> None:
    stats = {f"{agg} | {w}": f"SELECT {agg} FROM t WHERE {w}" for agg, w in CASES}
    answers = tabulate(release_of(stats), FRAME, decimals=1)
    assert set(answers) == set(stats)
    for agg, w in CASES:
        rows = [r for r in ROWS if GROUPS[w](*r)]
        true = by_hand(agg, rows)
        got = answers[f"{agg} | {w}"]
        label = f"{agg} WHERE {w}: {got}"
        if true is None:
            assert got == Empty(), label
        elif agg.startswith("SUM") or (true * 10).denominator == 1:  # printed exactly
            assert got == Exact(true), label
        else:
            assert isinstance(got, Bounded), label
            assert got.error == Fraction(1, 20), label
            assert got.low <= true <= got.high, label
            assert (got.value * 10).denominator == 1, label


def test_spot_values() -> None:
    answers = tabulate(release_of({
        "n": "SELECT COUNT(*) FROM t WHERE sex = 'F'",
        "s": "SELECT SUM(age) FROM t WHERE sex = 'F'",
        "mean": "SELECT AVG(age) FROM t WHERE sex = 'F'",
        "med-even": "SELECT MEDIAN(age) FROM t WHERE sex = 'F'",
        "med-odd": "SELECT MEDIAN(age) FROM t WHERE age < 50",
        "mean-m": "SELECT AVG(age) FROM t WHERE sex = 'M'",
        "mean-3": "SELECT AVG(age) FROM t WHERE age < 36 AND sex = 'F'",
        "lo": "SELECT MIN(age) FROM t",
        "hi": "SELECT MAX(age) FROM t",
        "inc": "SELECT SUM(inc) FROM t WHERE sex = 'F'",
    }), FRAME)
    assert answers["n"] == Exact(Fraction(4))
    assert answers["s"] == Exact(Fraction(10 + 21 + 35 + 64))
    assert answers["mean"] == Exact(Fraction(130, 4))  # 32.5: one decimal, exact
    assert answers["med-even"] == Exact(Fraction(28))  # mean of the middle two, 21 and 35
    assert answers["med-odd"] == Exact(Fraction(21))  # 7 10 21 35 40
    assert answers["mean-m"] == Exact(Fraction(47, 2))  # 23.5
    # (10 + 21 + 35) / 3 = 22 exactly
    assert answers["mean-3"] == Exact(Fraction(22))
    assert answers["lo"] == Exact(Fraction(7))
    assert answers["hi"] == Exact(Fraction(64))
    assert answers["inc"] == Exact(Fraction(1075, 100))  # 1.5 + 2.25 + 3 + 4


def test_empty_group() -> None:
    stats = {agg: f"SELECT {agg} FROM t WHERE age > 99" for agg in AGGREGATES}
    answers = tabulate(release_of(stats), FRAME)
    assert answers["COUNT(*)"] == Exact(Fraction(0))
    assert answers["SUM(age)"] == Exact(Fraction(0))
    assert answers["SUM(inc)"] == Exact(Fraction(0))
    for agg in ("AVG(age)", "MEAN(age)", "MEDIAN(age)", "MIN(age)", "MAX(age)", "MAX(inc)"):
        assert answers[agg] == Empty(), agg


def test_non_short_means_are_rounded_with_the_rounding_as_an_error_bound() -> None:
    # ages of F under 60: 10, 21, 35 -> 22 exact; all F: 32.5; adults: (21+35+40+64)/4 = 40;
    # M and F under 30: 10, 21, 7 -> 38/3 = 12.666...
    rel = release_of({"m": "SELECT AVG(age) FROM t WHERE age < 30"})
    one = tabulate(rel, FRAME, decimals=1)["m"]
    assert one == Bounded(Fraction(127, 10), Fraction(1, 20))
    two = tabulate(rel, FRAME, decimals=2)["m"]
    assert two == Bounded(Fraction(1267, 100), Fraction(1, 200))
    zero = tabulate(rel, FRAME, decimals=0)["m"]
    assert zero == Bounded(Fraction(13), Fraction(1, 2))
    for b in (one, two, zero):
        assert b.low <= Fraction(38, 3) <= b.high


def test_published() -> None:
    assert published(Fraction(33, 2), 1) == Exact(Fraction(33, 2))
    assert published(Fraction(110, 3), 1) == Bounded(Fraction(367, 10), Fraction(1, 20))
    assert published(Fraction(110, 3), 0) == Bounded(Fraction(37), Fraction(1, 2))
    assert published(Fraction(7), 0) == Exact(Fraction(7))


def test_suppress_below_k() -> None:
    rel = release_of({
        "m2": "SELECT COUNT(*) FROM t WHERE sex = 'M'",            # 2 rows
        "m2-mean": "SELECT AVG(age) FROM t WHERE sex = 'M'",        # over 2 rows
        "f4": "SELECT COUNT(*) FROM t WHERE sex = 'F'",             # 4 rows
        "f3": "SELECT COUNT(*) FROM t WHERE sex = 'F' AND age > 20",  # 3 rows
        "none": "SELECT COUNT(*) FROM t WHERE age > 99",            # 0 rows
        "one": "SELECT MAX(age) FROM t WHERE age > 60",             # 1 row
    })
    answers = tabulate(rel, FRAME, suppress_below=3)
    for sid in ("m2", "m2-mean", "none", "one"):
        assert answers[sid] == Suppressed(0, 2), sid
    assert answers["f4"] == Exact(Fraction(4))
    assert answers["f3"] == Exact(Fraction(3))  # K itself is published
    one = tabulate(rel, FRAME, suppress_below=1)  # only empty cells are under 1
    assert one["none"] == Suppressed(0, 0)
    assert one["one"] == Exact(Fraction(64))


def test_bad_options() -> None:
    rel = release_of({"n": "SELECT COUNT(*) FROM t"})
    with pytest.raises(StatreconError, match="decimals"):
        tabulate(rel, FRAME, decimals=-1)
    with pytest.raises(StatreconError, match="suppress-below"):
        tabulate(rel, FRAME, suppress_below=0)


# ---------------------------------------------------------------- microdata files


def _release_file(tmp_path: Path) -> Path:
    path = tmp_path / "release.yaml"
    path.write_text(RELEASE % '  - {id: n, sql: "SELECT COUNT(*) FROM t"}')
    return path


def test_load_microdata_reads_csv(tmp_path: Path) -> None:
    rel = load_release(_release_file(tmp_path))
    csv = tmp_path / "micro.csv"
    csv.write_text("age,sex,inc\n" + "".join(f"{a},{s},{i}\n" for a, s, i in ROWS))
    frame = load_microdata(csv, rel)
    assert frame["age"].tolist() == [r[0] for r in ROWS]
    assert frame["sex"].tolist() == [r[1] for r in ROWS]
    assert tabulate(rel, frame)["n"] == Exact(Fraction(len(ROWS)))


@pytest.mark.parametrize(("bad_line", "column", "value"), [
    ("200,F,1.0", "age", "200"), ("-1,F,1.0", "age", "-1"), ("3.5,F,1.0", "age", "3.5"),
    ("30,X,1.0", "sex", "X"), ("30,F,101", "inc", "101"),
])
def test_load_microdata_rejects_values_outside_a_domain(tmp_path: Path, bad_line: str,
                                                        column: str, value: str) -> None:
    rel = load_release(_release_file(tmp_path))
    csv = tmp_path / "micro.csv"
    csv.write_text("age,sex,inc\n30,F,1.0\n31,M,2.0\n" + bad_line + "\n32,F,3.0\n")
    with pytest.raises(StatreconError) as info:
        load_microdata(csv, rel)
    msg = str(info.value)
    assert msg.startswith(f"{csv}:4:"), msg  # header is line 1, the bad row line 4
    assert f"'{column}'" in msg and value in msg and "domain" in msg, msg


def test_load_microdata_rejects_missing_columns_and_values(tmp_path: Path) -> None:
    rel = load_release(_release_file(tmp_path))
    csv = tmp_path / "micro.csv"
    csv.write_text("age,sex\n30,F\n")
    with pytest.raises(StatreconError, match=r"column 'inc' is missing"):
        load_microdata(csv, rel)
    csv.write_text("age,sex,inc\n30,F,1\n,M,2\n")
    with pytest.raises(StatreconError, match=r"micro\.csv:3: column 'age' is empty"):
        load_microdata(csv, rel)
    with pytest.raises(StatreconError, match="no such file"):
        load_microdata(tmp_path / "absent.csv", rel)
    other = tmp_path / "micro.xlsx"
    other.write_text("x")
    with pytest.raises(StatreconError, match="unsupported table format"):
        load_microdata(other, rel)


def test_load_microdata_parquet_names_the_row(tmp_path: Path) -> None:
    rel = load_release(_release_file(tmp_path))
    path = tmp_path / "micro.parquet"
    pd.DataFrame({"age": [30, 31, 130], "sex": ["F", "M", "F"], "inc": [1.0, 2.0, 3.0]}
                 ).to_parquet(path)
    with pytest.raises(StatreconError, match=r"micro\.parquet:row 3: column 'age' value 130"):
        load_microdata(path, rel)


# ---------------------------------------------------------------- round trip

BLOCK_PEOPLE = [
    (8, "F", "Black", "no"), (18, "M", "White", "no"), (24, "F", "White", "no"),
    (30, "M", "White", "yes"), (36, "F", "Black", "yes"), (66, "F", "Black", "yes"),
    (84, "M", "Black", "yes"),
]
BLOCK_COLUMNS = ["age", "sex", "race", "married"]


def _stripped_block(tmp_path: Path) -> Path:
    """examples/block.yaml with every published answer removed."""
    data = yaml.safe_load((EXAMPLES / "block.yaml").read_text())
    for entry in data["statistics"]:
        for key in ("value", "error", "suppressed", "noise"):
            entry.pop(key, None)
    path = tmp_path / "block_stats.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("suppress_below", [None, 3])
def test_round_trip_block_microdata_reconstructs_uniquely(tmp_path: Path,
                                                          suppress_below: int | None) -> None:
    source = _stripped_block(tmp_path)
    rel = load_release(source)
    assert all(s.answer is None for s in rel.statistics)
    frame = pd.DataFrame(BLOCK_PEOPLE, columns=BLOCK_COLUMNS)
    answers = tabulate(rel, frame, suppress_below=suppress_below)
    out = tmp_path / "filled.yaml"
    rule = SuppressionRule(suppress_below - 1) if suppress_below else None
    write_filled_release(source, out, answers, rule)

    filled = load_release(out)
    assert {s.id: s.answer for s in filled.statistics} == answers
    if suppress_below:
        # the same cells as the published example are suppressed
        original = load_release(EXAMPLES / "block.yaml")
        assert {s.id for s in filled.statistics if isinstance(s.answer, Suppressed)} == {
            s.id for s in original.statistics if isinstance(s.answer, Suppressed)}
    result = statrecon.reconstruct(out)
    assert result.status == "unique"
    assert result.solution_count == 1 and result.complete
    got = sorted(tuple(row[c] for c in BLOCK_COLUMNS) for row in result.solutions[0])
    assert got == sorted(BLOCK_PEOPLE)


def test_tabulated_block_matches_the_published_example(tmp_path: Path) -> None:
    """The true answers of the 7 people are consistent with every value printed in
    examples/block.yaml (exact values equal, bounded ones within their error)."""
    original = load_release(EXAMPLES / "block.yaml")
    frame = pd.DataFrame(BLOCK_PEOPLE, columns=BLOCK_COLUMNS)
    answers = tabulate(original, frame, suppress_below=3)
    for s in original.statistics:
        got, printed = answers[s.id], s.answer
        if isinstance(printed, Exact):
            assert got == printed, s.id
        elif isinstance(printed, Bounded):
            assert isinstance(got, Bounded) and printed.low <= got.value <= printed.high, s.id
        else:
            assert isinstance(printed, Suppressed) and isinstance(got, Suppressed), s.id
