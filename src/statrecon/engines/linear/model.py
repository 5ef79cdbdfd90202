"""Compile a release into a linear system ``F x ≈ a`` over one secret column of known rows.

The attacker knows every row through its public columns; one column is secret. A statistic is
linear in that column when its WHERE clause is a public predicate, optionally AND-ed with one
condition on a categorical secret (``COUNT(*) ... AND diagnosis = 'yes'``), or when it sums or
averages a numeric secret over a public predicate. DuckDB evaluates every public predicate
over the public table (in batches, one query for many predicates), which gives the 0/1 query
matrix. AVG is turned into a SUM with the group size the public table reveals.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from statrecon.bulk import collector_paused
from statrecon.db import hardened, quote_identifier
from statrecon.errors import StatreconError
from statrecon.release.known import PublicTable
from statrecon.release.model import Release
from statrecon.release.predicate import And, Compare, Const, InSet, KnownBool, Not, Predicate
from statrecon.release.schema import Column
from statrecon.release.statistic import (
    Aggregate,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Statistic,
    Suppressed,
)

SecretKind = Literal["indicator", "integer", "real"]
AnswerKind = Literal["exact", "bounded", "noisy"]
_BATCH = 128  # public predicates evaluated per DuckDB query


class NotLinear(StatreconError):
    """The release is not linear in one secret column; the message names the statistic."""


@dataclass(frozen=True)
class SecretColumn:
    """The reconstructed column. For a categorical secret the unknown is the indicator of
    ``target`` (a set of its values); ``other`` names the complement when reporting."""

    name: str
    kind: SecretKind
    lower: float
    upper: float
    target: tuple[str, ...] = ()
    other: str = ""
    domain: tuple[str, ...] = ()  # every value of a categorical secret

    def label(self, value: float) -> Any:
        """An estimated unknown in the column's own values."""
        if self.kind == "indicator":
            return self.target[0] if len(self.target) == 1 and value >= 0.5 else (
                " or ".join(self.target) if value >= 0.5 else self.other)
        if self.kind == "integer":
            return round(value)
        return float(value)


