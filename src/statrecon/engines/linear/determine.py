"""Exact determinability: which unknowns every solution of the exact statistics shares, proven
with exact rational arithmetic (FLINT), each with the combination of statistics that yields it
(a difference attack). Nothing here is floating point."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from statrecon.engines.linear.problem import Matrix, check_system

if TYPE_CHECKING:
    import scipy.sparse as sp  # loaded by determine() itself: the CLI imports this package


@dataclass(frozen=True)
class Certificate:
    """x[index] = sum(coefficient * answer of statistic): proof that the record is pinned."""

    index: int
    value: Fraction
    terms: tuple[tuple[int, Fraction], ...]  # (statistic row, coefficient)


@dataclass(frozen=True)
class Determination:
    """Exact determinability of every unknown from the exact statistics (FLINT, rationals)."""

    consistent: bool
    rank: int
    determined: tuple[Certificate, ...]
    conflict: tuple[int, ...] = ()  # statistic rows whose combination contradicts (if any)
    elapsed_s: float = 0.0


def determine(F: Matrix, answers: list[Fraction] | tuple[Fraction, ...],
              algorithm: str = "auto") -> Determination:
    """Which unknowns every real solution of ``F x = answers`` shares, proven exactly.

    x_j is shared by all solutions iff e_j lies in the row space of F, i.e. iff the reduced row
    echelon form of F (computed over the rationals) has a row equal to e_j. The certificate y
    (with F^T y = e_j) comes from the same elimination run on [F | I]; it is checked again with
    exact arithmetic before being reported. Identical columns (records no statistic tells apart)
    are never determined and are collapsed first.

    ``auto`` first reduces to statistics independent modulo a prime (each step proven exactly,
    see ``_independent_rows``), which avoids the huge rationals of a full elimination;
    ``rref`` runs the full exact elimination of [F | I] (the fallback, kept for testing)."""
    check_system(F, list(answers))
    # lazy: the package is imported at CLI start-up (the --method help), scipy only here
    import scipy.sparse as sp

    start = time.perf_counter()
    Fs = sp.csr_matrix(F)
    k, n = Fs.shape
    if k == 0 or n == 0:
        return Determination(True, 0, (), elapsed_s=time.perf_counter() - start)
    system = _collapse(Fs, answers)
    reduced = _independent_rows(system.D, system.b) if algorithm == "auto" else None
    if reduced is not None:
        rows_i, conflict_rows = reduced
        if conflict_rows:
            return Determination(False, len(rows_i), (), conflict_rows,
                                 time.perf_counter() - start)
        fast = _determine_full_row_rank(Fs, system.D[rows_i], system.sub.shape[1],
                                        system.candidates, system.b, rows_i)
        if fast is not None:
            return Determination(True, len(rows_i), tuple(fast), (),
                                 time.perf_counter() - start)
    return _determine_rref(Fs, system, start)


@dataclass(frozen=True)
class _Collapsed:
    """The statistics as integers with identical columns collapsed (``_collapse``)."""

    candidates: np.ndarray  # records whose column is unique and non-zero (sorted)
    sub: np.ndarray  # their columns
    oth_u: np.ndarray  # the distinct non-zero columns of every other record
    D: np.ndarray  # [sub | oth_u]
    b: list[Fraction]  # the answers


def _collapse(Fs: sp.csr_matrix, answers: list[Fraction] | tuple[Fraction, ...]
              ) -> _Collapsed:
    """Integer columns, identical ones collapsed: a record that shares its column with
    another is never determined, and distinct columns are enough for everything else."""
    k, n = Fs.shape
    dense = Fs.toarray()
    if not np.allclose(dense, np.round(dense)):
        raise ValueError("determine needs integer coefficients")
    dense = np.round(dense).astype(np.int64)
    # Collapse identical columns: a record shares its column with another -> not determined.
    uniq, first, counts = np.unique(dense.T, axis=0, return_index=True, return_counts=True)
    candidates = np.sort(first[(counts == 1) & np.any(uniq != 0, axis=1)])
    sub = dense[:, candidates]
    # Rows that touch no candidate still matter (they constrain duplicated columns), but they
    # cannot help pin a candidate: y may use them only with coefficient 0 on candidate columns.
    # Keep the full row set: F restricted to the other columns is part of F^T y = e_j.
    others = np.setdiff1d(np.arange(n), candidates)
    oth = dense[:, others]
    # Distinct columns among the others are enough for the condition F_others^T y = 0.
    oth_u = np.unique(oth.T, axis=0).T if oth.size else np.zeros((k, 0), dtype=np.int64)
    oth_u = oth_u[:, np.any(oth_u != 0, axis=0)] if oth_u.size else oth_u
    b = [Fraction(v) for v in answers]
    D = np.hstack([sub, oth_u]) if oth_u.size else sub
    return _Collapsed(candidates, sub, oth_u, D, b)


def _determine_rref(Fs: sp.csr_matrix, system: _Collapsed, start: float) -> Determination:
    """The full exact elimination of [F | I] (FLINT, integers): every row of the reduced
    form that is e_j on the records is a certificate for record j; a row that is zero on the
    records combines the statistics into 0 = its answer (a conflict unless that is 0)."""
    import flint

    k = Fs.shape[0]
    sub, oth_u, candidates, b = system.sub, system.oth_u, system.candidates, system.b
    m = sub.shape[1]
    # Column order: candidates, then other distinct columns, then the identity (certificates).
    block = np.hstack([sub, oth_u, np.eye(k, dtype=np.int64)])
    R, den, rank_aug = flint.fmpz_mat(block.tolist()).rref()
    width = sub.shape[1] + oth_u.shape[1]
    rows = R.tolist()
    certs = []
    rank = 0
    conflict: tuple[int, ...] = ()
    consistent = True
    den_i = int(den)
    for r in range(rank_aug):
        row = [int(v) for v in rows[r]]
        nz = [c for c in range(width) if row[c] != 0]
        if not nz:
            # A combination y of statistics with F^T y = 0: its answers must combine to 0.
            y = [Fraction(row[width + i], den_i) for i in range(k)]
            total = sum((yi * bi for yi, bi in zip(y, b, strict=True) if yi), Fraction(0))
            if total != 0 and consistent:
                consistent = False
                conflict = tuple(i for i in range(k) if y[i] != 0)
            continue
        rank += 1
        if len(nz) == 1 and nz[0] < m:
            j = nz[0]
            y = [Fraction(row[width + i], row[j]) for i in range(k)]
            terms = tuple((i, yi) for i, yi in enumerate(y) if yi != 0)
            col = int(candidates[j])
            _verify_certificate(Fs, col, terms)
            value = sum((c * b[i] for i, c in terms), Fraction(0))
            certs.append(Certificate(col, value, terms))
    certs.sort(key=lambda c: c.index)
    return Determination(consistent, rank, tuple(certs) if consistent else (), conflict,
                         time.perf_counter() - start)


_PRIME = 2_147_483_629  # a prime below 2^31: products of two residues fit in int64


def _rref_mod_p(M: np.ndarray, p: int = _PRIME) -> tuple[np.ndarray, list[int]]:
    """Reduced row echelon form modulo a prime (FLINT nmod_mat), as int64 rows + pivots."""
    import flint

    R, rank = flint.nmod_mat(np.mod(M, p).astype(np.int64).tolist(), p).rref()
    if rank == 0:
        return np.zeros((0, M.shape[1]), dtype=np.int64), []
    values = np.fromiter((int(v) for v in R.entries()), dtype=np.int64,
                         count=M.shape[0] * M.shape[1]).reshape(M.shape)[:rank]
    pivots = [int(np.flatnonzero(row)[0]) for row in values]
    return values, pivots


def _independent_rows(D: np.ndarray, b: list[Fraction]
                      ) -> tuple[np.ndarray, tuple[int, ...]] | None:
    """Statistics independent mod p (so over the rationals too), with an exact proof that each
    other statistic is a combination of them, and a check that its answer is the same
    combination of theirs (else the release is inconsistent: that row and the rows it combines
    are returned as the conflict). None when a dropped row turns out independent over the
    rationals (an unlucky prime); the caller then uses the exact elimination."""
    import flint

    k = D.shape[0]
    _, independent = _rref_mod_p(D.T)
    rows_i = np.array(independent, dtype=int)
    dropped = np.setdiff1d(np.arange(k), rows_i)
    if dropped.size == 0:
        return rows_i, ()
    if rows_i.size == 0:
        bad = [int(i) for i in dropped if b[i] != 0]
        return rows_i, ((bad[0],) if bad else ())
    DI = D[rows_i]
    _, pivots = _rref_mod_p(DI)
    C = flint.fmpq_mat(flint.fmpz_mat(DI[:, pivots].tolist()))
    L = flint.fmpq_mat(flint.fmpz_mat(D[dropped][:, pivots].tolist())) * C.inv()
    if L * flint.fmpq_mat(flint.fmpz_mat(DI.tolist())) != flint.fmpq_mat(
            flint.fmpz_mat(D[dropped].tolist())):
        return None
    bI = flint.fmpq_mat([[flint.fmpq(v.numerator, v.denominator)] for v in
                         (b[int(i)] for i in rows_i)])
    combined = L * bI
    for t, i in enumerate(dropped):
        got = combined[t, 0]
        if Fraction(int(got.p), int(got.q)) != b[int(i)]:
            support = [int(rows_i[j]) for j in range(rows_i.size) if L[t, j] != 0]
            return rows_i, tuple(sorted([int(i), *support]))
    return rows_i, ()


def _determine_full_row_rank(Fs: sp.csr_matrix, D: np.ndarray, m: int,
                             candidates: np.ndarray, b: list[Fraction], rows: np.ndarray
                             ) -> list[Certificate] | None:
    """Determinability when the statistics ``rows`` (rows of D) are independent.

    Independent modulo a prime p means independent over the rationals (a k×k minor is non-zero
    mod p, hence non-zero), so the pivot columns C span everything. Then for a pivot record j:
    * a non-zero entry of row j of C^-1 D mod p is non-zero over the rationals too
      (p does not divide det C, the common denominator), so another column uses x_j and
      j is provably not determined;
    * otherwise the only possible certificate is y = row j of C^-1; it is computed exactly and
      checked exactly (F^T y = e_j): verified -> determined, refuted -> not determined.
    Non-pivot records are never determined (their column is a combination of the pivots).
    The first ``m`` columns of D are the candidate records (``candidates``)."""
    import flint

    k = D.shape[0]
    if k == 0:
        return []
    R, pivots = _rref_mod_p(D)
    if len(pivots) < k:
        return None
    pos = {c: i for i, c in enumerate(pivots)}
    suspects = [c for c in pivots if c < m and np.count_nonzero(R[pos[c]]) == 1]
    certs: list[Certificate] = []
    if suspects:
        inverse = flint.fmpz_mat(D[:, pivots].tolist()).inv()  # exact rationals
        for c in suspects:
            y = [Fraction(int(v.p), int(v.q)) for v in
                 (inverse[pos[c], i] for i in range(k))]
            terms = tuple((int(rows[i]), yi) for i, yi in enumerate(y) if yi != 0)
            col = int(candidates[c])
            if _certificate_holds(Fs, col, terms):
                value = sum((co * b[i] for i, co in terms), Fraction(0))
                certs.append(Certificate(col, value, terms))
    certs.sort(key=lambda c: c.index)
    return certs


def _certificate_holds(F: sp.csr_matrix, col: int, terms: tuple[tuple[int, Fraction], ...]
                       ) -> bool:
    acc: dict[int, Fraction] = {}
    for i, c in terms:
        start, end = F.indptr[i], F.indptr[i + 1]
        for j, v in zip(F.indices[start:end], F.data[start:end], strict=True):
            acc[int(j)] = acc.get(int(j), Fraction(0)) + c * round(float(v))
    return acc.get(col, Fraction(0)) == 1 and all(
        v == 0 for j, v in acc.items() if j != col)


def _verify_certificate(F: sp.csr_matrix, col: int, terms: tuple[tuple[int, Fraction], ...]
                        ) -> None:
    """Exact check that sum_i y_i F_i = e_col; a failure is a bug, never a result."""
    if not _certificate_holds(F, col, terms):
        raise AssertionError(f"certificate for record {col} does not verify")
