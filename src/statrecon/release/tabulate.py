"""Microdata + statistic definitions -> the true published answers (DuckDB does the SQL).

This is how a publisher produces the release it wants to audit. Means and medians that are not
short decimals are published rounded, with the rounding stated as an error bound, exactly as
a statistical agency would print them.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

from statrecon.db import hardened, quote_identifier
from statrecon.errors import StatreconError
from statrecon.release.known import check_table, read_table
from statrecon.release.model import Release
from statrecon.release.sql import with_select
from statrecon.release.statistic import (
    Aggregate,
    Answer,
    Bounded,
    Empty,
    Exact,
    Statistic,
    Suppressed,
    fraction_of,
)


def load_microdata(path: Path, release: Release) -> Any:
    """Read microdata and check every value against the release's schema (file:line errors)."""
    schema = release.schema
    frame = read_table(path, tuple(c.name for c in schema.columns if c.is_categorical))
    check_table(frame, schema, path, schema.names)
    return frame


def published(value: Fraction, decimals: int) -> Exact | Bounded:
    """A value as a publisher prints it: exact if it has at most ``decimals`` decimals,
    otherwise rounded with the rounding stated as an error bound."""
    scale = 10**decimals
    if (value * scale).denominator == 1:
        return Exact(value)
    rounded = Fraction(round(value * scale), scale)
    return Bounded(rounded, Fraction(1, 2 * scale))


def tabulate(
    release: Release,
    microdata: Any,
    *,
    decimals: int = 1,
    suppress_below: int | None = None,
) -> dict[str, Answer]:
    """True answers for every statistic of ``release`` on ``microdata`` (a DataFrame)."""
    import duckdb

    if decimals < 0:
        raise StatreconError("--decimals must be >= 0")
    if suppress_below is not None and suppress_below < 1:
        raise StatreconError("--suppress-below must be >= 1")
    # The microdata is registered under the release's (checked) table name on a connection that
    # cannot reach files, the network or extensions; only re-generated statistic SQL runs on it.
    con = hardened({release.schema.table: microdata})
    try:
        answers: dict[str, Answer] = {}
        for s in release.statistics:
            try:
                answers[s.id] = _answer(con, s, release, decimals, suppress_below)
            except duckdb.Error as e:
                raise StatreconError(
                    f"{s.where_text}: DuckDB cannot evaluate it: {str(e).splitlines()[0]}"
                ) from None
        return answers
    finally:
        con.close()


def _answer(con: Any, s: Statistic, release: Release, decimals: int,
            suppress_below: int | None) -> Answer:
    agg, col = s.query.aggregate, s.query.column
    if not s.query.sql:
        raise StatreconError(f"{s.where_text}: no checked SQL to tabulate")
    count = con.execute(with_select(s.query, "COUNT(*)")).fetchone()[0]
    if suppress_below is not None and count < suppress_below:
        return Suppressed(0, suppress_below - 1)
    if agg is Aggregate.COUNT:
        return Exact(Fraction(count))
    if agg in (Aggregate.SUM, Aggregate.AVG):
        assert col is not None
        total = con.execute(with_select(s.query, f"SUM({quote_identifier(col)})")
                            ).fetchone()[0]
        if agg is Aggregate.SUM:
            return Exact(fraction_of(total if total is not None else 0))
        if count == 0:
            return Empty()
        return published(fraction_of(total) / count, decimals)
    value = con.execute(s.query.sql).fetchone()[0]
    if value is None:
        return Empty()
    return published(fraction_of(value), decimals)
