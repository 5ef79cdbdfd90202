"""Exact determinability: which unknowns every solution of the exact and bounded statistics
pins, proven with exact rational arithmetic (FLINT), each with the combination of statistics
that yields it (a difference attack). Nothing here is floating point.

Published answers have finite precision: a bounded statistic (``error``, a rounded answer)
says only that the true answer lies within ± eᵢ. A certificate y (Fᵀy = e_j) then gives
x_j ∈ Σ yᵢbᵢ ± Σ |yᵢ|eᵢ, computed exactly (``Certificate.half_width``); exact statistics are
used first and bounded ones by growing error, so a record the exact statistics pin keeps a
certificate of width 0. A combination with Fᵀy = 0 is a conflict only when 0 lies outside its
exact interval. Noisy statistics carry no guarantee and are never passed here.

How it scales (``auto``): identical columns are collapsed (records no statistic tells apart
are never pinned), the statistic–record graph is cut into connected components, and each
component is eliminated modulo a prime (dense FLINT ``nmod_mat`` per component, never one
matrix of the whole release) with every claim proven exactly (:mod:`.component`). A component
over ``max_cells`` cells is not decided and says so in ``notes``; nothing is skipped silently.

How certificates are reported: their coefficients are listed (``Certificate.terms``) when
they are small rationals or the component's rank is at most ``component.EXACT_LIMIT``; for a
larger full-rank component of exact statistics (a dense random release) they would be
thousands of rationals of thousands of digits, so the record instead cites a block proof
(``Certificate.block`` → ``Determination.blocks``: which statistics, which records, the prime
that shows the pivot block non-singular; the exact solution is checked by exact integer
multiplication). ``rref`` runs one full exact elimination of [F | I] instead (small systems,
kept as the reference the tests compare with).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from statrecon.engines.linear.problem import Matrix, check_system
from statrecon.engines.linear.proofs import (
    BlockProof,
    Certificate,
    Combination,
    Determination,
    combine,
    holds,
)

if TYPE_CHECKING:
    import scipy.sparse as sp  # loaded by determine() itself: the CLI imports this package

    from statrecon.engines.linear.component import BlockResult

__all__ = ["BlockProof", "Certificate", "Determination", "determine"]

# cells of the dense matrix of one component (8 bytes each mod p, ~50 more while converting)
MAX_CELLS = 40_000_000


def determine(F: Matrix, answers: list[Fraction] | tuple[Fraction, ...],
              errors: list[Fraction] | tuple[Fraction, ...] | None = None,
              algorithm: str = "auto", max_cells: int = MAX_CELLS) -> Determination:
    """Which unknowns every real solution of ``|F x - answers| <= errors`` pins, proven
    exactly, with each record's exact interval (module docstring). ``errors`` defaults to 0
    (every statistic exact)."""
    check_system(F, list(answers))
    start = time.perf_counter()
    Fs = _integer_csr(F)
    k, n = Fs.shape
    b = [Fraction(v) for v in answers]
    e = [Fraction(0)] * k if errors is None else [Fraction(v) for v in errors]
    if len(e) != k or any(v < 0 for v in e):
        raise ValueError("errors: one non-negative bound per statistic")
    if k == 0 or n == 0:
        return Determination(True, 0, (), elapsed_s=time.perf_counter() - start)
    if algorithm == "rref":
        return _determine_rref(Fs, b, e, start)
    if algorithm != "auto":
        raise ValueError(f"unknown algorithm {algorithm!r} (auto or rref)")
    order = np.array(sorted(range(k), key=lambda i: e[i]), dtype=int)  # exact first
    det = _determine_blocks(Fs[order], [b[i] for i in order], [e[i] for i in order],
                            max_cells)
    return replace(_reindex(det, order), elapsed_s=time.perf_counter() - start)


def _integer_csr(F: Matrix) -> sp.csr_matrix:
    import scipy.sparse as sp  # lazy: the package is imported at CLI start-up (--method help)

    Fs = sp.csr_matrix(F, dtype=np.float64)
    if not np.allclose(Fs.data, np.round(Fs.data)):
        raise ValueError("determine needs integer coefficients")
    out = sp.csr_matrix((np.round(Fs.data).astype(np.int64), Fs.indices, Fs.indptr),
                        shape=Fs.shape)
    out.eliminate_zeros()
    out.sort_indices()
    return out


def _distinct_columns(Fs: sp.csr_matrix) -> tuple[sp.csr_matrix, np.ndarray]:
    """(D, records): the distinct non-zero columns of F, and per column the one record that
    has it (-1 when several share it: such records are never pinned)."""
    Fc = Fs.tocsc()
    Fc.sort_indices()
    first: dict[bytes, int] = {}
    reps: list[int] = []
    owners: list[int] = []
    for j in range(Fc.shape[1]):
        s, t = Fc.indptr[j], Fc.indptr[j + 1]
        if s == t:
            continue
        key = Fc.indices[s:t].tobytes() + Fc.data[s:t].tobytes()
        c = first.setdefault(key, len(reps))
        if c == len(reps):
            reps.append(j)
            owners.append(j)
        else:
            owners[c] = -1
    return Fs[:, reps].tocsr(), np.array(owners, dtype=int)


def _components(D: sp.csr_matrix) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows, columns) of each connected component of the statistic–column graph."""
    import scipy.sparse as sp  # lazy: see _integer_csr
    from scipy.sparse.csgraph import connected_components  # lazy: as above

    k = D.shape[0]
    pattern = sp.csr_matrix((np.ones(D.nnz), D.indices, D.indptr), shape=D.shape)
    graph = sp.bmat([[None, pattern], [pattern.T, None]], format="csr")
    count, labels = connected_components(graph, directed=False)
    row_order = np.argsort(labels[:k], kind="stable")
    col_order = np.argsort(labels[k:], kind="stable")
    row_cuts = np.searchsorted(labels[:k][row_order], np.arange(count + 1))
    col_cuts = np.searchsorted(labels[k:][col_order], np.arange(count + 1))
    return [(row_order[row_cuts[c]:row_cuts[c + 1]], col_order[col_cuts[c]:col_cuts[c + 1]])
            for c in range(count) if row_cuts[c] < row_cuts[c + 1]]


