"""What a quick fast run does with the time it saved: a second Gaussian order, then swap
moves. Both only ever replace the pattern with a cheaper one that is proven protected.

The fast method's count depends on the order in which the Gaussian pass offers cells, and no
one order wins everywhere. The default suppresses the smallest cells first, zeros included;
a suppressed zero can only move up, so it often protects a primary cell less than a cell of
1 does. Offering zeros last gives one cell fewer on easySdcTable's z2 linked maxN = 10, and
more cells or far more time elsewhere (BENCHMARKS.md). Then the swap moves of
:mod:`.improve` (suppress one cell, publish two) on the better pattern.

Where the first run took under ``QUICK_S``, both run within ``BUDGET`` times its time (at
least ``FLOOR_S``), so a large table is never slowed and a small one by a fraction of a
second at most. The second order's pattern comes from its own run, audited like the first;
the swaps keep every primary cell's checked witnesses. A tie keeps the first pattern.
"""

from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction

from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.suppression.fast import fast
from statrecon.engines.suppression.improve import improve
from statrecon.engines.suppression.run import ProtectResult, Run, suppress_order

QUICK_S = 0.1  # a first run faster than this leaves time for the rest
BUDGET = 8.0  # the rest may take this many times the first run (at least FLOOR_S)
FLOOR_S = 0.1


def portfolio(run: Run) -> ProtectResult:
    """The fast method; on a quick feasible first run, also zeros last and the swaps
    (module docstring)."""
    first = fast(run)
    took = time.perf_counter() - run.start
    if first.status != "feasible" or took >= QUICK_S or run.deadline.expired:
        return first
    end = time.monotonic() + max(BUDGET * took, FLOOR_S)
    if run.deadline.end is not None:
        end = min(end, run.deadline.end)
    extra = replace(run, deadline=Deadline(end))
    best = first
    order = zeros_last(run)
    if order != suppress_order(run):
        second = fast(extra, order)
        if second.status == "feasible" and _size(second) < _size(first):
            best = replace(second, note=_joined(
                second.note, "(the Gaussian pass offered zero cells last: fewer cells)"))
    if run.prune:  # the swaps are pruning's: off with it
        best = swapped(extra, best)
    return replace(best, elapsed_s=time.perf_counter() - run.start, rounds=run.oracle.audits,
                   cuts=len(run.pool))


def swapped(run: Run, best: ProtectResult) -> ProtectResult:
    """``best`` after the swap moves of :mod:`.improve`, when they gain."""
    pattern = frozenset(j for j, h in enumerate(best.hidden) if h)
    got = improve(run.oracle, pattern, {a.cell: a for a in best.audit.cells}, run.costs,
                  run.deadline)
    if got is None:
        return best
    note = (f"swap moves: {len(got.added)} cells suppressed, {len(got.published)} published "
            "again (checked witnesses hold every primary cell protected)")
    return run.result(got.suppressed, "feasible", got.audits, best.secondary,
                      _joined(best.note, note))


def zeros_last(run: Run) -> list[int]:
    """:func:`suppress_order` with the zero cells after the others of the same cost."""
    return suppress_order(run, zeros_last=True)


def _size(r: ProtectResult) -> tuple[Fraction, int]:
    return r.cost, sum(r.hidden)


def _joined(*notes: str) -> str:
    return " ".join(filter(None, notes))
