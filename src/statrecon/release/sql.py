"""SQL text -> Query / Predicate, with an error naming the construct for anything unsupported.

sqlglot parses; this module decides which parts touch unknown columns (those become solver
constraints) and which touch only known columns or constants (those stay SQL for DuckDB).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ParseError, TokenError
from sqlglot.generators.duckdb import DuckDBGenerator

from statrecon.db import quote_identifier
from statrecon.errors import ReleaseError
from statrecon.release.predicate import (
    TRUE,
    Affine,
    And,
    Compare,
    CompareOp,
    Const,
    InSet,
    KnownBool,
    Not,
    Or,
    Predicate,
)
from statrecon.release.schema import Column, Schema
from statrecon.release.statistic import Aggregate, Query

# Functions allowed on known columns and constants (DuckDB evaluates them).
KNOWN_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Floor,
    exp.Ceil,
    exp.Pow,
    exp.Abs,
    exp.Mod,
    exp.Round,
    exp.IntDiv,
)
_ARITH = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.Paren)
_SELECT_ARGS = {"expressions", "from", "from_", "where"}

# Limits on one statistic's SQL. sqlglot and the translator recurse once per nesting level, so
# the nesting is capped (with room for the recursion they need); long flat AND/OR chains are
# walked without recursion and only the text length is capped.
MAX_SQL_LENGTH = 1_000_000
MAX_NESTING = 100
_RECURSION_ROOM = 20_000


class SQLError(ReleaseError):
    """A SQL statement the tool cannot read; the message names the construct."""


def parse_query(sql: str, schema: Schema) -> Query:
    """Parse ``SELECT AGG(...) FROM table [WHERE ...]`` against a schema."""
    return _query_of(_parse(sql), sql, _Translator(schema))


def _query_of(tree: exp.Expr, sql: str, translator: _Translator) -> Query:
    """A parsed statement checked and translated (``translator`` renders its SQL parts)."""
    schema = translator.schema
    if not isinstance(tree, exp.Select):
        raise SQLError(
            f"expected SELECT <aggregate> FROM <table> [WHERE ...], got: {sql.strip()[:60]}"
        )
    for key, value in tree.args.items():
        if value and key not in _SELECT_ARGS:
            raise SQLError(f"unsupported SQL construct {_construct_name(key)}")
    if len(tree.expressions) != 1:
        raise SQLError("a statistic selects exactly one aggregate")
    from_ = tree.args.get("from") or tree.args.get("from_")
    if from_ is None:
        raise SQLError("missing FROM clause")
    table = from_.this
    if isinstance(table, exp.Subquery):
        raise SQLError("unsupported SQL construct: subquery in FROM")
    if not isinstance(table, exp.Table) or table.args.get("db"):
        raise SQLError(f"unsupported FROM clause: {_short(from_.sql())}")
    _check_plain_table(table)
    if table.name.lower() != schema.table.lower():
        raise SQLError(f"FROM {table.name}: the release's table is '{schema.table}'")
    aggregate, column = _aggregate(tree.expressions[0], schema)
    where = tree.args.get("where")
    with _deep_recursion():
        predicate = TRUE if where is None else translator.predicate(where.this)
        text = canonical_sql(schema, aggregate, column, None if where is None else where.this,
                             translator.render)
    return Query(aggregate=aggregate, column=column, where=predicate, sql=text)


def _duckdb_sql(node: exp.Expression) -> str:
    return node.sql(dialect="duckdb")


def canonical_sql(schema: Schema, aggregate: Aggregate, column: str | None,
                  where: exp.Expression | None,
                  render: Callable[[exp.Expression], str] = _duckdb_sql) -> str:
    """The statistic as one re-generated DuckDB statement: the only SQL text that ever runs.

    Built from the parsed, checked parts (aggregate, declared column, WHERE tree) with quoted
    identifiers, so what DuckDB tabulates is exactly what the engines reconstruct.
    """
    table = quote_identifier(schema.table, "table name")
    text = f"SELECT {_head(aggregate, column)} FROM {table}"
    if where is not None:
        text += f" WHERE {render(where)}"
    return text


def _head(aggregate: Aggregate, column: str | None) -> str:
    """The aggregate as ``canonical_sql`` writes it."""
    col = quote_identifier(column, "column name") if column is not None else None
    return {
        Aggregate.COUNT: "COUNT(*)",
        Aggregate.COUNT_DISTINCT: f"COUNT(DISTINCT {col})",
    }.get(aggregate, f"{aggregate.value.upper()}({col})")


def with_select(query: Query, select: str) -> str:
    """``query``'s re-generated statement with ``select`` (SQL the caller wrote, such as
    ``COUNT(*)``) in place of its aggregate: the same FROM and WHERE. The canonical text is
    cut where ``canonical_sql`` put its aggregate, without parsing it again (tabulating a
    release parsed each statistic once more per aggregate); any other text is parsed."""
    prefix = f"SELECT {_head(query.aggregate, query.column)} FROM "
    if query.sql.startswith(prefix):
        return f"SELECT {select} FROM {query.sql[len(prefix):]}"
    tree = sqlglot.parse_one(query.sql, read="duckdb")
    assert isinstance(tree, exp.Select)
    tree.set("expressions", [sqlglot.parse_one(select, read="duckdb")])
    return tree.sql(dialect="duckdb")


# Table modifiers that change what the FROM table means (renamed columns, samples, time
# travel, ...): the engines model the bare table, so any of these is refused.
_TABLE_MODIFIERS = {
    "alias": "an alias", "sample": "TABLESAMPLE", "when": "AT/time travel",
    "version": "a version", "joins": "JOIN", "laterals": "LATERAL", "pivots": "PIVOT",
    "hints": "a table hint", "partition": "PARTITION", "changes": "CHANGES",
}


def _check_plain_table(table: exp.Table) -> None:
    for key, value in table.args.items():
        if key in ("this", "db", "catalog") or not value:
            continue
        what = _TABLE_MODIFIERS.get(key, key.upper())
        raise SQLError(f"FROM {table.name} with {what}: a statistic reads the release's table "
                       "as it is (no alias, sample or other table modifier)")


def parse_predicate(sql: str, schema: Schema) -> Predicate:
    """Parse a boolean expression (a background constraint), e.g. ``age >= 15``."""
    table = quote_identifier(schema.table, "table name")
    tree = _parse(f"SELECT 1 FROM {table} WHERE {sql}")
    where = tree.args.get("where")
    if not isinstance(tree, exp.Select) or where is None or any(
        value for key, value in tree.args.items() if key not in _SELECT_ARGS
    ):
        raise SQLError("a constraint is one boolean expression")
    with _deep_recursion():
        return parse_predicate_tree(where.this, schema)


def _parse(sql: str) -> exp.Expr:
    _check_size(sql)
    try:
        with _deep_recursion():
            statements = sqlglot.parse(sql, read="duckdb")
    except ParseError as e:
        raise SQLError(f"cannot parse SQL: {_short(_first_line(e))}") from None
    except (TokenError, ValueError) as e:
        raise SQLError(f"cannot parse SQL: {_short(_first_line(e))}") from None
    found = [s for s in statements if s is not None]
    if len(found) != 1:
        raise SQLError("expected exactly one SQL statement")
    return found[0]


def _check_size(sql: str) -> None:
    """Refuse SQL too long or too deeply nested to parse safely, before parsing it."""
    if len(sql) > MAX_SQL_LENGTH:
        raise SQLError(f"SQL of {len(sql):,} characters is longer than the limit of "
                       f"{MAX_SQL_LENGTH:,}")
    depth = deepest = 0
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    if deepest > MAX_NESTING:
        raise SQLError(f"parentheses nested {deepest} deep; the limit is {MAX_NESTING}")


@contextmanager
def _deep_recursion() -> Iterator[None]:
    """Room for the parser's recursion on the nesting allowed; a clear error past it."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, _RECURSION_ROOM))
    try:
        yield
    except RecursionError:
        raise SQLError(f"SQL nested too deeply (the limit is {MAX_NESTING} levels)") from None
    finally:
        sys.setrecursionlimit(before)


