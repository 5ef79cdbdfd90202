"""SQL text -> Query / Predicate, with an error naming the construct for anything unsupported.

sqlglot parses; this module decides which parts touch unknown columns (those become solver
constraints) and which touch only known columns or constants (those stay SQL for DuckDB).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

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
    tree = _parse(sql)
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
        predicate = TRUE if where is None else parse_predicate_tree(where.this, schema)
        text = canonical_sql(schema, aggregate, column, None if where is None else where.this)
    return Query(aggregate=aggregate, column=column, where=predicate, sql=text)


def canonical_sql(schema: Schema, aggregate: Aggregate, column: str | None,
                  where: exp.Expression | None) -> str:
    """The statistic as one re-generated DuckDB statement: the only SQL text that ever runs.

    Built from the parsed, checked parts (aggregate, declared column, WHERE tree) with quoted
    identifiers, so what DuckDB tabulates is exactly what the engines reconstruct.
    """
    table = quote_identifier(schema.table, "table name")
    col = quote_identifier(column, "column name") if column is not None else None
    head = {
        Aggregate.COUNT: "COUNT(*)",
        Aggregate.COUNT_DISTINCT: f"COUNT(DISTINCT {col})",
    }.get(aggregate, f"{aggregate.value.upper()}({col})")
    text = f"SELECT {head} FROM {table}"
    if where is not None:
        text += f" WHERE {where.sql(dialect='duckdb')}"
    return text


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
    def __init__(self, schema: Schema) -> None:
        self.schema = schema

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
        if isinstance(node, exp.And):
            return _public(node, And(tuple(self.predicate(a) for a in _chain(node, exp.And))))
        if isinstance(node, exp.Or):
            return _public(node, Or(tuple(self.predicate(a) for a in _chain(node, exp.Or))))
        if isinstance(node, exp.Not):
            return _public(node, Not(self.predicate(node.this)))
        if not isinstance(node, (*_COMPARISONS, exp.Between, exp.In)):
            raise SQLError(f"unsupported SQL construct in WHERE: {node.sql()}")
        if not self.unknown_refs(node):
            self.check_known_sql(node)
            return KnownBool(node.sql(dialect="duckdb"))
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
        return Affine.of_known(node.sql(dialect="duckdb"))

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


def _public(node: exp.Expression, pred: And | Or | Not) -> Predicate:
    """A boolean combination whose parts are all public (checked ``KnownBool``s) is one public
    predicate: DuckDB evaluates it in one pass, not one query per part."""
    parts = (pred.arg,) if isinstance(pred, Not) else pred.args
    if all(isinstance(p, KnownBool) for p in parts):
        return KnownBool(node.sql(dialect="duckdb"))
    return pred


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
