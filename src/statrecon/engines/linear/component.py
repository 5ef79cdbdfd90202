"""One connected component of the statistic–record graph: eliminated modulo a prime, every
claim then proven with exact integer arithmetic.

The statistics come in priority order (exact first, then bounded by growing error). Modulo p:
the greedy basis B (the first statistics independent mod p, so independent over the rationals
too), its pivot columns P with C = M[B, P] non-singular (mod p, hence over the rationals), and
the reduced form C⁻¹ M_B. Record j (a pivot whose column no other record shares) can only be
pinned by y = row j of C⁻¹, and only if row j of C⁻¹ M_B is e_j: a non-zero entry there mod p
is non-zero over the rationals (det C is a unit mod p), so the record is provably not pinned;
a zero one makes j a suspect. A suspect's y is rebuilt by rational reconstruction (small
coefficients: conjunctions and difference attacks), else from the exact inverse of C (rank up
to ``EXACT_LIMIT``), else, for a full-rank block of exact statistics, by the block proof (the
exact solution of C z = b checked by exact multiplication). Every listed y is checked exactly
against the original matrix before it is reported; one that fails is not reported.

The statistics outside B are combinations L_d of B (mod p); each L_d is rebuilt the same way
and checked exactly, and a row whose combination puts 0 outside its exact interval is a
conflict. A check that shows a row independent over the rationals after all means p divided a
minor of the release: ``UnluckyPrime``, and the caller tries the next prime.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from statrecon.engines.linear.proofs import (
    BlockProof,
    Certificate,
    Combination,
    combine,
    holds,
)
from statrecon.engines.solvers import modp

if TYPE_CHECKING:
    import scipy.sparse as sp

EXACT_LIMIT = 250  # rank up to which the exact inverse of a pivot block is affordable (~1 s)


class UnluckyPrime(Exception):
    """The prime divides a minor of the release: a dependency found mod p is false."""


@dataclass(frozen=True)
class Block:
    """A component: system rows (ascending = priority order), its distinct columns as a dense
    integer matrix, and per column the one record that has it (-1: several records share it)."""

    rows: np.ndarray
    M: np.ndarray
    records: np.ndarray


@dataclass
class BlockResult:
    rank: int
    certificates: list[Certificate] = field(default_factory=list)
    conflict: tuple[int, ...] = ()
    proof: BlockProof | None = None  # the certificates with block=-1 use it
    notes: list[str] = field(default_factory=list)


def solve_block(block: Block, F: sp.csr_matrix, b: list[Fraction], e: list[Fraction]
                ) -> BlockResult:
    """Certificates and conflicts of one component, each proven exactly (module docstring);
    tries the next prime while one is unlucky."""
    for p in modp.PRIMES:
        try:
            return _Solver(block, F, b, e, p).run()
        except UnluckyPrime:
            continue
    return BlockResult(0, notes=[f"a component of {len(block.rows)} statistics was not decided "
                                 f"(every prime tried divides one of its minors)"])


def _fractions(nums: list[int], den: int) -> list[Fraction]:
    return [Fraction(v, den) for v in nums]


class _Solver:
    def __init__(self, block: Block, F: sp.csr_matrix, b: list[Fraction], e: list[Fraction],
                 p: int) -> None:
        self.block, self.F, self.b, self.e, self.p = block, F, b, e, p
        self.M = block.M
        self.B, self.P, self.R = self._basis()
        self.rows_B = block.rows[self.B]
        self.notes: list[str] = []
        self.proof: BlockProof | None = None

    # ---------------------------------------------------------------- mod p
    def _basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(B, P, R): the greedy basis, its pivot columns and C⁻¹M_B mod p (None: B is the
        first m statistics and P every column, so C⁻¹M_B is the identity)."""
        k, m = self.M.shape
        if k >= m and modp.nonsingular(self.M[:m], self.p):
            return np.arange(m), np.arange(m), None
        _, independent = modp.rref(self.M.T, self.p)
        B = np.array(independent, dtype=int)
        R, pivots = modp.rref(self.M[B], self.p)
        if len(pivots) != len(B):
            raise AssertionError("rows independent mod p have a smaller rank mod p")
        return B, np.array(pivots, dtype=int), R

    @property
    def full(self) -> bool:
        return len(self.P) == self.M.shape[1]

    @cached_property
    def C(self) -> np.ndarray:
        return self.M[self.B][:, self.P]

    @cached_property
    def Cinv(self) -> np.ndarray:
        inv = modp.inverse(self.C, self.p)
        if inv is None:
            raise AssertionError("pivot block singular mod p")
        return inv

    @cached_property
    def exact_basis(self) -> bool:
        return all(self.e[int(i)] == 0 for i in self.rows_B)

    @cached_property
    def exact_inverse(self) -> tuple[list[list[int]], int]:
        """C⁻¹ = N / d exactly (FLINT), as Python integers."""
        flint = modp._flint()
        N, d = flint.fmpz_mat(self.C.tolist()).inv().numer_denom()
        r = len(self.B)
        flat = [int(v) for v in N.entries()]
        return [flat[t * r:(t + 1) * r] for t in range(r)], int(d)

    # ---------------------------------------------------------------- run
    def run(self) -> BlockResult:
        dependent = np.setdiff1d(np.arange(len(self.block.rows)), self.B)
        conflict = self._conflict(dependent) if dependent.size else ()
        if conflict:
            return BlockResult(len(self.B), conflict=conflict, notes=self.notes)
        return BlockResult(len(self.B), self._certificates(), (), self.proof, self.notes)

    def _suspects(self) -> np.ndarray:
        """Positions t (rows of C⁻¹) of pivot records that may be pinned."""
        ts = np.arange(len(self.P)) if self.R is None else np.flatnonzero(
            np.count_nonzero(self.R, axis=1) == 1)
        return ts[self.block.records[self.P[ts]] >= 0]

    # ---------------------------------------------------------------- certificates
    def _certificates(self) -> list[Certificate]:
        ts = self._suspects()
        if ts.size == 0:
            return []
        cand = self._reconstructed(self.Cinv[ts])
        combos = [(t, c) for t, c in zip(ts, cand, strict=True) if c is not None]
        certs: list[Certificate] = []
        if combos:
            checks = [self._combo(int(self.block.records[self.P[t]]), c) for t, c in combos]
            ok = holds(self.F, checks)
            certs = [self._certificate(c) for c, good in zip(checks, ok, strict=True) if good]
        done = {c.index for c in certs}
        hard = np.array([t for t in ts if int(self.block.records[self.P[t]]) not in done],
                        dtype=int)
        if hard.size:
            certs.extend(self._hard(hard))
        return certs

    def _reconstructed(self, rows: np.ndarray) -> list[tuple[list[int], int] | None]:
        """Rational reconstruction of each row mod p: (integer numerators, common
        denominator), or None where an entry has none."""
        num, den, ok = modp.reconstruct(rows, self.p)
        out: list[tuple[list[int], int] | None] = []
        for t in range(rows.shape[0]):
            if not ok[t].all():
                out.append(None)
                continue
            common = math.lcm(*{int(v) for v in den[t]})
            out.append(([int(v) * (common // int(d)) for v, d in zip(num[t], den[t],
                                                                     strict=True)], common))
        return out

    def _combo(self, target: int, combo: tuple[list[int], int]) -> Combination:
        nums, den = combo
        keep = [i for i, v in enumerate(nums) if v]
        return Combination(target, self.rows_B[keep], tuple(nums[i] for i in keep), den)

    def _certificate(self, c: Combination) -> Certificate:
        coefficients = _fractions(list(c.nums), c.den)
        value, half = combine([int(i) for i in c.rows], coefficients, self.b, self.e)
        terms = tuple((int(i), co) for i, co in zip(c.rows, coefficients, strict=True))
        return Certificate(c.target, value, terms, half)

    def _hard(self, ts: np.ndarray) -> list[Certificate]:
        """Suspects without a small certificate: the exact inverse when affordable, the block
        proof for a full-rank block of exact statistics, else not claimed (a note)."""
        r = len(self.B)
        if r <= EXACT_LIMIT:
            N, d = self.exact_inverse
            checks = [self._combo(int(self.block.records[self.P[t]]), (N[t], d)) for t in ts]
            ok = holds(self.F, checks)  # a failure: p divided an entry; provably not pinned
            return [self._certificate(c) for c, good in zip(checks, ok, strict=True) if good]
        if self.full and self.exact_basis:
            z = self.solution
            records = [int(self.block.records[self.P[t]]) for t in ts]
            self.proof = BlockProof(tuple(int(i) for i in self.rows_B), tuple(records), self.p)
            return [Certificate(j, z[int(t)], (), Fraction(0), -1)
                    for j, t in zip(records, ts, strict=True)]
        self.notes.append(
            f"{ts.size} record(s) may be pinned by a component of rank {r} that needs bounded "
            f"statistics, but their certificates need the exact inverse of its {r}×{r} pivot "
            f"block (over the limit of {EXACT_LIMIT}); not claimed")
        return []

    @cached_property
    def solution(self) -> list[Fraction]:
        """The exact solution of C z = b_B (C square and non-singular), checked by exact
        integer multiplication."""
        flint = modp._flint()
        bB = [self.b[int(i)] for i in self.rows_B]
        scale = math.lcm(*(v.denominator for v in bB))
        rhs = flint.fmpz_mat([[int(v * scale)] for v in bB])
        Cz = flint.fmpz_mat(self.C.tolist())
        num, den = Cz.solve(rhs).numer_denom()
        if Cz * num != rhs * den:
            raise AssertionError("exact solve does not verify")
        return [Fraction(int(num[t, 0]), int(den) * scale) for t in range(len(self.B))]

    # ---------------------------------------------------------------- conflicts
    def _conflict(self, dependent: np.ndarray) -> tuple[int, ...]:
        """Statistics (system rows) whose combination is proven contradictory, or ()."""
        if self.full and self.exact_basis:
            return self._conflict_by_solution(dependent)
        Lp = modp.matmul(self.M[dependent][:, self.P], self.Cinv, self.p)
        cand = self._reconstructed(Lp)
        checks = [self._zero_combo(int(d), c) for d, c in zip(dependent, cand, strict=True)
                  if c is not None]
        ok = holds(self.F, checks) if checks else np.zeros(0, dtype=bool)
        proven = [c for c, good in zip(checks, ok, strict=True) if good]
        done = {int(c.rows[0]) for c in proven}
        rest = np.array([d for d in dependent if int(self.block.rows[d]) not in done], dtype=int)
        if rest.size:
            proven.extend(self._exact_dependencies(rest))
        for c in proven:
            rows = [int(i) for i in c.rows]
            value, half = combine(rows, _fractions(list(c.nums), c.den), self.b, self.e)
            if abs(value) > half:
                return tuple(sorted(rows))
        return ()

    def _zero_combo(self, d: int, combo: tuple[list[int], int]) -> Combination:
        """e_d - L_d: a combination whose rows cancel when row d is L_d of the basis."""
        nums, den = combo
        keep = [i for i, v in enumerate(nums) if v]
        rows = np.concatenate([[self.block.rows[d]], self.rows_B[keep]])
        return Combination(-1, rows, (den, *(-nums[i] for i in keep)), den)

    def _exact_dependencies(self, dependent: np.ndarray) -> list[Combination]:
        """L_d exactly (N/d of C⁻¹) when affordable; a row it does not express is independent
        over the rationals, so the prime was unlucky."""
        r = len(self.B)
        if r > EXACT_LIMIT:
            self.notes.append(f"{dependent.size} statistic(s) of a component of rank {r} not "
                              "checked for consistency (their combinations need the exact "
                              f"inverse of a {r}×{r} block, over the limit of {EXACT_LIMIT})")
            return []
        flint = modp._flint()
        N, d = self.exact_inverse
        L = flint.fmpz_mat(self.M[dependent][:, self.P].tolist()) * flint.fmpz_mat(N)
        flat = [int(v) for v in L.entries()]
        checks = [self._zero_combo(int(row), (flat[t * r:(t + 1) * r], d))
                  for t, row in enumerate(dependent)]
        if not holds(self.F, checks).all():
            raise UnluckyPrime
        return checks

    def _conflict_by_solution(self, dependent: np.ndarray) -> tuple[int, ...]:
        """A full-rank block of exact statistics allows one dataset z; a dependent statistic
        contradicts iff its answer misses F_d z by more than its error. The conflict named is
        row d and the rows of its exact combination L_d (one exact solve)."""
        flint = modp._flint()
        z = self.solution
        scale = math.lcm(*(v.denominator for v in z))
        zint = flint.fmpz_mat([[int(v * scale)] for v in z])
        lhs = flint.fmpz_mat(self.M[dependent][:, self.P].tolist()) * zint
        for t, d in enumerate(dependent):
            row = int(self.block.rows[d])
            if abs(Fraction(int(lhs[t, 0]), scale) - self.b[row]) > self.e[row]:
                return self._support(int(d))
        return ()

    def _support(self, d: int) -> tuple[int, ...]:
        """Row d and the basis rows of its exact combination (L_d = M_d C⁻¹, exact solve)."""
        flint = modp._flint()
        target = flint.fmpz_mat([[int(v)] for v in self.M[d][self.P]])
        num, den = flint.fmpz_mat(self.C.T.tolist()).solve(target).numer_denom()
        nums = [int(num[t, 0]) for t in range(len(self.B))]
        combo = self._zero_combo(d, (nums, int(den)))
        if not holds(self.F, [combo]).all():
            raise UnluckyPrime
        return tuple(sorted(int(i) for i in combo.rows))