def _short(text: str, limit: int = 120) -> str:
    """User SQL quoted in a message, cut so one line stays one readable line."""
    return text if len(text) <= limit else text[:limit] + "..."


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _construct_name(key: str) -> str:
    names = {
        "group": "GROUP BY",
        "having": "HAVING",
        "order": "ORDER BY",
        "limit": "LIMIT",
        "offset": "OFFSET",
        "joins": "JOIN",
        "distinct": "SELECT DISTINCT",
        "with": "WITH",
        "with_": "WITH",
        "qualify": "QUALIFY",
        "windows": "WINDOW",
    }
    return names.get(key, key.upper())


def _column(node: exp.Column, schema: Schema) -> Column:
    if node.table:
        raise SQLError(f"qualified column {node.sql()}: write the bare column name")
    for c in schema.columns:
        if c.name.lower() == node.name.lower():
            return c
    raise SQLError(f"unknown column '{node.name}' (columns: {', '.join(schema.names)})")


def _aggregate(node: exp.Expression, schema: Schema) -> tuple[Aggregate, str | None]:
    if isinstance(node, exp.Alias):
        node = node.this
    if isinstance(node, exp.Count):
        counted = node.this
        if isinstance(counted, exp.Star):
            return Aggregate.COUNT, None
        if isinstance(counted, exp.Distinct):
            if len(counted.expressions) != 1 or not isinstance(counted.expressions[0],
                                                               exp.Column):
                raise SQLError("COUNT(DISTINCT ...) takes one column")
            col = _column(counted.expressions[0], schema)
            if not col.known:
                raise SQLError(
                    f"COUNT(DISTINCT {col.name}): only known columns are supported "
                    "in COUNT(DISTINCT)"
                )
            return Aggregate.COUNT_DISTINCT, col.name
        if isinstance(counted, exp.Column):
            _column(counted, schema)
            return Aggregate.COUNT, None  # no NULLs in the model: COUNT(col) = COUNT(*)
        raise SQLError(f"unsupported COUNT argument {counted.sql() if counted else ''}")
    kinds: dict[type[exp.Expression], Aggregate] = {
        exp.Sum: Aggregate.SUM,
        exp.Avg: Aggregate.AVG,
        exp.Median: Aggregate.MEDIAN,
        exp.Min: Aggregate.MIN,
        exp.Max: Aggregate.MAX,
    }
    kind = kinds.get(type(node))
    arg: exp.Expression | None = node.this if kind else None
    if isinstance(node, exp.Anonymous) and node.name.upper() == "MEAN":
        kind, arg = Aggregate.AVG, (node.expressions[0] if len(node.expressions) == 1 else None)
    if kind is None:
        raise SQLError(
            f"unsupported aggregate {node.sql()}: use COUNT(*), COUNT(DISTINCT col), SUM, "
            "AVG/MEAN, MEDIAN, MIN or MAX"
        )
    if not isinstance(arg, exp.Column):
        raise SQLError(f"{kind.value.upper()} takes a bare column, got {node.sql()}")
    col = _column(arg, schema)
    if col.is_categorical:
        raise SQLError(f"{kind.value.upper()}({col.name}): {col.name} is categorical")
    return kind, col.name


