"""The one exact number reader: every number that enters statrecon as text (a release, a
table, microdata, a CSV cell) is read here, as an exact Fraction; never through a float.

A float would make ``200000000000000015`` into ``2e+17`` and ``12345678.123456789`` into
``...12345679`` without a word, and a total would no longer add up. A number from a stranger
is also bounded before Python builds it: at most :data:`MAX_DIGITS` significant digits and
an exponent within +-:data:`MAX_EXPONENT` (a 5,001-digit number, or ``1e999999``, is one
clear error, not Python's int-string limit or a huge integer).

Text forms: ``12``, ``-3.25``, ``.5``, ``1e-3`` (``exponent``), ``16847646,84`` (``comma``:
tau-Argus's decimal comma), ``565981/6`` (``fraction``: an exact fraction). No thousands
separators, no ``inf`` or ``nan``.
"""

from __future__ import annotations

import math
import numbers
import re
from decimal import Decimal
from fractions import Fraction

from statrecon.errors import StatreconError

MAX_DIGITS = 30  # significant digits of one number (each side of a fraction)
MAX_EXPONENT = 60  # |exponent| of a number written with one (1e60)
MAX_MAGNITUDE = 90  # every number is below 1e90 in size: sums of millions stay finite floats
_MAX_TEXT = 200  # characters of one number's text, before any pattern is tried

_NUMBER = re.compile(r"\s*([+-]?)(?:(\d+)(?:[.,](\d*))?|[.,](\d+))(?:[eE]([+-]?\d+))?\s*")
_FRACTION = re.compile(r"\s*([+-]?)(\d+)\s*/\s*(\d+)\s*")


class NumberError(StatreconError, ValueError):
    """A number this reader does not accept; the message says why (callers add where: one
    that does not prints as a one-line error anyway, never a traceback)."""


class NotANumber(NumberError):
    """Text that is no number at all (as opposed to a number beyond the bounds)."""


def parse_number(text: str, *, comma: bool = False, exponent: bool = True,
                 fraction: bool = False) -> Fraction:
    """``text`` as an exact Fraction, or NumberError saying what is wrong with it."""
    if len(text) > _MAX_TEXT:
        raise NumberError(f"a number of {len(text):,} characters (at most {MAX_DIGITS} "
                          "significant digits are read)")
    if fraction and "/" in text:
        return _fraction(text)
    m = _NUMBER.fullmatch(text)
    if m is None or (not comma and "," in text) or (not exponent and m.group(5) is not None):
        raise NotANumber(f"{_shown(text)} is not a number"
                         + (" or a fraction like '565981/6'" if fraction else ""))
    sign, whole, places, only_places, power = m.groups()
    places = places if places is not None else (only_places or "")
    digits = (whole or "") + places
    _check_digits(digits, text)
    shift = -len(places)
    if power is not None:
        if len(power.lstrip("+-")) > 4 or abs(int(power)) > MAX_EXPONENT:
            raise NumberError(f"{_shown(text)} is not a finite number in the supported range "
                              f"(exponent beyond +-{MAX_EXPONENT})")
        shift += int(power)
    if len(digits.lstrip("0")) + shift > MAX_MAGNITUDE:
        raise NumberError(f"{_shown(text)} is beyond the supported range (below "
                          f"1e{MAX_MAGNITUDE} in size)")
    n = int(digits or "0")
    value = Fraction(n * 10**shift) if shift >= 0 else Fraction(n, 10**-shift)
    return -value if sign == "-" else value


def _fraction(text: str) -> Fraction:
    m = _FRACTION.fullmatch(text)
    if m is None:
        raise NotANumber(f"{_shown(text)} is not a number or a fraction like '565981/6'")
    sign, top, bottom = m.groups()
    _check_digits(top, text)
    _check_digits(bottom, text)
    if int(bottom) == 0:
        raise NumberError(f"{_shown(text)}: the denominator is zero")
    value = Fraction(int(top), int(bottom))
    return -value if sign == "-" else value


def _check_digits(digits: str, text: str) -> None:
    significant = len(digits.lstrip("0").rstrip("0")) if digits.strip("0") else 0
    if significant > MAX_DIGITS:
        raise NumberError(f"{_shown(text)} has {significant:,} significant digits; at most "
                          f"{MAX_DIGITS} are read exactly")


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 40 else text[:40] + "...")


def exact_value(value: object, *, comma: bool = False) -> Fraction | None:
    """A value from a typed column (int, float, Decimal, Fraction, NumPy scalar) or text, as
    an exact Fraction; None for a missing value (None, NaN, empty text). A float from a typed
    file becomes the decimal it prints as (``0.1`` is 1/10: the number its writer saw).
    NumberError for text that is no number, a non-finite float or one beyond the bounds."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise NotANumber(f"{value!r} is not a number")
    if isinstance(value, str):
        return parse_number(value, comma=comma) if value.strip() else None
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return _bounded_int(int(value))
    if isinstance(value, Decimal):
        if value.is_nan():
            return None
        if not value.is_finite():
            raise NotANumber(f"{value} is not a finite number")
        return parse_number(str(value))
    if isinstance(value, numbers.Real):
        as_float = float(value)
        if math.isnan(as_float):
            return None
        if not math.isfinite(as_float):
            raise NotANumber(f"{as_float} is not a finite number")
        return parse_number(repr(as_float))
    raise NotANumber(f"{str(value)[:40]!r} is not a number")


def _bounded_int(n: int) -> Fraction:
    if abs(n) >= 10**MAX_MAGNITUDE:
        raise NumberError(f"an integer of {n.bit_length():,} bits is beyond the supported "
                          f"range (below 1e{MAX_MAGNITUDE} in size)")
    return Fraction(n)
