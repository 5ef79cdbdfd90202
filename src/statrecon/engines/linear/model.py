"""Compile a release into a linear system ``F x ≈ a`` over one secret column of known rows.

The attacker knows every row through its public columns; one column is secret. A statistic is
linear in that column when its WHERE clause is a public predicate, optionally AND-ed with one
condition on a categorical secret (``COUNT(*) ... AND diagnosis = 'yes'``), or when it sums or
averages a numeric secret over a public predicate. DuckDB evaluates every public predicate
over the public table (in batches, one query for many predicates), which gives the 0/1 query
matrix. AVG is turned into a SUM with the group size the public table reveals.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from statrecon.bulk import collector_paused
from statrecon.errors import StatreconError
from statrecon.release.evaluate import evaluate_predicate_rows
from statrecon.release.known import PublicTable
from statrecon.release.model import Release
from statrecon.release.predicate import And, Compare, Const, InSet, KnownBool, Not, Predicate
from statrecon.release.schema import Column
from statrecon.release.statistic import (
    Aggregate,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Statistic,
    Suppressed,
)

SecretKind = Literal["indicator", "integer", "real"]
AnswerKind = Literal["exact", "bounded", "noisy"]


class NotLinear(StatreconError):
    """The release is not linear in one secret column; the message names the statistic."""


@dataclass(frozen=True)
class SecretColumn:
    """The reconstructed column. For a categorical secret the unknown is the indicator of
    ``target`` (a set of its values); ``other`` names the complement when reporting."""

    name: str
    kind: SecretKind
    lower: float
    upper: float
    target: tuple[str, ...] = ()
    other: str = ""
    domain: tuple[str, ...] = ()  # every value of a categorical secret

    def label(self, value: float) -> Any:
        """An estimated unknown in the column's own values."""
        if self.kind == "indicator":
            return self.target[0] if len(self.target) == 1 and value >= 0.5 else (
                " or ".join(self.target) if value >= 0.5 else self.other)
        if self.kind == "integer":
            return round(value)
        return float(value)


@dataclass(frozen=True)
class LinearSystem:
    """``matrix @ x`` approximates ``answers``; per statistic: how exact its answer is.

    ``matrix`` rows are 0/1 (integer coefficients) so exact arithmetic can use it as is;
    ``exact_answers`` keeps the published rationals (AVG already multiplied by group size);
    ``exact_errors`` their guaranteed half-widths as rationals (0 exact; for a noisy answer 0
    too: it carries no guarantee, see ``kinds``).
    """

    matrix: sp.csr_matrix
    answers: np.ndarray
    exact_answers: tuple[Fraction, ...]
    exact_errors: tuple[Fraction, ...]
    errors: np.ndarray  # half-width of the guaranteed interval (0 exact, inf noisy)
    scales: np.ndarray  # noise scale for weighting (error bound or noise parameter)
    kinds: tuple[AnswerKind, ...]
    stat_ids: tuple[str, ...]
    secret: SecretColumn
    lower: np.ndarray
    upper: np.ndarray
    public: PublicTable | None = None
    ignored: tuple[str, ...] = ()
    user_bounds: bool = False  # bounds given as background knowledge (--bounds)

    @property
    def n(self) -> int:
        return int(self.matrix.shape[1])

    @property
    def k(self) -> int:
        return int(self.matrix.shape[0])

    def exact_rows(self) -> np.ndarray:
        return np.array([i for i, kind in enumerate(self.kinds) if kind == "exact"], dtype=int)


@dataclass(frozen=True)
class _Parsed:
    stat: Statistic
    public_sql: str  # "TRUE" when the WHERE has no public part
    public_fill: tuple[str, tuple[str, ...]] | None  # public_sql as template + literals
    sign: int  # +1: counts the target; -1: counts its complement (row becomes count - ...)
    aggregate: Aggregate


def secret_column(release: Release) -> Column:
    """The one unknown column a linear release reconstructs."""
    unknown = release.schema.unknown
    if len(unknown) != 1:
        names = ", ".join(c.name for c in unknown) or "none"
        raise NotLinear(f"{release.source or 'release'}: the linear engine needs exactly one "
                        f"unknown column (found: {names})")
    return unknown[0]


@dataclass(frozen=True)
class LinearPlan:
    """A release read as rows of a linear system, before any predicate is evaluated: what
    ``linear_plan`` checked, handed to ``compile_linear`` so the statistics are read once."""

    secret: SecretColumn
    parsed: tuple[_Parsed, ...]
    ignored: tuple[str, ...]


