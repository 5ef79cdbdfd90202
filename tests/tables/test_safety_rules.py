"""tau-Argus's safety rules (tables/safety.py): the <SAFETYRULE> text read as tau-Argus reads
it (positions: the first two P and NK rules for records, the next two for holdings; the first
FREQ and REQ for records, the second for holdings), impossible parameters refused with the
file and line, and each unsafe cell's protection levels from the rule that made it unsafe."""

from __future__ import annotations

from fractions import Fraction as F
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statrecon.tables.safety import (
    Facts,
    FreqRule,
    NKRule,
    PRule,
    SafetyRuleError,
    SafetyRules,
    assess,
    parse_safety_rule,
)

WHERE = "job.arb:7"


def test_a_rule_line_as_tau_argus_reads_it() -> None:
    rules = parse_safety_rule("P(15, 1)|NK(3,75)|FREQ(3, 30)|ZERO(5)|MAN(10)", WHERE)
    assert rules.individual.magnitude == (PRule(F(15), 1), NKRule(3, F(75)))
    assert rules.individual.frequency == FreqRule(3, F(30))
    assert rules.zero == 5 and rules.manual == 10 and rules.manual_given
    assert not rules.needs_holding and not rules.status_only
    assert parse_safety_rule("p(20,100,2)", WHERE).individual.magnitude == (PRule(F(20), 2),)
    assert parse_safety_rule("P(20,50,2)", WHERE).individual.magnitude == (
        PRule(F(20), 2, F(50)),)
    assert parse_safety_rule("", WHERE).status_only
    # one '|' may end the list, as tau-Argus reads it (a rule, then '|' or the line's end)
    assert parse_safety_rule("FREQ(5,20)|P(20,5)| ", WHERE) == \
        parse_safety_rule("FREQ(5,20)|P(20,5)", WHERE)
    assert parse_safety_rule("MAN(10)|WGT(1)|MIS(1)", WHERE).status_only


def test_holding_rules_by_position_and_placeholders_as_tau_argus_writes_them() -> None:
    """tau-Argus's own batch writer pads to positions: NK(3,75)|NK(0,0) is one rule; the
    third and fourth P/NK and the second FREQ/REQ are holding-level."""
    one = parse_safety_rule("NK(3,75)|NK(0,0)|P(0,100,0)|P(10,100,1)|FREQ(3,20)", WHERE)
    assert one.individual.magnitude == (PRule(F(10), 1), NKRule(3, F(75)))
    assert not one.needs_holding
    held = parse_safety_rule("P(10,1)|P(0,1)|P(20,2)|FREQ(3,10)|FREQ(2,30)", WHERE)
    assert held.individual.magnitude == (PRule(F(10), 1),)
    assert held.holding.magnitude == (PRule(F(20), 2),)
    assert held.holding.frequency == FreqRule(2, F(30))
    assert held.frequency_range == 30  # tau-Argus: the larger range once holdings count


@pytest.mark.parametrize(("text", "words"), [
    ("P(120, 1)", "percentage"),
    ("NK(0, 0)", "holds no rule"),
    ("NK(0, 75)", "n >= 1"),
    ("NK(3, 0)", "k above 0"),
    ("NK(3, 101)", "percentage"),
    ("P(10, 0)", "at least 1"),
    ("P(30, 20, 1)", "may not exceed q"),
    ("P(10, 1.5)", "whole number"),
    ("FREQ(-1, 10)", "whole number"),
    ("FREQ(3, 120)", "percentage"),
    ("ZERO(-1)", "amount >= 0"),
    ("MAN(100)", "below 100"),
    ("WGT(2)", "0 or 1"),
    ("P(10)", "2 or 3 parameters"),
    ("REQ(70, 80, 3)", "4 parameters"),
    ("P(10,1)|P(10,1)|P(10,1)|P(10,1)|P(10,1)", "at most 4"),
    ("FREQ(3,10)|FREQ(3,10)|FREQ(3,10)", "at most 2"),
    ("XY(1)", "unknown rule"),
    ("P(10,1)||NK(3,75)", "empty rule between"),
    ("P(10,1)||", "empty rule between"),
    ("|P(10,1)", "empty rule before"),
    ("P(10,1)|  |", "empty rule between"),
    ("P(ten, 1)", "not a number"),
    ("P 10,1", "not a rule"),
    ("P(1e999999, 1)", "digits|exponent|large|number"),
])
def test_impossible_parameters_name_the_file_and_line(text: str, words: str) -> None:
    with pytest.raises(SafetyRuleError, match=words) as caught:
        parse_safety_rule(text, WHERE)
    assert caught.value.where == WHERE
    assert str(caught.value).startswith(WHERE + ": <SAFETYRULE>")
    assert "\n" not in str(caught.value)