def parse_predicate_tree(node: exp.Expression, schema: Schema) -> Predicate:
    return _Translator(schema).predicate(node)


class _Translator:
    """WHERE trees -> predicates. ``render`` writes a checked subtree as DuckDB SQL; a
    ``_ShapeTranslator`` renders literal slots instead of values (see ``QueryParser``)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.render: Callable[[exp.Expression], str] = _duckdb_sql

    def unknown_refs(self, node: exp.Expression) -> list[Column]:
        cols = [_column(c, self.schema) for c in node.find_all(exp.Column)]
        return [c for c in cols if not c.known]

    def check_known_sql(self, node: exp.Expression) -> None:
        """Known-only expressions may use arithmetic, comparisons, logic and a few functions."""
        for sub in node.walk():
            if isinstance(sub, exp.Column):
                _column(sub, self.schema)
            elif isinstance(sub, exp.Select | exp.Subquery):
                raise SQLError("unsupported SQL construct: subquery")
            elif isinstance(sub, exp.Func) and not isinstance(sub, KNOWN_FUNCTIONS + _LOGIC):
                raise SQLError(
                    f"unsupported function {sub.sql()}: allowed are floor, ceil, pow, abs, "
                    "mod, round"
                )
            elif isinstance(sub, exp.EQ | exp.NEQ | exp.In):
                self.check_categories(sub)

    def check_categories(self, node: exp.Expression) -> None:
        """A known categorical compared with a quoted value: the value must be declared."""
        sides = [node.this] if isinstance(node, exp.In) else [node.this, node.expression]
        for side in sides:
            if isinstance(side, exp.Column) and _column(side, self.schema).is_categorical:
                col = _column(side, self.schema)
                if isinstance(node, exp.In):
                    others = list(node.expressions)
                else:
                    others = [node.expression if side is node.this else node.this]
                for other in others:
                    if isinstance(other, exp.Literal) and other.is_string:
                        self.category(col, other)

    def predicate(self, node: exp.Expression) -> Predicate:
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, exp.Boolean):
            return Const(bool(node.this))
        if isinstance(node, exp.And | exp.Or | exp.Not):
            return self.combination(node)
        if not isinstance(node, (*_COMPARISONS, exp.Between, exp.In)):
            raise SQLError(f"unsupported SQL construct in WHERE: {node.sql()}")
        if not self.unknown_refs(node):
            self.check_known_sql(node)
            return KnownBool(self.render(node))
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this, expression=node.args["low"])
            high = exp.LTE(this=node.this.copy(), expression=node.args["high"])
            return And((self.predicate(low), self.predicate(high)))
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest"):
                raise SQLError("unsupported SQL construct: IN (subquery)")
            return self.membership(node.this, node.expressions)
        return self.comparison(node)

    def membership(self, left: exp.Expression, items: list[exp.Expression]) -> Predicate:
        if isinstance(left, exp.Column) and _column(left, self.schema).is_categorical:
            col = _column(left, self.schema)
            return InSet(col.name, frozenset(self.category(col, i) for i in items))
        return Or(tuple(self.comparison(exp.EQ(this=left.copy(), expression=i)) for i in items))

    def category(self, col: Column, node: exp.Expression) -> str:
        if not (isinstance(node, exp.Literal) and node.is_string):
            raise SQLError(f"categorical column {col.name} is compared with {node.sql()}: "
                           "use a quoted value")
        value = str(node.this)
        if value not in col.values:
            raise SQLError(
                f"'{value}' is not a value of {col.name} (values: {', '.join(col.values)})"
            )
        return value

    def comparison(self, node: exp.Expression) -> Predicate:
        left, right = node.this, node.expression
        cats = [
            side for side in (left, right)
            if isinstance(side, exp.Column) and _column(side, self.schema).is_categorical
            and not _column(side, self.schema).known
        ]
        if cats:
            col = _column(cats[0], self.schema)
            other = right if cats[0] is left else left
            if not isinstance(node, exp.EQ | exp.NEQ):
                raise SQLError(
                    f"{node.sql()}: categorical column {col.name} supports only =, <>, IN"
                )
            member = InSet(col.name, frozenset({self.category(col, other)}))
            return member if isinstance(node, exp.EQ) else Not(member)
        lhs, rhs = self.affine(left), self.affine(right)
        if isinstance(node, exp.GT | exp.GTE):
            lhs, rhs = rhs, lhs
        diff = lhs.plus(rhs.scaled(Fraction(-1)))
        ops: dict[type[exp.Expression], CompareOp] = {
            exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.GT: "<", exp.LTE: "<=", exp.GTE: "<=",
        }
        return Compare(diff, ops[type(node)])

    def affine(self, node: exp.Expression) -> Affine:
        if not self.unknown_refs(node):
            return self.known_affine(node)
        if isinstance(node, exp.Column):
            col = _column(node, self.schema)
            if col.is_categorical:
                raise SQLError(f"categorical column {col.name} used in arithmetic")
            return Affine.of_column(col.name)
        if isinstance(node, exp.Paren):
            return self.affine(node.this)
        if isinstance(node, exp.Neg):
            return self.affine(node.this).scaled(Fraction(-1))
        if isinstance(node, exp.Add | exp.Sub):
            a, b = self.affine(node.this), self.affine(node.expression)
            return a.plus(b if isinstance(node, exp.Add) else b.scaled(Fraction(-1)))
        if isinstance(node, exp.Mul | exp.Div):
            return self.product(node)
        names = ", ".join(sorted({c.name for c in self.unknown_refs(node)}))
        raise SQLError(
            f"{node.sql()}: unsupported on unknown column(s) {names}; functions are allowed "
            "on known columns only, unknown columns take + - and * / by a number"
        )

    def known_affine(self, node: exp.Expression) -> Affine:
        """An expression over no unknown column: a number, or SQL for DuckDB to evaluate."""
        if isinstance(node, exp.Literal):
            if node.is_string:
                raise SQLError(f"a number is expected, got {node.sql()}")
            return Affine.of_constant(Fraction(str(node.this)))
        self.check_known_sql(node)
        return Affine.of_known(self.render(node))

    def product(self, node: exp.Mul | exp.Div) -> Affine:
        """``a * b`` or ``a / b`` with unknown columns: only by a number keeps it affine."""
        a, b = self.affine(node.this), self.affine(node.expression)
        if isinstance(node, exp.Mul) and a.is_constant:
            a, b = b, a
        if not (b.is_constant and not b.known):
            raise SQLError(
                f"{node.sql()}: unknown columns may only be multiplied or divided by a "
                "number"
            )
        if isinstance(node, exp.Div):
            if b.constant == 0:
                raise SQLError(f"{node.sql()}: division by zero")
            return a.scaled(1 / b.constant)
        return a.scaled(b.constant)


    def combination(self, node: exp.Expression) -> Predicate:
        """AND, OR or NOT: one public predicate when every part is public, else the parts'."""
        known = self.known_combination(node)
        if known is not None:
            return known
        if isinstance(node, exp.And):
            return self.public(node, And(tuple(self.predicate(a)
                                               for a in _chain(node, exp.And))))
        if isinstance(node, exp.Or):
            return self.public(node, Or(tuple(self.predicate(a) for a in _chain(node, exp.Or))))
        return self.public(node, Not(self.predicate(node.this)))

    def known_combination(self, node: exp.Expression) -> KnownBool | None:
        """A boolean combination of comparisons over public columns only, checked part by
        part in the order the parts would be, and rendered once (rendering each of 20,000
        ORed parts first took 4 of a release's 7 s); None otherwise (a literal TRUE part
        stays a constant, as ``predicate`` makes it)."""
        if self.unknown_refs(node):
            return None
        parts = _boolean_parts(node)
        if any(isinstance(p, exp.Boolean) for p in parts):
            return None
        for part in parts:
            if not isinstance(part, (*_COMPARISONS, exp.Between, exp.In)):
                raise SQLError(f"unsupported SQL construct in WHERE: {part.sql()}")
            self.check_known_sql(part)
        return KnownBool(self.render(node))

    def public(self, node: exp.Expression, pred: And | Or | Not) -> Predicate:
        """A boolean combination whose parts are all public (checked ``KnownBool``s) is one
        public predicate: DuckDB evaluates it in one pass, not one query per part."""
        parts = (pred.arg,) if isinstance(pred, Not) else pred.args
        if all(isinstance(p, KnownBool) for p in parts):
            return KnownBool(self.render(node))
        return pred


