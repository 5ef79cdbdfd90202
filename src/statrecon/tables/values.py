"""Exact values for tables: read a published decimal exactly, write one back, and say how
many decimals a value needs.

A table's additivity is checked, and its cells audited, in exact rationals: a value read as a
float would make ``16847646,84`` a binary approximation and a total "not add up" by 1e-9. So
every number that enters a table goes through :func:`parse_decimal` (text) or :func:`exact`
(a Python or NumPy number; a float is read as its shortest decimal representation, the number
the user saw).
"""

from __future__ import annotations

import math
import numbers
import re
from decimal import Decimal
from fractions import Fraction

# a decimal as tau-Argus writes it: optional sign, digits, a decimal comma or point;
# no thousands separators, no exponent
_DECIMAL = re.compile(r"[+-]?(\d+([.,]\d*)?|[.,]\d+)")
MAX_DECIMALS = 12


def parse_decimal(text: str) -> Fraction | None:
    """``text`` as an exact Fraction (decimal comma or point), or None if it is no number."""
    text = text.strip()
    if not _DECIMAL.fullmatch(text):
        return None
    return Fraction(text.replace(",", "."))


def exact(value: object) -> Fraction | None:
    """``value`` (int, float, Decimal, Fraction, NumPy scalar, numeric text) as an exact
    Fraction; None for a missing value (None, NaN) or something that is not a number.

    A float becomes the decimal it prints as (``0.1`` is 1/10, not the binary double nearest
    to it): the number a user typed or a file held."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Fraction | int):
        return Fraction(value)
    if isinstance(value, Decimal):
        return Fraction(value) if value.is_finite() else None
    if isinstance(value, str):
        return parse_decimal(value)
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, numbers.Real):
        as_float = float(value)
        return Fraction(repr(as_float)) if math.isfinite(as_float) else None
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
    """``value`` for a message: a decimal when one is exact, else ``p/q``."""
    d = decimals_of(value)
    if d is None:
        return f"{value.numerator}/{value.denominator}"
    text = format_decimal(value, d)
    assert text is not None
    return text
