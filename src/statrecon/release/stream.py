"""Reading an audit stream: one statistic with an exact answer per line.

Lines are ``[id:] SELECT ... ; answer`` (split at the last ``;``) or JSON objects
``{"id": ..., "sql": ..., "value": ...}``; blank lines and ``#`` comments are skipped. Input is
hostile until checked: every line is bounded (``MAX_LINE`` bytes), UTF-8, its answer a finite
number a double can hold, and each error is one line that names ``FILE:LINE`` (also as the
error's ``where``, and the statistic's id as ``statistic`` once it is known).

Lines arrive in batches (``BATCH``): the auditor compiles a batch per DuckDB run, and a live
producer on stdin gets an answer for each line as soon as it is written.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from statrecon import inputs
from statrecon.errors import StatreconError
from statrecon.release.schema import Schema
from statrecon.release.sql import parse_query
from statrecon.release.statistic import Aggregate, Exact, Statistic, number_out

BATCH = 64  # statistics compiled per DuckDB run (a connection costs ~30 ms; huge IN lists
# cost memory in proportion)
MAX_LINE = 1 << 20  # bytes in one stream line (a statistic with a long IN list fits)
_ID = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*:\s*(?=select\b)", re.IGNORECASE)
_JSON_KEYS = frozenset({"id", "sql", "value"})
_EXPONENT = re.compile(r"[eE][+-]?([\d_]+)")
_MAX_EXPONENT = 400  # a decimal exponent past it is no double (and 10**n would be costly)
_BOM = "\ufeff"

Batch = list[tuple[int, str]]  # (line number, text) of lines read together


@dataclass(frozen=True)
class StreamEntry:
    """One statistic of the stream, with where it came from (for messages and output)."""

    where: str  # "FILE:LINE"
    source: str  # "release" or "stream"
    line: int
    stat: Statistic


@dataclass(frozen=True)
class StreamSource:
    """Where stream lines come from: a name for messages (``FILE`` of ``FILE:LINE``) and the
    lines in batches. Build one with :meth:`file`, :meth:`stdin` or :meth:`lines`."""

    name: str
    batches: Iterable[Batch]

    @classmethod
    def file(cls, path: Path | str, name: str | None = None) -> StreamSource:
        """A stream file, read a batch at a time (``name`` as the user wrote the path)."""
        return cls(str(path) if name is None else name, file_batches(Path(path)))

    @classmethod
    def stdin(cls) -> StreamSource:
        return cls("<stdin>", stdin_batches())

    @classmethod
    def lines(cls, lines: Iterable[str], name: str = "<stream>") -> StreamSource:
        """Lines already read as text (a list, an open text file)."""
        return cls(name, text_batches(lines))


# --------------------------------------------------------------------------- one line


def parse_line(text: str, line: int, where: str, schema: Schema) -> StreamEntry | None:
    """One stream line -> a statistic with an exact answer (None for blanks and comments)."""
    s = text.strip()
    if not s or s.startswith("#"):
        return None
    if s.startswith("{"):
        sid, sql, value = _json_line(s, line, where)
    else:
        sql, sep, tail = s.rpartition(";")
        if not sep:
            raise StatreconError(f"{where}: expected '[id:] SQL ; answer' (no ';' before the "
                                 "answer)", where=where)
        m = _ID.match(sql)
        sid = m.group(1) if m else f"s{line}"
        value = _number(tail.strip(), where, sid)
        sql = sql[m.end():] if m else sql
        if not sql.strip():
            raise StatreconError(f"{where}: no SQL before ';'", where=where, statistic=sid)
    try:
        query = parse_query(sql, schema)
    except StatreconError as e:
        raise StatreconError(f"{where}: statistic '{sid}': {e}", where=where,
                             statistic=sid) from None
    if query.aggregate in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT) and (
            value < 0 or value.denominator != 1):
        raise StatreconError(f"{where}: statistic '{sid}': a COUNT is a whole number >= 0, "
                             f"got {number_out(value)}", where=where, statistic=sid)
    return StreamEntry(where, "stream", line, Statistic(sid, sql.strip(), query, Exact(value)))


def parse_lines(batch: Batch, name: str, schema: Schema) -> Iterator[StreamEntry]:
    """The statistics of a batch of lines from ``name``, in order; raises at the first bad
    line (the statistics before it have been yielded)."""
    for number, text in batch:
        entry = parse_line(text, number, f"{name}:{number}", schema)
        if entry is not None:
            yield entry


def _number(text: str, where: str, sid: str | None = None) -> Fraction:
    if not text:
        raise StatreconError(f"{where}: no answer after the last ';'", where=where,
                             statistic=sid)
    exponent = _EXPONENT.search(text)
    digits = exponent.group(1).replace("_", "").lstrip("0") if exponent else ""
    if len(digits) > 4 or (digits and int(digits) > _MAX_EXPONENT):  # 1e999999999: 10**n
        raise StatreconError(f"{where}: answer {_shown(text)} is out of range (decimal "
                             f"exponents beyond ±{_MAX_EXPONENT} are refused)", where=where,
                             statistic=sid)
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise StatreconError(f"{where}: answer {_shown(text)} is not a number", where=where,
                             statistic=sid) from None
    return _finite(value, _shown(text), where, sid)


def _finite(value: Fraction, text: str, where: str, sid: str | None = None) -> Fraction:
    """An answer a double can hold: the compiler computes with floats next to the rationals."""
    try:
        float(value)
    except OverflowError:
        raise StatreconError(f"{where}: answer {text} is out of range (at most about 1e308 in "
                             "magnitude)", where=where, statistic=sid) from None
    return value


def _shown(text: str) -> str:
    """A user's number in a message: quoted, and cut short when absurdly long."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _json_id(data: dict[str, Any], line: int) -> str | None:
    """The id a JSON line names, when it is a valid one (None otherwise)."""
    sid = data.get("id", f"s{line}")
    if isinstance(sid, int) and not isinstance(sid, bool):
        sid = str(sid)
    return sid if isinstance(sid, str) and sid else None


