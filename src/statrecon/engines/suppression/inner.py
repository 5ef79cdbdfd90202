"""What the inner cells of a table tell the fast method that its equations alone do not.

A table's equations say each total is the sum of its children; following them down, every
cell is the sum of inner cells (:func:`inner_cells`: the cells that are no equation's
total). Two things the Gaussian pass (:mod:`.gauss`) cannot see on its own follow,
both from SSBtools' GaussSuppression:

- **Sums pinned at their bound.** An attacker knows every cell is at least its lower bound (0
  for a count). Two primary zeros whose sum the published cells determine are each pinned at
  0, though the equations alone leave each of them free: the integer audit finds them
  disclosed, and the repair loop must then add cells one failure at a time. GaussSuppression
  guards such sums as imaginary primary cells (its "subSum" handling of singletons, the zeros
  when zeros are protected); :func:`bound_sums` gives them to the Gaussian pass the same way:
  for each cell, the primary inner cells under it that sit at their lower bound.
- **Breadth.** Among candidate cells of equal value, GaussSuppression publishes first the
  ones computed from more (and larger) inner cells (``CandidatesDefault``'s tie-break):
  :func:`breadth`.

Both only shape the proposal; the pattern is audited exactly afterwards as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import scipy.sparse as sp

from statrecon.engines.intervals import IntervalProblem


def inner_cells(matrix: sp.spmatrix) -> list[tuple[int, ...]]:
    """For every cell, the inner cells it sums, following for each total the first equation
    that has it as its lone positive (or lone negative) entry. A cell that heads no equation
    is its own inner cell; one met again on its own way down (a cycle: not a table's
    hierarchy) is left out there."""
    A = sp.csr_matrix(matrix)
    n = A.shape[1]
    children: dict[int, list[int]] = {}
    for k in range(A.shape[0]):
        cols = A.indices[A.indptr[k]:A.indptr[k + 1]]
        vals = A.data[A.indptr[k]:A.indptr[k + 1]]
        pos, neg = cols[vals > 0], cols[vals < 0]
        if len(pos) == 1 and len(neg):
            children.setdefault(int(pos[0]), [int(c) for c in neg])
        elif len(neg) == 1 and len(pos):
            children.setdefault(int(neg[0]), [int(c) for c in pos])
    inner: list[tuple[int, ...] | None] = [None] * n
    state = [0] * n  # 0: not met, 1: on the way down, 2: done
    for root in range(n):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(children.get(root, ())))]
        while stack:  # depth first, without recursion: a chain may be long
            c, kids = stack[-1]
            new = next((k for k in kids if not state[k]), None)
            if new is not None:
                state[new] = 1
                stack.append((new, iter(children.get(new, ()))))
                continue
            stack.pop()
            state[c] = 2
            below = [inner[k] for k in children.get(c, ()) if inner[k] is not None]
            inner[c] = tuple(sorted({i for v in below for i in v or ()})) if below else (c,)
    return [v or (j,) for j, v in enumerate(inner)]


def bound_sums(problem: IntervalProblem, primaries: Sequence[int],
               inner: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The sets of primary inner cells at their lower bound that some cell sums (two or
    more of them, each set once), when they are not that whole cell, itself primary."""
    prim = set(primaries)
    at_bound = {j for j in prim if problem.values[j] == problem.lower[j]}
    sums: dict[tuple[int, ...], None] = {}
    for c, cells in enumerate(inner):
        pinned = tuple(j for j in cells if j in at_bound)
        if len(pinned) >= 2 and not (len(pinned) == len(cells) and c in prim):
            sums.setdefault(pinned)
    return list(sums)


def breadth(problem: IntervalProblem, inner: Sequence[tuple[int, ...]]) -> list[float]:
    """GaussSuppression's tie-break weight of each cell: over its inner cells, the sum of
    (value + 1) of every cell that holds them."""
    held = [0.0] * problem.n_cells
    for c, cells in enumerate(inner):
        v = float(problem.values[c]) + 1.0
        for i in cells:
            held[i] += v
    return [sum(held[i] for i in cells) for cells in inner]
