"""The public table and every known-only SQL snippet evaluated on it by DuckDB.

This is the compile step between a release and an engine: engines get plain per-row constants
and never see SQL or files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statrecon import inputs
from statrecon.errors import StatreconError
from statrecon.release.evaluate import expression_values
from statrecon.release.model import Release
from statrecon.release.predicate import known_sql
from statrecon.release.schema import Schema
from statrecon.result import plain

if TYPE_CHECKING:
    pass

MAX_VALUE = 10**15  # as for column bounds in release files: the solvers' 64-bit range


@dataclass(frozen=True)
class PublicTable:
    """Known columns, one entry per row of the hidden table, in file order; ``others``: the
    file's other columns a caller asked to keep (``load_public(keep=...)``, e.g. per-record
    bounds), as read, so the file is read once."""

    source: str
    rows: int
    columns: dict[str, tuple[Any, ...]]
    others: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class KnownData:
    """What the engines need from known data: row count (if fixed) and per-row constants."""

    public: PublicTable | None
    snippets: dict[str, tuple[Fraction | bool, ...]]  # SQL snippet -> value per row (or 1 value)

    def value(self, sql: str, row: int) -> Fraction | bool:
        values = self.snippets[sql]
        return values[row] if len(values) > 1 else values[0]


def read_table(path: Path, text_columns: tuple[str, ...] = ()) -> Any:
    """CSV or Parquet -> pandas DataFrame; a clear error for anything else.

    ``text_columns`` (categoricals) are read as text, so a code like 02445 keeps its zero.
    """
    import pandas as pd

    inputs.admit(path, "table")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".txt", ".tsv"):
        inputs.check_csv_header(path, "table", "\t" if suffix == ".tsv" else ",")
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".csv", ".txt", ".tsv"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", keep_default_na=False,
                               na_values=[""], dtype={c: str for c in text_columns})
    except Exception as e:  # pandas raises many types for a broken file
        raise StatreconError(f"{path}: cannot read table: {str(e).splitlines()[0]}") from None
    raise StatreconError(f"{path}: unsupported table format '{suffix}' (use .csv or .parquet)")


def check_table(frame: Any, schema: Schema, path: Path, names: tuple[str, ...]) -> None:
    """Every named column present, no missing values, every value inside its domain."""
    for name in names:
        if name not in frame.columns:
            raise StatreconError(f"{path}: column '{name}' is missing (has: "
                                 f"{', '.join(map(str, frame.columns))})")
        col = schema.column(name)
        series = frame[name]
        csv = path.suffix.lower() in (".csv", ".txt", ".tsv")
        line_offset = 2 if csv else 1
        where = "" if csv else "row "
        for i, value in enumerate(series.tolist()):
            decoded = plain(value)
            if decoded is None:
                raise StatreconError(f"{path}:{where}{i + line_offset}: column '{name}' is empty")
            if col.is_categorical:
                decoded = str(decoded)
            elif isinstance(decoded, str):
                decoded = _number_text(decoded)
                if isinstance(decoded, str):
                    raise StatreconError(f"{path}:{where}{i + line_offset}: column '{name}' "
                                         f"value {_shown(value)} is not a number")
            if isinstance(decoded, float) and not math.isfinite(decoded):
                raise StatreconError(f"{path}:{where}{i + line_offset}: column '{name}' value "
                                     f"{_shown(value)} is not a finite number")
            if not col.contains(decoded) and not (col.known and col.min is None and col.max is None
                                                  and not col.is_categorical
                                                  and _is_number(decoded, col.is_integer)):
                raise StatreconError(
                    f"{path}:{where}{i + line_offset}: column '{name}' value {_shown(value)} is "
                    f"outside its domain {col.domain_text()}"
                )
            if isinstance(decoded, int) and not isinstance(decoded, bool) and (
                    abs(decoded) > MAX_VALUE):
                raise StatreconError(f"{path}:{where}{i + line_offset}: column '{name}' value "
                                     f"{_shown(value)} is beyond the supported range "
                                     f"-10**15..10**15")


def _number_text(text: str) -> Any:
    """A cell pandas left as text (its column holds a non-number somewhere) read as a number,
    so the message names the cell that is wrong, not the first one of the column."""
    stripped = text.strip()
    for kind in (int, float):
        try:
            return kind(stripped)
        except ValueError:
            continue
    return text


def _shown(value: Any) -> str:
    """A cell value for a message: quoted, cut short, control characters escaped."""
    text = repr(plain(value))
    return text if len(text) <= 40 else text[:40] + "..."


def _is_number(value: Any, integer: bool) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not integer or float(value).is_integer()


def load_public(path: Path, schema: Schema, keep: tuple[str, ...] = ()) -> PublicTable:
    """The public table: its known columns checked against the schema; ``keep``: other
    columns to keep as read (those the file has; a caller names the missing ones)."""
    frame = read_table(path, tuple(c.name for c in schema.columns if c.is_categorical))
    for name in frame.columns:
        if schema.has(str(name)) and not schema.column(str(name)).known:
            raise StatreconError(
                f"{path}: column '{name}' is declared unknown in the release; a public table "
                "holds known columns only"
            )
    names = tuple(c.name for c in schema.known)
    check_table(frame, schema, path, names)
    columns: dict[str, tuple[Any, ...]] = {}
    for name in names:
        col = schema.column(name)
        values = [plain(v) for v in frame[name].tolist()]
        if col.is_categorical:
            values = [str(v) for v in values]
        elif col.is_integer:
            values = [int(v) for v in values]
        columns[name] = tuple(values)
    others = {name: tuple(frame[name].tolist()) for name in keep if name in frame.columns}
    return PublicTable(source=str(path), rows=len(frame), columns=columns, others=others)


def compile_known(release: Release, public: PublicTable | None) -> KnownData:
    """Evaluate every known-only snippet of the release with DuckDB (per public row)."""
    _check_public_fits(release, public)
    owners = _snippet_owners(release)
    if not owners:
        return KnownData(public=public, snippets={})
    return KnownData(public=public, snippets=expression_values(release, public, owners))


def _check_public_fits(release: Release, public: PublicTable | None) -> None:
    """A release with known columns has a public table, with as many rows as it says."""
    if release.schema.known and public is None:
        names = ", ".join(c.name for c in release.schema.known)
        raise StatreconError(
            f"{release.source or 'release'}: known column(s) {names} need a public table "
            "(--public FILE, or 'public:' in the release)"
        )
    if public is not None and release.records is not None and not (
        release.records.min <= public.rows <= release.records.max
    ):
        raise StatreconError(
            f"{public.source}: {public.rows} rows, but the release says records "
            f"{release.records.min}..{release.records.max}"
        )


def _snippet_owners(release: Release) -> dict[str, str]:
    """Each known-only snippet and the first statistic or constraint that uses it."""
    owners: dict[str, str] = {}
    for s in release.statistics:
        for sql in known_sql(s.query.where):
            owners.setdefault(sql, s.where_text)
    for i, c in enumerate(release.constraints):
        for sql in known_sql(c.predicate):
            owners.setdefault(sql, c.label(i))
    return owners
