"""Swap moves after pruning: suppress one more cell, publish again two (or more).

Pruning publishes the secondary cells no witness needs, one at a time, so a pattern where
each of two small cells carries a witness that one larger neighbour could carry for both
stays as it is. Here a published candidate cell next to the pattern is *released*
(suppressed after all), then every secondary cell sharing an equation with it is offered to
pruning again (:class:`.prune.Pruner`, the same witnesses checked exactly); the
move is kept when at least one is published (two or more: a cell fewer), else the cell is
held at its value again, nothing having changed.

All of it runs on one prepared problem whose pattern holds the candidate cells too, at
their true values in every witness, so that a release costs no new preparation. A witness
that moves only suppressed cells and satisfies every equation of the larger component is a
completion of the table under the current pattern (the other equations hold only published
cells), so every audit returned rests, as pruning's do, on checked witnesses.

Counts only (every cost equal): with unequal costs a kept swap could cost more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import scipy.sparse as sp

from statrecon.engines.intervals import CellAudit
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression.cuts import Oracle
from statrecon.engines.suppression.prune import Pruner


@dataclass(frozen=True)
class Improved:
    """The pattern after the swaps, the audits of its primary cells, and the cells it
    suppressed (``added``) and published (``published``) against the pattern it started
    from."""

    suppressed: frozenset[int]
    audits: dict[int, CellAudit]
    added: tuple[int, ...]
    published: tuple[int, ...]


def improve(oracle: Oracle, suppressed: frozenset[int], audits: dict[int, CellAudit],
            costs: Sequence[Fraction], deadline: Deadline) -> Improved | None:
    """Swap moves on the protecting pattern ``suppressed`` (``audits``: every primary cell
    protected under it) until ``deadline`` or no candidate is left. None: nothing gained
    (or costs differ, or nothing to try)."""
    if len(set(costs)) > 1:
        return None
    A = sp.csr_matrix(oracle.problem.matrix)
    AT = A.T.tocsr()
    prim = set(oracle.primaries)
    near = _Neighbours(A, AT)
    secondary = {j for j in suppressed if j not in prim}
    outside = sorted({c for s in suppressed for c in near(s)
                      if oracle.candidates[c] and c not in suppressed})
    if not outside or not secondary:
        return None
    values = oracle.problem.values
    # the cells next to most secondary cells first (they may replace several), then larger
    outside.sort(key=lambda c: (-len(near(c) & secondary), -values[c], c))
    prep = oracle.prepared(suppressed | frozenset(outside))
    pruner = Pruner(prep, audits, deadline, held=outside)
    added: list[int] = []
    published: list[int] = []
    for c in outside:
        if deadline.expired:
            break
        if not pruner.release(c):
            continue
        beside = sorted(near(c) & secondary, key=lambda s: (-values[s], s))
        gone = [s for s in beside if not deadline.expired and pruner.try_publish(s, deadline)]
        if not gone:
            pruner.hold(c)
            continue
        added.append(c)
        published += gone
        secondary = (secondary | {c}) - set(gone)
    final = (suppressed | set(added)) - set(published)
    if len(final) >= len(suppressed):
        return None
    return Improved(final, pruner.audits(), tuple(c for c in added if c in final),
                    tuple(s for s in published if s in suppressed))


class _Neighbours:
    """The cells sharing an equation with a cell, computed once per cell."""

    def __init__(self, A: sp.csr_matrix, AT: sp.csr_matrix) -> None:
        self.A, self.AT = A, AT
        self.seen: dict[int, set[int]] = {}

    def __call__(self, j: int) -> set[int]:
        if j not in self.seen:
            A, AT = self.A, self.AT
            out: set[int] = set()
            for k in AT.indices[AT.indptr[j]:AT.indptr[j + 1]]:
                out.update(int(c) for c in A.indices[A.indptr[k]:A.indptr[k + 1]])
            out.discard(j)
            self.seen[j] = out
        return self.seen[j]
