"""Statistics of an audit stream -> linear equations in the secret column.

Each statistic becomes one equation ``sum(row[j] * x[j]) = answer`` over the records of the
public table, compiled by the linear engine's own compiler (DuckDB evaluates the public
predicates), a batch per run. The incremental auditor (``engines/stream/auditor.py``) takes the
equations; the domain of the secret (``secret_domain``) tells it what no dataset can produce.
Pure: the public table is already in memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from statrecon.engines.linear.model import SecretColumn, compile_linear, secret_column
from statrecon.engines.stream.auditor import Domain
from statrecon.errors import StatreconError
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
    fraction_of,
    number_out,
)
from statrecon.release.stream import StreamEntry
from statrecon.result import plain

ANCHOR_ID = "\x00anchor"  # a synthetic statistic that fixes which category COUNTs count


@dataclass(frozen=True)
class Compiled:
    """A statistic as an equation ``sum(row[j] * x[j]) = answer``, or why it has none."""

    entry: StreamEntry
    row: dict[int, int] | None = None
    answer: Fraction | None = None
    note: str = ""  # set when there is no equation to audit


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


class StreamCompiler:
    """Statistics -> equations with the linear engine's compiler, a batch per DuckDB run.

    For a categorical secret the unknown is the indicator of the category the first COUNT
    counts; a synthetic first statistic carries that choice into every later batch, so a later
    COUNT of the complement becomes ``group size - answer`` exactly as in ``reconstruct``."""

    def __init__(self, release: Release, public: PublicTable) -> None:
        self.release = release
        self.public = public
        self.secret_name = secret_column(release).name
        self.anchor: Statistic | None = None
        self.secret: SecretColumn | None = None

    def compile(self, entries: list[StreamEntry], file: str
                ) -> tuple[list[Compiled], StatreconError | None]:
        """Equations for a prefix of ``entries`` (read from ``file``); the error of the first
        bad one, if any, with its ``where`` and ``statistic``."""
        todo = [e for e in entries if not self._public_only(e.stat)]
        stats = ([self.anchor] if self.anchor else []) + [e.stat for e in todo]
        try:
            system = compile_linear(self.release.with_statistics(tuple(stats)), self.public)
        except StatreconError as err:
            msg = str(err)
            bad = _culprit(err, entries)
            if bad is None:
                return [], StatreconError(f"{file}: {msg}", where=file)
            done, error = self.compile(entries[:bad], file) if bad else ([], None)
            entry = entries[bad]
            return done, error or StatreconError(f"{entry.where}: {msg}", where=entry.where,
                                                 statistic=entry.stat.id)
        self.secret = system.secret
        if self.anchor is None and system.secret.kind == "indicator":
            self.anchor = Statistic(
                ANCHOR_ID, "", Query(Aggregate.COUNT, None,
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
                    out.append(Compiled(e, row, answer))
                else:
                    out.append(Compiled(e, note=f"{answer_kind(e.stat)}: only exact answers "
                                                "are audited"))
            elif self._public_only(e.stat):
                out.append(Compiled(e, note="public rows only: no information on the secret"))
            else:
                out.append(Compiled(e, note=f"{answer_kind(e.stat)}: no equation"))
        return out, None

    def _public_only(self, stat: Statistic) -> bool:
        return stat.query.aggregate in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT) and not (
            _mentions(stat.query.where, self.secret_name))


def _culprit(err: StatreconError, entries: list[StreamEntry]) -> int | None:
    """Which entry an error of the linear compiler is about: its ``statistic`` field says it
    (None: the release as a whole, or a statistic of the release file, not of the stream)."""
    if err.statistic is None:
        return None
    return next((i for i, e in enumerate(entries) if e.stat.id == err.statistic), None)


def answer_kind(stat: Statistic) -> str:
    """How a statistic's answer is published, in words (for notes on what is not audited)."""
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


def secret_domain(release: Release) -> Domain:
    """The secret column's declared domain as the auditor sees its unknowns: a categorical
    secret's unknown is a 0/1 indicator, an integer column takes whole numbers."""
    col = secret_column(release)
    if col.is_categorical:
        return Domain(Fraction(0), Fraction(1), integral=True)

    def bound(v: float | None) -> Fraction | None:
        return None if v is None or not math.isfinite(v) else fraction_of(v)

    return Domain(bound(col.min), bound(col.max), integral=col.is_integer)


def public_record(public: PublicTable, index: int) -> dict[str, Any]:
    """A record's known columns: how a disclosure names the person it pins."""
    return {name: plain(col[index]) for name, col in public.columns.items()}


def secret_label(secret: SecretColumn | None, value: Fraction | None) -> Any:
    """A pinned unknown in the secret column's own terms: a category for an indicator."""
    if value is None:
        return None
    if secret is not None and secret.kind == "indicator" and value in (0, 1):
        return secret.label(float(value))
    return number_out(value)