@dataclass(frozen=True)
class LinearSystem:
    """``matrix @ x`` approximates ``answers``; per statistic: how exact its answer is.

    ``matrix`` rows are 0/1 (integer coefficients) so exact arithmetic can use it as is;
    ``exact_answers`` keeps the published rationals (AVG already multiplied by group size);
    ``exact_errors`` their guaranteed half-widths as rationals (0 exact; for a noisy answer 0
    too: it carries no guarantee, see ``kinds``).
    """

    matrix: sp.csr_matrix
    answers: np.ndarray
    exact_answers: tuple[Fraction, ...]
    exact_errors: tuple[Fraction, ...]
    errors: np.ndarray  # half-width of the guaranteed interval (0 exact, inf noisy)
    scales: np.ndarray  # noise scale for weighting (error bound or noise parameter)
    kinds: tuple[AnswerKind, ...]
    stat_ids: tuple[str, ...]
    secret: SecretColumn
    lower: np.ndarray
    upper: np.ndarray
    public: PublicTable | None = None
    ignored: tuple[str, ...] = ()
    user_bounds: bool = False  # bounds given as background knowledge (--bounds)

    @property
    def n(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def k(self) -> int:
        return int(self.matrix.shape[0])

    def exact_rows(self) -> np.ndarray:
        return np.array([i for i, kind in enumerate(self.kinds) if kind == "exact"], dtype=int)


@dataclass(frozen=True)
class _Parsed:
    stat: Statistic
    public_sql: str  # "TRUE" when the WHERE has no public part
    public_fill: tuple[str, tuple[str, ...]] | None  # public_sql as template + literals
    sign: int  # +1: counts the target; -1: counts its complement (row becomes count - ...)
    aggregate: Aggregate


def secret_column(release: Release) -> Column:
    """The one unknown column a linear release reconstructs."""
    unknown = release.schema.unknown
    if len(unknown) != 1:
        names = ", ".join(c.name for c in unknown) or "none"
        raise NotLinear(f"{release.source or 'release'}: the linear engine needs exactly one "
                        f"unknown column (found: {names})")
    return unknown[0]


@dataclass(frozen=True)
class LinearPlan:
    """A release read as rows of a linear system, before any predicate is evaluated: what
    ``linear_plan`` checked, handed to ``compile_linear`` so the statistics are read once."""

    secret: SecretColumn
    parsed: tuple[_Parsed, ...]
    ignored: tuple[str, ...]


def linear_plan(release: Release, public: PublicTable | None = None
                ) -> tuple[LinearPlan | None, str | None]:
    """The release as a linear system's plan, or why it is not linear in one secret column
    over public rows (then the plan is None)."""
    try:
        secret, parsed, ignored = _parse_all(release)
    except NotLinear as e:
        return None, str(e)
    plan = LinearPlan(secret, tuple(parsed), tuple(ignored))
    for p in parsed:
        counted = p.stat.query.column
        if (public is not None and p.aggregate is Aggregate.COUNT_DISTINCT
                and counted is not None and len(set(public.columns[counted])) != public.rows):
            return None, (f"{p.stat.where_text}: COUNT(DISTINCT {counted}) counts rows only "
                          f"when {counted} is unique in the public table ({public.source})")
    if not release.schema.known:
        return None, "no known columns: the rows are not known to the attacker"
    return plan, None


def linear_reason(release: Release, public: PublicTable | None = None) -> str | None:
    """Why a release is not linear in one secret column over public rows (None: it is)."""
    return linear_plan(release, public)[1]


def compile_linear(release: Release, public: PublicTable,
                   bounds: tuple[np.ndarray, np.ndarray] | None = None, *,
                   max_cells: int | None = None, plan: LinearPlan | None = None
                   ) -> LinearSystem:
    """Evaluate every public predicate with DuckDB and build the sparse system.

    ``max_cells`` refuses, before any predicate is evaluated, a system of more statistics x
    public rows than that (each statistic is a boolean vector over the rows while it is built).
    ``plan``: the release's ``linear_plan``, when the caller has it already.
    """
    with collector_paused():  # many small acyclic objects (one equation per statistic)
        return _compile_linear(release, public, bounds, max_cells, plan)


def _compile_linear(release: Release, public: PublicTable,
                    bounds: tuple[np.ndarray, np.ndarray] | None, max_cells: int | None,
                    plan: LinearPlan | None) -> LinearSystem:
    if plan is None:
        secret, parsed_list, ignored = _parse_all(release)  # NotLinear names the statistic
        plan = LinearPlan(secret, tuple(parsed_list), tuple(ignored))
    secret, parsed, ignored = plan.secret, plan.parsed, list(plan.ignored)
    n = public.rows
    _check_cells(release, len(parsed), n, max_cells)
    lower, upper = _record_bounds(secret, n, bounds)
    selected = evaluate_predicate_rows(release, public, [p.public_sql for p in parsed],
                                       [p.stat for p in parsed],
                                       [p.public_fill for p in parsed])
    equations: list[_Equation] = []
    for p, rows in zip(parsed, selected, strict=True):
        equation = _equation(p, rows, public)
        if equation is None:
            ignored.append(p.stat.id)
            continue
        equations.append(equation)
    return LinearSystem(
        matrix=_matrix([e.rows for e in equations], n),
        answers=np.array([float(e.value) for e in equations], dtype=float),
        exact_answers=tuple(e.value for e in equations),
        exact_errors=tuple(e.exact_error for e in equations),
        errors=np.array([e.error for e in equations], dtype=float),
        scales=np.array([e.scale for e in equations], dtype=float),
        kinds=tuple(e.kind for e in equations), stat_ids=tuple(e.stat_id for e in equations),
        secret=secret, lower=lower, upper=upper,
        public=public, ignored=tuple(ignored), user_bounds=bounds is not None,
    )


def _matrix(rows: list[np.ndarray], n: int) -> sp.csr_matrix:
    """The 0/1 matrix whose row ``i`` is 1 on the public rows ``rows[i]`` (sorted indices)."""
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(indices), dtype=np.float64), indices, indptr),
                         shape=(len(rows), n))


@dataclass(frozen=True)
class _Equation:
    """One statistic as a row of the system: the sum of ``x`` over the public rows ``rows``
    (sorted indices) is ``value`` (exactly, within
    ``error``, or up to noise of scale ``scale``)."""

    stat_id: str
    rows: np.ndarray
    value: Fraction  # AVG already multiplied by the group size, complements turned around
    error: float  # half-width of the guaranteed interval (inf: noisy)
    scale: float  # weight of the answer's noise
    kind: AnswerKind
    exact_error: Fraction = Fraction(0)  # the same half-width, exactly (0 when noisy)