def _boolean_parts(node: exp.Expression) -> list[exp.Expression]:
    """The operands under a tree of AND, OR, NOT and parentheses, left to right (the order
    ``predicate`` meets them), found without recursion."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Paren):
            stack.append(current.this)
        elif isinstance(current, exp.And | exp.Or):
            stack.extend(reversed(_chain(current, type(current))))
        elif isinstance(current, exp.Not):
            stack.append(current.this)
        else:
            out.append(current)
    return out


def _chain(node: exp.Expression, kind: type[exp.Expression]) -> list[exp.Expression]:
    """The operands of ``a OR b OR c ...`` (one kind, any tree shape), left to right, found
    without recursion so a long flat chain cannot exhaust the stack."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        current = stack.pop()
        while isinstance(current, exp.Paren) and isinstance(current.this, kind):
            current = current.this
        if isinstance(current, kind):
            stack.append(current.expression)
            stack.append(current.this)
        else:
            out.append(current)
    return out


_COMPARISONS: tuple[type[exp.Expression], ...] = (
    exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE,
)
_LOGIC: tuple[type[exp.Expression], ...] = (exp.And, exp.Or, exp.Not, exp.Between, exp.In)


# ------------------------------------------------------------------ one parse per SQL shape
#
# A release of thousands of statistics repeats a handful of statement shapes that differ only
# in their literals (``... pow(id * 2, 0.55e0) ...``). ``QueryParser`` parses and checks each
# shape once and fills in the literals of every further statement of that shape. What it
# returns is what ``parse_query`` returns for the same text (tests/release/test_shape_cache.py
# compares them on random and hostile statements); the SQL that runs is still generated from a
# checked parse tree, with each literal written by sqlglot's own literal writer.
#
# The shape of a statement is its text with each simple literal cut out: a quoted string, an
# integer, a decimal or exponent number. Statements of one shape are the same text outside
# those spans, and each span is one sqlglot STRING or NUMBER token (the scanner gives up on
# anything that could make it otherwise: other quotes, backslashes, comments, non-ASCII), so
# sqlglot reads them into the same tree but for the literals' text. A shape is used for more
# than one statement only when its first statement proves, after a full parse, that every
# literal is a plain ``Literal`` node in an argument that the generator writes as it is
# (operands of comparisons, arithmetic and the allowed functions), that filling the first
# statement's own literals back in gives exactly its fresh parse, and that the predicate holds
# no affine comparison (whose constants are computed from the literals): otherwise every
# statement of that shape is parsed on its own.

