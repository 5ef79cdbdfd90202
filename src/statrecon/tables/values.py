"""Exact values for tables: read a published decimal exactly, write one back, and say how
many decimals a value needs.

A table's additivity is checked, and its cells audited, in exact rationals: a value read as a
float would make ``16847646,84`` a binary approximation and a total "not add up" by 1e-9. So
every number that enters a table goes through :func:`parse_decimal` (text) or :func:`exact`
(a Python or NumPy number; a float is read as its shortest decimal representation, the number
the user saw).
"""

from __future__ import annotations

from fractions import Fraction

from statrecon.number_reader import NotANumber, exact_value, parse_number

MAX_DECIMALS = 12


def parse_decimal(text: str) -> Fraction | None:
    """``text`` as an exact Fraction (decimal comma or point), or None if it is no number;
    a number beyond the reader's bounds (digits, size) is a NumberError saying so."""
    try:
        return parse_number(text, comma=True)
    except NotANumber:
        return None


def exact(value: object) -> Fraction | None:
    """``value`` (int, float, Decimal, Fraction, NumPy scalar, numeric text) as an exact
    Fraction; None for a missing value (None, NaN) or something that is not a number.

    A float becomes the decimal it prints as (``0.1`` is 1/10, not the binary double nearest
    to it): the number a user typed or a file held. Every number goes through
    :mod:`statrecon.number_reader` (bounded digits and size: a NumberError beyond)."""
    try:
        return exact_value(value, comma=True)
    except NotANumber:
        return None


def decimals_of(value: Fraction) -> int | None:
    """The fewest decimals that write ``value`` exactly; None if no finite decimal does."""
    denominator = value.denominator
    for d in range(MAX_DECIMALS + 1):
        if (10**d) % denominator == 0:
            return d
    return None


def format_decimal(value: Fraction, decimals: int, comma: bool = False) -> str | None:
    """``value`` with exactly ``decimals`` decimals, or None if that would round it."""
    scaled = value * 10**decimals
    if scaled.denominator != 1:
        return None
    n = scaled.numerator
    sign = "-" if n < 0 else ""
    digits = str(abs(n)).rjust(decimals + 1, "0")
    if decimals == 0:
        return sign + digits
    point = "," if comma else "."
    return f"{sign}{digits[:-decimals]}{point}{digits[-decimals:]}"


def show(value: Fraction) -> str:
    """``value`` for a message: a decimal when one is exact (up to 30 decimals, as the
    number reader reads), else ``p/q``."""
    d = next((d for d in range(31) if (10**d) % value.denominator == 0), None)
    if d is None:
        return f"{value.numerator}/{value.denominator}"
    text = format_decimal(value, d)
    assert text is not None
    return text
