"""Dense linear algebra modulo a prime (FLINT ``nmod_mat``), rational reconstruction and the
primes (fixed ones, or drawn at random). The incremental sparse elimination is
:mod:`.elimination`.

Nothing here proves anything on its own: a statement decided modulo p is either of the kind
that carries over to the rationals (a minor that is non-zero mod p is non-zero; an entry of
C⁻¹A that is non-zero mod p, with det C a unit mod p, is non-zero), or it is a candidate that
the caller checks with exact integer arithmetic (:mod:`.determine`). The primes are below 2³¹
so that numpy can hold residues, and products of two of them, in int64.
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

# Primes below 2^31. Which one is used changes no claim (every claim is checked exactly); an
# unlucky one (dividing a minor of the release) is noticed by that check and the next is tried.
PRIMES = (2_147_483_629, 2_147_483_587, 2_147_483_579, 2_147_483_563)


def random_prime(rng: random.Random) -> int:
    """A prime drawn uniformly from the odd numbers in (2^30, 2^31) by ``rng``: unpredictable
    to whoever chose the numbers when ``rng`` is the OS's (``random.SystemRandom``)."""
    while True:
        p = rng.randrange(2**30 + 1, 2**31, 2)
        if _flint().fmpz(p).is_prime():
            return p


def _flint() -> Any:
    import flint  # lazy: FLINT is loaded only when exact determinability runs

    return flint


def to_nmod(M: np.ndarray, p: int) -> Any:
    """A numpy integer matrix as a FLINT matrix modulo p."""
    rows, cols = M.shape
    flat = np.mod(M, p).astype(np.int64).ravel().tolist()
    return _flint().nmod_mat(rows, cols, flat, p)


def from_nmod(M: Any) -> np.ndarray:
    """A FLINT matrix modulo p as an int64 numpy array of residues."""
    rows, cols = M.nrows(), M.ncols()
    if rows * cols == 0:
        return np.zeros((rows, cols), dtype=np.int64)
    return np.fromiter(map(int, M.entries()), dtype=np.int64,
                       count=rows * cols).reshape(rows, cols)


def rref(M: np.ndarray, p: int) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form modulo p: its non-zero rows (int64) and their pivot columns,
    which are the lexicographically first independent columns of M (mod p)."""
    if M.size == 0:
        return np.zeros((0, M.shape[1]), dtype=np.int64), []
    R, rank = to_nmod(M, p).rref()
    if rank == 0:
        return np.zeros((0, M.shape[1]), dtype=np.int64), []
    values = from_nmod(R)[:rank]
    pivots = [int(np.flatnonzero(row)[0]) for row in values]
    return values, pivots


def nonsingular(C: np.ndarray, p: int) -> bool:
    """det C is non-zero modulo p (so non-zero over the integers)."""
    return C.shape[0] == C.shape[1] and int(to_nmod(C, p).det()) != 0


def inverse(C: np.ndarray, p: int) -> np.ndarray | None:
    """C⁻¹ modulo p, or None when C is singular modulo p."""
    if C.shape[0] == 0:
        return np.zeros((0, 0), dtype=np.int64)
    try:
        return from_nmod(to_nmod(C, p).inv())
    except ZeroDivisionError:
        return None


def matmul(A: np.ndarray, B: np.ndarray, p: int) -> np.ndarray:
    """A·B modulo p (FLINT: int64 numpy would overflow)."""
    if A.shape[0] == 0 or B.shape[1] == 0:
        return np.zeros((A.shape[0], B.shape[1]), dtype=np.int64)
    return from_nmod(to_nmod(A, p) * to_nmod(B, p))


def reconstruct(a: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rational reconstruction, entry by entry (vectorised extended Euclid): the fraction n/d
    with |n|, d <= sqrt(m/2) and n ≡ a·d (mod m), when there is one. ``m`` is a prime or a
    product of primes (Chinese remainders) below 2^62, so that every step stays in int64.
    Returns numerators, denominators and a mask of entries that have one. A reconstructed
    fraction is only a candidate: the caller checks what it claims exactly.

    >>> num, den, ok = reconstruct(np.array([3 * pow(7, -1, 101)]), 101)
    >>> int(num[0]), int(den[0]), bool(ok[0])
    (3, 7, True)
    """
    if not 1 < m < 2**62:
        raise ValueError(f"modulus {m} outside 2..2^62")
    bound = math.isqrt(m // 2)
    a = np.asarray(a, dtype=np.int64)
    r1 = np.mod(a, m).ravel()
    t1 = np.ones(r1.shape, dtype=np.int64)
    # extended Euclid on (m, a) for the entries still above the bound, until none is
    live = np.flatnonzero(r1 > bound)
    u0, u1 = np.full(live.size, m, dtype=np.int64), r1[live]  # remainders of the live ones
    v0, v1 = np.zeros(live.size, dtype=np.int64), t1[live]  # and their coefficients of a
    while live.size:
        q = u0 // u1
        u0, u1 = u1, u0 - q * u1
        v0, v1 = v1, v0 - q * v1
        done = u1 <= bound
        if done.any():
            r1[live[done]], t1[live[done]] = u1[done], v1[done]
            keep = ~done
            live, u0, u1, v0, v1 = live[keep], u0[keep], u1[keep], v0[keep], v1[keep]
    sign = np.where(t1 < 0, -1, 1)
    num, den = r1 * sign, np.abs(t1)
    ok = (den > 0) & (den <= bound) & (np.gcd(num, den) == 1)
    return (np.where(ok, num, 0).reshape(a.shape), np.where(ok, den, 1).reshape(a.shape),
            ok.reshape(a.shape))
