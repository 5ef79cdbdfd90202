"""Rounding of table cells to a base b, and the true values a rounded value allows.

Three methods (:data:`METHODS`), each rounding every cell to a multiple of b next to it and
keeping a multiple of b as it is:

- ``nearest`` (deterministic): the nearest multiple; a tie (a value exactly half-way, for
  an even b) goes up, so 5 becomes 10 with b = 10, and 2.5 (b = 5, a table with decimals)
  becomes 5. Breaks additivity.
- ``random`` (unbiased): up with probability (x mod b) / b, else down, so the expected
  published value is the true one; seeded. Breaks additivity.
- ``controlled``: every cell up or down so that the published tables still add up, with the
  least total change (zero-restricted: a multiple stays); an integer programme
  (``engines/suppression/rounding.py``), which may have no solution for three-way tables.

What an attacker knows of the method decides which true values a published value allows
(:func:`possible`): knowing the method (the default, and the worst case), nearest rounding
gives r - b/2 <= x < r + b/2, the others |x - r| < b; knowing only the base, |x - r| < b,
the convention. Either way a cell is at least 0 and on the table's lattice (a multiple of
1/10**decimals). The values here are exact Fractions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from statrecon.errors import StatreconError

Method = Literal["nearest", "random", "controlled"]
METHODS: tuple[Method, ...] = ("nearest", "random", "controlled")
Knowledge = Literal["method", "base"]
KNOWLEDGE: tuple[Knowledge, ...] = ("method", "base")
KNOWLEDGE_TEXT: dict[Knowledge, str] = {
    "method": "the rounding method and its base",
    "base": "only the base (not the method)",
}
METHOD_TEXT: dict[Method, str] = {
    "nearest": "deterministic rounding to the nearest multiple (ties up)",
    "random": "unbiased random rounding (up with probability (x mod b) / b)",
    "controlled": "controlled rounding (the tables still add up; least total change)",
}


def knowledge_text(method: Method, knowledge: Knowledge, base: int) -> str:
    """What the attacker is assumed to know and the set of true values it gives, in words
    (every output states it)."""
    if knowledge == "method" and method == "nearest":
        rule = f"r - {Fraction(base, 2)} <= x < r + {Fraction(base, 2)} (ties go up)"
    else:
        rule = f"|x - r| < {base}"
    return (f"{KNOWLEDGE_TEXT[knowledge]}, b = {base}: each true value x lies within {rule} "
            "of its published r, and x >= 0")


def check_base(base: int) -> None:
    """A rounding base is a whole number of at least 2: one line otherwise."""
    if isinstance(base, bool) or not isinstance(base, int) or base < 2:
        why = ("a base of 1 leaves every whole value as it is" if base == 1 else
               "0 has no multiples to round to" if base == 0 else "not a negative number")
        raise StatreconError(f"--base {base}: a rounding base must be a whole number of at "
                             f"least 2 ({why})")


def check_values(values: Sequence[Fraction], names: Sequence[str]) -> None:
    """Rounding reads counts or non-negative magnitudes: a negative cell is refused."""
    for value, name in zip(values, names, strict=True):
        if value < 0:
            raise StatreconError(f"cell {name} is negative ({value}): rounding to a base is "
                                 "for counts and non-negative magnitudes")


def down(value: Fraction, base: int) -> Fraction:
    """The largest multiple of ``base`` at most ``value``."""
    return Fraction(math.floor(value / base) * base)


def round_nearest(values: Sequence[Fraction], base: int) -> tuple[Fraction, ...]:
    """Each value to its nearest multiple of ``base``, a tie up."""
    out = []
    for value in values:
        low = down(value, base)
        out.append(low + base if 2 * (value - low) >= base else low)
    return tuple(out)


def round_random(values: Sequence[Fraction], base: int, seed: int, scale: int
                 ) -> tuple[Fraction, ...]:
    """Each value up with probability (value mod base) / base, exactly: one whole number
    drawn per value (numpy's ``default_rng(seed)``) in [0, base * scale), up when it is
    below (value mod base) * scale; ``scale`` puts every value on whole numbers (the table's
    10**decimals)."""
    # lazy: numpy's generator loads only when a table is rounded at random
    import numpy as np

    draws = np.random.default_rng(seed).integers(0, base * scale, size=len(values))
    out = []
    for value, draw in zip(values, draws, strict=True):
        low = down(value, base)
        rest = (value - low) * scale
        if rest.denominator != 1:
            raise StatreconError(f"value {value} is not a multiple of 1/{scale}")
        out.append(low + base if int(draw) < rest.numerator else low)
    return tuple(out)


def is_adjacent(value: Fraction, rounded: Fraction, base: int) -> bool:
    """``rounded`` is a multiple of ``base`` next to ``value`` (``value`` itself when it is
    one): what every method here publishes."""
    if (rounded / base).denominator != 1:
        return False
    if (value / base).denominator == 1:
        return rounded == value
    return down(value, base) <= rounded <= down(value, base) + base


def possible(rounded: Fraction, base: int, method: Method, knowledge: Knowledge, scale: int
             ) -> tuple[Fraction, Fraction]:
    """The least and greatest true value on the lattice 1/``scale``, at least 0, that
    ``method`` could have published as ``rounded``, the attacker knowing ``knowledge``
    (module docstring)."""
    step = Fraction(1, scale)
    if knowledge == "method" and method == "nearest":
        # r - b/2 <= x < r + b/2: the lattice's points in that half-open interval
        low = _ceil_on(rounded - Fraction(base, 2), scale)
        high = _ceil_on(rounded + Fraction(base, 2), scale) - step
    else:  # |x - r| < b
        low, high = rounded - base + step, rounded + base - step
    return max(low, Fraction(0)), high


def _ceil_on(value: Fraction, scale: int) -> Fraction:
    """The least multiple of 1/``scale`` at least ``value``."""
    return Fraction(math.ceil(value * scale), scale)