def _determine_blocks(Fs: sp.csr_matrix, b: list[Fraction], e: list[Fraction],
                      max_cells: int) -> Determination:
    """Component by component (rows in priority order); the first proven conflict wins."""
    # lazy: the component solver loads FLINT, and the CLI imports this package at start-up
    from statrecon.engines.linear.component import Block, solve_block

    D, records = _distinct_columns(Fs)
    certs: list[Certificate] = []
    blocks: list[BlockProof] = []
    notes: list[str] = []
    rank = 0
    for rows, cols in _components(D):
        if cols.size == 0:  # a statistic over no record: 0 must lie in b ± e
            bad = [int(i) for i in rows if abs(b[int(i)]) > e[int(i)]]
            if bad:
                return Determination(False, rank, (), (bad[0],), notes=tuple(notes))
            continue
        if rows.size * cols.size > max_cells:
            notes.append(f"a component of {rows.size:,} statistics x {cols.size:,} records "
                         f"({rows.size * cols.size:,} cells, over the limit of {max_cells:,}) "
                         "was not decided: none of its records is claimed")
            continue
        rows = np.sort(rows)
        M = D[rows][:, cols].toarray().astype(np.int64)
        result = solve_block(Block(rows, M, records[cols]), Fs, b, e)
        notes.extend(result.notes)
        if result.conflict:
            return Determination(False, rank + result.rank, (), result.conflict,
                                 notes=tuple(notes))
        rank += result.rank
        certs.extend(_attach(result, blocks))
    certs.sort(key=lambda c: c.index)
    return Determination(True, rank, tuple(c for c in certs if c.half_width == 0), (),
                         bounded=tuple(c for c in certs if c.half_width > 0),
                         blocks=tuple(blocks), notes=tuple(notes))


def _attach(result: BlockResult, blocks: list[BlockProof]) -> list[Certificate]:
    """The component's certificates, a block proof numbered in the determination."""
    if result.proof is None:
        return result.certificates
    blocks.append(result.proof)
    return [replace(c, block=len(blocks) - 1) if c.block is not None else c
            for c in result.certificates]


def _reindex(det: Determination, order: np.ndarray) -> Determination:
    """Rows of the priority-ordered system back to the caller's rows."""
    def cert(c: Certificate) -> Certificate:
        return replace(c, terms=tuple((int(order[i]), v) for i, v in c.terms))

    return replace(
        det, determined=tuple(cert(c) for c in det.determined),
        bounded=tuple(cert(c) for c in det.bounded),
        conflict=tuple(sorted(int(order[i]) for i in det.conflict)),
        blocks=tuple(replace(p, rows=tuple(int(order[i]) for i in p.rows))
                     for p in det.blocks))


# --------------------------------------------------------------------------- rref (reference)

def _determine_rref(Fs: sp.csr_matrix, b: list[Fraction], e: list[Fraction], start: float
                    ) -> Determination:
    """The full exact elimination of [D | I] (FLINT, integers; D: the distinct columns with
    unique ones first): every row of the reduced form that is e_j on the records is a
    certificate for record j; a row that is zero on the records combines the statistics into
    0 = its answer ± its error (a conflict when 0 lies outside)."""
    import flint  # lazy: FLINT only when determinability runs

    k = Fs.shape[0]
    D, records = _distinct_columns(Fs)
    unique = np.flatnonzero(records >= 0)
    cols = np.concatenate([unique, np.flatnonzero(records < 0)])
    width = cols.size
    block = np.hstack([D[:, cols].toarray(), np.eye(k, dtype=np.int64)])
    R, _, rank_aug = flint.fmpz_mat(block.tolist()).rref()
    rows = R.tolist()
    certs: list[Certificate] = []
    rank = 0
    for r in range(rank_aug):
        row = [int(v) for v in rows[r]]
        nz = [c for c in range(width) if row[c] != 0]
        y = [Fraction(row[width + i], row[nz[0]] if nz else 1) for i in range(k)]
        support = [i for i in range(k) if y[i] != 0]
        value, half = combine(support, [y[i] for i in support], b, e)
        if not nz:
            if abs(value) > half:
                return Determination(False, rank, (), tuple(support),
                                     time.perf_counter() - start)
            continue
        rank += 1
        if len(nz) == 1 and nz[0] < unique.size:
            j = int(records[cols[nz[0]]])
            terms = tuple((i, y[i]) for i in support)
            _verify_certificate(Fs, j, terms)
            certs.append(Certificate(j, value, terms, half))
    certs.sort(key=lambda c: c.index)
    return Determination(True, rank, tuple(c for c in certs if c.half_width == 0), (),
                         time.perf_counter() - start,
                         bounded=tuple(c for c in certs if c.half_width > 0))


def _verify_certificate(F: sp.csr_matrix, col: int, terms: tuple[tuple[int, Fraction], ...]
                        ) -> None:
    """Exact check that sum_i y_i F_i = e_col; a failure is a bug, never a result."""
    den = math.lcm(*(c.denominator for _, c in terms)) if terms else 1
    combo = Combination(col, np.array([i for i, _ in terms], dtype=int),
                        tuple(int(c * den) for _, c in terms), den)
    if not holds(F, [combo]).all():
        raise AssertionError(f"certificate for record {col} does not verify")
