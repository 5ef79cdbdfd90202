"""The CP-SAT record model: unknown rows over declared domains, statistics as constraints.

One row of the hidden table is a vector of integer variables (categoricals by their index);
each WHERE clause becomes one reified literal per row. Every auxiliary variable is fully
reified, i.e. a function of the row variables, so enumerating solutions of the model
enumerates datasets (duplicates are still removed by the caller as a safety net).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, Literal

from statrecon.errors import StatreconError
from statrecon.release.known import KnownData
from statrecon.release.model import Release
from statrecon.release.predicate import (
    Affine,
    And,
    Compare,
    Const,
    InSet,
    KnownBool,
    Not,
    Or,
    Predicate,
)
from statrecon.release.schema import Column, ColumnType
from statrecon.release.statistic import (
    Aggregate,
    Answer,
    Bounded,
    Empty,
    Exact,
    Noisy,
    Statistic,
    Suppressed,
)

Lit = Any  # a CP-SAT literal, or a Python bool for a constant
Value = Any  # a CP-SAT IntVar, or an int constant
RECORDS = "records"
_RADIX_LIMIT = 2**52

# What the exact engine does with a noisy answer: leave it out; read it as the interval of
# K standard deviations around it (sound for the event that the noise is that small); or
# weigh the dataset by its likelihood (maximum likelihood, an estimate).
NoiseMode = Literal["ignore", "bounds", "ml"]
NOISE_MODES: tuple[NoiseMode, ...] = ("ignore", "bounds", "ml")


@dataclass(frozen=True)
class NoisePolicy:
    """How noisy answers enter the model: ``mode`` and, for ``bounds``, ``k`` (standard
    deviations of half-width)."""

    mode: NoiseMode = "ignore"
    k: float | None = None

    def __post_init__(self) -> None:
        if self.mode == "bounds" and not (self.k is not None and math.isfinite(self.k)
                                          and self.k > 0):
            raise StatreconError(f"noise as bounds needs a positive number of standard "
                                 f"deviations, got {self.k}")


def noise_kind(ans: Noisy) -> tuple[str, float]:
    """The (kind, scale) of a noisy answer's distribution."""
    (kind, scale), = ans.distribution.items()
    return kind, float(scale)


def noise_sd(ans: Noisy) -> float:
    """The standard deviation of a noisy answer's noise, from its scale parameter.

    gaussian σ: σ. laplace b (density ∝ exp(-|x|/b)): √2·b. geometric b, the two-sided
    geometric (discrete Laplace) with P(k) ∝ exp(-|k|/b), i.e. α = e^(-1/b): √(2α)/(1-α)
    (≈ √2·b for large b). uniform w (uniform on [-w, w]): w/√3.

    >>> round(noise_sd(Noisy(Fraction(0), {"laplace": 1.0})), 6)
    1.414214
    >>> round(noise_sd(Noisy(Fraction(0), {"geometric": 1.0})), 6)
    1.356962
    """
    kind, scale = noise_kind(ans)
    if kind == "gaussian":
        return scale
    if kind == "laplace":
        return math.sqrt(2) * scale
    if kind == "geometric":
        alpha = math.exp(-1 / scale)
        return math.sqrt(2 * alpha) / (1 - alpha)
    if kind == "uniform":
        return scale / math.sqrt(3)
    raise StatreconError(f"unknown noise distribution '{kind}'")


def noise_half_width(ans: Noisy, k: float) -> Fraction:
    """Half-width of the interval ``value ± k sd`` (rounded outwards); for uniform noise at
    most its bound w, which holds with probability 1."""
    kind, scale = noise_kind(ans)
    if kind == "uniform" and Fraction(k) ** 2 >= 3:
        return Fraction(scale)
    if kind == "gaussian":
        return Fraction(k) * Fraction(scale)  # exact: no rounding to widen
    return Fraction(math.nextafter(k * noise_sd(ans), math.inf))


def noise_within(ans: Noisy, k: float) -> float:
    """Probability that this answer's noise lies within ``noise_half_width``."""
    kind, scale = noise_kind(ans)
    half = float(noise_half_width(ans, k))
    if kind == "gaussian":
        return math.erf(half / (scale * math.sqrt(2)))
    if kind == "laplace":
        return 1 - math.exp(-half / scale)
    if kind == "geometric":  # integer noise: |X| <= floor(half)
        alpha = math.exp(-1 / scale)
        return 1 - 2 * alpha ** (math.floor(half) + 1) / (1 + alpha)
    return min(1.0, half / scale)  # uniform on [-w, w]


