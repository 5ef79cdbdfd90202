"""Query generators: the statistics a reconstruction attacker asks for, written as SQL.

Each generator returns a :class:`QuerySet` holding both the SQL statements (what a query
interface or a release file sees) and the 0/1 matrix of which records each statement covers
(what the linear attacks solve against). Columns of the matrix follow the order of the public
table's ids. Tests evaluate the SQL with DuckDB and check it against the matrix, so the two never
disagree.

The secret part of every statistic is either a condition (``secret_condition="dx = 'yes'"``,
giving ``SELECT COUNT(*) FROM t WHERE <public predicate> AND dx = 'yes'``) or a column to sum
(``sum_column="x"``, giving ``SELECT SUM(x) FROM t WHERE <public predicate>``); exactly one.

>>> import numpy as np
>>> q = chosen_subsets(np.array([1, 2, 3]), [[1, 3]], secret_condition="dx = 'yes'")
>>> q.sql[0]
"SELECT COUNT(*) FROM t WHERE id IN (1, 3) AND dx = 'yes'"
>>> q.matrix.toarray().tolist()
[[1.0, 0.0, 1.0]]
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from statrecon.errors import StatreconError

__all__ = [
    "DEFAULT_EXPONENTS",
    "DEFAULT_OFFSETS",
    "DEFAULT_PRIMES",
    "QueryGenError",
    "QuerySet",
    "chosen_subsets",
    "cohen_nissim",
    "cohen_nissim_row",
    "conjunctions",
    "difference_attack_subsets",
    "quote_identifier",
    "random_subsets",
    "sql_literal",
]

# Defaults for Cohen–Nissim queries. Checked empirically over ids 1..200 and 1..2000: every one
# of the 5 × 10 × 5 = 250 queries covers between 39% and 61% of the ids (mean 50.0%), which is
# what the LP attack wants from "random-looking" subsets.
DEFAULT_PRIMES: tuple[int, ...] = (2, 3, 5, 7, 11)
DEFAULT_OFFSETS: tuple[int, ...] = tuple(range(1, 11))
DEFAULT_EXPONENTS: tuple[float, ...] = (0.5, 0.55, 0.6, 0.65, 0.7)

_PLAIN = re.compile(r"[a-z_][a-z0-9_]*\Z")


class QueryGenError(StatreconError, ValueError):
    """A bad generator argument: a ``ValueError`` for callers, a one-line user error for the CLI."""


@dataclass(frozen=True)
class QuerySet:
    """SQL statements and the 0/1 matrix (queries × records, public-table order) they define."""

    sql: list[str]
    matrix: sp.csr_matrix
    ids: np.ndarray

    def __len__(self) -> int:
        return len(self.sql)


# --- SQL text -------------------------------------------------------------------------------


def _reserved() -> frozenset[str]:
    from sqlglot.dialects.duckdb import DuckDB

    return frozenset(w.lower() for w in DuckDB.Generator.RESERVED_KEYWORDS)


_RESERVED: frozenset[str] | None = None


def quote_identifier(name: str) -> str:
    """``name`` as a DuckDB identifier: bare if plain lowercase and not reserved, else quoted."""
    global _RESERVED
    if _RESERVED is None:
        _RESERVED = _reserved()
    if _PLAIN.match(name) and name not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """A Python/numpy scalar as a SQL literal DuckDB reads back as the same value.

    Strings are single-quoted with embedded quotes doubled; floats are written in exponent form
    (``0.55e0``), which DuckDB reads as DOUBLE through correctly rounded parsing of ``repr``.
    """
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        x = float(value)
        if not math.isfinite(x):
            raise QueryGenError(f"cannot write the non-finite number {x!r} as a SQL literal")
        text = repr(x)
        return text if "e" in text else text + "e0"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise QueryGenError(f"cannot write {value!r} ({type(value).__name__}) as a SQL literal")


def _validate_condition(condition: str) -> str:
    """The secret condition, parenthesized when it would not bind as one AND operand."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(condition, read="duckdb")
    except SqlglotError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise QueryGenError(
            f"secret_condition {condition!r} is not a SQL condition: {first}"
        ) from None
    if tree is None or isinstance(tree, exp.Query):
        raise QueryGenError(f"secret_condition {condition!r} is not a SQL condition")
    return f"({condition})" if isinstance(tree, exp.Or) else condition


