"""``statrecon audit-stream``: a query gate over a stream of SUM/COUNT/AVG statistics.

Each statistic is compiled to one linear equation in the secret column by the linear engine's
own compiler (DuckDB evaluates its public predicate over the public table), then handed to the
incremental auditor (``engines/audit.py``). After every statistic the command says whether it
was accepted, which records it newly pins (with the certificate: the difference of earlier
answers that reveals the value), or, with ``--deny``, that it was refused because it would pin
one. Contradicting answers are reported with the statistics that contradict and exit code 2.

Stream lines: ``[id:] SELECT ... ; answer`` (split at the last ``;``) or JSON objects
``{"id": ..., "sql": ..., "value": ...}``; blank lines and ``#`` comments are skipped.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from statrecon.engines.audit import ENGINES, AuditStep, Disclosure, Domain, StreamAuditor
from statrecon.errors import StatreconError
from statrecon.exitcodes import EXIT_INFEASIBLE
from statrecon.release.known import PublicTable
from statrecon.release.model import Release
from statrecon.release.predicate import And, Compare, InSet, Not, Or, Predicate
from statrecon.release.statistic import (
    Aggregate,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Query,
    Statistic,
    Suppressed,
    number_out,
)
from statrecon.report import output_console, safe_text
from statrecon.result import plain

_BATCH = 64  # statistics compiled per DuckDB run (a connection costs ~30 ms; huge IN lists
# cost memory in proportion)
_ID = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*:\s*(?=select\b)", re.IGNORECASE)
_JSON_KEYS = frozenset({"id", "sql", "value"})
_ANCHOR_ID = "\x00anchor"  # a synthetic statistic that fixes which category COUNTs count
_SHOWN_TERMS = 8  # certificate terms in the human view
_SHOWN_RECORDS = 20  # determined records listed in the human summary
_EXPONENT = re.compile(r"[eE][+-]?([\d_]+)")
_MAX_EXPONENT = 400  # a decimal exponent past it is no double (and 10**n would be costly)
_MAX_LINE = 1 << 20  # bytes in one stream line (a statistic with a long IN list fits)
_BOM = "\ufeff"


@dataclass(frozen=True)
class _Entry:
    """One statistic of the stream, with where it came from (for messages and output)."""

    where: str  # "FILE:LINE"
    source: str  # "release" or "stream"
    line: int
    stat: Statistic


@dataclass(frozen=True)
class _Compiled:
    """A statistic as an equation ``sum(row[j] * x[j]) = answer``, or why it has none."""

    entry: _Entry
    row: dict[int, int] | None = None
    answer: Fraction | None = None
    note: str = ""  # set when there is no equation to audit


# --------------------------------------------------------------------------- reading


def parse_line(text: str, line: int, where: str, schema: Any) -> _Entry | None:
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
                                 "answer)")
        value = _number(tail.strip(), where)
        m = _ID.match(sql)
        sid = m.group(1) if m else f"s{line}"
        sql = sql[m.end():] if m else sql
        if not sql.strip():
            raise StatreconError(f"{where}: no SQL before ';'")
    from statrecon.release.sql import parse_query

    try:
        query = parse_query(sql, schema)
    except StatreconError as e:
        raise StatreconError(f"{where}: statistic '{sid}': {e}") from None
    if query.aggregate in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT) and (
            value < 0 or value.denominator != 1):
        raise StatreconError(f"{where}: statistic '{sid}': a COUNT is a whole number >= 0, "
                             f"got {number_out(value)}")
    return _Entry(where, "stream", line, Statistic(sid, sql.strip(), query, Exact(value)))


def _number(text: str, where: str) -> Fraction:
    if not text:
        raise StatreconError(f"{where}: no answer after the last ';'")
    exponent = _EXPONENT.search(text)
    digits = exponent.group(1).replace("_", "").lstrip("0") if exponent else ""
    if len(digits) > 4 or (digits and int(digits) > _MAX_EXPONENT):  # 1e999999999: 10**n
        raise StatreconError(f"{where}: answer {_shown(text)} is out of range (decimal "
                             f"exponents beyond ±{_MAX_EXPONENT} are refused)")
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise StatreconError(f"{where}: answer {_shown(text)} is not a number") from None
    return _finite(value, _shown(text), where)


def _finite(value: Fraction, text: str, where: str) -> Fraction:
    """An answer a double can hold: the compiler computes with floats next to the rationals."""
    try:
        float(value)
    except OverflowError:
        raise StatreconError(f"{where}: answer {text} is out of range (at most about 1e308 in "
                             "magnitude)") from None
    return value


def _shown(text: str) -> str:
    """A user's number in a message: quoted, and cut short when absurdly long."""
    return repr(text if len(text) <= 40 else text[:40] + "…")


