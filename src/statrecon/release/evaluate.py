"""The one evaluator of public predicates: which rows of the public table each known-only
predicate holds on, and the value of each known-only expression on every row. DuckDB does the
evaluation on a hardened connection (no files, no network, no extensions; the snippets are
sqlglot re-generated), in batches: predicates that differ only in their numbers (one *shape*)
are evaluated together by one query that joins a table of their numbers.

The exact engine's known data (``known.compile_known``) and the linear engine's query matrix
(``engines.linear.model``) both come from here, so no engine opens DuckDB.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from statrecon.db import hardened, quote_identifier
from statrecon.errors import ReleaseError, StatreconError
from statrecon.release.model import Release
from statrecon.release.statistic import Statistic, fraction_of
from statrecon.result import plain

if TYPE_CHECKING:
    import duckdb

    from statrecon.release.known import PublicTable

_BATCH = 128  # public predicates evaluated per DuckDB query
Fill = tuple[str, tuple[str, ...]]  # a predicate as a str.format template and its literals


def _connection(release: Release, public: PublicTable | None, *, empty: bool = True
                ) -> duckdb.DuckDBPyConnection:
    """The hardened connection with the public table (and its row numbers) registered under
    the release's table name (``empty``: even when it has no row)."""
    # lazy: pandas loads only when predicates are evaluated
    import pandas as pd

    frames: dict[str, Any] = {}
    if public is not None and (public.rows > 0 or empty):
        frames[release.schema.table] = pd.DataFrame({**public.columns,
                                                     "__row": range(public.rows)})
    # Snippets are sqlglot re-generated; the connection cannot reach files, network, extensions.
    return hardened(frames)


def expression_values(release: Release, public: PublicTable | None, owners: dict[str, str]
                      ) -> dict[str, tuple[Fraction | bool, ...]]:
    """Each known-only snippet's value on every public row (one False when there is no row
    to read); ``owners[sql]`` names the statistic or constraint of any error."""
    tail = ""
    if public is not None and public.rows > 0:
        tail = f" FROM {quote_identifier(release.schema.table)} ORDER BY __row"
    con = _connection(release, public, empty=False)
    try:
        return {sql: _values(con, sql, owner, tail) for sql, owner in owners.items()}
    finally:
        con.close()


def _values(con: duckdb.DuckDBPyConnection, sql: str, owner: str,
            tail: str) -> tuple[Fraction | bool, ...]:
    """One snippet's value per public row (one False when there is no row to read)."""
    # lazy: DuckDB's error type, once a snippet is evaluated
    import duckdb

    try:
        raw = con.execute(f"SELECT ({sql}){tail}").fetchall()
    except duckdb.Error as e:
        raise ReleaseError(
            f"{owner}: DuckDB cannot evaluate {sql!r}: {str(e).splitlines()[0]}"
        ) from None
    values: list[Fraction | bool] = []
    for (v,) in raw:
        if v is None:
            raise ReleaseError(f"{owner}: {sql!r} evaluates to NULL on a public row")
        values.append(v if isinstance(v, bool) else fraction_of(plain(v)))
    return tuple(values) if values else (False,)


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
    con = _connection(release, public)
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
