"""Streaming query auditor: exact determinability, updated one statistic at a time.

A query interface that answers SUM/COUNT statistics one by one must know, before answering,
whether the answer would pin some record's secret (the difference attack: q1 - q2 - q3 = x2).
Recomputing a reduced row echelon form after every statistic costs a full elimination each
time; here the row space is kept as a *reduced basis* and each statistic costs one reduction
plus one rank-one update of the rows that contain the new pivot column.

Invariant: every basis row has a pivot column with coefficient 1 and no other basis row has a
non-zero in that column. Then a vector v of the row space is ``sum(v[p] * row_p)``, so e_j lies
in the row space (x_j is the same in every solution) iff j is a pivot whose row is e_j itself.
Each basis row also carries its expression as a combination of the statistics and the same
combination of their answers, so a determined record comes with its value and certificate.

Arithmetic is exact (FLINT rationals, ``fmpq``, in sparse dicts keyed by column); results are
returned as ``fractions.Fraction``. The auditor is pure: no I/O, no SQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import flint

Status = Literal["accepted", "denied", "inconsistent"]
_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)


@dataclass(frozen=True)
class Disclosure:
    """x[index] = value, proven: ``sum(coefficient * answer)`` over ``certificate``, and the
    same combination of the statistics' rows is exactly e_index."""

    index: int  # record, 0-based
    value: Fraction
    certificate: tuple[tuple[str, Fraction], ...]  # (statistic id, coefficient)


@dataclass(frozen=True)
class AuditStep:
    """What one statistic did to the row space.

    ``accepted``: added (or redundant and consistent); ``newly_determined`` lists the records it
    pinned. ``denied`` (deny mode only): not added, ``would_disclose`` says what it would have
    pinned. ``inconsistent``: its row is a combination of earlier statistics but its answer is
    not the same combination of theirs; ``conflict`` is that combination (its answers add up to
    ``discrepancy`` instead of 0). Only accepted statistics enter the row space.
    """

    stat_id: str
    status: Status
    rank: int  # rank of the accepted statistics after this step
    independent: bool  # the statistic's row is outside the previous row space
    newly_determined: tuple[Disclosure, ...] = ()
    would_disclose: tuple[Disclosure, ...] = ()
    conflict: tuple[tuple[str, Fraction], ...] = ()
    discrepancy: Fraction = Fraction(0)


@dataclass
class _Row:
    """A basis row: e_pivot + rest, equal to ``combo`` (statistic index -> coefficient)
    applied to the statistics' rows; ``value`` is the same combination of their answers."""

    rest: dict[int, Any]
    combo: dict[int, Any]
    value: Any


@dataclass
class _Plan:
    pivot: int
    row: _Row
    updates: dict[int, _Row] = field(default_factory=dict)  # pivot -> replaced basis row

    def disclosed(self) -> list[int]:
        out = [p for p, r in self.updates.items() if not r.rest]
        if not self.row.rest:
            out.append(self.pivot)
        return sorted(out)


def _fmpq(v: int | Fraction) -> Any:
    if isinstance(v, Fraction):
        return flint.fmpq(v.numerator, v.denominator)
    return flint.fmpq(int(v))


def _frac(v: Any) -> Fraction:
    return Fraction(int(v.p), int(v.q))


def _axpy(target: dict[int, Any], factor: Any, source: dict[int, Any]) -> None:
    """target -= factor * source, in place, dropping entries that cancel."""
    for c, v in source.items():
        x = target.get(c, _ZERO) - factor * v
        if x:
            target[c] = x
        else:
            target.pop(c, None)