def _statement_writer(
    table: str, secret_condition: str | None, sum_column: str | None
) -> tuple[str, str]:
    """(prefix, suffix) that wrap a public predicate into a full statement."""
    if (secret_condition is None) == (sum_column is None):
        raise QueryGenError("give exactly one of secret_condition= and sum_column=")
    source = quote_identifier(table)
    if sum_column is not None:
        return f"SELECT SUM({quote_identifier(sum_column)}) FROM {source} WHERE ", ""
    assert secret_condition is not None
    return f"SELECT COUNT(*) FROM {source} WHERE ", f" AND {_validate_condition(secret_condition)}"


def _ids(ids: Any) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise QueryGenError(f"ids must be a non-empty 1-D sequence, got shape {arr.shape}")
    if np.unique(arr).shape[0] != arr.shape[0]:
        raise QueryGenError("ids must be unique: each identifies one record of the public table")
    return arr


def _in_predicate(column: str, values: Iterable[Any]) -> str:
    return f"{column} IN ({', '.join(sql_literal(v) for v in values)})"


def _matrix(rows: Sequence[np.ndarray], n: int) -> sp.csr_matrix:
    """Boolean rows -> float64 CSR (float so that ``F @ s`` never overflows a small int type)."""
    if len(rows) == 0:
        return sp.csr_matrix((0, n), dtype=np.float64)
    return sp.csr_matrix(np.vstack(rows)).astype(np.float64)


# --- subsets --------------------------------------------------------------------------------


def random_subsets(
    ids: Any,
    k: int,
    rng: np.random.Generator,
    p: float = 0.5,
    *,
    table: str = "t",
    id_column: str = "id",
    secret_condition: str | None = None,
    sum_column: str | None = None,
) -> QuerySet:
    """k uniformly random subsets (each id in with probability p), as ``id IN (...)`` queries.

    The Dinur–Nissim setting. An empty draw is redrawn, so every query is valid SQL and covers
    at least one record.
    """
    arr = _ids(ids)
    if k < 0:
        raise QueryGenError(f"k must be >= 0, got {k}")
    if not 0 < p <= 1:
        raise QueryGenError(f"p must be in (0, 1], got {p!r}")
    prefix, suffix = _statement_writer(table, secret_condition, sum_column)
    column = quote_identifier(id_column)
    n = arr.shape[0]
    rows: list[np.ndarray] = []
    for _ in range(k):
        row = np.asarray(rng.random(n) < p)
        while not row.any():
            row = np.asarray(rng.random(n) < p)
        rows.append(row)
    sql = [prefix + _in_predicate(column, arr[row]) + suffix for row in rows]
    return QuerySet(sql, _matrix(rows, n), arr)


def _min_size(min_size: int | Literal["n/10"] | None, n: int) -> int | None:
    if min_size is None:
        return None
    if min_size == "n/10":
        return math.ceil(n / 10)
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer):
        raise QueryGenError(f"min_size must be an integer, 'n/10' or None, got {min_size!r}")
    return int(min_size)