_LITERAL = re.compile(
    r"(?<![A-Za-z0-9_])'(?:[^'\\\x00]|'')*'"
    r"|(?<![A-Za-z0-9_.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![A-Za-z0-9_.'])",
    re.ASCII,  # \d is 0-9 only: other digits are not numbers to sqlglot
)
_LITERAL_SPLIT = re.compile(f"({_LITERAL.pattern})", re.ASCII)
_SHAPE_TEXT = re.compile(r"[A-Za-z0-9_ \t\n\r(),*=<>!+\-/%.\x00]*")
_SLOT = re.compile(r"\x00(\d+)\x01")
# Where a literal may sit for its shape to be shared: these nodes write their operands as they
# are, whatever the literal's value (an integer and a non-integer literal are different shapes,
# as some writers look at ``is_int``).
_INERT_PARENTS: tuple[type[exp.Expression], ...] = (
    exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Add, exp.Sub, exp.Mul, exp.Div,
    exp.Mod, exp.IntDiv, exp.Neg, exp.Paren, exp.In, exp.Between, exp.Pow, exp.Floor, exp.Ceil,
    exp.Abs,
)
_INERT_ARGS = frozenset({"this", "expression", "expressions", "low", "high"})


def literal_shape(sql: str) -> tuple[str, list[str]] | None:
    """``(shape, literals)``: ``sql`` with each simple literal replaced by a class mark, and the
    literals' source text in order; None when the text holds anything the scanner does not
    read with certainty (then the statement has no shared shape)."""
    if "\x00" in sql:
        return None
    parts = _LITERAL_SPLIT.split(sql)
    literals = parts[1::2]
    marks = ["\x00s" if t[0] == "'" else ("\x00i" if t.isdigit() else "\x00f")
             for t in literals]
    parts[1::2] = marks
    shape = "".join(parts)
    if not _SHAPE_TEXT.fullmatch(shape) or "--" in shape or "/*" in shape:
        return None
    return shape, literals


