"""What exact determinability proves, as data: certificates, block proofs and the result.

A certificate is a combination y of statistics with Fᵀy = e_j (checked with exact integer
arithmetic), so every dataset has x_j = Σ yᵢ·(true answer i). Exact statistics contribute
their answer; a bounded statistic (true answer within ± eᵢ of the published one, e.g. rounding)
widens the result by |yᵢ|·eᵢ, so x_j lies in ``value ± half_width`` — exactly, in rationals.

A block proof replaces the listed coefficients when they would be huge rationals (a dense
full-rank system): the statistics ``rows`` are exact, their matrix restricted to the records
(distinct columns) is square with a determinant non-zero modulo ``prime`` (hence non-zero),
and the exact solution z of C z = b, checked by exact integer multiplication, is the only
dataset they allow, so each record of ``records`` equals its coordinate of z.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp  # loaded where used: the CLI imports this package at start-up

_INT64_SAFE = 2**62


@dataclass(frozen=True)
class Certificate:
    """x[index] lies in value ± half_width: value = Σ coefficient · answer of statistic, and
    half_width = Σ |coefficient| · error of statistic (0 when only exact statistics are used).
    ``terms`` is empty when the proof is the block proof ``block`` of the determination."""

    index: int
    value: Fraction
    terms: tuple[tuple[int, Fraction], ...]  # (statistic row, coefficient)
    half_width: Fraction = Fraction(0)
    block: int | None = None  # index into Determination.blocks (terms not listed)

    @property
    def low(self) -> Fraction:
        return self.value - self.half_width

    @property
    def high(self) -> Fraction:
        return self.value + self.half_width


@dataclass(frozen=True)
class BlockProof:
    """Exact statistics ``rows`` whose matrix on the records is square and non-singular (its
    determinant is non-zero modulo ``prime``); the solution of the system they form, checked
    by exact multiplication, pins every record of ``records``."""

    rows: tuple[int, ...]
    records: tuple[int, ...]
    prime: int


@dataclass(frozen=True)
class Determination:
    """Exact determinability from the exact and bounded statistics (rationals, FLINT).

    ``determined``: certificates of half-width 0 (the record's value is proven).
    ``bounded``: certificates of positive half-width (the record lies in the interval; the
    caller's domain may still pin it: one integer in the interval). ``conflict``: statistics
    whose combination is proven contradictory (0 outside its exact interval); then nothing else
    is reported. ``consistent`` True means no contradiction was found, not that a dataset
    exists (bounds and integrality are the caller's). ``notes`` say what was not decided."""

    consistent: bool
    rank: int
    determined: tuple[Certificate, ...]
    conflict: tuple[int, ...] = ()
    elapsed_s: float = 0.0
    bounded: tuple[Certificate, ...] = ()
    blocks: tuple[BlockProof, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Combination:
    """Σ nums[t] · F[rows[t]] == den · e_target (target -1: the zero row), to be checked."""

    target: int
    rows: np.ndarray
    nums: tuple[int, ...]
    den: int


def holds(F: sp.csr_matrix, combos: Sequence[Combination]) -> np.ndarray:
    """Exact check of each combination against the integer matrix F: int64 sparse products
    where no sum can overflow, Python integers otherwise."""
    ok = np.zeros(len(combos), dtype=bool)
    fmax = int(np.abs(F.data).max()) if F.nnz else 0
    fast = [i for i, c in enumerate(combos)
            if sum(abs(v) for v in c.nums) * max(fmax, 1) < _INT64_SAFE and c.den < _INT64_SAFE]
    if fast:
        ok[fast] = _holds_int64(F, [combos[i] for i in fast])
    for i in sorted(set(range(len(combos))) - set(fast)):
        ok[i] = _holds_python(F, combos[i])
    return ok


def _holds_int64(F: sp.csr_matrix, combos: Sequence[Combination]) -> np.ndarray:
    import scipy.sparse as sp  # lazy: the CLI imports this package at start-up

    s, (k, n) = len(combos), F.shape
    r_idx = np.concatenate([np.full(len(c.rows), i) for i, c in enumerate(combos)])
    c_idx = np.concatenate([np.asarray(c.rows, dtype=np.int64) for c in combos])
    vals = np.concatenate([np.asarray(c.nums, dtype=np.int64) for c in combos])
    Y = sp.csr_matrix((vals, (r_idx, c_idx)), shape=(s, k), dtype=np.int64)
    P = (Y @ F.astype(np.int64)).tocsr()
    targets = [(i, c.target, c.den) for i, c in enumerate(combos) if c.target >= 0]
    if targets:
        ti, tj, tv = (np.array(v, dtype=np.int64) for v in zip(*targets, strict=True))
        P = (P - sp.csr_matrix((tv, (ti, tj)), shape=(s, n), dtype=np.int64)).tocsr()
    P.eliminate_zeros()
    return np.diff(P.indptr) == 0


def _holds_python(F: sp.csr_matrix, c: Combination) -> bool:
    acc: dict[int, int] = {}
    for i, num in zip(c.rows, c.nums, strict=True):
        start, end = F.indptr[i], F.indptr[i + 1]
        for j, v in zip(F.indices[start:end], F.data[start:end], strict=True):
            acc[int(j)] = acc.get(int(j), 0) + num * int(v)
    if c.target >= 0:
        acc[c.target] = acc.get(c.target, 0) - c.den
    return all(v == 0 for v in acc.values())


def combine(rows: Sequence[int], coefficients: Sequence[Fraction], b: Sequence[Fraction],
            e: Sequence[Fraction]) -> tuple[Fraction, Fraction]:
    """(Σ cᵢ bᵢ, Σ |cᵢ| eᵢ) over the given rows, exactly."""
    value = sum((c * b[i] for i, c in zip(rows, coefficients, strict=True) if c), Fraction(0))
    half = sum((abs(c) * e[i] for i, c in zip(rows, coefficients, strict=True) if c and e[i]),
               Fraction(0))
    return value, half