def chosen_subsets(
    ids: Any,
    subsets: Iterable[Iterable[Any]],
    min_size: int | Literal["n/10"] | None = None,
    *,
    table: str = "t",
    id_column: str = "id",
    secret_condition: str | None = None,
    sum_column: str | None = None,
) -> QuerySet:
    """Queries over subsets the attacker chose, given as collections of public ids.

    ``min_size`` models a query interface that refuses small subsets (``"n/10"`` means
    ⌈n/10⌉): a smaller subset raises ``ValueError``. The refusal does not help, see
    :func:`difference_attack_subsets`.
    """
    arr = _ids(ids)
    n = arr.shape[0]
    floor = _min_size(min_size, n)
    prefix, suffix = _statement_writer(table, secret_condition, sum_column)
    column = quote_identifier(id_column)
    rows: list[np.ndarray] = []
    sql: list[str] = []
    for i, subset in enumerate(subsets):
        chosen = np.asarray(list(subset))
        row = np.isin(arr, chosen)
        missing = np.setdiff1d(chosen, arr[row]) if chosen.size else chosen
        if missing.size:
            raise QueryGenError(f"subset {i} names ids not in the table: {missing[:5].tolist()}")
        size = int(row.sum())
        if size == 0:
            raise QueryGenError(f"subset {i} is empty")
        if floor is not None and size < floor:
            raise QueryGenError(f"subset {i} has {size} records, fewer than min_size {floor}")
        rows.append(row)
        sql.append(prefix + _in_predicate(column, arr[row]) + suffix)
    return QuerySet(sql, _matrix(rows, n), arr)