def literal_value(source: str) -> str:
    """A literal's value as sqlglot's tokenizer reads it (quotes off, doubled quotes single)."""
    if source[0] == "'":
        return source[1:-1].replace("''", "'")
    return source


class _Uncacheable(Exception):
    """The first statement of a shape shows that the shape cannot be shared."""


class _SlotWriter(DuckDBGenerator):
    """DuckDB's SQL writer, but a literal whose text is a slot mark is written as the mark."""

    def literal_sql(self, expression: exp.Literal) -> str:
        text = expression.this or ""
        if isinstance(text, str) and _SLOT.fullmatch(text):
            return text
        return str(super().literal_sql(expression))


_WRITER_DIALECT = DuckDB()


def _literal_sql(value: str, is_string: bool) -> str:
    """One literal as DuckDB SQL, written by sqlglot's writer (escaping included)."""
    node = exp.Literal(this=value, is_string=is_string)
    return str(_WRITER_DIALECT.generate(node, copy=False))


class _ShapeTranslator(_Translator):
    """Translates a statement whose literals are slot marks: category checks are recorded
    for each statement to repeat, and SQL is written with the marks in place."""

    def __init__(self, schema: Schema) -> None:
        super().__init__(schema)
        self.checks: list[tuple[int, Column]] = []
        writer = _SlotWriter(dialect=_WRITER_DIALECT)
        self.render = lambda node: str(writer.generate(node, copy=True))

    def category(self, col: Column, node: exp.Expression) -> str:
        if isinstance(node, exp.Literal) and node.is_string:
            mark = _SLOT.fullmatch(str(node.this))
            if mark:
                self.checks.append((int(mark.group(1)), col))
                return str(node.this)
        return super().category(col, node)

    def comparison(self, node: exp.Expression) -> Predicate:
        pred = super().comparison(node)
        if isinstance(pred, Compare):
            raise _Uncacheable("an affine comparison's constants come from its literals")
        return pred

    def known_affine(self, node: exp.Expression) -> Affine:
        raise _Uncacheable("arithmetic on an unknown column")


