"""The linear phase of fast secondary suppression, in the spirit of SSBtools' GaussSuppression:
which published cells would let an attacker solve a primary cell from the equations alone.

Every completion of the table is ``x = X z`` for the free coordinates z of the null space of
the equations (for a table: its inner cells), so cell c is the vector ``X[c]``, and a primary
cell i is determined by the published set P exactly when ``X[i]`` lies in the span of
``{X[j] : j in P}``. The greedy below publishes the cells one by one, the ones dearest to
suppress first, and suppresses a cell instead when publishing it would put a primary cell in
that span. With the published span kept in reduced echelon form, the residual of each primary
cell modulo the span is canonical, and publishing j reveals primary i exactly when their
residuals are parallel: one hash look-up per cell.

Everything here runs modulo a large prime and proves nothing: it only proposes a pattern,
which ``suppression`` then audits exactly (LP certificates and integer bounds). An unlucky
prime can only make the proposal worse, never a claim wrong.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from statrecon.engines.solvers.elimination import (
    SparseBasis,
    Vec,
    axpy,
    axpy_support,
    reindex,
)
from statrecon.engines.solvers.modp import PRIMES

P = PRIMES[0]


def null_coordinates(matrix: sp.csr_matrix) -> list[Vec]:
    """For every cell, its coordinates (mod P) over the free cells of a null-space basis of
    ``matrix``. Pivots (the cells expressed through the free ones) go to the cells that head
    the fewest equations, then are in the fewest: one child of each equation, not its total,
    so that the totals are free cells and every cell a short sum. (With the totals as pivots
    the free cells are the inner cells and a grand total sums all of them: 1.5 million
    entries and 64,000 in one vector on issue 28's linked pair of 3-way tables, 0.6 million
    and 480 this way, and the Gaussian pass 4.5 times faster there. Any choice spans the
    same null space, so the pass's pattern is the same.)"""
    A = sp.csr_matrix(matrix).astype(np.int64)
    k, n = A.shape
    parentness = np.zeros(n, dtype=np.int64)
    rows: list[Vec] = []
    heads: list[list[int]] = []  # per equation, its cells with a positive coefficient
    for i in range(k):
        s, e = A.indptr[i], A.indptr[i + 1]
        cols, vals = A.indices[s:e], A.data[s:e]
        pos = cols[vals > 0]
        heads.append([int(c) for c in pos])
        if len(pos) == 1:
            parentness[pos[0]] += 1
        rows.append({int(c): int(v) % P for c, v in zip(cols, vals, strict=True) if v % P})
    degree = np.diff(A.tocsc().indptr)
    priority = [(-int(parentness[c]), -int(degree[c]), c) for c in range(n)]
    # equations of the highest totals first
    order = sorted(range(k), key=lambda i: (-min((int(parentness[c]) for c in heads[i]),
                                                 default=0), i))
    # the null space: each pivot cell is minus its basis row's rest over the free cells
    ns = SparseBasis(P)
    for i in order:
        r = ns.reduce(rows[i])
        if r:  # else a redundant equation
            ns.add(r, max(r, key=priority.__getitem__))
    return [{f: P - a for f, a in ns.rows[c].items()} if c in ns.rows else {c: 1}
            for c in range(n)]


Key = tuple[int, int] | frozenset[tuple[int, int]]


class _Prints:
    """Three random linear forms of a vector, mod P: parallel vectors have proportional
    prints, so the ratios of the second and third to the first name a direction in O(1)
    once the prints are kept up to date along the vectors (they are linear: an update
    ``target += s * source`` adds ``s * prints(source)``). Two directions share a name with
    probability about 1/P**2, and then publishing a cell only looks like a disclosure: the
    pass suppresses one cell too many, never too few (parallel vectors always match)."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(20_211_124)
        self.w = rng.integers(1, P, size=(3, max(n, 1))).tolist()

    def of(self, v: Vec) -> tuple[int, int, int]:
        w0, w1, w2 = self.w
        return (sum(a * w0[c] for c, a in v.items()) % P,
                sum(a * w1[c] for c, a in v.items()) % P,
                sum(a * w2[c] for c, a in v.items()) % P)


def _key(v: Vec, prints: tuple[int, int, int]) -> Key:
    """The name of v's direction (``prints``: its prints): the ratios of its prints, or,
    when the first print is 0, v scaled so that its first entry is 1."""
    a, b, c = prints
    if a:
        f = pow(a, -1, P)
        return b * f % P, c * f % P
    f = pow(v[min(v)], -1, P)
    return frozenset((k, x * f % P) for k, x in v.items())


class _Basis:
    """The published span (a reduced basis modulo P, pivot: the lowest coordinate), and the
    residuals of the primary cells modulo it."""

    def __init__(self, primaries: dict[int, Vec], prints: _Prints) -> None:
        self.p = prints
        self.span = SparseBasis(P)
        self.res = {i: dict(v) for i, v in primaries.items()}
        self.res_prints = {i: prints.of(v) for i, v in self.res.items()}
        self.res_holders: defaultdict[int, set[int]] = defaultdict(set)
        self.by_key: dict[Key, set[int]] = defaultdict(set)
        self.key_of: dict[int, Key] = {}  # each residual's key
        self.revealed: set[int] = set()
        for i, v in self.res.items():
            for c in v:
                self.res_holders[c].add(i)
            if v:
                self.key_of[i] = _key(v, self.res_prints[i])
                self.by_key[self.key_of[i]].add(i)
            else:
                self.revealed.add(i)

    def reduce(self, v: Vec) -> Vec:
        return self.span.reduce(v)

    def reveals(self, r: Vec) -> bool:
        """Publishing a cell of residual r would determine some primary cell."""
        return bool(r) and bool(self.by_key.get(_key(r, self.p.of(r))))

    def pivot(self, r: Vec) -> int:
        """The column of r to pivot on: the one the fewest residuals and basis rows hold
        (each of them is rewritten with the new row; Markowitz's rule for fill), then the
        lowest. Any column gives the same residuals modulo the span, so the same pattern:
        only the work changes."""
        holders, rows = self.res_holders, self.span.holders
        return min(r, key=lambda c: (len(holders.get(c, ())) + len(rows.get(c, ())), c))

    def publish(self, r: Vec) -> None:
        """Adds the residual r (consumed) to the published span."""
        if not r:
            return
        q = self.pivot(r)
        new = self.span.add(r, q)
        w0, w1, w2 = self.p.w
        a, b, c = self.p.of(new)  # the prints of the new row: its rest and 1 at q
        rp = ((a + w0[q]) % P, (b + w1[q]) % P, (c + w2[q]) % P)
        for i in list(self.res_holders.pop(q, set())):
            old = self.res[i]
            self.by_key[self.key_of.pop(i)].discard(i)
            s = -old.pop(q)
            reindex(axpy_support(old, s, new, P), i, self.res_holders)
            a, b, c = self.res_prints[i]
            self.res_prints[i] = ((a + s * rp[0]) % P, (b + s * rp[1]) % P, (c + s * rp[2]) % P)
            if old:
                self.key_of[i] = _key(old, self.res_prints[i])
                self.by_key[self.key_of[i]].add(i)
            else:
                self.revealed.add(i)


def gauss_pattern(matrix: sp.csr_matrix, primaries: Sequence[int], fixed: Sequence[int],
                  publish_order: Sequence[int],
                  on_step: Callable[[int, int], None] | None = None,
                  expired: Callable[[], bool] | None = None,
                  sums: Sequence[Sequence[int]] = ()) -> tuple[list[int], set[int]]:
    """Secondary cells (in the order chosen) so that no primary cell is in the span of the
    published ones, modulo P: ``fixed`` cells are published whatever happens, then the cells
    of ``publish_order`` one by one, each suppressed instead when publishing it would
    determine a primary cell, or the sum of the cells of one of ``sums`` (imaginary primary
    cells, :mod:`.inner`). Also returns the primary cells the fixed cells already
    determine (no choice of secondaries can save those from a linear attack).
    ``expired()`` True (checked every 256 cells): stop there, the pattern unfinished (the
    caller, which owns the clock, must not use it)."""
    X = null_coordinates(matrix)
    guarded = {i: X[i] for i in primaries}
    for k, cells in enumerate(sums):
        summed: Vec = {}
        for j in cells:
            axpy(summed, 1, X[j], P)
        guarded[len(X) + k] = summed
    basis = _Basis(guarded, _Prints(len(X)))
    for j in fixed:
        basis.publish(basis.reduce(X[j]))
    lost = {i for i in basis.revealed if i < len(X)}
    secondary: list[int] = []
    total = len(publish_order)
    for done, j in enumerate(publish_order, start=1):
        if expired is not None and done % 256 == 0 and expired():
            break
        r = basis.reduce(X[j])
        if basis.reveals(r):
            secondary.append(j)
        else:
            basis.publish(r)
        if on_step is not None and (done % 1000 == 0 or done == total):
            on_step(done, total)
    return secondary, lost
