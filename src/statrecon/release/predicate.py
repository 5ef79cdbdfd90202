"""A small, solver-neutral form of WHERE clauses and background constraints.

SQL text is parsed by sqlglot (see ``sql.py``) into these nodes. Parts that touch only known
columns or constants stay as SQL text (``KnownBool`` / ``KnownValue``) and are evaluated by
DuckDB over the public table; parts that touch unknown columns become comparisons the engines
can encode (affine comparisons of integer columns, set membership of categoricals).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

CompareOp = Literal["<", "<=", "=", "<>"]  # everything is normalised to ``affine OP 0``


@dataclass(frozen=True)
class Affine:
    """sum(coef * unknown column) + sum(coef * known expression) + constant.

    ``known`` maps a known-only SQL expression (evaluated per row by DuckDB) to its coefficient.
    """

    columns: tuple[tuple[str, Fraction], ...] = ()
    known: tuple[tuple[str, Fraction], ...] = ()
    constant: Fraction = Fraction(0)

    @staticmethod
    def of_column(name: str) -> Affine:
        return Affine(columns=((name, Fraction(1)),))

    @staticmethod
    def of_known(sql: str) -> Affine:
        return Affine(known=((sql, Fraction(1)),))

    @staticmethod
    def of_constant(value: Fraction) -> Affine:
        return Affine(constant=value)

    def scaled(self, k: Fraction) -> Affine:
        return Affine(
            tuple((n, c * k) for n, c in self.columns),
            tuple((s, c * k) for s, c in self.known),
            self.constant * k,
        )

    def plus(self, other: Affine) -> Affine:
        cols: dict[str, Fraction] = dict(self.columns)
        for n, c in other.columns:
            cols[n] = cols.get(n, Fraction(0)) + c
        known: dict[str, Fraction] = dict(self.known)
        for s, c in other.known:
            known[s] = known.get(s, Fraction(0)) + c
        return Affine(
            tuple((n, c) for n, c in cols.items() if c != 0),
            tuple((s, c) for s, c in known.items() if c != 0),
            self.constant + other.constant,
        )

    @property
    def is_constant(self) -> bool:
        return not self.columns and not self.known


@dataclass(frozen=True)
class Compare:
    """``affine OP 0``; ``>`` and ``>=`` are rewritten by swapping sides."""

    affine: Affine
    op: CompareOp


@dataclass(frozen=True)
class InSet:
    """A categorical column takes one of ``values``."""

    column: str
    values: frozenset[str]


@dataclass(frozen=True)
class KnownBool:
    """A boolean SQL expression over known columns and constants only (DuckDB evaluates it)."""

    sql: str
    # How the statement-shape cache wrote ``sql``: a ``str.format`` template and the literals'
    # SQL it was filled with (``template.format(*literals) == sql``), so that a compiler groups
    # predicates of one shape without scanning their text again. Not part of the value.
    filled: tuple[str, tuple[str, ...]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Const:
    value: bool


@dataclass(frozen=True)
class Not:
    arg: Predicate


@dataclass(frozen=True)
class And:
    args: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    args: tuple[Predicate, ...]


Predicate = Compare | InSet | KnownBool | Const | Not | And | Or

TRUE = Const(True)


def known_sql(pred: Predicate) -> list[str]:
    """Every known-only SQL snippet a predicate needs evaluated, in a stable order."""
    out: list[str] = []

    def walk(p: Predicate) -> None:
        if isinstance(p, KnownBool):
            out.append(p.sql)
        elif isinstance(p, Compare):
            out.extend(s for s, _ in p.affine.known)
        elif isinstance(p, Not):
            walk(p.arg)
        elif isinstance(p, And | Or):
            for a in p.args:
                walk(a)

    walk(pred)
    return out