class StreamAuditor:
    """Exact, incremental determinability over ``n`` unknowns (records).

    >>> aud = StreamAuditor(6)
    >>> _ = aud.add({j: 1 for j in range(6)}, Fraction("32.1"), "q1")
    >>> _ = aud.add({2: 1, 3: 1, 5: 1}, Fraction("15.5"), "q2")
    >>> step = aud.add({0: 1, 4: 1}, Fraction("11.4"), "q3")
    >>> [(d.index, d.value, d.certificate) for d in step.newly_determined]
    [(1, Fraction(26, 5), (('q1', Fraction(1, 1)), ('q2', Fraction(-1, 1)), ('q3', Fraction(-1, 1))))]
    """

    def __init__(self, n: int) -> None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        self.n = n
        self._ids: list[str] = []  # every statistic seen, accepted or not (certificates name them)
        self._index: dict[str, int] = {}
        self._rows: dict[int, dict[int, Fraction]] = {}  # accepted statistic -> its row
        self._answers: dict[int, Fraction] = {}
        self._basis: dict[int, _Row] = {}  # pivot column -> row
        self._occ: dict[int, set[int]] = {}  # non-pivot column -> pivots whose rest holds it
        self._determined: dict[int, Disclosure] = {}

    # ----------------------------------------------------------------------- public view

    @property
    def rank(self) -> int:
        return len(self._basis)

    @property
    def determined(self) -> tuple[Disclosure, ...]:
        """Every record pinned so far, by index (each with the certificate found first)."""
        return tuple(self._determined[j] for j in sorted(self._determined))

    @property
    def accepted(self) -> tuple[str, ...]:
        """Ids of the statistics in the row space, in stream order."""
        return tuple(self._ids[i] for i in sorted(self._rows))

    def is_determined(self, index: int) -> bool:
        return index in self._determined

    def would_disclose(self, row: dict[int, int | Fraction], answer: Fraction,
                       stat_id: str = "?") -> tuple[Disclosure, ...]:
        """The records a statistic would newly pin, without adding it."""
        r = self._clean(row)
        idx = len(self._ids)
        rest, combo, value = self._reduce(r, _fmpq(Fraction(answer)), idx)
        if not rest:
            return ()
        plan = self._plan(rest, combo, value)
        return tuple(self._disclosure(j, plan.updates.get(j, plan.row), extra=(idx, stat_id))
                     for j in plan.disclosed())

    def add(self, row: dict[int, int | Fraction], answer: Fraction, stat_id: str,
            deny: bool = False) -> AuditStep:
        """Process one statistic: ``sum(row[j] * x[j]) = answer``.

        With ``deny`` a statistic that would pin a record not pinned before is refused and left
        out of the row space. Raises ValueError for a repeated id or a column outside 0..n-1.
        """
        if stat_id in self._index:
            raise ValueError(f"statistic id {stat_id!r} used twice")
        r = self._clean(row)
        answer = Fraction(answer)
        idx = len(self._ids)
        self._ids.append(stat_id)
        self._index[stat_id] = idx
        rest, combo, value = self._reduce(r, _fmpq(answer), idx)
        if not rest:  # a combination of earlier statistics
            if value:
                conflict = tuple((self._ids[i], _frac(c)) for i, c in sorted(combo.items()))
                return AuditStep(stat_id, "inconsistent", self.rank, False, conflict=conflict,
                                 discrepancy=_frac(value))
            self._rows[idx], self._answers[idx] = r, answer
            return AuditStep(stat_id, "accepted", self.rank, False)
        plan = self._plan(rest, combo, value)
        disclosed = plan.disclosed()
        if deny and disclosed:
            would = tuple(self._disclosure(j, plan.updates.get(j, plan.row))
                          for j in disclosed)
            return AuditStep(stat_id, "denied", self.rank, True, would_disclose=would)
        self._rows[idx], self._answers[idx] = r, answer
        self._commit(plan)
        new = []
        for j in disclosed:
            d = self._disclosure(j, self._basis[j])
            self._determined[j] = d
            new.append(d)
        return AuditStep(stat_id, "accepted", self.rank, True, newly_determined=tuple(new))

    def verify(self, d: Disclosure) -> bool:
        """Exact check of a certificate against the stored rows and answers (for tests and
        audits of the auditor; costs the certificate's rows)."""
        acc: dict[int, Fraction] = {}
        total = Fraction(0)
        for sid, coef in d.certificate:
            i = self._index.get(sid)
            if i is None or i not in self._rows:
                return False
            for j, v in self._rows[i].items():
                acc[j] = acc.get(j, Fraction(0)) + coef * v
            total += coef * self._answers[i]
        acc = {j: v for j, v in acc.items() if v != 0}
        return acc == {d.index: Fraction(1)} and total == d.value

    # ----------------------------------------------------------------------- internals

    def _clean(self, row: dict[int, int | Fraction]) -> dict[int, Fraction]:
        out: dict[int, Fraction] = {}
        for j, v in row.items():
            j = int(j)
            if not 0 <= j < self.n:
                raise ValueError(f"column {j} is outside 0..{self.n - 1}")
            f = Fraction(v)
            if f:
                out[j] = f
        return out

    def _reduce(self, row: dict[int, Fraction], answer: Any, idx: int
                ) -> tuple[dict[int, Any], dict[int, Any], Any]:
        """Subtract the basis rows of every pivot the row touches: what is left has no pivot
        column (basis rows hold no other pivot, so one pass suffices)."""
        rest = {j: _fmpq(v) for j, v in row.items()}
        combo: dict[int, Any] = {idx: _ONE}
        value = answer
        for j in [j for j in row if j in self._basis]:
            f = rest.pop(j)
            b = self._basis[j]
            _axpy(rest, f, b.rest)
            _axpy(combo, f, b.combo)
            value = value - f * b.value
        return rest, combo, value

    def _plan(self, rest: dict[int, Any], combo: dict[int, Any], value: Any) -> _Plan:
        """The new basis row (pivot: the column in the fewest basis rows, so the rank-one
        update touches few rows) and the basis rows it changes, not yet committed."""
        occ = self._occ
        q = min(rest, key=lambda c: (len(occ.get(c, ())), c))
        g = rest.pop(q)
        inv = _ONE / g
        new = _Row({c: v * inv for c, v in rest.items()}, {i: v * inv for i, v in combo.items()},
                   value * inv)
        plan = _Plan(q, new)
        for p in occ.get(q, ()):
            old = self._basis[p]
            f = old.rest[q]
            r = dict(old.rest)
            del r[q]
            _axpy(r, f, new.rest)
            c = dict(old.combo)
            _axpy(c, f, new.combo)
            plan.updates[p] = _Row(r, c, old.value - f * new.value)
        return plan

    def _commit(self, plan: _Plan) -> None:
        occ = self._occ
        q = plan.pivot
        occ.pop(q, None)  # q becomes a pivot: no basis row keeps it in its rest
        for p, row in plan.updates.items():
            old = self._basis[p].rest
            for c in old.keys() - row.rest.keys():
                if c != q:
                    occ[c].discard(p)
            for c in row.rest.keys() - old.keys():
                occ.setdefault(c, set()).add(p)
            self._basis[p] = row
        for c in plan.row.rest:
            occ.setdefault(c, set()).add(q)
        self._basis[q] = plan.row

    def _disclosure(self, j: int, row: _Row, extra: tuple[int, str] | None = None
                    ) -> Disclosure:
        def name(i: int) -> str:
            if extra is not None and i == extra[0]:
                return extra[1]
            return self._ids[i]

        cert = tuple((name(i), _frac(c)) for i, c in sorted(row.combo.items()))
        return Disclosure(j, _frac(row.value), cert)