def _check_cells(release: Release, statistics: int, n: int, max_cells: int | None) -> None:
    """Refuse a system over ``max_cells`` before any predicate is evaluated."""
    if max_cells is not None and statistics * n > max_cells:
        raise StatreconError(
            f"{release.source or 'release'}: {statistics:,} statistics x {n:,} public rows = "
            f"{statistics * n:,} matrix cells, over the limit of {max_cells:,}; raise it with "
            "--max-matrix-cells (LinearOptions.max_cells)")


def _record_bounds(secret: SecretColumn, n: int,
                   bounds: tuple[np.ndarray, np.ndarray] | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-record bounds: the secret's domain, narrowed by background knowledge if given."""
    lower = np.full(n, secret.lower, dtype=float)
    upper = np.full(n, secret.upper, dtype=float)
    if bounds is not None:
        lower = np.maximum(lower, bounds[0])
        upper = np.minimum(upper, bounds[1])
        bad = np.flatnonzero(lower > upper)
        if bad.size:
            raise StatreconError(
                f"bounds: record {int(bad[0]) + 1} has lower {lower[bad[0]]} above upper "
                f"{upper[bad[0]]} (after the domain of {secret.name})")
    return lower, upper


def _equation(p: _Parsed, rows: np.ndarray, public: PublicTable) -> _Equation | None:
    """The row of one statistic over the public rows ``rows`` (indices) its WHERE selects;
    None when its published answer says nothing about the secret (it is then listed as
    ignored)."""
    group = len(rows)
    counted = p.stat.query.column
    if p.aggregate is Aggregate.COUNT_DISTINCT and counted is not None and len(
            set(public.columns[counted])) != public.rows:
        raise NotLinear(f"{p.stat.where_text}: COUNT(DISTINCT {counted}) counts rows only "
                        f"when {counted} is unique in the public table ({public.source})",
                        statistic=p.stat.id)
    published = _published(p, group)
    if published is None:
        return None
    value, error, kind = published
    scale = 1.0
    if p.aggregate is Aggregate.AVG:
        if group == 0:
            raise StatreconError(f"{p.stat.where_text}: AVG over no public rows",
                                 statistic=p.stat.id)
        value, error, scale = value * group, error * group, float(group)
    if p.sign < 0:  # count(not target AND p) = |p| - count(target AND p)
        value = Fraction(group) - value
    if kind == "noisy":
        ans = p.stat.answer
        assert isinstance(ans, Noisy)
        param = next(iter(ans.distribution.values()), 1.0)
        return _Equation(p.stat.id, rows, value, float("inf"), float(param) * scale, kind)
    return _Equation(p.stat.id, rows, value, float(error), max(float(error), 0.0), kind,
                     Fraction(error))


def _published(p: _Parsed, group: int) -> tuple[Fraction, Fraction, AnswerKind] | None:
    """(value, error bound, kind) of a statistic's published answer over ``group`` public
    rows; None for an answer that carries no equation (empty group, suppressed sum)."""
    ans = p.stat.answer
    if isinstance(ans, Empty):
        if group:
            raise StatreconError(f"{p.stat.where_text}: published as empty, but "
                                 f"{group} public rows match its WHERE", statistic=p.stat.id)
        return None
    if isinstance(ans, Suppressed):
        if p.aggregate not in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT):
            return None
        return (Fraction(ans.min_count + ans.max_count, 2),
                Fraction(ans.max_count - ans.min_count, 2), "bounded")
    if isinstance(ans, Exact):
        return ans.value, Fraction(0), "exact"
    if isinstance(ans, Bounded):
        return ans.value, ans.error, "bounded"
    if isinstance(ans, Noisy):
        return ans.value, Fraction(0), "noisy"
    raise StatreconError(f"{p.stat.where_text} has no published value", statistic=p.stat.id)


def evaluate_predicates(release: Release, public: PublicTable, sqls: list[str],
                        owners: list[Statistic]) -> list[np.ndarray]:
    """One boolean vector per public predicate, in public-table order (DuckDB); ``owners[i]``
    is the statistic predicate ``i`` comes from, named by any error. See
    ``evaluate_predicate_rows``."""
    out = []
    for rows in evaluate_predicate_rows(release, public, sqls, owners):
        mask = np.zeros(public.rows, dtype=bool)
        mask[rows] = True
        out.append(mask)
    return out


