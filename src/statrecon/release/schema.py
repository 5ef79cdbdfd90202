"""Columns and their domains: what a row of the hidden table can look like."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ColumnType(StrEnum):
    INTEGER = "integer"
    CATEGORICAL = "categorical"
    REAL = "real"


@dataclass(frozen=True)
class Column:
    """One column of the table.

    ``known`` columns come with a public table (one value per row, e.g. an identifier);
    the engines treat their values as constants. Unknown columns are what is reconstructed.
    """

    name: str
    type: ColumnType
    min: float | None = None
    max: float | None = None
    values: tuple[str, ...] = ()
    known: bool = False

    @property
    def is_categorical(self) -> bool:
        return self.type is ColumnType.CATEGORICAL

    @property
    def is_integer(self) -> bool:
        return self.type is ColumnType.INTEGER

    def domain_text(self) -> str:
        if self.is_categorical:
            return "{" + ", ".join(repr(v) for v in self.values) + "}"
        lo = "-inf" if self.min is None else _num(self.min)
        hi = "inf" if self.max is None else _num(self.max)
        return f"{lo}..{hi}"

    def contains(self, value: Any) -> bool:
        """Whether a (decoded) value lies in this column's declared domain."""
        if self.is_categorical:
            return isinstance(value, str) and value in self.values
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.is_integer and float(value) != int(value):
            return False
        if self.min is not None and value < self.min:
            return False
        return not (self.max is not None and value > self.max)

    def encode(self, value: Any) -> int:
        """Integer code used inside solvers: categorical index, or the integer itself."""
        if self.is_categorical:
            return self.values.index(value)
        return int(value)

    def decode(self, code: int) -> str | int:
        if self.is_categorical:
            return self.values[code]
        return int(code)


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class Schema:
    """The table name used in SQL and its columns, in declaration order."""

    table: str
    columns: tuple[Column, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError("duplicate column names")

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def has(self, name: str) -> bool:
        return any(c.name == name for c in self.columns)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def known(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.known)

    @property
    def unknown(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if not c.known)