Filler = Callable[[tuple[str, ...], list[str]], Predicate]


@dataclass(frozen=True)
class _Shape:
    """A checked statement with literal slots: fills in one statement's literals."""

    aggregate: Aggregate
    column: str | None
    sql: str  # str.format template of the canonical SQL, one field per literal
    where: Filler
    checks: tuple[tuple[int, Column], ...]
    strings: tuple[bool, ...]  # per literal: a quoted string (else a number)

    def query(self, literals: list[str], render: Callable[[str, bool], str]) -> Query | None:
        """The statement with these literals; None when one of them fails a check (the caller
        then parses the statement on its own, for the exact error)."""
        values = [literal_value(t) for t in literals]
        for i, col in self.checks:
            if values[i] not in col.values:
                return None
        written = tuple(render(v, s) for v, s in zip(values, self.strings, strict=True))
        return Query(self.aggregate, self.column, self.where(written, values),
                     self.sql.format(*written))

    def query_cached(self, literals: list[str]) -> Query | None:
        """``query`` with ``_cached_literal_sql``, each literal's value and SQL looked up
        once per distinct source text (the same values, the same writer)."""
        cache = _SOURCE_SQL
        values, written = [], []
        for text in literals:
            known = cache.get(text)
            if known is None:
                value = literal_value(text)
                known = (value, _cached_literal_sql(value, text[0] == "'"))
                if len(cache) < 100_000:
                    cache[text] = known
            values.append(known[0])
            written.append(known[1])
        for i, col in self.checks:
            if values[i] not in col.values:
                return None
        return Query(self.aggregate, self.column, self.where(tuple(written), values),
                     self.sql.format(*written))