def test_the_p_rule_and_its_protection_level() -> None:
    """P(20, 1) on contributions 60, 30, 10 (value 100): the remainder 10 is below 20 % of 60
    = 12, so unsafe, and the cell must move by 12 - 10 = 2 each way (at least 1)."""
    rules = parse_safety_rule("P(20,1)", WHERE)
    verdict = assess(F(100), Facts(3, (F(60), F(30), F(10))), rules)
    assert verdict is not None and verdict.reason == "rule"
    assert (verdict.lower, verdict.upper) == (2, 2)
    assert assess(F(100), Facts(4, (F(60), F(20), F(10))), rules) is None  # 20 >= 12


def test_the_nk_rule_and_its_protection_level() -> None:
    """NK(2, 80): 60 + 30 = 90 > 80 % of 100; safe at 100/80 x 90 = 112.5, a distance of
    12.5."""
    verdict = assess(F(100), Facts(3, (F(60), F(30))), parse_safety_rule("NK(2,80)", WHERE))
    assert verdict is not None and (verdict.lower, verdict.upper) == (F(25, 2), F(25, 2))


def test_frequency_zero_and_empty_cells() -> None:
    rules = parse_safety_rule("FREQ(3, 30)|ZERO(7)", WHERE)
    freq = assess(F(50), Facts(2, (F(40), F(10))), rules)
    assert freq is not None and freq.reason == "frequency"
    assert (freq.lower, freq.upper) == (15, 15)
    small = assess(F(2), Facts(1, (F(2),)), rules)
    assert small is not None and (small.lower, small.upper) == (1, 1)  # at least 1
    zero = assess(F(0), Facts(4, (F(0),)), rules)
    assert zero is not None and zero.reason == "zero" and (zero.lower, zero.upper) == (0, 7)
    assert assess(F(0), Facts(0), rules) is None  # empty: nothing to protect
    assert assess(F(50), Facts(3, (F(40), F(10))), rules) is None


def test_weights_count_a_contribution_as_often_as_its_weight() -> None:
    """tau-Argus's manual (WGT): 100 with weight 4 and 10 with weight 7 make the largest two
    100 and 100."""
    facts = Facts(2, (F(100), F(10)), (F(4), F(7)), F(11))
    assert facts.weighted_top(3) == (100, 100, 100)
    assert facts.scores(6) == 4 * 100 + 2 * 10
    rules = parse_safety_rule("NK(2, 40)|WGT(1)", WHERE)
    assert rules.weighted
    assert assess(F(470), facts, rules) is not None  # 200 > 40 % of 470
    freq = parse_safety_rule("FREQ(12, 10)|WGT(1)", WHERE)
    assert assess(F(470), facts, freq) is not None  # total weight 11 < 12


def test_holding_rules_read_the_holdings() -> None:
    """The manual's example: at records 700, 200, 60, 40, 10 the p%-rule (p 10, n 1) finds
    cell 900x30 safe; holdings 900, 60, 40, 10 make it unsafe with the holding P rule."""
    rules = parse_safety_rule("P(10,1)|P(0,1)|P(10,1)", WHERE)
    records = Facts(5, (F(700), F(200), F(60), F(40), F(10)))
    holdings = Facts(4, (F(900), F(60), F(40), F(10)))
    assert assess(F(1010), records, parse_safety_rule("P(10,1)", WHERE)) is None
    verdict = assess(F(1010), records, rules, holdings)
    assert verdict is not None and verdict.rule == "holding P(10, 1)"
    assert verdict.upper == 90 - 50  # 10 % of 900 less the remainder 40 + 10
    with pytest.raises(Exception, match="holding variable"):
        assess(F(1010), records, rules)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(1, 100),
       st.integers(1, 3))
def test_the_p_rule_is_its_definition(contributions: list[int], p: int, n: int) -> None:
    """Brute force: unsafe exactly when some coalition of the n next largest contributors
    estimates the largest within p % by subtracting their own from the total."""
    tops = sorted((F(x) for x in contributions), reverse=True)
    value = sum(tops, F(0))
    rules = SafetyRules(individual=parse_safety_rule(f"P({p},{n})", WHERE).individual)
    verdict = assess(value, Facts(len(tops), tuple(tops)), rules)
    estimate = value - sum(tops[1:n + 1], F(0))  # the coalition's upper bound on x1
    assert (verdict is not None) == (estimate - tops[0] < F(p, 100) * tops[0])
    if verdict is not None and value > 0:
        # moving the cell by the upper level would make it safe (or the level is the least)
        assert verdict.upper == max(F(p, 100) * tops[0] - (estimate - tops[0]), F(1))


@given(st.lists(st.integers(0, 50), min_size=1, max_size=6), st.integers(1, 3),
       st.integers(1, 100))
