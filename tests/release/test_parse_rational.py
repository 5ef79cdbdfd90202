"""Published numbers read from text: the fast reader agrees with Python's own Fraction."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statrecon.release.statistic import parse_rational

decimal_text = st.builds(
    lambda sign, whole, dot, places, exponent, pad: (
        f"{pad}{sign}{whole}{dot}{places}{exponent}{pad}"),
    st.sampled_from(["", "-", "+"]),
    st.sampled_from(["", "0", "7", "12", "000123", "98765432109876543210"]),
    st.sampled_from(["", "."]),
    st.sampled_from(["", "0", "5", "25", "000", "0001", "123456789"]),
    st.sampled_from(["", "e0", "E3", "e-7", "e+12", "e-60", "e60"]),
    st.sampled_from(["", " ", "  "]),
)


@given(decimal_text)
def test_decimal_text_reads_as_python_fraction_does(text: str) -> None:
    try:
        expected = Fraction(text.strip())
    except ValueError:
        with pytest.raises(ValueError):
            parse_rational(text)
        return
    assert parse_rational(text) == expected


@given(st.integers(-10**12, 10**12), st.integers(1, 10**9))
def test_fraction_text_is_exact(p: int, q: int) -> None:
    assert parse_rational(f"{p}/{q}") == Fraction(p, q)


@pytest.mark.parametrize("text", ["", ".", "e3", "1e61", "1e-61", "1/0", "abc", "1.2.3",
                                  "--1", "1e", "1 2", "0x10", "inf", "nan", "1" * 201])
def test_malformed_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rational(text)