def _format_template(text: str) -> str:
    """A text with slot marks as a ``str.format`` template."""
    out = []
    last = 0
    for m in _SLOT.finditer(text):
        out.append(text[last:m.start()].replace("{", "{{").replace("}", "}}"))
        out.append("{" + m.group(1) + "}")
        last = m.end()
    out.append(text[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)


def _filler(pred: Predicate) -> Filler:
    """A function from (written literals, literal values) to the predicate with them in."""
    if isinstance(pred, KnownBool):
        template = _format_template(pred.sql)
        return lambda written, values: KnownBool(template.format(*written), (template, written))
    if isinstance(pred, InSet):
        column = pred.column
        slots = [(int(m.group(1)), None) if (m := _SLOT.fullmatch(v)) else (-1, v)
                 for v in pred.values]
        return lambda written, values: InSet(column, frozenset(
            values[i] if i >= 0 else str(v) for i, v in slots))
    if isinstance(pred, Not):
        inner = _filler(pred.arg)
        return lambda written, values: Not(inner(written, values))
    if isinstance(pred, And | Or):
        kind = type(pred)
        parts = [_filler(a) for a in pred.args]
        return lambda written, values: kind(tuple(f(written, values) for f in parts))
    if isinstance(pred, Const):
        return lambda written, values: pred
    raise _Uncacheable(f"{type(pred).__name__} in the predicate")


def _literal_nodes(tree: exp.Expr, sql: str, literals: list[str]) -> list[exp.Literal]:
    """The tree's literal nodes, one per scanned literal, at the same place in the text, each
    where its value cannot change how the statement is read or written; else _Uncacheable."""
    found = [n for n in tree.walk() if isinstance(n, exp.Literal)]
    if any("start" not in n.meta for n in found):
        raise _Uncacheable("a literal without its place in the text")
    found.sort(key=lambda n: int(n.meta["start"]))
    starts = [m.start() for m in _LITERAL.finditer(sql)]
    if len(found) != len(literals) or [n.meta["start"] for n in found] != starts:
        raise _Uncacheable("literals do not match the parse")
    for node, text in zip(found, literals, strict=True):
        if node.is_string != (text[0] == "'") or node.this != literal_value(text):
            raise _Uncacheable("a literal is read differently")
        if not isinstance(node.parent, _INERT_PARENTS) or node.arg_key not in _INERT_ARGS:
            raise _Uncacheable("a literal in a position its value may change")
        if node.comments:
            raise _Uncacheable("a comment")
    return found


def _make_shape(sql: str, literals: list[str], schema: Schema, fresh: Query
                ) -> tuple[_Shape, Query]:
    """The shape of ``sql`` (already parsed fresh into ``fresh``) and ``sql`` filled into it
    (checked equal to ``fresh``), or _Uncacheable."""
    tree = _parse(sql)
    nodes = _literal_nodes(tree, sql, literals)
    for i, node in enumerate(nodes):
        node.set("this", f"\x00{i}\x01")
    translator = _ShapeTranslator(schema)
    try:
        template = _query_of(tree, sql, translator)
    except SQLError:
        raise _Uncacheable("the slotted statement does not check") from None
    shape = _Shape(template.aggregate, template.column, _format_template(template.sql),
                   _filler(template.where), tuple(translator.checks),
                   tuple(t[0] == "'" for t in literals))
    again = shape.query(literals, _cached_literal_sql)
    if again != fresh or again is None or again.sql != fresh.sql:
        raise _Uncacheable("filling in the first statement does not give its parse")
    return shape, again


_LITERAL_SQL: dict[tuple[str, bool], str] = {}
_SOURCE_SQL: dict[str, tuple[str, str]] = {}  # a literal's source text -> (value, its SQL)


def _cached_literal_sql(value: str, is_string: bool) -> str:
    key = (value, is_string)
    text = _LITERAL_SQL.get(key)
    if text is None:
        text = _literal_sql(value, is_string)
        if len(_LITERAL_SQL) < 100_000:
            _LITERAL_SQL[key] = text
    return text


SHAPE_LITERALS = 1_000


# Statements this process has parsed, by (schema, text): the same release read again (a
# notebook, an experiment's runs, a rerun in one session) parses nothing twice. A Query is
# frozen and depends on nothing but the text and the schema. Short statements only (a Query
# of 500 characters holds about 11 KiB), at most REMEMBERED of them (about 20 MiB at most);
# the least recently used go first.
REMEMBERED = 2048
REMEMBERED_LENGTH = 500
_remembered: dict[tuple[str, str], Query] = {}
_remembered_lock = threading.Lock()


class QueryParser:
    """``parse_query`` for many statements over one schema, parsing each shape once (and
    each statement once per process, see ``REMEMBERED``).

    A statement of more than ``SHAPE_LITERALS`` literals gets no shape: making one parses it
    a second time, and a WHERE that long (20,000 ORs) is written once, not repeated with
    other numbers."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.shapes: dict[str, _Shape | None] = {}  # None: this shape is parsed every time
        self._schema_key = repr(schema)  # frozen dataclasses all the way down: faithful

    def parse(self, sql: str) -> Query:
        if len(sql) > REMEMBERED_LENGTH:
            return self._parse(sql)
        key = (self._schema_key, sql)
        with _remembered_lock:
            query = _remembered.pop(key, None)
            if query is not None:
                _remembered[key] = query  # now the most recently used
                return query
        query = self._parse(sql)
        with _remembered_lock:
            if key not in _remembered and len(_remembered) >= REMEMBERED:
                _remembered.pop(next(iter(_remembered)))
            _remembered[key] = query
        return query

    def _parse(self, sql: str) -> Query:
        if len(sql) > MAX_SQL_LENGTH:
            _check_size(sql)
        scanned = literal_shape(sql)
        if scanned is None:
            return parse_query(sql, self.schema)
        key, literals = scanned
        if len(literals) > SHAPE_LITERALS:
            return parse_query(sql, self.schema)
        shape = self.shapes.get(key, _MISSING)
        if shape is _MISSING:
            fresh = parse_query(sql, self.schema)  # errors of the first statement as they are
            try:
                self.shapes[key], filled = _make_shape(sql, literals, self.schema, fresh)
            except _Uncacheable:
                self.shapes[key] = None
                return fresh
            return filled  # equal to ``fresh``, and filled like the statements after it
        if shape is None:
            return parse_query(sql, self.schema)
        assert isinstance(shape, _Shape)
        query = shape.query_cached(literals)
        return query if query is not None else parse_query(sql, self.schema)


_MISSING: Any = object()