def _json_line(s: str, line: int, where: str) -> tuple[str, str, Fraction]:
    try:
        data = json.loads(s)
    except json.JSONDecodeError as e:
        raise StatreconError(f"{where}: malformed JSON: {e.msg} (column {e.colno})") from None
    except ValueError as e:  # an integer past Python's digit limit
        raise StatreconError(f"{where}: malformed JSON: {e}".split(";")[0]) from None
    except RecursionError:
        raise StatreconError(f"{where}: malformed JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise StatreconError(f"{where}: a JSON line is an object {{\"id\", \"sql\", \"value\"}}")
    extra = sorted(set(data) - _JSON_KEYS)
    if extra:
        raise StatreconError(f"{where}: unknown key '{extra[0]}' (keys: id, sql, value; "
                             "audit-stream takes exact answers only)")
    sql, value = data.get("sql"), data.get("value")
    if not isinstance(sql, str) or not sql.strip():
        raise StatreconError(f"{where}: 'sql' must be a non-empty string")
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not math.isfinite(value)):
        raise StatreconError(f"{where}: 'value' must be a number, got {json.dumps(value)}")
    sid = data.get("id", f"s{line}")
    if isinstance(sid, int) and not isinstance(sid, bool):
        sid = str(sid)
    if not isinstance(sid, str) or not sid:
        raise StatreconError(f"{where}: 'id' must be a non-empty string")
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    return sid, sql, _finite(exact, str(value) if len(str(value)) <= 40 else "(too long)",
                             where)


def _decode(raw: bytes, number: int, src: str) -> str:
    """One stream line as text: UTF-8, without the byte order mark some editors write."""
    if len(raw) > _MAX_LINE:
        raise StatreconError(f"{src}:{number}: line longer than {_MAX_LINE} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StatreconError(f"{src}:{number}: not UTF-8 text") from None
    return text.removeprefix(_BOM) if number == 1 else text


def _file_lines(path: Path) -> Iterator[list[tuple[int, str]]]:
    """A stream file a batch at a time, never whole in memory, each line bounded."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise StatreconError(f"{path}: no such file") from None
    except OSError as e:
        raise StatreconError(f"{path}: cannot read: {e.strerror or e}") from None
    with handle:
        batch: list[tuple[int, str]] = []
        number = 0
        while True:
            try:
                raw = handle.readline(_MAX_LINE + 1)
            except OSError as e:
                raise StatreconError(f"{path}: cannot read: {e.strerror or e}") from None
            if not raw:
                break
            number += 1
            batch.append((number, _decode(raw.removesuffix(b"\n"), number, str(path))))
            if len(batch) >= _BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


def _stdin_lines() -> Iterator[list[tuple[int, str]]]:
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
            pending.append((number, _decode(raw, number, "<stdin>")))
        if len(buf) > _MAX_LINE:
            _decode(buf, number + 1, "<stdin>")  # raises: a line without end
        more, _, _ = select.select([fd], [], [], 0)
        if pending and (not more or len(pending) >= _BATCH):
            yield pending
            pending = []
    if buf:
        number += 1
        pending.append((number, _decode(buf, number, "<stdin>")))
    if pending:
        yield pending


# --------------------------------------------------------------------------- compiling


def _mentions(pred: Predicate, name: str) -> bool:
    """Whether a WHERE clause touches the column ``name`` (the secret)."""
    if isinstance(pred, InSet):
        return pred.column == name
    if isinstance(pred, Compare):
        return any(c == name for c, _ in pred.affine.columns)
    if isinstance(pred, Not):
        return _mentions(pred.arg, name)
    if isinstance(pred, And | Or):
        return any(_mentions(a, name) for a in pred.args)
    return False


class _Compiler:
    """Statistics -> equations with the linear engine's compiler, a batch per DuckDB run.

    For a categorical secret the unknown is the indicator of the category the first COUNT
    counts; a synthetic first statistic carries that choice into every later batch, so a later
    COUNT of the complement becomes ``group size - answer`` exactly as in ``reconstruct``."""

    def __init__(self, release: Release, public: PublicTable) -> None:
        from statrecon.engines.linear.model import SecretColumn, secret_column

        self.release = release
        self.public = public
        self.secret_name = secret_column(release).name
        self.anchor: Statistic | None = None
        self.secret: SecretColumn | None = None

    def compile(self, entries: list[_Entry]) -> tuple[list[_Compiled], StatreconError | None]:
        """Equations for a prefix of ``entries``; the error of the first bad one, if any."""
        from statrecon.engines.linear.model import compile_linear

        todo = [e for e in entries if not self._public_only(e.stat)]
        stats = ([self.anchor] if self.anchor else []) + [e.stat for e in todo]
        try:
            system = compile_linear(self.release.with_statistics(tuple(stats)), self.public)
        except StatreconError as err:
            msg = str(err)
            bad = next((i for i, e in enumerate(entries)
                        if msg.startswith(f"{e.stat.where_text}:")
                        or msg.startswith(f"{e.stat.where_text} ")), None)
            if bad is None:
                where = entries[0].where.rsplit(":", 1)[0] if entries else "stream"
                return [], StatreconError(f"{where}: {msg}")
            done, error = self.compile(entries[:bad]) if bad else ([], None)
            return done, error or StatreconError(f"{entries[bad].where}: {msg}")
        self.secret = system.secret
        if self.anchor is None and system.secret.kind == "indicator":
            self.anchor = Statistic(
                _ANCHOR_ID, "", Query(Aggregate.COUNT, None,
                                      InSet(self.secret_name, frozenset(system.secret.target))),
                Exact(Fraction(0)))
        matrix = system.matrix.tocsr()
        rows: dict[str, tuple[dict[int, int], Fraction, str]] = {}
        for k, sid in enumerate(system.stat_ids):
            start, end = matrix.indptr[k], matrix.indptr[k + 1]
            row = {int(j): round(float(v)) for j, v in zip(
                matrix.indices[start:end], matrix.data[start:end], strict=True) if v}
            rows[sid] = (row, system.exact_answers[k], system.kinds[k])
        out = []
        for e in entries:
            if e.stat.id in rows:
                row, answer, kind = rows[e.stat.id]
                if kind == "exact":
                    out.append(_Compiled(e, row, answer))
                else:
                    out.append(_Compiled(e, note=f"{_answer_kind(e.stat)}: only exact answers "
                                                 "are audited"))
            elif self._public_only(e.stat):
                out.append(_Compiled(e, note="public rows only: no information on the secret"))
            else:
                out.append(_Compiled(e, note=f"{_answer_kind(e.stat)}: no equation"))
        return out, None

    def _public_only(self, stat: Statistic) -> bool:
        return stat.query.aggregate in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT) and not (
            _mentions(stat.query.where, self.secret_name))


def _answer_kind(stat: Statistic) -> str:
    ans = stat.answer
    if isinstance(ans, Bounded):
        return "bounded answer"
    if isinstance(ans, Noisy):
        return "noisy answer"
    if isinstance(ans, Suppressed):
        return "suppressed"
    if isinstance(ans, Empty):
        return "empty group"
    return "exact answer"


# --------------------------------------------------------------------------- reporting


def _frac_text(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _combination_text(terms: tuple[tuple[str, Fraction], ...]) -> str:
    """``q1 - q2 - 1/2·q3`` (the first few terms of a certificate)."""
    parts = []
    for k, (sid, c) in enumerate(terms[:_SHOWN_TERMS]):
        sign = "-" if c < 0 else "+"
        mag = abs(c)
        body = sid if mag == 1 else f"{_frac_text(mag)}·{sid}"
        parts.append((f"-{body}" if sign == "-" else body) if k == 0 else f"{sign} {body}")
    if len(terms) > _SHOWN_TERMS:
        parts.append(f"… ({len(terms) - _SHOWN_TERMS} more terms)")
    return " ".join(parts)


def _value_text(v: Fraction) -> str:
    """A number for a person: exact while short, else about 6 significant digits."""
    exact = _frac_text(v)
    return exact if len(exact) <= 24 else f"≈{float(v):.6g}"


class _Report:
    """Human (Rich) or JSON-lines output, plus the counts for the summary."""

    def __init__(self, console: Console, as_json: bool, show_values: bool,
                 public: PublicTable, compiler: _Compiler, domain: Domain) -> None:
        self.console = console
        self.auditor_domain = domain
        self.as_json = as_json
        self.show_values = show_values
        self.public = public
        self.compiler = compiler
        self.counts = {"accepted": 0, "denied": 0, "inconsistent": 0, "skipped": 0}
        self.switched_at: str | None = None
        self.rank_now = 0  # rank shown for statistics that are not audited

    def record_public(self, index: int) -> dict[str, Any]:
        return {name: plain(col[index]) for name, col in self.public.columns.items()}

    def label(self, value: Fraction | None) -> Any:
        secret = self.compiler.secret
        if value is None:
            return None
        if secret is not None and secret.kind == "indicator" and value in (0, 1):
            return secret.label(float(value))
        return number_out(value)

    def record_json(self, d: Disclosure) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": d.index, "record": d.index + 1, "public": self.record_public(d.index),
            "value": None if d.value is None else number_out(d.value),
            "proven": d.proven,
            "certificate": [self.term_json(s, c) for s, c in d.certificate],
        }
        secret = self.compiler.secret
        if secret is not None and secret.kind == "indicator":
            out["label"] = self.label(d.value)
        return out

    @staticmethod
    def term_json(sid: str, c: Fraction) -> dict[str, Any]:
        term: dict[str, Any] = {"statistic": sid, "coefficient": number_out(c)}
        if c.denominator != 1:
            term["exact"] = _frac_text(c)
        return term

    def record_text(self, d: Disclosure) -> str:
        cols = ", ".join(f"{k}={v}" for k, v in self.record_public(d.index).items())
        text = f"record {d.index + 1}" + (f" ({cols})" if cols else "")
        if self.show_values:
            text += f" = {self.label(d.value)}"
        if d.certificate:
            text += f" via {_combination_text(d.certificate)}"
        elif not d.proven:
            text += " (certificate too large to rebuild exactly)"
        return text

    def step(self, c: _Compiled, step: AuditStep | None) -> None:
        e = c.entry
        status = step.status if step is not None else "skipped"
        self.counts[status] += 1
        if self.as_json:
            data: dict[str, Any] = {
                "statistic": e.stat.id, "source": e.source, "line": e.line, "status": status,
                "rank": step.rank if step else self.rank_now,
                "independent": bool(step and step.independent),
                "newly_determined": [self.record_json(d) for d in step.newly_determined]
                if step else [],
                "would_disclose": [self.record_json(d) for d in step.would_disclose]
                if step else [],
                "conflict": [self.term_json(s, k) for s, k in step.conflict] if step else [],
                "discrepancy": None if step is None or step.discrepancy is None
                else number_out(step.discrepancy),
                "outside": self.record_json(step.outside) if step and step.outside else None,
                "attainable": None if step is None or step.attainable is None
                else [None if v is None else number_out(v) for v in step.attainable],
            }
            if c.note:
                data["note"] = c.note
            sys.stdout.write(json.dumps(data) + "\n")
            sys.stdout.flush()
            return
        styles = {"accepted": "green", "denied": "yellow", "inconsistent": "bold red",
                  "skipped": "dim"}
        head = f"[{styles[status]}]{status:<12}[/] {_markup(e.stat.id)}"
        if step is None:
            self.console.print(f"{head}  [dim]{_markup(c.note)}[/]")
            return
        tail = f"  rank {step.rank}"
        if c.note:
            tail += f"  [dim]{_markup(c.note)}[/]"
        for d in step.newly_determined:
            tail += f"\n  [bold red]discloses[/] {_markup(self.record_text(d))}"
        for d in step.would_disclose:
            tail += f"\n  [yellow]would disclose[/] {_markup(self.record_text(d))}"
        if status == "inconsistent":
            tail += f"\n  [red]contradiction[/]: {_markup(self.contradiction(c, step))}"
        self.console.print(head + tail, soft_wrap=True)

    def contradiction(self, c: _Compiled, step: AuditStep) -> str:
        """Why no dataset fits: statistics that cancel, a record pinned outside the domain,
        or an answer the domain cannot produce."""
        names = _combination_text(step.conflict) if any(k for _, k in step.conflict) \
            else ", ".join(s for s, _ in step.conflict)
        domain = f"the domain of {self.compiler.secret_name} ({self.domain_text()})"
        if step.outside is not None and step.outside.value is not None:
            return (f"{names} pins record {step.outside.index + 1} to "
                    f"{_value_text(step.outside.value)}, outside {domain}")
        if step.attainable is not None:
            lo, hi = step.attainable
            span = (f"{'-inf' if lo is None else _value_text(lo)}.."
                    f"{'inf' if hi is None else _value_text(hi)}")
            whole = " and a whole number" if self.auditor_domain.integral else ""
            return (f"{names} is {span}{whole} on every dataset in {domain}, but adds up to "
                    f"{_value_text(c.answer or Fraction(0))} as published")
        gap = (f"answers add up to {number_out(step.discrepancy)}"
               if step.discrepancy is not None else "answers do not add up to 0")
        return f"{names} is 0 on every record, but its {gap}"

    def domain_text(self) -> str:
        d = self.auditor_domain
        lo = "-inf" if d.lower is None else _frac_text(d.lower)
        hi = "inf" if d.upper is None else _frac_text(d.upper)
        return f"{lo}..{hi}" + (", whole numbers" if d.integral else "")

    def summary(self, auditor: StreamAuditor, elapsed: float) -> None:
        determined = auditor.determined
        secret = self.compiler.secret
        if self.as_json:
            records = []
            for d in determined:
                rec: dict[str, Any] = {
                    "index": d.index, "record": d.index + 1,
                    "value": None if d.value is None else number_out(d.value),
                    "proven": d.proven}
                if secret is not None and secret.kind == "indicator":
                    rec["label"] = self.label(d.value)
                records.append(rec)
            data = {
                "statistics": sum(self.counts.values()), **self.counts,
                "rank": auditor.rank, "records": auditor.n,
                "secret": self.compiler.secret_name, "determined": records,
                "engine": auditor.engine, "switched_at": self.switched_at,
                "elapsed_s": round(elapsed, 4),
            }
            sys.stdout.write(json.dumps({"summary": data}) + "\n")
            return
        c = self.counts
        line = (f"{sum(c.values())} statistics: {c['accepted']} accepted, {c['denied']} denied, "
                f"{c['inconsistent']} inconsistent" + (f", {c['skipped']} skipped"
                                                        if c["skipped"] else "")
                + f"; rank {auditor.rank} of {auditor.n} records")
        self.console.print(f"\n[bold]{line}[/]", soft_wrap=True)
        if determined:
            shown = ", ".join(str(d.index + 1) for d in determined[:_SHOWN_RECORDS])
            more = f" … and {len(determined) - _SHOWN_RECORDS} more" if len(
                determined) > _SHOWN_RECORDS else ""
            self.console.print(f"[bold red]{len(determined)} record(s) determined[/] "
                               f"({_markup(self.compiler.secret_name)} pinned exactly): "
                               f"{shown}{more}", soft_wrap=True)
        else:
            self.console.print("[green]no record is determined[/] by the accepted statistics")
        if self.switched_at is not None:
            self.console.print(
                f"[dim]note: exact rationals grew expensive at statistic "
                f"'{_markup(self.switched_at)}'; later statistics were decided modulo two random "
                "primes (disclosures and contradictions still proven exactly; a missed "
                "disclosure needs both primes to divide one number of the elimination)[/]",
                soft_wrap=True)
        elif auditor.engine == "modular":
            self.console.print("[dim]note: decided modulo two random primes (disclosures and "
                               "contradictions proven exactly)[/]", soft_wrap=True)


def secret_domain(release: Release) -> Domain:
    """The secret column's declared domain as the auditor sees its unknowns: a categorical
    secret's unknown is a 0/1 indicator, an integer column takes whole numbers."""
    from statrecon.engines.linear.model import secret_column
    from statrecon.release.statistic import fraction_of

    col = secret_column(release)
    if col.is_categorical:
        return Domain(Fraction(0), Fraction(1), integral=True)

    def bound(v: float | None) -> Fraction | None:
        return None if v is None or not math.isfinite(v) else fraction_of(v)

    return Domain(bound(col.min), bound(col.max), integral=col.is_integer)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def _markup(text: object) -> str:
    """User text (ids, SQL, public values) in Rich markup: literal, and no terminal escapes."""
    return escape(safe_text(text))


# --------------------------------------------------------------------------- the command


def audit_stream(
    release: Annotated[Path, typer.Argument(
        help="Release file giving the schema; its statistics, if any, start the stream.")],
    public: Annotated[Path | None, typer.Option(
        help="Public table (CSV/Parquet) with the known columns, one row per record "
             "(default: the release's 'public:').")] = None,
    input_: Annotated[str, typer.Option(
        "--input", help="Statistics, one per line: '\\[id:] SELECT ... ; answer' or JSON "
                        "{\"id\", \"sql\", \"value\"}; '-' reads stdin.")] = "-",
    deny: Annotated[bool, typer.Option(
        "--deny", help="Refuse (do not add) statistics that would pin a record.")] = False,
    show_values: Annotated[bool, typer.Option(
        "--show-values", help="Print disclosed secret values in the human view.")] = False,
    engine: Annotated[str, typer.Option(
        help="auto (exact rationals, modular once they grow), rational, or modular.")
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines, one per statistic, "
                                                         "then a summary.")] = False,
) -> None:
    """Audit statistics one at a time: what each answer newly reveals, with proofs."""
    from statrecon.api import resolve_public
    from statrecon.release.files import load_release

    if engine not in ENGINES:
        raise StatreconError(f"--engine {engine!r}: choose from {', '.join(ENGINES)}")
    start = time.perf_counter()
    rel = load_release(release)
    table = resolve_public(rel, public)
    if table is None:
        raise StatreconError(f"{release}: audit-stream needs the public table (--public FILE, "
                             "or 'public:' in the release)")
    compiler = _Compiler(rel, table)
    domain = secret_domain(rel)
    auditor = StreamAuditor(table.rows, engine=engine,  # type: ignore[arg-type]
                            domain=domain)
    report = _Report(output_console(highlight=False), as_json, show_values, table, compiler, domain)
    seen: dict[str, str] = {}

    def run(entries: list[_Entry], error: StatreconError | None) -> None:
        done, compile_error = compiler.compile(entries) if entries else ([], None)
        for c in done:
            step = None
            if c.row is not None and c.answer is not None:
                before = auditor.engine
                step = auditor.add(c.row, c.answer, c.entry.stat.id, deny=deny)
                if before != auditor.engine and report.switched_at is None:
                    report.switched_at = c.entry.stat.id
            report.rank_now = auditor.rank
            report.step(c, step)
        failure = compile_error or error
        if failure is not None:
            raise failure

    def take(entry: _Entry) -> None:
        sid = entry.stat.id
        if sid in seen:
            raise StatreconError(f"{entry.where}: statistic id '{sid}' already used at "
                                 f"{seen[sid]}")
        seen[sid] = entry.where

    own = []
    for stat in rel.statistics:
        entry = _Entry(f"{rel.source or release}:{stat.line}", "release", stat.line or 0,
                       replace(stat, line=None))
        take(entry)
        own.append(entry)
    run(own, None)
    src = "<stdin>" if input_ == "-" else input_
    if input_ == "-" and _is_terminal(sys.stdin):
        Console(stderr=True, highlight=False).print(
            "reading statistics from stdin, one per line ('\\[id:] SELECT ... ; answer'); "
            "end with Ctrl-D", style="dim", soft_wrap=True)
    batches = _stdin_lines() if input_ == "-" else _file_lines(Path(input_))
    for batch in batches:
        entries: list[_Entry] = []
        error: StatreconError | None = None
        for number, text in batch:
            where = f"{src}:{number}"
            try:
                parsed = parse_line(text, number, where, rel.schema)
                if parsed is not None:
                    take(parsed)
                    entries.append(parsed)
            except StatreconError as e:
                error = e
                break
        run(entries, error)
    report.summary(auditor, time.perf_counter() - start)
    if report.counts["inconsistent"]:
        raise typer.Exit(EXIT_INFEASIBLE)