def difference_attack_subsets(
    ids: Any,
    target_index: int,
    min_size: int | Literal["n/10"] = "n/10",
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Two id subsets, both of size >= min_size, that differ exactly in the target record.

    q(with) - q(without) is the target's secret: a size floor on subsets stops nothing (CS208
    slides, "what if we restrict to sets of size at least n/10?"). The other members are the
    first ``min_size`` non-target records, or a random choice when ``rng`` is given.
    """
    arr = _ids(ids)
    n = arr.shape[0]
    floor = _min_size(min_size, n)
    assert floor is not None
    if not -n <= target_index < n:
        raise QueryGenError(f"target_index {target_index} is out of range for {n} records")
    target = target_index % n
    size = max(floor, 1)
    if size > n - 1:
        raise QueryGenError(
            f"need {size} records besides the target for min_size {floor}, table has {n - 1}"
        )
    others = np.delete(np.arange(n), target)
    if rng is not None:
        others = rng.permutation(others)
    base = np.sort(others[:size])
    with_target = np.sort(np.append(base, target))
    return arr[with_target], arr[base]


# --- Cohen–Nissim ---------------------------------------------------------------------------


def _cn_predicate(column: str, m: int, o: float, e: float) -> str:
    term = f"{sql_literal(o)} * pow({column} * {sql_literal(m)}, {sql_literal(e)})"
    return f"floor({term} + 0.5) = floor({term})"


def cohen_nissim_row(ids: np.ndarray, m: int, o: float, e: float) -> np.ndarray:
    """Which ids satisfy ``floor(o·(id·m)^e + 0.5) = floor(o·(id·m)^e)``, bit-for-bit as DuckDB.

    DuckDB computes pow with the C library; numpy's vectorized pow may differ by an ulp, which
    only matters when o·(id·m)^e is within a few ulps of a multiple of 1/2. Those few values are
    recomputed with ``math.pow`` (the C library's pow), the rest keep numpy's result.
    """
    base = np.asarray(ids, dtype=np.int64) * int(m)
    if np.any(np.abs(base) > 2**53):
        raise QueryGenError("ids × prime exceed 2^53 and are not exact as doubles")
    p = np.power(base.astype(np.float64), float(e))
    x = float(o) * p
    twice = 2.0 * x
    near = np.abs(twice - np.round(twice)) <= np.abs(twice) * 1e-12 + 1e-300
    near |= ~np.isfinite(x)
    for j in np.flatnonzero(near):
        p[j] = math.pow(float(base[j]), float(e))
    x = float(o) * p
    return np.asarray(np.floor(x + 0.5) == np.floor(x))


def cohen_nissim(
    ids: Any,
    primes: Sequence[int] = DEFAULT_PRIMES,
    offsets: Sequence[float] = DEFAULT_OFFSETS,
    exponents: Sequence[float] = DEFAULT_EXPONENTS,
    id_range: tuple[int, int] | None = None,
    *,
    table: str = "t",
    id_column: str = "id",
    secret_condition: str | None = None,
    sum_column: str | None = None,
) -> QuerySet:
    """Cohen–Nissim queries: one per (prime m, offset o, exponent e), in that nesting order.

    ``floor(o * pow(id * m, e) + 0.5) = floor(o * pow(id * m, e))`` holds for roughly half the
    ids in a pseudo-random pattern, yet the SQL has two conditions, so Diffix-style noise that
    grows with the number of conditions stays O(1) and the LP attack succeeds (CS208 notes §3).
    ``id_range=(lo, hi)`` adds ``AND id BETWEEN lo AND hi`` and restricts the rows to it.
    Needs integer ids.
    """
    arr = _ids(ids)
    if not np.issubdtype(arr.dtype, np.integer):
        raise QueryGenError(f"Cohen–Nissim queries need integer ids, got dtype {arr.dtype}")
    for m in primes:
        if isinstance(m, bool) or not isinstance(m, int | np.integer):
            raise QueryGenError(f"primes must be integers, got {m!r}")
    prefix, suffix = _statement_writer(table, secret_condition, sum_column)
    column = quote_identifier(id_column)
    in_range = np.ones(arr.shape[0], dtype=bool)
    between = ""
    if id_range is not None:
        lo, hi = int(id_range[0]), int(id_range[1])
        if lo > hi:
            raise QueryGenError(f"id_range ({lo}, {hi}) is empty")
        in_range = (arr >= lo) & (arr <= hi)
        between = f" AND {column} BETWEEN {lo} AND {hi}"
    rows: list[np.ndarray] = []
    sql: list[str] = []
    for m in primes:
        for o in offsets:
            for e in exponents:
                rows.append(cohen_nissim_row(arr, int(m), o, e) & in_range)
                sql.append(prefix + _cn_predicate(column, int(m), o, e) + between + suffix)
    return QuerySet(sql, _matrix(rows, arr.shape[0]), arr)


# --- conjunctions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _ConjunctionSpace:
    """What a random conjunction is drawn from: the public columns and the condition count."""

    cols: list[str]
    kinds: dict[str, str]  # column -> "eq" (equality only) or "num" (also <= and >=)
    values: dict[str, np.ndarray]  # column -> its values, in the frame's row order
    n: int  # rows
    lo: int  # fewest conditions per query
    hi: int  # most conditions per query
    range_probability: float


def conjunctions(
    frame: Any,
    columns: Sequence[str],
    k: int,
    rng: np.random.Generator,
    *,
    conditions: int | tuple[int, int] | None = None,
    range_probability: float = 0.5,
    table: str = "t",
    id_column: str = "id",
    secret_condition: str | None = None,
    sum_column: str | None = None,
) -> QuerySet:
    """Random conjunctions of conditions on public attributes, e.g. ``sex = 'F' AND age <= 50``.

    The attack that beat Diffix once math on unique ids was banned: conjunctions of individually
    common attributes single out small groups. Each query anchors on a random record and takes
    that record's value for each of its chosen columns, so it covers at least the anchor.
    Text and boolean columns get equality; numeric columns get ``<=`` or ``>=`` with probability
    ``range_probability``, else equality. ``conditions`` is the number of conditions per query,
    a fixed int or an inclusive (lo, hi) range; default 1..len(columns). ``frame`` is a pandas
    DataFrame with ``id_column`` and ``columns``, no missing values in them; the matrix follows
    the frame's row order.
    """
    cols = _check_frame(frame, columns, id_column)
    arr = _ids(frame[id_column].to_numpy())
    n = arr.shape[0]
    if k < 0:
        raise QueryGenError(f"k must be >= 0, got {k}")
    lo, hi = _condition_range(conditions, len(cols))
    kinds, values = _column_kinds(frame, cols)
    space = _ConjunctionSpace(cols, kinds, values, n, lo, hi, range_probability)
    prefix, suffix = _statement_writer(table, secret_condition, sum_column)
    rows: list[np.ndarray] = []
    sql: list[str] = []
    for _ in range(k):
        row, parts = _random_conjunction(rng, space)
        rows.append(row)
        sql.append(prefix + " AND ".join(parts) + suffix)
    return QuerySet(sql, _matrix(rows, n), arr)


def _check_frame(frame: Any, columns: Sequence[str], id_column: str) -> list[str]:
    """The public columns, checked: a pandas DataFrame holding them and the id column."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise QueryGenError("frame must be a pandas DataFrame")
    cols = list(columns)
    if not cols:
        raise QueryGenError("conjunctions need at least one public column")
    for name in [id_column, *cols]:
        if name not in frame.columns:
            raise QueryGenError(f"column {name!r} is not in the frame")
    return cols


def _condition_range(conditions: int | tuple[int, int] | None, n_cols: int) -> tuple[int, int]:
    """(fewest, most) conditions per query, each within 1..the number of columns."""
    if conditions is None:
        lo, hi = 1, n_cols
    elif isinstance(conditions, int):
        lo, hi = conditions, conditions
    else:
        lo, hi = conditions
    if not 1 <= lo <= hi <= n_cols:
        raise QueryGenError(
            f"conditions must lie in 1..{n_cols} (the number of columns), got {conditions!r}"
        )
    return lo, hi


def _column_kinds(frame: Any, cols: list[str]
                  ) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """Each column's kind ("eq" or "num") and values; missing or mixed values are errors."""
    import pandas as pd

    kinds: dict[str, str] = {}
    values: dict[str, np.ndarray] = {}
    for name in cols:
        series = frame[name]
        if series.isna().any():
            raise QueryGenError(f"column {name!r} has missing values")
        if pd.api.types.is_bool_dtype(series):
            kinds[name] = "eq"
        elif pd.api.types.is_numeric_dtype(series):
            kinds[name] = "num"
        elif (
            pd.api.types.is_string_dtype(series)
            or isinstance(series.dtype, pd.CategoricalDtype)
            or series.dtype == object
        ):
            if not all(isinstance(v, str) for v in series):
                raise QueryGenError(f"column {name!r} mixes strings with other values")
            kinds[name] = "eq"
        else:
            raise QueryGenError(f"column {name!r} has unsupported type {series.dtype}")
        values[name] = series.to_numpy(dtype=object if kinds[name] == "eq" else None)
    return kinds, values


def _random_conjunction(rng: np.random.Generator, space: _ConjunctionSpace
                        ) -> tuple[np.ndarray, list[str]]:
    """One query anchored on a random record: its matrix row and its SQL conditions."""
    cols, kinds, values, n = space.cols, space.kinds, space.values, space.n
    anchor = int(rng.integers(n))
    count = int(rng.integers(space.lo, space.hi + 1))
    chosen = [cols[i] for i in sorted(rng.choice(len(cols), size=count, replace=False))]
    row = np.ones(n, dtype=bool)
    parts: list[str] = []
    for name in chosen:
        v = values[name][anchor]
        col = values[name]
        op = "="
        if kinds[name] == "num" and rng.random() < space.range_probability:
            op = "<=" if rng.random() < 0.5 else ">="
        if op == "=":
            row &= np.asarray(col == v, dtype=bool)
        elif op == "<=":
            row &= np.asarray(col <= v, dtype=bool)
        else:
            row &= np.asarray(col >= v, dtype=bool)
        parts.append(f"{quote_identifier(name)} {op} {sql_literal(v)}")
    return row, parts
