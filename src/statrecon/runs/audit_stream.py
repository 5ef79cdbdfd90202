"""Audit a stream of statistics one at a time, from Python: what each answer newly reveals.

The release's own statistics come first, then the stream's lines. Lines are parsed a batch at
a time (``release/stream.py``), compiled to equations in the secret column
(``engines/stream/equation.py``) and fed to the incremental auditor
(``engines/stream/auditor.py``). Each statistic gives one typed event: :class:`Accepted` (or
:class:`Pinned` when it pins records, each with its certificate), :class:`Denied` (``deny``: it
would pin one), :class:`Contradiction` (with the statistics that contradict) or
:class:`Skipped` (no equation to audit). A bad line raises
:class:`~statrecon.errors.StatreconError` (``where`` and ``statistic`` set) after the events of
the statistics before it. :class:`AuditSummary` closes the run; its ``to_json`` is
what ``statrecon audit-stream --json`` prints last.

>>> from statrecon.release.files import parse_release
>>> from statrecon.release.known import PublicTable
>>> release = parse_release("{version: 1, table: t, columns: {id: {type: integer, known: true},"
...                         " x: {type: real, min: 0, max: 10}}}")
>>> public = PublicTable("roster", 2, {"id": (1, 2)})
>>> *events, summary = audit_stream(release, public, [
...     "all: SELECT SUM(x) FROM t ; 7", "one: SELECT SUM(x) FROM t WHERE id = 1 ; 3"])
>>> [(type(e).__name__, e.statistic) for e in events]
[('Accepted', 'all'), ('Pinned', 'one')]
>>> [(d.index, d.value, d.certificate) for d in events[1].disclosures][0]
(0, Fraction(3, 1), (('one', Fraction(1, 1)),))
>>> summary.rank, [d.value for d in summary.determined]
(2, [Fraction(3, 1), Fraction(4, 1)])
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from statrecon.engines.linear.model import SecretColumn
from statrecon.engines.stream import (
    Arithmetic,
    AuditStep,
    Compiled,
    Disclosure,
    Domain,
    StreamAuditor,
    StreamCompiler,
    public_record,
    secret_domain,
    secret_label,
)
from statrecon.errors import StatreconError
from statrecon.release.known import PublicTable
from statrecon.release.model import Release
from statrecon.release.statistic import number_out
from statrecon.release.stream import StreamEntry, StreamSource, parse_lines

Stream = StreamSource | Path | str | Iterable[str]  # a path is a file; an iterable, lines


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class AuditEvent:
    """What the audit said about one statistic (the base of the event types below).

    ``step`` is the auditor's whole answer (None when the statistic has no equation: ``note``
    says why); ``answer`` the equation's right-hand side (an AVG times its group size);
    ``rank`` that of the accepted statistics after it."""

    entry: StreamEntry
    step: AuditStep | None
    rank: int
    answer: Fraction | None = None
    note: str = ""
    secret: SecretColumn | None = field(default=None, repr=False)
    public: PublicTable | None = field(default=None, repr=False, compare=False)

    @property
    def statistic(self) -> str:
        return self.entry.stat.id

    @property
    def status(self) -> str:
        """``accepted``, ``denied``, ``inconsistent`` or ``skipped``."""
        return self.step.status if self.step is not None else "skipped"

    def to_json(self) -> dict[str, Any]:
        """The line ``audit-stream --json`` prints for this statistic."""
        step = self.step
        data: dict[str, Any] = {
            "statistic": self.statistic, "source": self.entry.source, "line": self.entry.line,
            "status": self.status, "rank": self.rank,
            "independent": bool(step and step.independent),
            "newly_determined": [self._record(d) for d in step.newly_determined]
            if step else [],
            "would_disclose": [self._record(d) for d in step.would_disclose] if step else [],
            "conflict": [term_json(s, k) for s, k in step.conflict] if step else [],
            "discrepancy": None if step is None or step.discrepancy is None
            else number_out(step.discrepancy),
            "outside": self._record(step.outside) if step and step.outside else None,
            "attainable": None if step is None or step.attainable is None
            else [None if v is None else number_out(v) for v in step.attainable],
        }
        if self.note:
            data["note"] = self.note
        return data

    def _record(self, d: Disclosure) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": d.index, "record": d.index + 1,
            "public": public_record(self.public, d.index) if self.public is not None else {},
            "value": None if d.value is None else number_out(d.value),
            "proven": d.proven,
            "certificate": [term_json(s, c) for s, c in d.certificate],
        }
        if self.secret is not None and self.secret.kind == "indicator":
            out["label"] = secret_label(self.secret, d.value)
        return out


@dataclass(frozen=True)
class Accepted(AuditEvent):
    """Added to the row space (or a consistent combination of what is there)."""

    @property
    def independent(self) -> bool:
        return bool(self.step and self.step.independent)


@dataclass(frozen=True)
class Pinned(Accepted):
    """Accepted, and it pins records: each disclosure carries its value and certificate (the
    combination of statistics whose rows add up to that record alone)."""

    @property
    def disclosures(self) -> tuple[Disclosure, ...]:
        return self.step.newly_determined if self.step else ()


@dataclass(frozen=True)
class Denied(AuditEvent):
    """Refused (``deny``): it would have pinned the records in ``would_disclose``."""

    @property
    def would_disclose(self) -> tuple[Disclosure, ...]:
        return self.step.would_disclose if self.step else ()


@dataclass(frozen=True)
class Contradiction(AuditEvent):
    """No dataset fits: ``conflict`` is the combination of statistics that contradicts (the
    new one first), ``discrepancy`` what their answers add up to instead of 0; or a record
    pinned ``outside`` the domain, or an answer outside the ``attainable`` range."""

    @property
    def conflict(self) -> tuple[tuple[str, Fraction], ...]:
        return self.step.conflict if self.step else ()

    @property
    def statistics(self) -> tuple[str, ...]:
        """The ids of the statistics involved."""
        return tuple(s for s, _ in self.conflict)

    @property
    def discrepancy(self) -> Fraction | None:
        return self.step.discrepancy if self.step else None

    @property
    def outside(self) -> Disclosure | None:
        return self.step.outside if self.step else None

    @property
    def attainable(self) -> tuple[Fraction | None, Fraction | None] | None:
        return self.step.attainable if self.step else None


@dataclass(frozen=True)
class Skipped(AuditEvent):
    """Not audited: no exact equation in the secret (``note`` says why)."""


def term_json(sid: str, c: Fraction) -> dict[str, Any]:
    """One term of a certificate or conflict: the statistic and its coefficient."""
    term: dict[str, Any] = {"statistic": sid, "coefficient": number_out(c)}
    if c.denominator != 1:
        term["exact"] = f"{c.numerator}/{c.denominator}"
    return term


@dataclass(frozen=True)
class AuditSummary:
    """The audit once the stream ends: counts, the rank reached, every record pinned."""

    accepted: int
    denied: int
    inconsistent: int
    skipped: int
    rank: int
    records: int  # unknowns: one per public row
    secret: str  # the secret column's name
    determined: tuple[Disclosure, ...]
    arithmetic: str  # in use at the end: "rational" or "modular"
    switched_at: str | None  # the statistic where auto left exact rationals
    elapsed_s: float
    column: SecretColumn | None = field(default=None, repr=False)

    @property
    def statistics(self) -> int:
        return self.accepted + self.denied + self.inconsistent + self.skipped

    def to_json(self) -> dict[str, Any]:
        """The last line ``audit-stream --json`` prints: ``{"summary": {...}}``."""
        records = []
        indicator = self.column is not None and self.column.kind == "indicator"
        for d in self.determined:
            rec: dict[str, Any] = {
                "index": d.index, "record": d.index + 1,
                "value": None if d.value is None else number_out(d.value),
                "proven": d.proven}
            if indicator:
                rec["label"] = secret_label(self.column, d.value)
            records.append(rec)
        data = {
            "statistics": self.statistics, "accepted": self.accepted, "denied": self.denied,
            "inconsistent": self.inconsistent, "skipped": self.skipped,
            "rank": self.rank, "records": self.records,
            "secret": self.secret, "determined": records,
            "engine": self.arithmetic, "switched_at": self.switched_at,
            "elapsed_s": round(self.elapsed_s, 4),
        }
        return {"summary": data}


# --------------------------------------------------------------------------- the run


class StreamAudit:
    """One audit: the auditor, the compiler and the counts, fed statistic by statistic.

    ``deny`` refuses (does not add) a statistic that would pin a record. ``arithmetic``:
    ``auto`` (exact rationals, modular once they grow), ``rational`` or ``modular``.
    ``started`` is the ``time.perf_counter()`` the elapsed time counts from (default: now).
    """

    def __init__(self, release: Release, public: PublicTable, *, deny: bool = False,
                 arithmetic: Arithmetic = "auto", started: float | None = None) -> None:
        self.started = time.perf_counter() if started is None else started
        self.release = release
        self.public = public
        self.deny = deny
        self.compiler = StreamCompiler(release, public)
        self.domain: Domain = secret_domain(release)
        self.auditor = StreamAuditor(public.rows, arithmetic=arithmetic, domain=self.domain)
        self.counts = {"accepted": 0, "denied": 0, "inconsistent": 0, "skipped": 0}
        self.switched_at: str | None = None
        self._seen: dict[str, str] = {}

    @property
    def secret_name(self) -> str:
        return self.compiler.secret_name

    def events(self, stream: Stream = ()) -> Iterator[AuditEvent]:
        """The release's statistics, then the stream's, one event each."""
        rel = self.release
        file = str(rel.source or "release")
        own = []
        for stat in rel.statistics:
            entry = StreamEntry(f"{file}:{stat.line}", "release", stat.line or 0,
                                replace(stat, line=None))
            self._take(entry)
            own.append(entry)
        yield from self._run(own, None, file)
        source = as_source(stream)
        for batch in source.batches:
            entries: list[StreamEntry] = []
            error: StatreconError | None = None
            try:
                for entry in parse_lines(batch, source.name, rel.schema):
                    self._take(entry)
                    entries.append(entry)
            except StatreconError as e:
                error = e
            yield from self._run(entries, error, source.name)

    def summary(self) -> AuditSummary:
        auditor = self.auditor
        return AuditSummary(
            **self.counts, rank=auditor.rank, records=auditor.n, secret=self.secret_name,
            determined=auditor.determined, arithmetic=auditor.arithmetic,
            switched_at=self.switched_at, elapsed_s=time.perf_counter() - self.started,
            column=self.compiler.secret)

    def _take(self, entry: StreamEntry) -> None:
        sid = entry.stat.id
        if sid in self._seen:
            raise StatreconError(f"{entry.where}: statistic id '{sid}' already used at "
                                 f"{self._seen[sid]}", where=entry.where, statistic=sid)
        self._seen[sid] = entry.where

    def _run(self, entries: list[StreamEntry], error: StatreconError | None, file: str
             ) -> Iterator[AuditEvent]:
        """Compile a batch, audit its statistics in order; then raise the batch's error."""
        done, compile_error = self.compiler.compile(entries, file) if entries else ([], None)
        auditor = self.auditor
        for c in done:
            step = None
            if c.row is not None and c.answer is not None:
                before = auditor.arithmetic
                step = auditor.add(c.row, c.answer, c.entry.stat.id, deny=self.deny)
                if before != auditor.arithmetic and self.switched_at is None:
                    self.switched_at = c.entry.stat.id
            event = self._event(c, step)
            self.counts[event.status] += 1
            yield event
        failure = compile_error or error
        if failure is not None:
            raise failure

    def _event(self, c: Compiled, step: AuditStep | None) -> AuditEvent:
        kind: type[AuditEvent]
        if step is None:
            kind = Skipped
        elif step.status == "denied":
            kind = Denied
        elif step.status == "inconsistent":
            kind = Contradiction
        else:
            kind = Pinned if step.newly_determined else Accepted
        rank = step.rank if step is not None else self.auditor.rank
        return kind(c.entry, step, rank, c.answer, c.note, self.compiler.secret, self.public)


def as_source(stream: Stream) -> StreamSource:
    """Lines to audit: a :class:`StreamSource` as is, a path as a file, else lines of text."""
    if isinstance(stream, StreamSource):
        return stream
    if isinstance(stream, str | Path):
        return StreamSource.file(stream)
    return StreamSource.lines(stream)


def audit_stream(release: Release, public: PublicTable, stream: Stream = (), *,
                 deny: bool = False, arithmetic: Arithmetic = "auto",
                 started: float | None = None) -> Iterator[AuditEvent | AuditSummary]:
    """Audit the release's statistics, then the stream's: one event per statistic, then the
    :class:`AuditSummary` (the last item). A path (``str`` or ``Path``) is read as a file;
    any other iterable of strings as the stream's lines."""
    audit = StreamAudit(release, public, deny=deny, arithmetic=arithmetic, started=started)
    yield from audit.events(stream)
    yield audit.summary()