def _as_bounds(ans: Answer | None, policy: NoisePolicy) -> Answer | None:
    """A noisy answer read as an interval under ``bounds``; any other answer unchanged."""
    if isinstance(ans, Noisy) and policy.mode == "bounds":
        assert policy.k is not None
        return Bounded(ans.value, noise_half_width(ans, policy.k))
    return ans


@dataclass(frozen=True)
class Bounds:
    """Row-count range and where it comes from (labels usable in a conflict set)."""

    low: int
    high: int
    source: tuple[str, ...] = ()


def row_count_bounds(release: Release, known: KnownData,
                     noise: NoisePolicy | None = None) -> Bounds:
    """How many rows the hidden table can have: public table, records, or a COUNT(*) (a
    noisy one too when its noise is read as bounds)."""
    if known.public is not None:
        return Bounds(known.public.rows, known.public.rows, ("public table",))
    if release.records is not None:
        return Bounds(release.records.min, release.records.max, (RECORDS,))
    low, high, source = 0, None, []
    for s in release.statistics:
        if s.query.aggregate is Aggregate.COUNT and s.query.where == Const(True):
            ans = _as_bounds(s.answer, noise or NoisePolicy())
            if isinstance(ans, Exact):
                lo_f = hi_f = ans.value
            elif isinstance(ans, Bounded):
                lo_f, hi_f = ans.low, ans.high
            elif isinstance(ans, Suppressed):
                lo_f, hi_f = Fraction(ans.min_count), Fraction(ans.max_count)
            else:
                continue
            low = max(low, math.ceil(lo_f))
            high = math.floor(hi_f) if high is None else min(high, math.floor(hi_f))
            source.append(s.id)
    if high is None:
        raise StatreconError(
            f"{release.source or 'release'}: the row count is not bounded: add 'records: N' "
            "(or {min, max}) or a statistic SELECT COUNT(*) FROM ... without WHERE"
        )
    return Bounds(min(low, max(high, 0)), max(high, 0), tuple(source))


DEFAULT_MAX_MODEL_SIZE = 3_000_000  # terms: a few hundred bytes and 10-20 us of building each


@dataclass(frozen=True)
class ModelSize:
    """What the model of a release would hold, estimated from the release alone (cheap)."""

    rows: int
    columns: int
    statistics: int
    terms: int  # rows x (row variables + literals of constraints and statistics per row)


def model_size(release: Release, known: KnownData,
               noise: NoisePolicy | None = None) -> ModelSize:
    """Estimate the model before building it: a huge COUNT or many rows must not build."""
    noise = noise or NoisePolicy()
    rows = row_count_bounds(release, known, noise).high
    per_row = sum(2 + (len(c.values) if c.is_categorical else 0) for c in release.schema.unknown)
    nodes: set[Predicate] = set()  # literals are built once per row and predicate (cached)
    for c in release.constraints:
        _collect(c.predicate, nodes)
    live = [s for s in release.statistics
            if noise.mode != "ignore" or not isinstance(s.answer, Noisy)]
    for s in live:
        _collect(s.query.where, nodes)
    per_row += sum(_node_terms(p) for p in nodes) + len(release.constraints)
    per_row += sum(_statistic_terms(s) for s in live)
    return ModelSize(rows, len(release.schema.columns), len(release.statistics),
                     rows * max(per_row, 1))


def check_model_size(release: Release, known: KnownData, limit: int | None,
                     noise: NoisePolicy | None = None) -> None:
    """One clear error, before anything is built, when the model would be over ``limit``."""
    if limit is None:
        return
    size = model_size(release, known, noise)
    if size.terms <= limit:
        return
    raise StatreconError(
        f"{release.source or 'release'}: the exact model would have {_amount(size.rows)} rows "
        f"x {size.columns} columns x {size.statistics} statistics (about "
        f"{_amount(size.terms)} terms), over the limit of {limit:,}: bound the rows with "
        "'records:' or raise the limit with --max-model-size (ExactOptions.max_model_size)"
    )


def _amount(n: int) -> str:
    return f"{n:,}" if n < 10**12 else f"10^{len(str(n)) - 1}"