def evaluate_predicate_rows(release: Release, public: PublicTable, sqls: list[str],
                            owners: list[Statistic], fills: list[Fill | None] | None = None
                            ) -> list[np.ndarray]:
    """Per public predicate, the sorted indices of the public rows it holds on (DuckDB);
    ``owners[i]`` is the statistic predicate ``i`` comes from, named by any error.

    Predicates that differ only in their numbers (one *shape*) are evaluated together: one
    query joins a table of their numbers, each cast to the type DuckDB gives that number as a
    literal, with the public table (``_evaluate_shapes``); the rest, and any shape whose joined
    query fails or disagrees with its first predicate evaluated alone, go one expression each
    (batched, ``_evaluate_each``), which also names the statistic of any error. ``fills[i]``,
    when given, is predicate ``i`` as a template and its literals (``KnownBool.filled``), which
    spares scanning its text for its shape.
    """
    import pandas as pd

    frame = pd.DataFrame({**public.columns, "__row": range(public.rows)})
    # Snippets are sqlglot re-generated; the connection cannot reach files, network, extensions.
    con = hardened({release.schema.table: frame})
    try:
        first = {s: i for i, s in enumerate(sqls)}
        found: dict[str, np.ndarray] = {}
        table = release.schema.table
        fill_of = {s: fills[i] for s, i in first.items()} if fills is not None else {}
        rest = _evaluate_shapes(con, table, list(first), public.rows, found, fill_of)
        _evaluate_each(con, table, rest, found, [owners[first[s]] for s in rest])
        return [found[s] for s in sqls]
    finally:
        con.close()


def _evaluate_each(con: Any, table: str, sqls: list[str], found: dict[str, np.ndarray],
                   owners: list[Statistic]) -> None:
    """Each predicate as its own expression, ``_BATCH`` to a query; errors name the owner."""
    import duckdb

    owner_of = dict(zip(sqls, owners, strict=True))
    for start in range(0, len(sqls), _BATCH):
        batch = sqls[start:start + _BATCH]
        try:
            cols = _select(con, table, batch)
        except duckdb.Error:
            cols = []
            for sql in batch:  # find the statistic DuckDB rejects
                try:
                    cols.extend(_select(con, table, [sql]))
                except duckdb.Error as e:
                    owner = owner_of[sql]
                    raise StatreconError(f"{owner.where_text}: DuckDB cannot evaluate "
                                         f"{sql!r}: {str(e).splitlines()[0]}",
                                         statistic=owner.id) from None
        for sql, col in zip(batch, cols, strict=True):
            if col is None:
                owner = owner_of[sql]
                raise StatreconError(f"{owner.where_text}: {sql!r} is NULL on a public row",
                                     statistic=owner.id)
            found[sql] = np.flatnonzero(col)


_TYPE_NAME = re.compile(r"[A-Z]+(?:\(\d+,\d+\))?")
_PARAM = "__statrecon_p"
_RAW = "__statrecon_raw"


@dataclass
class _ShapeGroup:
    """Public predicates of one shape and one tuple of number types."""

    template: str  # the shape, each number slot written as a parameter column
    kinds: tuple[str, ...]  # DuckDB's type of each number slot
    sqls: list[str]
    numbers: list[list[str]]  # per predicate, its numbers' text


def _evaluate_shapes(con: Any, table: str, sqls: list[str], rows: int,
                     found: dict[str, np.ndarray], fill_of: dict[str, Fill | None]
                     ) -> list[str]:
    """Evaluate the predicates that share a shape with others, one query per shape; returns
    the predicates left for ``_evaluate_each``."""
    groups, rest = _shape_groups(con, sqls, fill_of)
    if len(groups) > 1:
        groups = _evaluate_together(con, table, groups, found)
    for group in groups:
        if not _evaluate_group(con, table, group, rows, found):
            rest.extend(group.sqls)
    return rest


