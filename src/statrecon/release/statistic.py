"""Statistics and their published answers.

A statistic is a SQL aggregate over the hidden table; its answer says how exact the published
number is. The answer types carry their own meaning so that engines cannot confuse a rounded
mean with an exact one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

from statrecon.number_reader import parse_number
from statrecon.release.predicate import TRUE, Predicate


class Aggregate(StrEnum):
    COUNT = "count"
    COUNT_DISTINCT = "count_distinct"
    SUM = "sum"
    AVG = "avg"
    MEDIAN = "median"
    MIN = "min"
    MAX = "max"


@dataclass(frozen=True)
class Query:
    """``SELECT aggregate(column) FROM table WHERE where``, parsed.

    ``sql`` is the statistic re-generated from its checked parts (see ``sql.canonical_sql``):
    the text DuckDB runs, never the user's own.
    """

    aggregate: Aggregate
    column: str | None
    where: Predicate = TRUE
    sql: str = field(default="", compare=False)


@dataclass(frozen=True)
class Exact:
    """The published value is the true value."""

    value: Fraction


@dataclass(frozen=True)
class Bounded:
    """The true value lies in [value - error, value + error] (e.g. a rounded mean)."""

    value: Fraction
    error: Fraction

    @property
    def low(self) -> Fraction:
        return self.value - self.error

    @property
    def high(self) -> Fraction:
        return self.value + self.error


@dataclass(frozen=True)
class Suppressed:
    """Not published; the suppression rule bounds the count of rows the statistic covers."""

    min_count: int
    max_count: int


@dataclass(frozen=True)
class Empty:
    """Published as null: the aggregate ran over no rows (AVG/MEDIAN/MIN/MAX are undefined)."""


@dataclass(frozen=True)
class Noisy:
    """A value with random noise of a stated distribution: soft evidence, never a proof."""

    value: Fraction
    distribution: dict[str, float] = field(default_factory=dict)


Answer = Exact | Bounded | Suppressed | Empty | Noisy


@dataclass(frozen=True)
class Statistic:
    id: str
    sql: str
    query: Query
    answer: Answer | None  # None: not yet tabulated
    line: int | None = None  # line in the release file, for messages

    @property
    def where_text(self) -> str:
        return f"statistic '{self.id}'" + (f" (line {self.line})" if self.line else "")


def fraction_of(value: Any) -> Fraction:
    """A published number as an exact rational, read the way a person reads its decimals."""
    if isinstance(value, bool):
        raise TypeError("boolean is not a number")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value))
    if isinstance(value, str):
        return Fraction(value.strip())
    if isinstance(value, Fraction | Decimal):
        return Fraction(value)
    raise TypeError(f"not a number: {value!r}")


def number_out(value: Fraction) -> int | float:
    """A rational back to the plainest JSON/YAML number."""
    if value.denominator == 1:
        return int(value)
    return float(value)


MAX_DECIMALS = 18  # ``decimals:`` beyond this is finer than any published number


def parse_rational(text: str) -> Fraction:
    """``"565981/6"`` or ``"12.25"`` as an exact rational (the one number reader,
    :mod:`statrecon.number_reader`); a ValueError saying what is wrong."""
    return parse_number(text, fraction=True)


def rounding(value: Fraction, decimals: int) -> Bounded:
    """A value published rounded to ``decimals`` places: the truth lies within half a unit of
    the last place (``decimals: 2`` is value +- 0.005). ValueError when the decimals are not a
    sensible count or the value has more places than they say."""
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise ValueError(f"decimals must be a whole number, got {decimals!r}")
    if not 0 <= decimals <= MAX_DECIMALS:
        raise ValueError(f"decimals {decimals} must be between 0 and {MAX_DECIMALS}")
    scale = 10**decimals
    if (value * scale).denominator != 1:
        raise ValueError(f"value {_shown(value)} has more decimals than decimals: {decimals}")
    return Bounded(value, Fraction(1, 2 * scale))


def rounded_decimals(answer: Bounded) -> int | None:
    """The ``d`` of ``decimals: d`` that states exactly this bound, if there is one."""
    error = answer.error
    if error <= 0 or error.numerator != 1 or error.denominator % 2:
        return None
    scale = error.denominator // 2
    decimals = len(str(scale)) - 1
    if scale != 10**decimals or decimals > MAX_DECIMALS or (answer.value * scale).denominator != 1:
        return None
    return decimals


def _shown(value: Fraction) -> str:
    return str(value) if value.denominator == 1 else (
        repr(float(value)) if Fraction(repr(float(value))) == value else str(value))


def number_text(value: Fraction) -> int | float | str:
    """A rational for a YAML/CSV file, read back exactly: an int, a float whose decimal form is
    this value, else the exact fraction ``"p/q"``."""
    if value.denominator == 1:
        return int(value)
    as_float = float(value)
    if Fraction(repr(as_float)) == value:
        return as_float
    return f"{value.numerator}/{value.denominator}"
