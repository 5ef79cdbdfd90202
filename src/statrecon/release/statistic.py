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