def _evaluate_together(con: Any, table: str, groups: list[_ShapeGroup],
                       found: dict[str, np.ndarray]) -> list[_ShapeGroup]:
    """Every group in one query (each its ``_evaluate_group`` query, UNION ALL), and the
    first predicate of each alone in one more; returns the groups not settled (DuckDB refused
    the query, a value is NULL, or a first predicate disagrees), for one query each."""
    import duckdb
    import pandas as pd

    width = max(len(g.numbers[0]) for g in groups)
    params = pd.DataFrame({
        "g": np.repeat(np.arange(len(groups)), [len(g.sqls) for g in groups]),
        "k": np.concatenate([np.arange(len(g.sqls)) for g in groups]),
        **{f"c{j}": [n[j] if j < len(n) else None for g in groups for n in g.numbers]
           for j in range(width)}})
    name = quote_identifier(table)
    ctes = ", ".join(
        f"__statrecon_p{i} AS MATERIALIZED (SELECT k"
        + "".join(f", CAST(c{j} AS {kind}) AS c{j}" for j, kind in enumerate(g.kinds))
        + f" FROM {_RAW} WHERE g = {i})" for i, g in enumerate(groups))
    joins = " UNION ALL ".join(
        f"SELECT {i} AS g, {_PARAM}.k AS k, {name}.__row AS r, "
        f"CAST(({g.template}) AS BOOLEAN) AS v FROM __statrecon_p{i} AS {_PARAM}, {name}"
        for i, g in enumerate(groups))
    con.register(_RAW, params)
    try:
        result = con.execute(f"WITH {ctes} SELECT g, k, r, v FROM ({joins}) "
                             "WHERE v IS NOT FALSE").fetchnumpy()
        alone = _select(con, table, [g.sqls[0] for g in groups])
    except duckdb.Error:
        return groups
    finally:
        con.unregister(_RAW)
    g_of = np.asarray(result["g"], dtype=np.int64)
    k = np.asarray(result["k"], dtype=np.int64)
    r = np.asarray(result["r"], dtype=np.int64)
    null = np.ma.getmaskarray(result["v"]) if np.ma.isMaskedArray(result["v"]) else None
    order = np.lexsort((r, k, g_of))
    g_of, k, r = g_of[order], k[order], r[order]
    null = null[order] if null is not None else None
    bounds = np.searchsorted(g_of, np.arange(len(groups) + 1))
    unsettled = []
    for i, group in enumerate(groups):
        lo, hi = bounds[i], bounds[i + 1]
        if (null is not None and null[lo:hi].any()) or not _store(
                group, k[lo:hi], r[lo:hi], alone[i], found):
            unsettled.append(group)
    return unsettled


def _store(group: _ShapeGroup, k: np.ndarray, r: np.ndarray, alone: np.ndarray | None,
           found: dict[str, np.ndarray]) -> bool:
    """Each predicate's rows from a group's (k, r) pairs (sorted by k, then r); False when
    the first predicate disagrees with ``alone``, itself evaluated on its own."""
    selected = np.split(r, np.searchsorted(k, np.arange(1, len(group.sqls))))
    if alone is None or not np.array_equal(selected[0], np.flatnonzero(alone)):
        return False
    for sql, chosen in zip(group.sqls, selected, strict=True):
        found[sql] = chosen
    return True


def _shape_groups(con: Any, sqls: list[str], fill_of: dict[str, Fill | None] | None = None
                  ) -> tuple[list[_ShapeGroup], list[str]]:
    """Predicates grouped by shape (strings kept, numbers cut out) and DuckDB's type of each
    number; predicates alone in their group, or with no shape, come back as the rest."""
    scanned: list[tuple[str, Any, list[str]]] = []
    rest: list[str] = []
    templates: dict[str, _FillTemplate] = {}
    fill_of = fill_of or {}
    for sql in sqls:
        if _PARAM in sql or _RAW in sql:
            rest.append(sql)
            continue
        fill = fill_of.get(sql)
        cut = _shape_of_fill(fill, templates) if fill is not None else _scan_shape(sql)
        if cut is None:
            rest.append(sql)
            continue
        scanned.append((sql, *cut))
    types = _literal_types(con, {t for _, _, numbers in scanned for t in numbers})
    by_key: dict[tuple[Any, tuple[str, ...]], _ShapeGroup] = {}
    for sql, key, numbers in scanned:
        kinds = tuple(map(types.__getitem__, numbers))
        group = by_key.get((key, kinds))
        if group is None:
            group = by_key[(key, kinds)] = _ShapeGroup(
                _template(_key_text(key, templates), kinds), kinds, [], [])
        group.sqls.append(sql)
        group.numbers.append(numbers)
    groups = []
    for (_, kinds), group in by_key.items():
        if len(group.sqls) < 2 or not all(_TYPE_NAME.fullmatch(k) for k in kinds):
            rest.extend(group.sqls)
        else:
            groups.append(group)
    return groups, rest