def _json_line(s: str, line: int, where: str) -> tuple[str, str, Fraction]:
    try:
        data = json.loads(s)
    except json.JSONDecodeError as e:
        raise StatreconError(f"{where}: malformed JSON: {e.msg} (column {e.colno})",
                             where=where) from None
    except ValueError as e:  # an integer past Python's digit limit: keep its first sentence
        raise StatreconError(f"{where}: malformed JSON: {e}".split(";")[0], where=where) from None
    except RecursionError:
        raise StatreconError(f"{where}: malformed JSON: nested too deeply", where=where) from None
    if not isinstance(data, dict):
        raise StatreconError(f"{where}: a JSON line is an object {{\"id\", \"sql\", \"value\"}}",
                             where=where)
    named = _json_id(data, line)
    extra = sorted(set(data) - _JSON_KEYS)
    if extra:
        raise StatreconError(f"{where}: unknown key '{extra[0]}' (keys: id, sql, value; "
                             "audit-stream takes exact answers only)", where=where,
                             statistic=named)
    sql, value = data.get("sql"), data.get("value")
    if not isinstance(sql, str) or not sql.strip():
        raise StatreconError(f"{where}: 'sql' must be a non-empty string", where=where,
                             statistic=named)
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)):
        raise StatreconError(f"{where}: 'value' must be a number, got {json.dumps(value)}",
                             where=where, statistic=named)
    if named is None:
        raise StatreconError(f"{where}: 'id' must be a non-empty string", where=where)
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    return named, sql, _finite(exact, str(value) if len(str(value)) <= 40 else "(too long)",
                               where, named)


# --------------------------------------------------------------------------- reading lines


def decode_line(raw: bytes, number: int, src: str) -> str:
    """One stream line as text: UTF-8, without the byte order mark some editors write."""
    where = f"{src}:{number}"
    if len(raw) > MAX_LINE:
        raise StatreconError(f"{where}: line longer than {MAX_LINE} bytes", where=where)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StatreconError(f"{where}: not UTF-8 text", where=where) from None
    return text.removeprefix(_BOM) if number == 1 else text


def file_batches(path: Path) -> Iterator[Batch]:
    """A stream file a batch at a time, never whole in memory, each line bounded. The file is
    opened when the first batch is asked for, after the input gate (no size limit: it is
    read a line at a time)."""
    inputs.admit(path, "statistics stream", limit=None)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise StatreconError(f"{path}: no such file", where=str(path)) from None
    except OSError as e:
        raise StatreconError(f"{path}: cannot read: {e.strerror or e}", where=str(path)) from None
    with handle:
        batch: Batch = []
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE + 1)
            except OSError as e:
                raise StatreconError(f"{path}: cannot read: {e.strerror or e}",
                                     where=str(path)) from None
            if not raw:
                break
            number += 1
            batch.append((number, decode_line(raw.removesuffix(b"\n"), number, str(path))))
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


def stdin_batches() -> Iterator[Batch]:
    """Lines from stdin in batches of what has already arrived: a file piped in is compiled a
    batch at a time, a live producer gets an answer for each line as soon as it is written."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no real descriptor (embedded use)
        lines = sys.stdin.read().splitlines()
        if lines:
            lines[0] = lines[0].removeprefix(_BOM)
        yield list(enumerate(lines, start=1))
        return
    buf, number, pending = b"", 0, []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        *complete, buf = buf.split(b"\n")
        for raw in complete:
            number += 1
            pending.append((number, decode_line(raw, number, "<stdin>")))
        if len(buf) > MAX_LINE:
            decode_line(buf, number + 1, "<stdin>")  # raises: a line without end
        more, _, _ = select.select([fd], [], [], 0)
        if pending and (not more or len(pending) >= BATCH):
            yield pending
            pending = []
    if buf:
        number += 1
        pending.append((number, decode_line(buf, number, "<stdin>")))
    if pending:
        yield pending


def text_batches(lines: Iterable[str]) -> Iterator[Batch]:
    """Lines already decoded (a list, an open text file), ``BATCH`` at a time."""
    batch: Batch = []
    for number, text in enumerate(lines, start=1):
        text = text.removesuffix("\n")
        batch.append((number, text.removeprefix(_BOM) if number == 1 else text))
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