def _collect(pred: Predicate, seen: set[Predicate]) -> None:
    """Every distinct sub-predicate (iteratively: AND/OR chains may be long)."""
    stack = [pred]
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        if isinstance(p, Not):
            stack.append(p.arg)
        elif isinstance(p, And | Or):
            stack.extend(p.args)


def _node_terms(pred: Predicate) -> int:
    """Variables and constraints one predicate node adds per row."""
    if isinstance(pred, Const | KnownBool | Not):
        return 0
    if isinstance(pred, And | Or):
        return 3
    if isinstance(pred, InSet):
        return 3 if len(pred.values) > 1 else 0
    return 3  # a comparison: its literal and two reified constraints


def _statistic_terms(s: Statistic) -> int:
    """Per row: the match literal (presence AND predicate) and the aggregate's terms."""
    extra = {Aggregate.MEDIAN: 14, Aggregate.MIN: 4, Aggregate.MAX: 4, Aggregate.SUM: 3,
             Aggregate.AVG: 3}.get(s.query.aggregate, 0)
    return 3 + extra


class RecordModel:
    """Builds the CP-SAT model for a release; keeps handles to rows, literals and switches.

    ``check`` is called between rows and statistics while building (a deadline raises there);
    callers estimate the size first (``check_model_size``).
    """

    def __init__(
        self,
        release: Release,
        known: KnownData,
        *,
        symmetry_breaking: bool = True,
        switches: bool = False,
        check: Callable[[], None] | None = None,
        noise: NoisePolicy | None = None,
    ) -> None:
        for col in release.schema.unknown:
            if not (col.is_integer or col.is_categorical):
                raise StatreconError(
                    f"column '{col.name}' is {col.type.value}-valued: the exact engine needs "
                    "integer or categorical domains for unknown columns"
                )
        # lazy: OR-Tools loads when a model is built, not when its size is estimated (the
        # linear route checks the exact route's size and never builds one)
        from ortools.sat.python import cp_model

        self.release = release
        self.known = known
        self.model = cp_model.CpModel()
        self.columns: tuple[Column, ...] = release.schema.columns
        self.unknown: tuple[Column, ...] = release.schema.unknown
        self.noise = noise or NoisePolicy()
        self.bounds = row_count_bounds(release, known, self.noise)
        self.n = self.bounds.high
        self.switches: dict[str, Any] = {}
        self._use_switches = switches
        self._cache: dict[tuple[int, Any], Lit] = {}
        self._false = self.model.new_bool_var("false")
        self.model.add(self._false == 0)
        self.ignored: list[str] = []
        self.noisy: list[str] = []  # noisy statistics the model uses (as bounds or weighed)
        self.soft: list[tuple[Statistic, Noisy]] = []  # weighed by their likelihood (ml)
        self._domains: dict[int, tuple[int, int]] = {}
        self._check = check or (lambda: None)
        self._rows()
        if symmetry_breaking:
            self._break_symmetry()
        for i, c in enumerate(release.constraints):
            self._check()
            enf = self._switch(c.label(i))
            for r in range(self.n):
                self._require(self._and(self.present[r], self.lit(r, Not(c.predicate))), enf)
        for s in release.statistics:
            self._check()
            self._statistic(s)
        self.objective = self._likelihood() if self.soft else None

    # --- rows ---------------------------------------------------------------------------
    def _rows(self) -> None:
        m, n = self.model, self.n
        fixed = self.known.public is not None or (
            not self._use_switches and self.bounds.low == n
        )
        self.present: list[Lit] = []
        for r in range(n):
            if fixed or (not self._use_switches and r < self.bounds.low):
                self.present.append(True)
            else:
                self.present.append(m.new_bool_var(f"present[{r}]"))
        for r in range(n - 1):  # present rows come first
            if not isinstance(self.present[r], bool) and not isinstance(self.present[r + 1], bool):
                m.add_implication(self.present[r + 1], self.present[r])
        if self._use_switches and self.known.public is None and self.bounds.low > 0:
            enf = self._switch(self.bounds.source[0])
            m.add(sum(self._as_int(p) for p in self.present) >= self.bounds.low).only_enforce_if(
                enf
            )
        self.x: list[dict[str, Value]] = []
        self.onehot: list[dict[str, list[Any]]] = []
        for r in range(n):
            if r % 256 == 0:
                self._check()
            row: dict[str, Value] = {}
            hots: dict[str, list[Any]] = {}
            for col in self.columns:
                if col.known:
                    assert self.known.public is not None
                    raw = self.known.public.columns[col.name][r]
                    row[col.name] = raw if col.type is ColumnType.REAL else col.encode(raw)
                    continue
                lo, hi = self._domain(col)
                var = m.new_int_var(lo, hi, f"{col.name}[{r}]")
                self._domains[var.index] = (lo, hi)
                row[col.name] = var
                if col.is_categorical:
                    hot = [m.new_bool_var(f"{col.name}[{r}]={v}") for v in col.values]
                    m.add_exactly_one(hot)
                    m.add(var == sum(i * h for i, h in enumerate(hot)))
                    hots[col.name] = hot
                if not isinstance(self.present[r], bool):
                    # absent rows take one canonical value, so they never create duplicates
                    m.add(var == lo).only_enforce_if(~self.present[r])
            self.x.append(row)
            self.onehot.append(hots)

    @staticmethod
    def _domain(col: Column) -> tuple[int, int]:
        if col.is_categorical:
            return 0, len(col.values) - 1
        assert col.min is not None and col.max is not None
        return int(col.min), int(col.max)

    def _break_symmetry(self) -> None:
        """Rows with equal known values are interchangeable: keep them in lexicographic order."""
        groups: dict[tuple[Any, ...], list[int]] = {}
        for r in range(self.n):
            key = tuple(self.x[r][c.name] for c in self.columns if c.known)
            groups.setdefault(key, []).append(r)
        if not self.unknown:
            return
        sizes = [self._domain(c)[1] - self._domain(c)[0] + 1 for c in self.unknown]
        radix = math.prod(sizes) < _RADIX_LIMIT
        for rows in groups.values():
            for a, b in itertools.pairwise(rows):
                enf = [] if isinstance(self.present[b], bool) else [self.present[b]]
                if radix:
                    self.model.add(self._key(a) <= self._key(b)).only_enforce_if(enf)
                else:
                    self._lex_leq(a, b, enf)

    def _key(self, r: int) -> Any:
        key, mult = 0, 1
        for col in reversed(self.unknown):
            lo, hi = self._domain(col)
            key = key + mult * (self.x[r][col.name] - lo)
            mult *= hi - lo + 1
        return key

    def _lex_leq(self, a: int, b: int, enf: list[Any]) -> None:
        m = self.model
        prefix_equal: Lit = True
        for col in self.unknown:
            u, v = self.x[a][col.name], self.x[b][col.name]
            m.add(u <= v).only_enforce_if([*enf, *([] if prefix_equal is True else
                                                     [prefix_equal])])
            eq = m.new_bool_var("")
            m.add(u == v).only_enforce_if(eq)
            m.add(u != v).only_enforce_if(~eq)
            prefix_equal = self._and(prefix_equal, eq)

    # --- literals -----------------------------------------------------------------------
    def _switch(self, label: str) -> list[Any]:
        if not self._use_switches:
            return []
        if label not in self.switches:
            self.switches[label] = self.model.new_bool_var(f"use[{label}]")
        return [self.switches[label]]

    def _require(self, forbidden: Lit, enf: list[Any]) -> None:
        """Make ``forbidden`` false (under the enforcement literals)."""
        if forbidden is False:
            return
        if forbidden is True:
            self.model.add_bool_or([self._false]).only_enforce_if(enf)
            return
        self.model.add_bool_or([~forbidden]).only_enforce_if(enf)

    def _forbid(self, enf: list[Any]) -> None:
        self.model.add_bool_or([self._false]).only_enforce_if(enf)

    @staticmethod
    def _as_int(lit: Lit) -> Any:
        return int(lit) if isinstance(lit, bool) else lit

    def _and(self, a: Lit, b: Lit) -> Lit:
        return self._conj([a, b])

    def _conj(self, lits: list[Lit]) -> Lit:
        if any(x is False for x in lits):
            return False
        rest = [x for x in lits if x is not True]
        if not rest:
            return True
        if len(rest) == 1:
            return rest[0]
        key = (-1, ("and", tuple(sorted(x.index for x in rest))))
        if key not in self._cache:
            b = self.model.new_bool_var("")
            self.model.add_bool_and(rest).only_enforce_if(b)
            self.model.add_bool_or([~x for x in rest]).only_enforce_if(~b)
            self._cache[key] = b
        return self._cache[key]

    def _disj(self, lits: list[Lit]) -> Lit:
        return self._not(self._conj([self._not(x) for x in lits]))

    @staticmethod
    def _not(a: Lit) -> Lit:
        return (not a) if isinstance(a, bool) else ~a

    def lit(self, r: int, pred: Predicate) -> Lit:
        """The literal 'row r satisfies pred' (ignores presence)."""
        key = (r, pred)
        if key in self._cache:
            return self._cache[key]
        out: Lit
        if isinstance(pred, Const):
            out = pred.value
        elif isinstance(pred, KnownBool):
            out = bool(self.known.value(pred.sql, r))
        elif isinstance(pred, Not):
            out = self._not(self.lit(r, pred.arg))
        elif isinstance(pred, And):
            out = self._conj([self.lit(r, a) for a in pred.args])
        elif isinstance(pred, Or):
            out = self._disj([self.lit(r, a) for a in pred.args])
        elif isinstance(pred, InSet):
            col = self.release.schema.column(pred.column)
            hots = self.onehot[r][col.name]
            chosen = [hots[col.values.index(v)] for v in pred.values]
            out = (False if not chosen else True if len(chosen) == len(hots)
                   else chosen[0] if len(chosen) == 1 else self._disj(chosen))
        elif isinstance(pred, Compare):
            out = self._compare(r, pred)
        else:  # pragma: no cover - the predicate union is closed
            raise TypeError(pred)
        self._cache[key] = out
        return out

    def _compare(self, r: int, pred: Compare) -> Lit:
        aff = pred.affine
        const = aff.constant + sum(
            (c * _number(self.known.value(s, r)) for s, c in aff.known), Fraction(0)
        )
        scale = math.lcm(*(c.denominator for _, c in aff.columns)) if aff.columns else 1
        coefs = [(self.x[r][n], int(c * scale)) for n, c in aff.columns]
        rhs = -const * scale  # sum(coef * x) OP rhs
        expr = sum(a * v for v, a in coefs)
        lo = sum(a * (self._lo(v) if a > 0 else self._hi(v)) for v, a in coefs)
        hi = sum(a * (self._hi(v) if a > 0 else self._lo(v)) for v, a in coefs)
        op = pred.op
        if op in ("=", "<>"):
            if rhs.denominator != 1 or not lo <= rhs <= hi:
                return op == "<>"
            k = int(rhs)
            if lo == hi:
                return (lo == k) == (op == "=")
            b = self.model.new_bool_var("")
            self.model.add(expr == k).only_enforce_if(b)
            self.model.add(expr != k).only_enforce_if(~b)
            return b if op == "=" else ~b
        k = math.ceil(rhs) - 1 if op == "<" else math.floor(rhs)  # expr <= k
        if hi <= k:
            return True
        if lo > k:
            return False
        b = self.model.new_bool_var("")
        self.model.add(expr <= k).only_enforce_if(b)
        self.model.add(expr >= k + 1).only_enforce_if(~b)
        return b

    def _lo(self, v: Value) -> int:
        return v if isinstance(v, int) else self._domains[v.index][0]

    def _hi(self, v: Value) -> int:
        return v if isinstance(v, int) else self._domains[v.index][1]

    def match(self, r: int, pred: Predicate) -> Lit:
        return self._and(self.present[r], self.lit(r, pred))

    # --- statistics ---------------------------------------------------------------------
    def _published(self, s: Statistic) -> Exact | Bounded | Suppressed | Empty | None:
        """The answer to model as a constraint; None for a noisy one that is ignored or, in
        ml mode, weighed by its likelihood (``soft``). Uniform noise is bounded (±w holds
        with probability 1), so ml mode keeps it as a constraint."""
        ans = s.answer
        if ans is None:
            raise StatreconError(f"{s.where_text} has no published value (run statrecon tabulate)")
        if not isinstance(ans, Noisy):
            return ans
        mode = self.noise.mode
        if mode == "ignore":
            self.ignored.append(s.id)
            return None
        self.noisy.append(s.id)
        if mode == "bounds":
            out = _as_bounds(ans, self.noise)
            assert isinstance(out, Bounded)
            return out
        kind, scale = noise_kind(ans)
        if kind == "uniform":
            return Bounded(ans.value, Fraction(scale))
        self.soft.append((s, ans))
        return None

    def _statistic(self, s: Statistic) -> None:
        ans = self._published(s)
        if ans is None:
            return
        enf = self._switch(s.id)
        m = self.model
        q = s.query
        matches = [self.match(r, q.where) for r in range(self.n)]
        count = sum(self._as_int(x) for x in matches)
        if isinstance(ans, Suppressed):
            m.add(count >= ans.min_count).only_enforce_if(enf)
            m.add(count <= ans.max_count).only_enforce_if(enf)
            return
        if isinstance(ans, Empty):
            m.add(count == 0).only_enforce_if(enf)
            return
        low, high = (ans.value, ans.value) if isinstance(ans, Exact) else (ans.low, ans.high)
        agg = q.aggregate
        if q.column and self.release.schema.column(q.column).type is ColumnType.REAL:
            raise StatreconError(
                f"{s.where_text}: {agg.value.upper()}({q.column}) over a real-valued column is "
                "not supported by the exact engine"
            )
        if agg is Aggregate.COUNT:
            self._between(count, low, high, enf)
        elif agg is Aggregate.COUNT_DISTINCT:
            assert q.column is not None
            self._count_distinct(q.column, matches, low, high, enf)
        elif agg in (Aggregate.SUM, Aggregate.AVG):
            assert q.column is not None
            total = sum(self._masked(r, q.column, matches[r]) for r in range(self.n))
            if agg is Aggregate.SUM:
                self._between(total, low, high, enf)
            else:
                m.add(count >= 1).only_enforce_if(enf)
                m.add(low.denominator * total >= low.numerator * count).only_enforce_if(enf)
                m.add(high.denominator * total <= high.numerator * count).only_enforce_if(enf)
        elif agg is Aggregate.MEDIAN:
            assert q.column is not None
            self._median(q.column, matches, count, low, high, enf)
        elif agg in (Aggregate.MIN, Aggregate.MAX):
            assert q.column is not None
            self._extreme(agg, q.column, matches, low, high, enf)

    def _count_distinct(self, column: str, matches: list[Lit], low: Fraction, high: Fraction,
                        enf: list[Any]) -> None:
        """COUNT(DISTINCT column) of a public column: one literal per value some match has."""
        assert self.known.public is not None
        by_value: dict[Any, list[Lit]] = {}
        for r, v in enumerate(self.known.public.columns[column]):
            by_value.setdefault(v, []).append(matches[r])
        distinct = sum(self._as_int(self._disj(lits)) for lits in by_value.values())
        self._between(distinct, low, high, enf)

    def _between(self, expr: Any, low: Fraction, high: Fraction, enf: list[Any]) -> None:
        lo, hi = math.ceil(low), math.floor(high)
        if lo > hi:
            self._forbid(enf)
            return
        self.model.add(expr >= lo).only_enforce_if(enf)
        self.model.add(expr <= hi).only_enforce_if(enf)

    def _masked(self, r: int, column: str, match: Lit) -> Any:
        """``column`` of row r if it matches, else 0."""
        v = self.x[r][column]
        if match is False:
            return 0
        if isinstance(v, int):
            return v * self._as_int(match)
        if match is True:
            return v
        lo, hi = self._lo(v), self._hi(v)
        y = self.model.new_int_var(min(lo, 0), max(hi, 0), "")
        self._domains[y.index] = (min(lo, 0), max(hi, 0))
        self.model.add(y == v).only_enforce_if(match)
        self.model.add(y == 0).only_enforce_if(~match)
        return y

    def _column_range(self, column: str) -> tuple[int, int]:
        col = self.release.schema.column(column)
        if col.known:
            assert self.known.public is not None
            values = [int(v) for v in self.known.public.columns[column]] or [0]
            return min(values), max(values)
        return self._domain(col)

    def _median(
        self, column: str, matches: list[Lit], count: Any, low: Fraction, high: Fraction,
        enf: list[Any],
    ) -> None:
        """MEDIAN = (a_lo + a_hi) / 2 with a_p the p-th smallest matching value.

        a_p = L  <=>  #{matching < L} <= p - 1  and  #{matching <= L} >= p.
        """
        m = self.model
        lo, hi = self._column_range(column)
        n = self.n
        m.add(count >= 1).only_enforce_if(enf)
        ends = []
        for name, offset in (("lo", 1), ("hi", 2)):
            # p_lo = floor((C + 1) / 2), p_hi = floor(C / 2) + 1
            p = m.new_int_var(0, n + 1, f"median_{name}_position")
            m.add(2 * p - count >= offset - 1)
            m.add(2 * p - count <= offset)
            a = m.new_int_var(lo, hi, f"median_{name}")
            less, leq = [], []
            for r in range(n):
                v = self.x[r][column]
                lt = m.new_bool_var("")
                m.add(v <= a - 1).only_enforce_if(lt)
                m.add(v >= a).only_enforce_if(~lt)
                le = m.new_bool_var("")
                m.add(v <= a).only_enforce_if(le)
                m.add(v >= a + 1).only_enforce_if(~le)
                less.append(self._as_int(self._and(matches[r], lt)))
                leq.append(self._as_int(self._and(matches[r], le)))
            m.add(sum(less) <= p - 1).only_enforce_if(enf)
            m.add(sum(leq) >= p).only_enforce_if(enf)
            ends.append(a)
        self._between(ends[0] + ends[1], 2 * low, 2 * high, enf)

    def _extreme(
        self, agg: Aggregate, column: str, matches: list[Lit], low: Fraction, high: Fraction,
        enf: list[Any],
    ) -> None:
        """MIN in [low, high]: every match >= low and some match <= high (MAX mirrored)."""
        is_min = agg is Aggregate.MIN
        bound_all = math.ceil(low) if is_min else math.floor(high)
        bound_some = math.floor(high) if is_min else math.ceil(low)
        witnesses = []
        for r in range(self.n):
            if matches[r] is False:
                continue
            v = self.x[r][column]
            enforce = [*enf] + ([] if matches[r] is True else [matches[r]])
            if isinstance(v, int):
                ok = v >= bound_all if is_min else v <= bound_all
                if not ok:
                    self._forbid(enforce)
                reaches = v <= bound_some if is_min else v >= bound_some
                witnesses.append(matches[r] if reaches else False)
                continue
            if is_min:
                self.model.add(v >= bound_all).only_enforce_if(enforce)
            else:
                self.model.add(v <= bound_all).only_enforce_if(enforce)
            pred = Compare(
                Affine.of_column(column).plus(Affine.of_constant(Fraction(-bound_some)))
                if is_min else
                Affine.of_constant(Fraction(bound_some)).plus(
                    Affine.of_column(column).scaled(Fraction(-1))),
                "<=",
            )
            witnesses.append(self._and(matches[r], self.lit(r, pred)))
        live = [w for w in witnesses if w is not False]
        if any(w is True for w in live):
            return
        if not live:
            self._forbid(enf)
            return
        self.model.add_bool_or(live).only_enforce_if(enf)

    # --- likelihood (ml mode) -------------------------------------------------------------
    def _likelihood(self) -> Likelihood:
        """The negative log-likelihood of the soft (noisy) statistics, as an integer CP-SAT
        objective: laplace and geometric noise cost |dev|/b, gaussian dev²/(2σ²), with dev the
        published minus the dataset's answer. Weights are scaled to integers (``scale``), with
        six significant digits while the objective stays below 2^53 (exact in a float)."""
        terms = [self._deviation(s, ans) for s, ans in self.soft]
        top = max(c for c, _, _ in terms)
        scale = 1e6 / top
        while True:
            weights = [max(1, round(c * scale)) for c, _, _ in terms]
            if sum(w * most for w, (_, _, most) in zip(weights, terms, strict=True)) < 2**53:
                break
            scale /= 10
            if scale * top < 1:
                s = self.soft[0][0]
                raise StatreconError(
                    f"{s.where_text}: the answers are too wide for maximum likelihood (the "
                    "objective would overflow); use --noise-mode bounds", statistic=s.id)
        expr = sum(w * cost for w, (_, cost, _) in zip(weights, terms, strict=True))
        return Likelihood(expr, scale, tuple(weights))

    def _deviation(self, s: Statistic, ans: Noisy) -> tuple[float, Any, int]:
        """(cost per unit, cost variable, largest cost) of one soft statistic."""
        expr, lo, hi = self._answer_expr(s)
        p, q = ans.value.numerator, ans.value.denominator
        most = max(abs(p - q * lo), abs(p - q * hi))  # |q·dev| can be no larger
        m = self.model
        t = m.new_int_var(-most, most, f"dev[{s.id}]")
        m.add(t == p - q * expr)  # q·(published - answer)
        kind, scale = noise_kind(ans)
        if kind == "gaussian":
            if most > 2**26:
                raise StatreconError(f"{s.where_text}: its answer is too wide for maximum "
                                     "likelihood; use --noise-mode bounds", statistic=s.id)
            sq = m.new_int_var(0, most * most, "")
            m.add_multiplication_equality(sq, [t, t])
            return 1 / (2 * q * q * scale * scale), sq, most * most
        a = m.new_int_var(0, most, "")
        m.add_abs_equality(a, t)
        return 1 / (q * scale), a, most  # laplace, geometric: -log P = |dev|/b + constant

    def _answer_expr(self, s: Statistic) -> tuple[Any, int, int]:
        """(expression, smallest, largest) of a COUNT, COUNT(DISTINCT) or SUM over the rows."""
        q = s.query
        matches = [self.match(r, q.where) for r in range(self.n)]
        if q.aggregate is Aggregate.COUNT:
            return sum(self._as_int(x) for x in matches), 0, self.n
        if q.aggregate is Aggregate.COUNT_DISTINCT and self.known.public is not None:
            assert q.column is not None
            by_value: dict[Any, list[Lit]] = {}
            for r, v in enumerate(self.known.public.columns[q.column]):
                by_value.setdefault(v, []).append(matches[r])
            return sum(self._as_int(self._disj(ls)) for ls in by_value.values()), 0, self.n
        if q.aggregate is Aggregate.SUM and q.column is not None and (
                self.release.schema.column(q.column).type is not ColumnType.REAL):
            items = [self._masked(r, q.column, matches[r]) for r in range(self.n)]
            cells = [self.x[r][q.column] for r in range(self.n)]
            lo = sum(min(0, self._lo(v)) for v in cells)
            hi = sum(max(0, self._hi(v)) for v in cells)
            return sum(items), int(lo), int(hi)
        raise StatreconError(
            f"{s.where_text}: maximum likelihood weighs noisy COUNT and SUM statistics over "
            f"integer columns; a noisy {q.aggregate.value.upper()} needs --noise-mode bounds",
            statistic=s.id)

    # --- reading solutions --------------------------------------------------------------
    def indexed_dataset(self, value_at: Callable[[int], int],
                        value_of: Any) -> tuple[tuple[int, ...], ...]:
        """``dataset``, read by variable index where every value is a whole-number constant
        or a plain variable (``value_at``: a solution callback's ``SolutionIntegerValue``;
        an enumeration reads every solution, and the wrapper around each value was most of
        its time); else ``dataset(value_of)``."""
        if self._slots is None:
            return self.dataset(value_of)
        rows = []
        for present, slots in self._slots:
            if present >= 0 and not value_at(present):
                continue
            rows.append(tuple(v if i < 0 else value_at(i) for v, i in slots))
        return tuple(sorted(rows))

    @cached_property
    def _slots(self) -> list[tuple[int, tuple[tuple[int, int], ...]]] | None:
        """Per row: its presence variable's index (-1: always there) and per column
        (constant, -1) or (0, variable index); None if some value is neither."""
        from ortools.sat.python import cp_model

        def plain(v: Any) -> bool:
            return isinstance(v, cp_model.IntVar) and v.index >= 0

        out = []
        for r in range(self.n):
            p = self.present[r]
            values = [self.x[r][c.name] for c in self.columns]
            if not (p is True or plain(p)) or not all(
                    (isinstance(v, int) and not isinstance(v, bool)) or plain(v)
                    for v in values):
                return None
            out.append((-1 if p is True else p.index,
                        tuple((v, -1) if isinstance(v, int) else (0, v.index)
                              for v in values)))
        return out

    def dataset(self, value_of: Any) -> tuple[tuple[int, ...], ...]:
        """The solution as a canonical multiset: sorted tuples of encoded values, present rows."""
        rows = []
        for r in range(self.n):
            p = self.present[r]
            if p is not True and not value_of(p):
                continue
            rows.append(tuple(
                v if isinstance(v, int) else int(value_of(v))
                for v in (self.x[r][c.name] for c in self.columns)
            ))
        return tuple(sorted(rows))


@dataclass(frozen=True)
class Likelihood:
    """The ml objective: ``expr / scale`` is the negative log-likelihood of the noisy answers
    (up to a constant), with the integer ``weights`` of the soft statistics."""

    expr: Any
    scale: float
    weights: tuple[int, ...]


def _number(v: Fraction | bool) -> Fraction:
    return Fraction(int(v)) if isinstance(v, bool) else v