Fill = tuple[str, tuple[str, ...]]  # a predicate as a str.format template and its literals


@dataclass(frozen=True)
class _FillTemplate:
    """A template's text between its fields (``texts[j]`` precedes field ``j``; one more text
    at the end) and the literal each field takes."""

    texts: tuple[str, ...]
    fields: tuple[int, ...]


def _fill_template(template: str) -> _FillTemplate | None:
    """A ``str.format`` template of numbered fields read apart; None for anything else."""
    texts, fields = [], []
    for text, name, spec, conversion in string.Formatter().parse(template):
        texts.append(text)
        if name is None:
            break
        if not name.isdigit() or spec or conversion:
            return None
        fields.append(int(name))
    else:
        texts.append("")
    if len(texts) != len(fields) + 1:
        return None
    return _FillTemplate(tuple(texts), tuple(fields))


def _shape_of_fill(fill: Fill, templates: dict[str, _FillTemplate]
                   ) -> tuple[Any, list[str]] | None:
    """A predicate's shape key and numbers from its template and literals (as
    ``_scan_shape``, without reading the text again): quoted strings stay in the key, numbers
    are cut out. The key is ``(template, strings)`` (the template's hash is computed once, as
    it is one string object for every statement of a shape); ``_key_text`` writes it out."""
    template, literals = fill
    parsed = templates.get(template)
    if parsed is None:
        parsed = _fill_template(template)
        if parsed is None:
            return None
        templates[template] = parsed
    picked = [literals[i] for i in parsed.fields]
    classes = [_LITERAL_CLASS.get(t) or _literal_class(t) for t in picked]
    if "?" in classes:
        return None
    strings = tuple(t if c == "s" else None for t, c in zip(picked, classes, strict=True))
    numbers = [t for t, c in zip(picked, classes, strict=True) if c == "n"]
    return (template, strings), numbers


_LITERAL_CLASS: dict[str, str] = {}


def _literal_class(literal: str) -> str:
    """"s" for a quoted string, "n" for a plain number, "?" otherwise (remembered)."""
    found = "s" if literal[:1] == "'" else ("n" if _NUMBER.fullmatch(literal) else "?")
    if len(_LITERAL_CLASS) < 100_000:
        _LITERAL_CLASS[literal] = found
    return found


_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", re.ASCII)


def _key_text(key: Any, templates: dict[str, _FillTemplate]) -> str:
    """A shape key as text with ``\\x00n`` where each number stands."""
    if isinstance(key, str):
        return key
    template, strings = key
    parsed = templates[template]
    out = [parsed.texts[0]]
    for quoted, text in zip(strings, parsed.texts[1:], strict=True):
        out.append("\x00n" if quoted is None else quoted)
        out.append(text)
    return "".join(out)


def _scan_shape(sql: str) -> tuple[str, list[str]] | None:
    """A predicate's shape key (its text, strings kept, ``\\x00n`` for each number) and its
    numbers, read from its text."""
    # lazy: sqlglot loads only when a system is compiled, not when the engine is imported
    from statrecon.release.sql import literal_shape

    cut = literal_shape(sql)
    if cut is None:
        return None
    shape, literals = cut
    parts = shape.split("\x00")
    numbers = []
    for j, literal in enumerate(literals, start=1):
        if literal[0] == "'":
            parts[j] = literal + parts[j][1:]
        else:
            parts[j] = "\x00n" + parts[j][1:]
            numbers.append(literal)
    return "".join(parts), numbers


def _template(key: str, kinds: tuple[str, ...]) -> str:
    """The shape as SQL, slot ``j`` read from the parameter table (where ``_evaluate_group``
    has cast it, once per predicate, to DuckDB's type of the number as a literal)."""
    parts = key.split("\x00n")
    out = [parts[0]]
    for j, part in enumerate(parts[1:]):
        out.append(f"{_PARAM}.c{j}{part}")
    return "".join(out)


def _literal_types(con: Any, numbers: set[str]) -> dict[str, str]:
    """DuckDB's type of each number literal (``typeof``), the numbers being scanned literals:
    digits, a point and an exponent only."""
    texts = sorted(numbers)
    types: dict[str, str] = {}
    for start in range(0, len(texts), 512):
        batch = texts[start:start + 512]
        row = con.execute("SELECT " + ", ".join(f"typeof({t})" for t in batch)).fetchall()[0]
        types.update(zip(batch, row, strict=True))
    return types