def linear_plan(release: Release, public: PublicTable | None = None
                ) -> tuple[LinearPlan | None, str | None]:
    """The release as a linear system's plan, or why it is not linear in one secret column
    over public rows (then the plan is None)."""
    try:
        secret, parsed, ignored = _parse_all(release)
    except NotLinear as e:
        return None, str(e)
    plan = LinearPlan(secret, tuple(parsed), tuple(ignored))
    for p in parsed:
        counted = p.stat.query.column
        if (public is not None and p.aggregate is Aggregate.COUNT_DISTINCT
                and counted is not None and len(set(public.columns[counted])) != public.rows):
            return None, (f"{p.stat.where_text}: COUNT(DISTINCT {counted}) counts rows only "
                          f"when {counted} is unique in the public table ({public.source})")
    if not release.schema.known:
        return None, "no known columns: the rows are not known to the attacker"
    return plan, None


def linear_reason(release: Release, public: PublicTable | None = None) -> str | None:
    """Why a release is not linear in one secret column over public rows (None: it is)."""
    return linear_plan(release, public)[1]


def compile_linear(release: Release, public: PublicTable,
                   bounds: tuple[np.ndarray, np.ndarray] | None = None, *,
                   max_cells: int | None = None, plan: LinearPlan | None = None
                   ) -> LinearSystem:
    """Evaluate every public predicate with DuckDB and build the sparse system.

    ``max_cells`` refuses, before any predicate is evaluated, a system of more statistics x
    public rows than that (each statistic is a boolean vector over the rows while it is built).
    ``plan``: the release's ``linear_plan``, when the caller has it already.
    """
    with collector_paused():  # many small acyclic objects (one equation per statistic)
        return _compile_linear(release, public, bounds, max_cells, plan)


def _compile_linear(release: Release, public: PublicTable,
                    bounds: tuple[np.ndarray, np.ndarray] | None, max_cells: int | None,
                    plan: LinearPlan | None) -> LinearSystem:
    if plan is None:
        secret, parsed_list, ignored = _parse_all(release)  # NotLinear names the statistic
        plan = LinearPlan(secret, tuple(parsed_list), tuple(ignored))
    secret, parsed, ignored = plan.secret, plan.parsed, list(plan.ignored)
    n = public.rows
    _check_cells(release, len(parsed), n, max_cells)
    lower, upper = _record_bounds(secret, n, bounds)
    selected = evaluate_predicate_rows(release, public, [p.public_sql for p in parsed],
                                       [p.stat for p in parsed],
                                       [p.public_fill for p in parsed])
    equations: list[_Equation] = []
    for p, rows in zip(parsed, selected, strict=True):
        equation = _equation(p, rows, public)
        if equation is None:
            ignored.append(p.stat.id)
            continue
        equations.append(equation)
    return LinearSystem(
        matrix=_matrix([e.rows for e in equations], n),
        answers=np.array([float(e.value) for e in equations], dtype=float),
        exact_answers=tuple(e.value for e in equations),
        exact_errors=tuple(e.exact_error for e in equations),
        errors=np.array([e.error for e in equations], dtype=float),
        scales=np.array([e.scale for e in equations], dtype=float),
        kinds=tuple(e.kind for e in equations), stat_ids=tuple(e.stat_id for e in equations),
        secret=secret, lower=lower, upper=upper,
        public=public, ignored=tuple(ignored), user_bounds=bounds is not None,
    )


def _matrix(rows: list[np.ndarray], n: int) -> sp.csr_matrix:
    """The 0/1 matrix whose row ``i`` is 1 on the public rows ``rows[i]`` (sorted indices)."""
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(indices), dtype=np.float64), indices, indptr),
                         shape=(len(rows), n))


@dataclass(frozen=True)
class _Equation:
    """One statistic as a row of the system: the sum of ``x`` over the public rows ``rows``
    (sorted indices) is ``value`` (exactly, within
    ``error``, or up to noise of scale ``scale``)."""

    stat_id: str
    rows: np.ndarray
    value: Fraction  # AVG already multiplied by the group size, complements turned around
    error: float  # half-width of the guaranteed interval (inf: noisy)
    scale: float  # weight of the answer's noise
    kind: AnswerKind
    exact_error: Fraction = Fraction(0)  # the same half-width, exactly (0 when noisy)


def _check_cells(release: Release, statistics: int, n: int, max_cells: int | None) -> None:
    """Refuse a system over ``max_cells`` before any predicate is evaluated."""
    if max_cells is not None and statistics * n > max_cells:
        raise StatreconError(
            f"{release.source or 'release'}: {statistics:,} statistics x {n:,} public rows = "
            f"{statistics * n:,} matrix cells, over the limit of {max_cells:,}; raise it with "
            "--max-matrix-cells (LinearOptions.max_cells)")


