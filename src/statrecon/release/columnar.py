"""Statistics as a columnar file (CSV or Parquet) next to a release's YAML.

A release of 10^5 statistics is a table, not a YAML list: the release file names it with
``statistics_file: stats.parquet`` and this module reads its rows. Each row becomes the same
fields a YAML statistic has (``id, sql, value, error | decimals | suppressed | noise``); the
caller validates them with the very checks of the YAML path (``files.StatisticSpec``), so the
two ways of writing a statistic cannot drift apart. Empty cells are absent fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statrecon import inputs
from statrecon.errors import ReleaseError, StatreconError

COLUMNS = ("id", "sql", "value", "error", "decimals", "suppressed", "noise")
REQUIRED = ("id", "sql")
# A statistics file from a stranger is sized as it is read (statrecon.inputs): Parquet
# compresses a few megabytes into billions of repeated cells, so what decoding produces is
# counted, dictionary pages expanded.
MAX_STATISTICS = 2_000_000
MAX_BYTES = 2**30
_WHOLE = re.compile(r"\s*[+-]?\d+\s*")
_NOISE = re.compile(r"\s*([a-z]+)\s*:\s*(\S+)\s*")
_TRUE = frozenset({"true", "yes", "1"})
_FALSE = frozenset({"false", "no", "0"})


@dataclass(frozen=True)
class CellError(Exception):
    """A cell that cannot be read as its column's kind of value."""

    column: str
    message: str


def where(path: Path, row: int, column: str | None = None) -> str:
    """``file:row N:column`` for a message (rows count from 1, the header not counted)."""
    return f"{path}:row {row}" + (f":{column}" if column else "")


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each data row (1-based) as the statistic's fields, empty cells left out; a cell that
    cannot be read raises ReleaseError naming file:row:column."""
    columns = _read_columns(path)
    rows = len(columns["id"])
    plain = {name: values for name, values in columns.items() if _plain(name, values)}
    other = {name: values for name, values in columns.items() if name not in plain}
    noise: dict[str, Any] = {}  # a noise text -> its cell
    for i in range(rows):
        fields: dict[str, Any] = {name: values[i] for name, values in plain.items()}
        for name, values in other.items():
            try:
                if name == "noise" and isinstance(values[i], str):  # few distinct texts
                    read = noise.get(values[i])
                    if read is None:
                        read = noise[values[i]] = _cell(name, values[i], path)
                    value = dict(read) if isinstance(read, dict) else read
                else:
                    value = _cell(name, values[i], path)
            except CellError as e:
                raise ReleaseError(f"{where(path, i + 1, e.column)}: {e.message}") from None
            if value is not _ABSENT:
                fields[name] = value
        yield i + 1, fields


def _plain(name: str, values: list[Any]) -> bool:
    """A column whose every cell ``_cell`` returns as it is: non-blank text, of a column that
    gives text no other meaning (``value`` text: not ``null``)."""
    if name not in ("id", "sql", "value", "error"):
        return False
    return all(type(v) is str and not v.isspace() and v != "" for v in values) and (
        name != "value" or not any(v.strip().lower() == "null" for v in values))


def _read_columns(path: Path) -> dict[str, list[Any]]:
    """The file's columns as Python lists (CSV cells as text); its header checked. Read
    through the input gate: what decoding produces is counted (dictionary pages expanded)
    and stopped past :data:`MAX_BYTES`."""
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv", ".tsv"):
        raise ReleaseError(f"{path}: statistics_file must be .csv, .tsv or .parquet, "
                           f"not '{suffix}'")
    try:
        table = inputs.read_columnar(path, "statistics file", budget=MAX_BYTES)
    except StatreconError as e:
        raise ReleaseError(str(e)) from None
    names = [str(n) for n in table.column_names]
    if table.num_rows > MAX_STATISTICS:
        raise ReleaseError(f"{path}: {table.num_rows:,} statistics, over the limit of "
                           f"{MAX_STATISTICS:,}")
    unknown = [n for n in names if n not in COLUMNS]
    if unknown:
        raise ReleaseError(f"{path}: unknown column '{unknown[0]}' (columns: "
                           f"{', '.join(COLUMNS)})")
    if len(set(names)) != len(names):
        raise ReleaseError(f"{path}: a column appears twice")
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        raise ReleaseError(f"{path}: column '{missing[0]}' is missing (a statistic needs "
                           "id and sql)")
    if not table.num_rows:
        raise ReleaseError(f"{path}: the statistics file has a header and no statistics")
    return {n: table.column(n).to_pylist() for n in names}


_ABSENT: Any = object()


def _cell(column: str, value: Any, path: Path) -> Any:
    """One cell as the value its YAML field would hold, ``_ABSENT`` when empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return _ABSENT
    if isinstance(value, float) and math.isnan(value):
        return _ABSENT  # a missing number in a Parquet float column
    if column == "decimals" and isinstance(value, str):
        if not _WHOLE.fullmatch(value):
            raise CellError(column, f"decimals {value.strip()[:40]!r} is not a whole number")
        return int(value)
    if column == "suppressed" and isinstance(value, str):
        word = value.strip().lower()
        if word not in _TRUE | _FALSE:
            raise CellError(column, f"{value.strip()[:40]!r} is not true or false")
        return word in _TRUE
    if column == "noise":
        return _noise(value)
    if column == "value" and isinstance(value, str) and value.strip().lower() == "null":
        return None  # published as null: an empty group
    if column == "id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _noise(value: Any) -> dict[str, Any]:
    """``gaussian:1.5`` (a distribution and its scale) as the YAML mapping it stands for."""
    m = _NOISE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise CellError("noise", f"{str(value)[:40]!r}: write the noise as kind:scale, e.g. "
                                 "gaussian:1.5")
    try:
        scale = float(m.group(2))
    except ValueError:
        raise CellError("noise", f"noise scale {m.group(2)[:40]!r} is not a number") from None
    return {m.group(1): scale}