def _evaluate_group(con: Any, table: str, group: _ShapeGroup, rows: int,
                    found: dict[str, np.ndarray]) -> bool:
    """One joined query for a group; False (nothing stored) when DuckDB refuses it, a value is
    NULL, or its first predicate disagrees with that predicate evaluated on its own."""
    import duckdb
    import pandas as pd

    slots = len(group.numbers[0])
    params = pd.DataFrame({"k": np.arange(len(group.sqls)),
                           **{f"c{j}": [n[j] for n in group.numbers] for j in range(slots)}})
    name = quote_identifier(table)
    casts = "".join(f", CAST(c{j} AS {kind}) AS c{j}" for j, kind in enumerate(group.kinds))
    width = max(rows, 1)
    con.register(_RAW, params)
    try:
        # each number cast once (not once per public row); only the rows a predicate holds
        # on (or is NULL on) come back, as one number per pair k * width + r (-1: NULL)
        result = con.execute(
            f"WITH {_PARAM} AS MATERIALIZED (SELECT k{casts} FROM {_RAW}) "
            f"SELECT CASE WHEN v THEN k * {width} + r ELSE -1 END AS x FROM ("
            f"SELECT {_PARAM}.k AS k, {name}.__row AS r, "
            f"CAST(({group.template}) AS BOOLEAN) AS v FROM {_PARAM}, {name}) "
            "WHERE v IS NOT FALSE").fetchnumpy()
        alone = _select(con, table, group.sqls[:1])[0]
    except duckdb.Error:
        return False
    finally:
        con.unregister(_RAW)
    pairs = np.asarray(result["x"], dtype=np.int64)
    if pairs.size and pairs.min() < 0:  # NULL on some row
        return False
    # DuckDB often returns the pairs sorted already, or in sorted runs
    if pairs.size and not (pairs[1:] >= pairs[:-1]).all():
        pairs.sort(kind="stable")  # timsort: fast on the sorted runs DuckDB gives
    return _store(group, pairs // width, pairs % width, alone, found)


def _select(con: Any, table: str, batch: list[str]) -> list[np.ndarray | None]:
    exprs = ", ".join(f"CAST(({sql}) AS BOOLEAN) AS c{i}" for i, sql in enumerate(batch))
    result = con.execute(f"SELECT {exprs} FROM {quote_identifier(table)} ORDER BY __row"
                         ).fetchnumpy()
    cols: list[np.ndarray | None] = []
    for i in range(len(batch)):
        col = result[f"c{i}"]
        if np.ma.isMaskedArray(col) and np.ma.getmaskarray(col).any():
            cols.append(None)
            continue
        cols.append(np.asarray(col, dtype=bool))
    return cols


def _parse_all(release: Release) -> tuple[SecretColumn, list[_Parsed], list[str]]:
    col = secret_column(release)
    parsed: list[_Parsed] = []
    ignored: list[str] = []
    target: frozenset[str] | None = None
    signs: dict[Any, tuple[int, frozenset[str]]] = {}
    for stat in release.statistics:
        if stat.answer is None:
            raise StatreconError(f"{stat.where_text} has no published value "
                                 "(fill it with statrecon tabulate)", statistic=stat.id)
        q = stat.query
        known, secret_parts = _split(q.where, col.name, stat)
        public_sql = " AND ".join(f"({s.sql})" for s in known) or "TRUE"
        fill = _public_fill(known)
        if q.aggregate in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT):
            if not secret_parts:
                ignored.append(stat.id)  # a count of public rows: no information on the secret
                continue
            key = (tuple(secret_parts), target)
            known_sign = signs.get(key)  # the same condition gives the same sign
            if known_sign is None:
                known_sign = signs[key] = _count_sign(stat, col, secret_parts, target)
            sign, target = known_sign
            parsed.append(_Parsed(stat, public_sql, fill, sign, q.aggregate))
        elif q.aggregate in (Aggregate.SUM, Aggregate.AVG):
            if q.column != col.name:
                raise NotLinear(f"{stat.where_text}: aggregates {q.column}, not the secret",
                                statistic=stat.id)
            if secret_parts:
                raise NotLinear(f"{stat.where_text}: a condition on the secret inside a SUM/AVG "
                                "is not linear", statistic=stat.id)
            parsed.append(_Parsed(stat, public_sql, fill, 1, q.aggregate))
        else:
            raise NotLinear(f"{stat.where_text}: {q.aggregate.value.upper()} is not linear "
                            "(use the exact engine)", statistic=stat.id)
    return _secret(release, col, target), parsed, ignored


