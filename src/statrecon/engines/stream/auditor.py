"""Streaming query auditor: exact determinability, updated one statistic at a time.

A query interface that answers SUM/COUNT statistics one by one must know, before answering,
whether the answer would pin some record's secret (the difference attack: q1 - q2 - q3 = x2).
Recomputing a reduced row echelon form after every statistic costs a full elimination each
time; here the row space is kept as a *reduced basis* and each statistic costs one reduction
plus one rank-one update of the basis rows that hold the new pivot column.

Invariant: every basis row has a pivot column with coefficient 1 and no other basis row has a
non-zero in that column. A vector v of the row space is then ``sum(v[p] * row_p)``, so e_j lies
in the row space (x_j is the same in every solution) iff j is a pivot whose row is e_j itself.
Each basis row also carries its expression as a combination of the statistics and the same
combination of their answers, so a determined record comes with its value and certificate.

Two arithmetics keep that basis:

* ``rational`` — exact rationals (FLINT ``fmpq``) in sparse dicts keyed by column. Every
  statement is proven. Fast while the numbers stay small (ranges, conjunctions, difference
  attacks), but the reduced basis of *random* subsets holds ratios of large minors (hundreds
  of digits at rank 500), and then one statistic can take seconds.
* ``modular`` — the same elimination over GF(p) for two random 31-bit primes at once (dense
  numpy rows, 16 bytes per basis row and record). Independence, consistency and
  determinability are decided modulo p; every zero test that steers the elimination is taken
  under both primes, and a disagreement (a prime dividing a number of the rational elimination)
  re-draws the primes and replays the stream. Every reported disclosure and conflict is then
  proven over the rationals: its certificate is rebuilt (Chinese remainders plus rational
  reconstruction, or an exact FLINT solve on the certificate's statistics) and checked exactly
  against the statistics' rows. A record reported *not* determined could only be wrong if
  both primes divide the same non-zero rational of the elimination: for a B-bit number that
  has probability below (B / 30 / 5e7)^2 per test, about 2e-12 for B = 2000 (random primes,
  drawn from the OS so that a query author cannot aim at them).

``auto`` (the default) starts rational and switches to modular (replaying the accepted rows)
once the exact numbers get expensive; records already proven keep their certificates.
The auditor is pure: no I/O, no SQL.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import flint
import numpy as np

from statrecon.engines.solvers.elimination import Plan, SparseBasis
from statrecon.engines.solvers.modp import random_prime as _random_prime
from statrecon.engines.solvers.modp import reconstruct

Status = Literal["accepted", "denied", "inconsistent"]
Num = int | Fraction
Row = dict[int, Num]  # column (record) -> coefficient; ints stay ints (fast path)
Arithmetic = Literal["auto", "rational", "modular"]  # what keeps the basis (module docstring)
ARITHMETICS: tuple[str, ...] = ("auto", "rational", "modular")
_ZERO = flint.fmpq(0)
_ONE = flint.fmpq(1)
# auto: leave exact arithmetic once a step gets expensive (entries touched x (1 + bits/32),
# 5e4 is about 50 ms of FLINT work) *and* its numbers grow past _SWITCH_BITS: interval, nested
# and difference statistics keep coefficients like 0, ±1, 1/2 and stay exact however large;
# random subsets grow a few bits per statistic. Small systems never reach the cost.
_SWITCH_COST = 50_000
_SWITCH_BITS = 4
_EXACT_SOLVE_LIMIT = 250_000  # entries of the exact fallback solve for one certificate
_PRIMES = 2  # 31-bit primes in the modular basis
_MODULAR_BYTES = 2**31  # auto stays exact where dense modular rows would outgrow this


@dataclass(frozen=True)
class Disclosure:
    """x[index] = value, proven when ``proven``: the combination ``certificate`` of the
    statistics' rows is exactly e_index, and the same combination of their answers is value.

    ``proven`` is False only in modular mode when the certificate is too large to rebuild
    exactly (dense random systems near full rank); ``value`` is then the rational reconstructed
    from the residues, or None when even that fails.
    """

    index: int  # record, 0-based
    value: Fraction | None
    certificate: tuple[tuple[str, Fraction], ...]  # (statistic id, coefficient)
    proven: bool = True


@dataclass(frozen=True)
class AuditStep:
    """What one statistic did to the row space.

    ``accepted``: added (or redundant and consistent); ``newly_determined`` lists the records it
    pinned. ``denied`` (deny mode only): not added; ``would_disclose`` says what it would have
    pinned. ``inconsistent``: its row is a combination of accepted statistics but its answer is
    not the same combination of theirs; ``conflict`` is a combination of statistics whose rows
    cancel exactly while their answers add up to ``discrepancy`` (not 0; None, with zero
    coefficients naming the statistics involved, only when a modular conflict is too large to
    rebuild exactly). Only accepted statistics enter the row space.

    With a ``Domain`` two more contradictions are ``inconsistent``: ``outside`` is a record the
    statistics would pin to a value the domain excludes (``conflict`` is then its certificate,
    ``discrepancy`` None), and ``attainable`` is the range the statistic alone can take over the
    domain when its answer lies outside it or is a fraction where only whole numbers add up
    (``conflict`` names the statistic alone).
    """

    stat_id: str
    status: Status
    rank: int  # rank of the accepted statistics after this step
    independent: bool  # the statistic's row is outside the previous row space
    arithmetic: str  # "rational" or "modular": the arithmetic that decided this step
    newly_determined: tuple[Disclosure, ...] = ()
    would_disclose: tuple[Disclosure, ...] = ()
    conflict: tuple[tuple[str, Fraction], ...] = ()
    discrepancy: Fraction | None = None
    outside: Disclosure | None = None
    attainable: tuple[Fraction | None, Fraction | None] | None = None


@dataclass(frozen=True)
class Domain:
    """What every record's secret may be: ``lower``..``upper`` (None: unbounded), and whether
    only whole numbers (integer and categorical columns). Linear algebra alone ignores it; a
    statistic the domain cannot produce, or a record pinned outside it, is a contradiction."""

    lower: Fraction | None = None
    upper: Fraction | None = None
    integral: bool = False

    def __post_init__(self) -> None:
        if self.lower is not None and self.upper is not None and self.lower > self.upper:
            raise ValueError(f"empty domain {self.lower}..{self.upper}")

    def contains(self, value: Fraction) -> bool:
        return ((self.lower is None or value >= self.lower)
                and (self.upper is None or value <= self.upper)
                and (not self.integral or value.denominator == 1))

    def span(self, row: Mapping[int, Num]) -> tuple[Fraction | None, Fraction | None]:
        """The smallest and largest ``sum(row[j] * x[j])`` over the domain (None: unbounded)."""
        low: Fraction | None = Fraction(0)
        high: Fraction | None = Fraction(0)
        for c in row.values():
            small, big = (self.lower, self.upper) if c > 0 else (self.upper, self.lower)
            low = None if low is None or small is None else low + c * small
            high = None if high is None or big is None else high + c * big
        return low, high

    def attains(self, row: Mapping[int, Num], answer: Fraction) -> bool:
        """Whether some point of the domain gives this answer (bounds, and whole numbers)."""
        low, high = self.span(row)
        if (low is not None and answer < low) or (high is not None and answer > high):
            return False
        whole = all(type(c) is int for c in row.values())
        return not (self.integral and whole and answer.denominator != 1)


class _Unlucky(Exception):
    """A prime divided a number of the rational elimination: draw new primes, replay."""


@dataclass
class _Probe:
    """One statistic reduced against the basis, not yet committed.

    ``kind``: "redundant" (consistent combination of the basis), "inconsistent", or
    "independent" (then ``disclosed`` lists the records it would pin)."""

    kind: str
    disclosed: list[int] = field(default_factory=list)
    state: Any = None


# --------------------------------------------------------------------------- rational basis


def _fmpq(v: int | Fraction) -> Any:
    if isinstance(v, Fraction):
        return flint.fmpq(v.numerator, v.denominator)
    return flint.fmpq(int(v))


def _frac(v: Any) -> Fraction:
    return Fraction(int(v.p), int(v.q))


_VALUE = -1  # where a row's tag holds the answers' combination (the statistics: 0, 1, ...)


def _cost(plan: Plan) -> int:
    """Work of a step (entries touched, weighted by size) once numbers grow; 0 while they
    stay small. ``auto`` compares it with _SWITCH_COST."""
    assert plan.tag is not None
    combo = [v for i, v in plan.tag.items() if i != _VALUE]
    bits = max([v.height_bits() for v in plan.rest.values()]
               + [v.height_bits() for v in combo] + [1])
    if bits <= _SWITCH_BITS:
        return 0
    entries = (len(plan.rest) + len(combo) + 1) * (len(plan.updates) + 1)
    return int(entries * (1 + bits / 32))


class _RationalBasis:
    """Reduced basis over the rationals (:class:`~statrecon.engines.solvers.elimination.
    SparseBasis`, exact): each row tagged with its combination of the statistics (statistic
    index -> coefficient) and the same combination of their answers (at ``_VALUE``)."""

    name = "rational"

    def __init__(self) -> None:
        self.span = SparseBasis(None, tagged=True)
        self.last_cost = 0

    @property
    def rank(self) -> int:
        return self.span.rank

    def probe(self, row: Row, answer: Fraction, idx: int) -> _Probe:
        tag: dict[int, Any] = {idx: _ONE}
        if answer:
            tag[_VALUE] = _fmpq(answer)
        rest = self.span.reduce({j: _fmpq(v) for j, v in row.items()}, tag)
        if not rest:
            value = tag.pop(_VALUE, _ZERO)
            if value:
                return _Probe("inconsistent", state=(tag, value))
            return _Probe("redundant")
        # the pivot: the column in the fewest basis rows, so the rank-one update touches few
        holders = self.span.holders
        q = min(rest, key=lambda c: (len(holders.get(c, ())), c))
        plan = self.span.plan(rest, q, tag)
        return _Probe("independent", plan.units(), plan)

    def commit(self, probe: _Probe) -> None:
        if probe.kind != "independent":
            return
        self.last_cost = _cost(probe.state)
        self.span.commit(probe.state)

    def conflict(self, probe: _Probe) -> tuple[dict[int, Fraction], Fraction]:
        combo, value = probe.state
        return {i: _frac(c) for i, c in combo.items()}, _frac(value)

    def certificate(self, probe: _Probe | None, j: int
                    ) -> tuple[dict[int, Fraction], Fraction]:
        tags = self.span.tags
        assert tags is not None
        tag = tags.get(j)
        if probe is not None and probe.kind == "independent":
            plan: Plan = probe.state
            tag = plan.tag if j == plan.pivot else plan.updates[j][1] if j in plan.updates \
                else tag
        assert tag is not None
        return ({i: _frac(c) for i, c in tag.items() if i != _VALUE},
                _frac(tag.get(_VALUE, _ZERO)))


# --------------------------------------------------------------------------- modular basis


def _mod(v: Num, p: int) -> int:
    den = v.denominator % p
    if den == 0:
        raise _Unlucky
    return v.numerator * pow(den, -1, p) % p


class _ModularBasis:
    """The reduced basis modulo K primes at once: dense int64 arrays of shape (K, rows, ...).

    The residues are the image of a rational elimination as long as every zero test that
    steers it (which columns a reduced row holds, which rows hold the pivot column, whether an
    answer residual vanishes) gives the rational answer; each such test is taken under every
    prime and any disagreement raises ``_Unlucky``. Zeros that steer nothing may differ.
    Disclosure candidates come from a random sketch (one-sided: a row that becomes a unit
    vector is always a candidate) and are then checked entry by entry."""

    name = "modular"

    def __init__(self, n: int, primes: tuple[int, ...], rng: random.Random) -> None:
        self.n = n
        self.primes = primes
        self.K = len(primes)
        self.P = np.array(primes, dtype=np.int64)
        self.r = 0
        cap_r, cap_k = 16, 16
        self.B = np.zeros((self.K, cap_r, n), dtype=np.int64)
        self.C = np.zeros((self.K, cap_r, cap_k), dtype=np.int64)
        self.V = np.zeros((self.K, cap_r), dtype=np.int64)
        # sketch s (entries below 2^16, so B @ s cannot overflow) and h = B[0] @ s mod p0
        self.s = np.random.default_rng(rng.getrandbits(64)).integers(0, 1 << 16, n)
        self.h = np.zeros(cap_r, dtype=np.int64)
        self.pivots: list[int] = []
        self.row_of: dict[int, int] = {}

    @property
    def rank(self) -> int:
        return self.r

    def _grow(self, rows: int, stats: int) -> None:
        """Room for ``rows`` basis rows and ``stats`` statistics (doubling; rank <= n)."""
        cap_r, cap_k = self.B.shape[1], self.C.shape[2]
        if rows > cap_r or stats > cap_k:
            new_r = cap_r if rows <= cap_r else max(rows, min(2 * cap_r, self.n))
            new_k = cap_k if stats <= cap_k else max(stats, 2 * cap_k)
            B = np.zeros((self.K, new_r, self.n), dtype=np.int64)
            C = np.zeros((self.K, new_r, new_k), dtype=np.int64)
            V = np.zeros((self.K, new_r), dtype=np.int64)
            h = np.zeros(new_r, dtype=np.int64)
            B[:, :cap_r] = self.B
            C[:, :cap_r, :cap_k] = self.C
            V[:, :cap_r] = self.V
            h[:cap_r] = self.h
            self.B, self.C, self.V, self.h = B, C, V, h

    def _mulmod(self, F: np.ndarray, M: np.ndarray) -> np.ndarray:
        """(F @ M) mod p per prime, F (K, m), M (K, m, w), entries below 2^31, no int64
        overflow: F is split in 16-bit halves so sums of 2^15 products stay below 2^62."""
        P = self.P[:, None]
        out = np.zeros((self.K, M.shape[2]), dtype=np.int64)
        step = 1 << 15
        for s in range(0, F.shape[1], step):
            f, m = F[:, None, s:s + step], M[:, s:s + step, :]
            lo = np.matmul(f & 0xFFFF, m)[:, 0, :] % P
            hi = np.matmul(f >> 16, m)[:, 0, :] % P
            out = (out + hi * 65536 % P + lo) % P
        return out

    def _sketch(self, row: np.ndarray) -> int:
        """row @ s mod p0 for one residue row (entries below 2^31)."""
        p0 = int(self.P[0])
        total = 0
        for s in range(0, self.n, 1 << 15):
            total += int(row[s:s + (1 << 15)] @ self.s[s:s + (1 << 15)]) % p0
        return total % p0

    def _agree(self, mask: np.ndarray) -> None:
        """A zero test (mask, one line per prime) must give one answer under every prime."""
        if (mask[1:] != mask[0]).any():
            raise _Unlucky

    def probe(self, row: Row, answer: Fraction, idx: int) -> _Probe:
        P, K, r = self.P, self.K, self.r
        self._grow(r + 1, idx + 1)
        a = self._residue_row(row)
        c = np.zeros((K, self.C.shape[2]), dtype=np.int64)
        c[:, idx] = 1
        val = np.array([_mod(answer, p) for p in self.primes], dtype=np.int64)
        touched = [j for j in row if j in self.row_of]
        if touched:
            F = np.zeros((K, r), dtype=np.int64)
            rows = [self.row_of[j] for j in touched]
            F[:, rows] = a[:, touched]
            a = (a - self._mulmod(F, self.B[:, :r, :])) % P[:, None]
            c = (c - self._mulmod(F, self.C[:, :r, :])) % P[:, None]
            val = (val - self._mulmod(F, self.V[:, :r, None])[:, 0]) % P
        self._agree(a != 0)
        self._agree(val[:, None] != 0)
        nz = np.flatnonzero(a[0])
        if nz.size == 0:
            if val[0]:
                return _Probe("inconsistent", state=(c, val))
            return _Probe("redundant")
        q = int(nz[0])
        inv = np.array([pow(int(a[k, q]), -1, int(P[k])) for k in range(K)], dtype=np.int64)
        new_b = a * inv[:, None] % P[:, None]
        new_c = c * inv[:, None] % P[:, None]
        new_v = val * inv % P
        U, f, h_new, done = self._pinned(q, new_b, new_c, new_v)
        disclosed = sorted(done)
        if nz.size == 1:
            disclosed = sorted([*disclosed, q])
        return _Probe("independent", disclosed, (q, new_b, new_c, new_v, U, f, h_new, done))

    def _residue_row(self, row: Row) -> np.ndarray:
        """A statistic's row modulo every prime, dense: shape (K, n)."""
        P, K = self.P, self.K
        a = np.zeros((K, self.n), dtype=np.int64)
        small = all(type(v) is int and -(2**62) < v < 2**62 for v in row.values())
        if small:  # vectorized: integer coefficients (0/1 from SQL statistics)
            cols = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            vals = np.fromiter(row.values(), dtype=np.int64, count=len(row))
            a[:, cols] = vals[None, :] % P[:, None]
        else:
            for j, v in row.items():
                a[:, j] = [_mod(v, p) for p in self.primes]
        return a

    def _pinned(self, q: int, new_b: np.ndarray, new_c: np.ndarray, new_v: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, int, dict[int, tuple[np.ndarray, np.ndarray]]]:
        """What adding the basis row ``new_b`` (pivot ``q``) does to the others: the rows U
        that hold column q, their entries f there, the sketch of the new row, and for each
        row that becomes a unit vector (its record pinned) its pivot -> (combination, value).
        """
        P, r = self.P, self.r
        holds_q = self.B[:, :r, q] != 0
        self._agree(holds_q)
        U = np.flatnonzero(holds_q[0])
        f = self.B[:, U, q]  # (K, |U|)
        h_new = self._sketch(new_b[0])
        p0 = int(P[0])
        piv = np.array(self.pivots, dtype=np.int64)[U] if U.size else np.zeros(0, np.int64)
        # Row u becomes e_pivot iff B_u - e_pivot == f_u * new_b; the sketch of both sides
        # agrees then, so rows whose sketches differ cannot become unit vectors.
        cand = U[(self.h[U] - self.s[piv] - f[0] * h_new) % p0 == 0]
        done: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if cand.size:
            fc = self.B[:, cand, q]
            Bc = (self.B[:, cand, :] - fc[:, :, None] * new_b[:, None, :]) % P[:, None, None]
            unit = np.count_nonzero(Bc, axis=2) == 1  # (K, |cand|): only the pivot is left
            self._agree(unit)
            for t in np.flatnonzero(unit[0]):
                u = int(cand[t])
                cu = (self.C[:, u, :] - fc[:, t, None] * new_c) % P[:, None]
                vu = (self.V[:, u] - fc[:, t] * new_v) % P
                done[self.pivots[u]] = (cu, vu)
        return U, f, h_new, done

    def commit(self, probe: _Probe) -> None:
        if probe.kind != "independent":
            return
        q, new_b, new_c, new_v, U, f, h_new, _ = probe.state
        P, r = self.P, self.r
        k = new_c.shape[1]
        self._grow(r + 1, k)
        if U.size:
            p3 = P[:, None, None]
            if 2 * U.size > r:  # most rows hold q: update the whole block in place
                fr = self.B[:, :r, q].copy()
                blocks: list[tuple[np.ndarray, np.ndarray]] = [
                    (self.B[:, :r, :], new_b), (self.C[:, :r, :k], new_c)]
                for block, new in blocks:
                    block -= fr[:, :, None] * new[:, None, :]
                    np.remainder(block, p3, out=block)
                self.V[:, :r] = (self.V[:, :r] - fr * new_v[:, None]) % P[:, None]
            else:
                self.B[:, U, :] = (self.B[:, U, :] - f[:, :, None] * new_b[:, None, :]) % p3
                self.C[:, U, :k] = (self.C[:, U, :k] - f[:, :, None] * new_c[:, None, :]) % p3
                self.V[:, U] = (self.V[:, U] - f * new_v[:, None]) % P[:, None]
            self.h[U] = (self.h[U] - f[0] * h_new) % P[0]
        self.B[:, r, :] = new_b
        self.C[:, r, :k] = new_c
        self.V[:, r] = new_v
        self.h[r] = h_new
        self.pivots.append(q)
        self.row_of[q] = r
        self.r += 1

    def residues(self, probe: _Probe | None, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Combination and value of the (planned) basis row of pivot j, mod every prime."""
        if probe is not None and probe.kind == "independent":
            q, _, new_c, new_v, _, _, _, done = probe.state
            if j == q:
                return new_c, new_v
            if j in done:
                cu, vu = done[j]
                return cu, vu
        i = self.row_of[j]
        return self.C[:, i, :], self.V[:, i]

    def lift(self, combo: np.ndarray, value: np.ndarray
             ) -> tuple[dict[int, Fraction] | None, Fraction | None]:
        """Chinese remainders, then rational reconstruction (None where it fails)."""
        support = np.flatnonzero(combo[0])
        residues = np.concatenate([combo[:, support], value[:, None]], axis=1)
        x, m = residues[0], self.primes[0]
        for k, p in enumerate(self.primes[1:], start=1):  # in int64: m stays below 2^62
            x = x + m * ((residues[k] - x) % p * pow(m, -1, p) % p)
            m *= p
        num, den, ok = reconstruct(x, m)
        coeffs = None if not ok[:-1].all() else {
            int(i): Fraction(int(a), int(b))
            for i, a, b in zip(support, num[:-1], den[:-1], strict=True)}
        return coeffs, Fraction(int(num[-1]), int(den[-1])) if ok[-1] else None

    def support(self, combo: np.ndarray) -> list[int]:
        return [int(i) for i in np.flatnonzero(combo[0])]


# --------------------------------------------------------------------------- the auditor

_Extra = tuple[int, Row, Fraction]  # a statistic not (yet) accepted


class StreamAuditor:
    """Exact, incremental determinability over ``n`` unknowns (records).

    >>> aud = StreamAuditor(6)
    >>> _ = aud.add({j: 1 for j in range(6)}, Fraction("32.1"), "q1")
    >>> _ = aud.add({2: 1, 3: 1, 5: 1}, Fraction("15.5"), "q2")
    >>> step = aud.add({0: 1, 4: 1}, Fraction("11.4"), "q3")
    >>> d = step.newly_determined[0]
    >>> d.index, d.value, [(s, int(c)) for s, c in d.certificate]
    (1, Fraction(26, 5), [('q1', 1), ('q2', -1), ('q3', -1)])
    """

    def __init__(self, n: int, arithmetic: Arithmetic = "auto", seed: int | None = None,
                 domain: Domain | None = None) -> None:
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        if arithmetic not in ARITHMETICS:
            raise ValueError(f"unknown arithmetic {arithmetic!r} (choose from "
                             f"{', '.join(ARITHMETICS)})")
        self.n = n
        self.mode = arithmetic  # as asked: "auto" may switch
        self.domain = domain
        # Unpredictable primes by default: a query author must not be able to aim at them.
        self._rng = random.Random(seed) if seed is not None else random.SystemRandom()
        self._ids: list[str] = []  # every statistic seen, accepted or not (certificates name them)
        self._index: dict[str, int] = {}
        self._rows: dict[int, Row] = {}  # accepted statistic -> its row
        self._answers: dict[int, Fraction] = {}
        self._determined: dict[int, Disclosure] = {}
        self._basis: _RationalBasis | _ModularBasis = (
            self._modular() if arithmetic == "modular" else _RationalBasis())

    # ----------------------------------------------------------------------- public view

    @property
    def arithmetic(self) -> str:
        """The arithmetic in use now: "rational" or "modular"."""
        return self._basis.name

    @property
    def rank(self) -> int:
        return self._basis.rank

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

    def add(self, row: Mapping[int, int | Fraction], answer: Fraction | int, stat_id: str,
            deny: bool = False) -> AuditStep:
        """Process one statistic: ``sum(row[j] * x[j]) = answer``.

        With ``deny`` a statistic that would pin a record not pinned before is refused and left
        out of the row space. Raises ValueError for a repeated id or a column outside 0..n-1.
        """
        if stat_id in self._index:
            raise ValueError(f"statistic id {stat_id!r} used twice")
        r = self._clean(row)
        ans = Fraction(answer)
        idx = len(self._ids)
        self._ids.append(stat_id)
        self._index[stat_id] = idx
        extra = (idx, r, ans)
        while True:
            try:
                step = self._step(extra, deny)
                break
            except _Unlucky:
                self._basis = self._modular()
        if (self.mode == "auto" and isinstance(self._basis, _RationalBasis)
                and self._basis.last_cost > _SWITCH_COST
                and _PRIMES * 8 * self.n * min(self.n, 4 * self.rank + 64) <= _MODULAR_BYTES):
            self._basis = self._modular()
        return step

    def would_disclose(self, row: Mapping[int, int | Fraction], answer: Fraction | int,
                       stat_id: str = "?") -> tuple[Disclosure, ...]:
        """The records a statistic would newly pin, without adding it (its certificate names
        it ``stat_id``)."""
        r = self._clean(row)
        idx = len(self._ids)
        self._ids.append(stat_id)
        try:
            while True:
                try:
                    probe = self._basis.probe(r, Fraction(answer), idx)
                    return tuple(self._disclosure(probe, j, (idx, r, Fraction(answer)))
                                 for j in probe.disclosed)
                except _Unlucky:
                    self._basis = self._modular()
        finally:
            self._ids.pop()

    def verify(self, d: Disclosure) -> bool:
        """Exact check of a certificate against the accepted statistics' rows and answers."""
        if not d.proven or d.value is None:
            return False
        coeffs: dict[int, Fraction] = {}
        for sid, coef in d.certificate:
            i = self._index.get(sid)
            if i is None or i not in self._rows:
                return False
            coeffs[i] = coef
        return self._holds(coeffs, d.index, d.value, None)

    # ----------------------------------------------------------------------- internals

    def _step(self, extra: _Extra, deny: bool) -> AuditStep:
        idx, r, ans = extra
        sid = self._ids[idx]
        name = self._basis.name
        if self.domain is not None and not self.domain.attains(r, ans):
            return AuditStep(sid, "inconsistent", self.rank, False, name,
                             conflict=((sid, Fraction(1)),), attainable=self.domain.span(r))
        probe = self._basis.probe(r, ans, idx)
        if probe.kind == "inconsistent":
            combo, gap = self._conflict(probe, extra)
            # the new statistic first (coefficient 1), then the earlier ones in stream order
            order = sorted(combo, key=lambda i: (i != idx, i))
            named = tuple((self._ids[i], combo[i]) for i in order)
            return AuditStep(sid, "inconsistent", self.rank, False, name, conflict=named,
                             discrepancy=gap)
        disclosed = tuple(self._disclosure(probe, j, extra) for j in probe.disclosed)
        outside = self._outside(disclosed)
        if outside is not None:  # no dataset fits: like an algebraic contradiction, not added
            return AuditStep(sid, "inconsistent", self.rank, True, name,
                             conflict=outside.certificate, outside=outside)
        if deny and disclosed:
            return AuditStep(sid, "denied", self.rank, True, name, would_disclose=disclosed)
        self._rows[idx], self._answers[idx] = r, ans
        self._basis.commit(probe)
        for d in disclosed:
            self._determined[d.index] = d
        return AuditStep(sid, "accepted", self.rank, probe.kind == "independent", name,
                         newly_determined=disclosed)

    def _outside(self, disclosed: tuple[Disclosure, ...]) -> Disclosure | None:
        """The first proven disclosure whose value the domain excludes."""
        if self.domain is None:
            return None
        return next((d for d in disclosed if d.proven and d.value is not None
                     and not self.domain.contains(d.value)), None)

    def _clean(self, row: Mapping[int, int | Fraction]) -> Row:
        out: Row = {}
        n = self.n
        for j, v in row.items():
            j = int(j)
            if not 0 <= j < n:
                raise ValueError(f"column {j} is outside 0..{n - 1}")
            f = v if type(v) is int else Fraction(v)
            if f:
                out[j] = int(f) if f.denominator == 1 else f
        return out

    def _modular(self) -> _ModularBasis:
        """A fresh modular basis holding the accepted rows (new primes while unlucky)."""
        while True:
            primes = tuple(_random_prime(self._rng) for _ in range(_PRIMES))
            basis = _ModularBasis(self.n, primes, self._rng)
            try:
                for i in sorted(self._rows):
                    basis.commit(basis.probe(self._rows[i], self._answers[i], i))
            except _Unlucky:
                continue
            return basis

    def _holds(self, coeffs: dict[int, Fraction], index: int | None, value: Fraction | None,
               extra: _Extra | None) -> bool:
        """Exactly: sum(c * row) == e_index (the zero row when index is None) and
        sum(c * answer) == value (any non-zero value when value is None)."""
        acc: dict[int, Fraction] = {}
        total = Fraction(0)
        for i, c in coeffs.items():
            if extra is not None and i == extra[0]:
                row, ans = extra[1], extra[2]
            elif i in self._rows:
                row, ans = self._rows[i], self._answers[i]
            else:
                return False
            for j, v in row.items():
                acc[j] = acc.get(j, Fraction(0)) + c * v
            total += c * ans
        nonzero = {j: v for j, v in acc.items() if v != 0}
        target = {} if index is None else {index: Fraction(1)}
        return nonzero == target and (total != 0 if value is None else total == value)

    def _disclosure(self, probe: _Probe, j: int, extra: _Extra) -> Disclosure:
        basis = self._basis
        if isinstance(basis, _RationalBasis):
            coeffs, exact = basis.certificate(probe, j)
            return self._named(j, coeffs, exact)
        combo, residue = basis.residues(probe, j)
        lifted, value = basis.lift(combo, residue)
        if lifted is not None and value is not None and self._holds(lifted, j, value, extra):
            return self._named(j, lifted, value)
        solved = self._combination(basis.support(combo), {j: Fraction(1)}, extra)
        if solved is None:
            return Disclosure(j, value, (), proven=False)
        total = sum((c * self._answer(i, extra) for i, c in solved.items()), Fraction(0))
        if not self._holds(solved, j, total, extra):
            raise AssertionError(f"certificate for record {j} does not verify")  # a bug
        return self._named(j, solved, total)

    def _conflict(self, probe: _Probe, extra: _Extra
                  ) -> tuple[dict[int, Fraction], Fraction | None]:
        basis = self._basis
        if isinstance(basis, _RationalBasis):
            return basis.conflict(probe)
        combo, residue = probe.state
        lifted, gap = basis.lift(combo, residue)
        if lifted is not None and gap and self._holds(lifted, None, gap, extra):
            return lifted, gap
        idx, row, _ = extra
        # The new row as an exact combination of the accepted statistics the residues name.
        others = [i for i in basis.support(combo) if i != idx]
        solved = self._combination(others, row, extra)
        if solved is None:
            return {i: Fraction(0) for i in basis.support(combo)}, None
        coeffs = {idx: Fraction(1), **{i: -c for i, c in solved.items()}}
        gap = sum((c * self._answer(i, extra) for i, c in coeffs.items()), Fraction(0))
        if not gap:
            raise _Unlucky  # consistent over the rationals: the primes were wrong
        if not self._holds(coeffs, None, gap, extra):
            raise AssertionError("conflict does not verify")  # a bug, never a result
        return coeffs, gap

    def _answer(self, i: int, extra: _Extra) -> Fraction:
        return extra[2] if i == extra[0] else self._answers[i]

    def _named(self, j: int, coeffs: dict[int, Fraction], value: Fraction) -> Disclosure:
        cert = tuple((self._ids[i], c) for i, c in sorted(coeffs.items()) if c)
        return Disclosure(j, value, cert)

    def _combination(self, support: list[int], target: Row, extra: _Extra
                     ) -> dict[int, Fraction] | None:
        """Exact y with sum(y_i * row_i) == target over the given statistics (FLINT rref),
        or None when too large to afford. The residues promise a solution: none means an
        unlucky prime, so the step is redone with new ones."""
        rows = [extra[1] if i == extra[0] else self._rows[i] for i in support]
        cols = sorted({c for r in rows for c in r} | set(target))
        width = len(support) + 1
        if len(cols) * width > _EXACT_SOLVE_LIMIT:
            return None
        where = {c: k for k, c in enumerate(cols)}
        entries: list[Any] = [_ZERO] * (len(cols) * width)
        for s, r in enumerate(rows):
            for c, v in r.items():
                entries[where[c] * width + s] = _fmpq(v)
        for c, v in target.items():
            entries[where[c] * width + width - 1] = _fmpq(v)
        R, rank = flint.fmpq_mat(len(cols), width, entries).rref()
        y: dict[int, Fraction] = {}
        for k in range(rank):
            lead = next(c for c in range(width) if R[k, c] != 0)
            if lead == width - 1:
                raise _Unlucky
            y[support[lead]] = _frac(R[k, width - 1])
        return {i: c for i, c in y.items() if c}