def _record_bounds(secret: SecretColumn, n: int,
                   bounds: tuple[np.ndarray, np.ndarray] | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-record bounds: the secret's domain, narrowed by background knowledge if given."""
    lower = np.full(n, secret.lower, dtype=float)
    upper = np.full(n, secret.upper, dtype=float)
    if bounds is not None:
        lower = np.maximum(lower, bounds[0])
        upper = np.minimum(upper, bounds[1])
        bad = np.flatnonzero(lower > upper)
        if bad.size:
            raise StatreconError(
                f"bounds: record {int(bad[0]) + 1} has lower {lower[bad[0]]} above upper "
                f"{upper[bad[0]]} (after the domain of {secret.name})")
    return lower, upper


def _equation(p: _Parsed, rows: np.ndarray, public: PublicTable) -> _Equation | None:
    """The row of one statistic over the public rows ``rows`` (indices) its WHERE selects;
    None when its published answer says nothing about the secret (it is then listed as
    ignored)."""
    group = len(rows)
    counted = p.stat.query.column
    if p.aggregate is Aggregate.COUNT_DISTINCT and counted is not None and len(
            set(public.columns[counted])) != public.rows:
        raise NotLinear(f"{p.stat.where_text}: COUNT(DISTINCT {counted}) counts rows only "
                        f"when {counted} is unique in the public table ({public.source})",
                        statistic=p.stat.id)
    published = _published(p, group)
    if published is None:
        return None
    value, error, kind = published
    scale = 1.0
    if p.aggregate is Aggregate.AVG:
        if group == 0:
            raise StatreconError(f"{p.stat.where_text}: AVG over no public rows",
                                 statistic=p.stat.id)
        value, error, scale = value * group, error * group, float(group)
    if p.sign < 0:  # count(not target AND p) = |p| - count(target AND p)
        value = Fraction(group) - value
    if kind == "noisy":
        ans = p.stat.answer
        assert isinstance(ans, Noisy)
        param = next(iter(ans.distribution.values()), 1.0)
        return _Equation(p.stat.id, rows, value, float("inf"), float(param) * scale, kind)
    return _Equation(p.stat.id, rows, value, float(error), max(float(error), 0.0), kind,
                     Fraction(error))


def _published(p: _Parsed, group: int) -> tuple[Fraction, Fraction, AnswerKind] | None:
    """(value, error bound, kind) of a statistic's published answer over ``group`` public
    rows; None for an answer that carries no equation (empty group, suppressed sum)."""
    ans = p.stat.answer
    if isinstance(ans, Empty):
        if group:
            raise StatreconError(f"{p.stat.where_text}: published as empty, but "
                                 f"{group} public rows match its WHERE", statistic=p.stat.id)
        return None
    if isinstance(ans, Suppressed):
        if p.aggregate not in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT):
            return None
        return (Fraction(ans.min_count + ans.max_count, 2),
                Fraction(ans.max_count - ans.min_count, 2), "bounded")
    if isinstance(ans, Exact):
        return ans.value, Fraction(0), "exact"
    if isinstance(ans, Bounded):
        return ans.value, ans.error, "bounded"
    if isinstance(ans, Noisy):
        return ans.value, Fraction(0), "noisy"
    raise StatreconError(f"{p.stat.where_text} has no published value", statistic=p.stat.id)


def _parse_all(release: Release) -> tuple[SecretColumn, list[_Parsed], list[str]]:
    col = secret_column(release)
    parsed: list[_Parsed] = []
    ignored: list[str] = []
    target: frozenset[str] | None = None
    signs: dict[Any, tuple[int, frozenset[str]]] = {}
    for stat in release.statistics:
        if stat.answer is None:
            raise StatreconError(f"{stat.where_text} has no published value "
                                 "(fill it with statrecon tabulate)", statistic=stat.id)
        q = stat.query
        known, secret_parts = _split(q.where, col.name, stat)
        public_sql = " AND ".join(f"({s.sql})" for s in known) or "TRUE"
        fill = _public_fill(known)
        if q.aggregate in (Aggregate.COUNT, Aggregate.COUNT_DISTINCT):
            if not secret_parts:
                ignored.append(stat.id)  # a count of public rows: no information on the secret
                continue
            key = (tuple(secret_parts), target)
            known_sign = signs.get(key)  # the same condition gives the same sign
            if known_sign is None:
                known_sign = signs[key] = _count_sign(stat, col, secret_parts, target)
            sign, target = known_sign
            parsed.append(_Parsed(stat, public_sql, fill, sign, q.aggregate))
        elif q.aggregate in (Aggregate.SUM, Aggregate.AVG):
            if q.column != col.name:
                raise NotLinear(f"{stat.where_text}: aggregates {q.column}, not the secret",
                                statistic=stat.id)
            if secret_parts:
                raise NotLinear(f"{stat.where_text}: a condition on the secret inside a SUM/AVG "
                                "is not linear", statistic=stat.id)
            parsed.append(_Parsed(stat, public_sql, fill, 1, q.aggregate))
        else:
            raise NotLinear(f"{stat.where_text}: {q.aggregate.value.upper()} is not linear "
                            "(use the exact engine)", statistic=stat.id)
    return _secret(release, col, target), parsed, ignored