def _count_sign(stat: Statistic, col: Column, secret_parts: list[tuple[frozenset[str], bool]],
                target: frozenset[str] | None) -> tuple[int, frozenset[str]]:
    """+1 when a COUNT counts the release's target categories, -1 when it counts their
    complement; the target is the first COUNT's set. Returns (sign, target)."""
    if not col.is_categorical:
        raise NotLinear(f"{stat.where_text}: a condition on the numeric secret "
                        f"{col.name} is not linear in it; use SUM/AVG", statistic=stat.id)
    values = frozenset(col.values)
    chosen = values
    for part, negated in secret_parts:
        chosen = chosen & (values - part if negated else part)
    if target is None:
        target = chosen
    if chosen == target:
        sign = 1
    elif chosen == values - target:
        sign = -1
    else:
        raise NotLinear(
            f"{stat.where_text}: counts {col.name} in {sorted(chosen)}, another "
            f"statistic in {sorted(target)}; one indicator per release", statistic=stat.id)
    return sign, target


def _secret(release: Release, col: Column, target: frozenset[str] | None) -> SecretColumn:
    """The unknown the system solves for: the target's indicator, or the numeric column."""
    if col.is_categorical:
        if target is None:
            raise NotLinear(f"{release.source or 'release'}: no statistic counts a value of "
                            f"{col.name}")
        chosen_values = tuple(v for v in col.values if v in target)
        rest = [v for v in col.values if v not in target]
        other = rest[0] if len(rest) == 1 else "other"
        return SecretColumn(col.name, "indicator", 0.0, 1.0, chosen_values, other, col.values)
    # a COUNT with a condition on a numeric secret was refused above, by statistic
    lo = -np.inf if col.min is None else float(col.min)
    hi = np.inf if col.max is None else float(col.max)
    return SecretColumn(col.name, "integer" if col.is_integer else "real", lo, hi)


def _public_fill(known: list[KnownBool]) -> tuple[str, tuple[str, ...]] | None:
    """The public part as one template and its literals, when the statement-shape cache wrote
    every snippet of it from the same literals (see ``KnownBool.filled``); else None."""
    fills = [k.filled for k in known]
    if not fills or any(f is None for f in fills):
        return None
    if len(fills) == 1:  # the template object itself: its hash is computed once
        return fills[0]
    literals = fills[0][1]  # type: ignore[index]
    if any(f[1] is not literals for f in fills):  # type: ignore[index]
        return None
    return " AND ".join(f"({f[0]})" for f in fills), literals  # type: ignore[index]


def _split(pred: Predicate, secret: str, stat: Statistic
           ) -> tuple[list[KnownBool], list[tuple[frozenset[str], bool]]]:
    """A WHERE as AND-ed public SQL snippets and conditions on the secret."""
    known: list[KnownBool] = []
    secret_parts: list[tuple[frozenset[str], bool]] = []

    def walk(p: Predicate) -> None:
        if isinstance(p, And):
            for a in p.args:
                walk(a)
        elif isinstance(p, KnownBool):
            known.append(p)
        elif isinstance(p, Const):
            known.append(KnownBool("TRUE" if p.value else "FALSE"))
        elif isinstance(p, InSet) and p.column == secret:
            secret_parts.append((p.values, False))
        elif isinstance(p, Not) and isinstance(p.arg, InSet) and p.arg.column == secret:
            secret_parts.append((p.arg.values, True))
        elif isinstance(p, Compare):
            raise NotLinear(
                f"{stat.where_text}: a comparison on the secret {secret} is not linear in it "
                "(the linear engine takes public predicates AND secret = value, or SUM/AVG)",
                statistic=stat.id)
        else:
            raise NotLinear(
                f"{stat.where_text}: its WHERE is not linear in the secret {secret}: it must be "
                "a public predicate AND-ed with a secret condition, not inside OR/NOT",
                statistic=stat.id)

    walk(pred)
    return known, secret_parts