def test_the_nk_rule_is_its_definition(contributions: list[int], n: int, k: int) -> None:
    tops = sorted((F(x) for x in contributions), reverse=True)
    value = sum(tops, F(0))
    verdict = assess(value, Facts(len(tops), tuple(tops)),
                     parse_safety_rule(f"NK({n},{k})", WHERE))
    assert (verdict is not None) == (value > 0 and 100 * sum(tops[:n], F(0)) > k * value)
    if verdict is not None:
        assert verdict.upper == max(100 * sum(tops[:n], F(0)) / k - value, F(1))
        assert verdict.lower == min(verdict.upper, value)


def _micro() -> Any:
    import pandas as pd

    return pd.DataFrame({"A": ["a", "a", "a", "b", "b", "b", "b"],
                         "V": [70, 20, 10, 30, 30, 20, 20],
                         "R": ["1", "0", "0", "0", "2", "0", "0"],
                         "H": ["h1", "h1", "h2", "h3", "h4", "h5", "h6"]})


def test_the_request_rule_on_microdata() -> None:
    """REQ(60, 20, 0, 10): cell a's requesting contributor holds 70 % (> 60) of it, cell b's
    (code 2) 30 % (> 20): both unsafe, protected by 10 %; the total's 70 of 200 is 35 %."""
    from statrecon.tables import CellStatus
    from statrecon.tables.rules import RuleColumns, TableSpec, table_with_safety_rules

    spec = TableSpec(variables=["A"], response="V")
    table = table_with_safety_rules(_micro(), spec, parse_safety_rule("REQ(60,20,0,10)", WHERE),
                                    RuleColumns(request="R"))
    primary = {c.code("A"): c.protection for c in table.cells
               if c.status is CellStatus.PRIMARY}
    assert primary == {"a": (10, 10), "b": (10, 10)}
    quiet = table_with_safety_rules(_micro(), spec, parse_safety_rule("REQ(80,40,0,10)", WHERE),
                                    RuleColumns(request="R"))
    assert not any(c.status is CellStatus.PRIMARY for c in quiet.cells)


def test_missing_codes_are_safe_with_mis() -> None:
    from statrecon.tables import CellStatus
    from statrecon.tables.rules import TableSpec, table_with_safety_rules

    spec = TableSpec(variables=["A"], response="V")
    table = table_with_safety_rules(_micro(), spec, parse_safety_rule("NK(1,50)|MIS(1)", WHERE),
                                    missing={"A": ["a"]})
    assert {c.code("A") for c in table.cells if c.status is CellStatus.PRIMARY} == set()
    plain = table_with_safety_rules(_micro(), spec, parse_safety_rule("NK(1,50)", WHERE),
                                    missing={"A": ["a"]})
    assert {c.code("A") for c in plain.cells if c.status is CellStatus.PRIMARY} == {"a"}


def test_rules_a_table_cannot_apply_are_refused() -> None:
    from statrecon.errors import StatreconError
    from statrecon.tables.rules import TableSpec, table_with_safety_rules

    counts = TableSpec(variables=["A"])
    with pytest.raises(StatreconError, match="frequency table") as caught:
        table_with_safety_rules(_micro(), counts, parse_safety_rule("P(10,1)", WHERE))
    assert caught.value.where == WHERE
    spec = TableSpec(variables=["A"], response="V")
    with pytest.raises(StatreconError, match="no weight variable"):
        table_with_safety_rules(_micro(), spec, parse_safety_rule("P(10,1)|WGT(1)", WHERE))
    with pytest.raises(StatreconError, match="holding variable"):
        table_with_safety_rules(_micro(), spec,
                                parse_safety_rule("FREQ(2,10)|FREQ(3,10)", WHERE))


@given(st.lists(st.tuples(st.integers(0, 5),
                          st.one_of(st.integers(-50, 50), st.integers(-2**61, 2**61),
                                    st.integers(-2**70, 2**70))),
                max_size=40),
       st.integers(1, 3), st.sampled_from([1, 100]))
def test_the_int64_top_contributions_equal_the_exact_group_walk(
        pairs: list[tuple[int, int]], tops: int, scale: int) -> None:
    """The array path (issue 28's million-record jobs) gives each cell the same contributors
    and largest contributions as walking its records in exact integers; a contribution too
    large for int64 sends the whole table down the exact walk."""
    import numpy as np
    import pandas as pd

    from statrecon.tables.rules import INT64_SAFE, _level_facts, _top_facts

    frame = pd.DataFrame({"cell": np.array([c for c, _ in pairs], dtype=np.int64),
                          "x": np.array([x for _, x in pairs] or [], dtype=object),
                          "w": np.ones(len(pairs), dtype=object)})
    fast = _top_facts(frame["cell"].to_numpy(), frame["x"].to_numpy(), tops, scale)
    walked = _level_facts(frame.assign(request=0), tops, scale, None)  # the exact walk
    if any(abs(x) >= INT64_SAFE for _, x in pairs):
        assert fast is None
        return
    assert fast == walked
    assert _level_facts(frame, tops, scale, None) == walked