def _count_sign(stat: Statistic, col: Column, secret_parts: list[tuple[frozenset[str], bool]],
                target: frozenset[str] | None) -> tuple[int, frozenset[str]]:
    """+1 when a COUNT counts the release's target categories, -1 when it counts their
    complement; the target is the first COUNT's set. Returns (sign, target)."""
    if not col.is_categorical:
        raise NotLinear(f"{stat.where_text}: a condition on the numeric secret "
                        f"{col.name} is not linear in it; use SUM/AVG", statistic=stat.id)
    values = frozenset(col.values)
    chosen = values
    for part, negated in secret_parts:
        chosen = chosen & (values - part if negated else part)
    if target is None:
        target = chosen
    if chosen == target:
        sign = 1
    elif chosen == values - target:
        sign = -1
    else:
        raise NotLinear(
            f"{stat.where_text}: counts {col.name} in {sorted(chosen)}, another "
            f"statistic in {sorted(target)}; one indicator per release", statistic=stat.id)
    return sign, target


def _secret(release: Release, col: Column, target: frozenset[str] | None) -> SecretColumn:
    """The unknown the system solves for: the target's indicator, or the numeric column."""
    if col.is_categorical:
        if target is None:
            raise NotLinear(f"{release.source or 'release'}: no statistic counts a value of "
                            f"{col.name}")
        chosen_values = tuple(v for v in col.values if v in target)
        rest = [v for v in col.values if v not in target]
        other = rest[0] if len(rest) == 1 else "other"
        return SecretColumn(col.name, "indicator", 0.0, 1.0, chosen_values, other, col.values)
    # a COUNT with a condition on a numeric secret was refused above, by statistic
    lo = -np.inf if col.min is None else float(col.min)
    hi = np.inf if col.max is None else float(col.max)
    return SecretColumn(col.name, "integer" if col.is_integer else "real", lo, hi)


def _public_fill(known: list[KnownBool]) -> tuple[str, tuple[str, ...]] | None:
    """The public part as one template and its literals, when the statement-shape cache wrote
    every snippet of it from the same literals (see ``KnownBool.filled``); else None."""
    fills = [k.filled for k in known]
    if not fills or any(f is None for f in fills):
        return None
    if len(fills) == 1:  # the template object itself: its hash is computed once
        return fills[0]
    literals = fills[0][1]  # type: ignore[index]
    if any(f[1] is not literals for f in fills):  # type: ignore[index]
        return None
    return " AND ".join(f"({f[0]})" for f in fills), literals  # type: ignore[index]


def _split(pred: Predicate, secret: str, stat: Statistic
           ) -> tuple[list[KnownBool], list[tuple[frozenset[str], bool]]]:
    """A WHERE as AND-ed public SQL snippets and conditions on the secret."""
    known: list[KnownBool] = []
    secret_parts: list[tuple[frozenset[str], bool]] = []

    def walk(p: Predicate) -> None:
        if isinstance(p, And):
            for a in p.args:
                walk(a)
        elif isinstance(p, KnownBool):
            known.append(p)
        elif isinstance(p, Const):
            known.append(KnownBool("TRUE" if p.value else "FALSE"))
        elif isinstance(p, InSet) and p.column == secret:
            secret_parts.append((p.values, False))
        elif isinstance(p, Not) and isinstance(p.arg, InSet) and p.arg.column == secret:
            secret_parts.append((p.arg.values, True))
        elif isinstance(p, Compare):
            raise NotLinear(
                f"{stat.where_text}: a comparison on the secret {secret} is not linear in it "
                "(the linear engine takes public predicates AND secret = value, or SUM/AVG)",
                statistic=stat.id)
        else:
            raise NotLinear(
                f"{stat.where_text}: its WHERE is not linear in the secret {secret}: it must be "
                "a public predicate AND-ed with a secret condition, not inside OR/NOT",
                statistic=stat.id)

    walk(pred)
    return known, secret_parts
