"""Noise-aware tract reconstruction, top down: the tract's persons first, then their blocks.

A joint model over every (block, person type) is too large once noise hides the zeros (a
tract has blocks x 27,972 candidate counts; see
``docs/derivations/census_noisy_joint_model.md``), and fitting each block
alone inflates it: a noisy cell can only be over-explained, never under-explained, by
non-negative counts, so an L1 fit block by block adds persons wherever noise is positive.
The Bureau's TopDown algorithm avoids both by fixing each level's totals from the level above
before fitting below; this does the same on one tract:

1. **Totals.** The tract's population is the inverse-variance mean of every measurement of it
   (each table's total cell at the tract, and the sum over blocks of each block total cell);
   each block's population likewise from its own total cells, scaled to the tract's and
   rounded (largest remainders).
2. **Tract persons.** A person histogram over the full attribute grid minimising the
   noise-weighted L1 deviation (weight 1 / sigma) from the tract cells and from the block
   cells summed over the tract (their sigma grows by sqrt(blocks)), with the total fixed
   (HiGHS, dual simplex), then rounded keeping the total.
3. **Block persons.** Each block's counts over the block tables' classes (person types the
   block tables cannot tell apart), minimising the same deviation from the block's cells with
   the block's population fixed and each class capped by the tract's (HiGHS per block); then
   the smallest change that makes the blocks add up to the tract's classes, a transportation
   problem (OR-Tools min-cost flow, integral).
4. **Single-year ages.** Each class's persons of the tract histogram are dealt to the blocks
   holding that class (a seeded shuffle: no block table tells them apart).

The result is an estimate, never called certain (``reconstruct_noisy``: every block's
``unique`` is None and no person is in ``certain``).
Measured on the 28 tracts: see BENCHMARKS.md (issue 16).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from ortools.graph.python import min_cost_flow

from statrecon.census.persons.cells import GRID_SIZE
from statrecon.census.persons.release import TractTables
from statrecon.discrete_gaussian import sample
from statrecon.engines.census.rank import copy_scores
from statrecon.engines.census.tract import BlockResult, CellMatrices, CensusOptions, TractResult
from statrecon.engines.solvers import highs
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.highs import HOT_START, build_highs

FLOW_SCALE = 1000  # min-cost flow costs are integers: fractions of a person x FLOW_SCALE


@dataclass(frozen=True)
class Measurements:
    """The measured count cells of one tract and their noise scales (all > 0)."""

    block_values: np.ndarray  # blocks x count cells
    tract_values: np.ndarray  # tract cells
    sigma_block: np.ndarray  # per count cell
    sigma_tract: np.ndarray  # per tract cell
    counts: np.ndarray  # indices of the count cells among the block cells


def measurements(tables: TractTables, mats: CellMatrices, sigma_block: np.ndarray,
                 sigma_tract: np.ndarray) -> Measurements:
    """The count cells of ``tables`` (medians dropped) with their sigmas, checked > 0."""
    counts = np.flatnonzero(mats.is_count)
    sb = np.asarray(sigma_block, dtype=float)[counts]
    st = np.asarray(sigma_tract, dtype=float)
    if not (np.all(sb > 0) and np.all(st > 0)):
        raise ValueError("the top-down model needs noise on every cell (sigma > 0); exact "
                         "tables go to the exact model")
    return Measurements(tables.block_values[:, counts].astype(float),
                        tables.tract_values.astype(float), sb, st, counts)


def _total_rows(matrix: sp.csr_matrix) -> np.ndarray:
    """Rows that count every person (their mask covers the whole grid)."""
    return np.flatnonzero(np.asarray(matrix.sum(axis=1)).ravel() == GRID_SIZE)


def _weighted_mean(values: np.ndarray, variances: np.ndarray) -> float:
    w = 1.0 / variances
    return float((values * w).sum() / w.sum())


def _round_to(shares: np.ndarray, total: int) -> np.ndarray:
    """Non-negative integers proportional to ``shares`` adding up to ``total`` (largest
    remainders; ties to the lower index)."""
    shares = np.clip(shares, 0, None)
    if total <= 0:
        return np.zeros(len(shares), dtype=np.int64)
    if shares.sum() <= 0:
        shares = np.ones(len(shares))
    return _round_keeping_total(shares * (total / shares.sum()), total)


def totals(m: Measurements, mats: CellMatrices, exact_total: int | None = None
           ) -> tuple[int, np.ndarray]:
    """The tract's population and each block's (step 1 of the module docstring);
    ``exact_total``: the tract's population when it is published exactly (an invariant)."""
    block_rows = _total_rows(mats.block[m.counts])
    tract_rows = _total_rows(mats.tract)
    nb = m.block_values.shape[0]
    values = np.concatenate([m.tract_values[tract_rows],
                             m.block_values[:, block_rows].sum(axis=0)])
    variances = np.concatenate([m.sigma_tract[tract_rows] ** 2,
                                nb * m.sigma_block[block_rows] ** 2])
    tract_total = max(0, round(_weighted_mean(values, variances))) if exact_total is None \
        else exact_total
    if len(block_rows):
        w = 1.0 / m.sigma_block[block_rows] ** 2
        per_block = (m.block_values[:, block_rows] * w).sum(axis=1) / w.sum()
    else:
        per_block = np.ones(nb)
    return tract_total, _round_to(per_block, tract_total)


class L1Fit:
    """min sum w |A x - m| over 0 <= x <= upper with sum x = total, for many (m, total) on
    one A: built once as a HiGHS object whose measurements are fixed columns, so each solve
    changes only column bounds and the dual simplex goes on from the last basis (a fresh
    ``linprog`` per block cost ~19 ms on a 663-block tract, mostly set-up). Without scipy's
    HiGHS object every solve goes through ``linprog`` (same HiGHS, no hot start).

    Columns: x (n), u and v (k each: the deviations above and below), r (k + 1: the
    measurements and the total, fixed by the bounds of each solve). Rows: A x - u + v - r = 0
    and sum x - r_total = 0.
    """

    def __init__(self, a: sp.csr_matrix, weights: np.ndarray, upper: np.ndarray | None
                 ) -> None:
        k, n = a.shape
        self.k, self.n = k, n
        eye = sp.identity(k, format="csc")
        ones = sp.csr_matrix(np.ones((1, n)))
        self.matrix = sp.vstack([
            sp.hstack([a, -eye, eye, -eye, sp.csr_matrix((k, 1))]),
            sp.hstack([ones, sp.csr_matrix((1, 3 * k)), sp.csr_matrix(-np.ones((1, 1)))]),
        ], format="csc")
        self.cost = np.concatenate([np.zeros(n), weights, weights, np.zeros(k + 1)])
        self.bounds = np.zeros((n + 3 * k + 1, 2))
        self.bounds[:, 1] = np.inf
        if upper is not None:
            self.bounds[:n, 1] = upper
        self.highs = None
        if HOT_START:
            self.highs = build_highs(self.matrix, np.zeros(k + 1), self.bounds, dual=True)
            self.highs.changeColsCost(len(self.cost), np.arange(len(self.cost), dtype=np.int32),
                                      self.cost)
        self.fixed = np.arange(n + 2 * k, n + 3 * k + 1, dtype=np.int32)

    def solve(self, values: np.ndarray, total: int, deadline: Deadline) -> np.ndarray | None:
        """x for these measurements and total; None when the deadline stops HiGHS."""
        fixed = np.concatenate([values, [float(total)]]).astype(float)
        left = deadline.left()
        if self.highs is None:
            bounds = self.bounds.copy()
            bounds[self.fixed, 0] = bounds[self.fixed, 1] = fixed
            zero = np.zeros(self.k + 1)
            got = highs.solve(self.cost, self.matrix, zero, zero, bounds[:, 0], bounds[:, 1],
                              time_limit=None if left is None else max(left, 0.01))
        else:
            h = self.highs
            h.setOptionValue("time_limit", float("inf") if left is None else
                             h.getRunTime() + max(left, 0.01))
            h.changeColsBounds(len(self.fixed), self.fixed, fixed, fixed)
            h.run()
            got = highs.read(h, duals=False)
        return got.x[:self.n] if got.status == "optimal" else None


def _round_keeping_total(x: np.ndarray, total: int) -> np.ndarray:
    """Integers near ``x`` adding up to ``total``: floors, then the largest remainders."""
    out = np.floor(x + 1e-9).astype(np.int64)
    left = total - int(out.sum())
    if left > 0:
        order = np.argsort(-(x - out), kind="stable")
        out[order[:left]] += 1
    elif left < 0:  # floors of an LP vertex cannot exceed the total; kept for safety
        order = np.argsort(x - out, kind="stable")
        for i in order:
            if left == 0:
                break
            take = min(int(out[i]), -left)
            out[i] -= take
            left += take
    return out


class TractFit:
    """Step 2's fit, kept for the samples: the same rows for every re-drawn measurement, so
    one HiGHS object serves them all. Dual simplex with presolve: 0.4-0.6 s for a first
    solve on the real tracts (the primal simplex took up to 7 s on a one-block tract, the
    dual without presolve 2-4 s), then 0.05-0.4 s from an optimal basis when only the
    measurements change (measured on four tracts of 1 to 663 blocks). Each re-drawn
    measurement starts from the published one's basis, one draw of noise away, not from
    the last sample's, two draws away: 29,365 -> 21,199 iterations and 4.5 -> 2.9 s for
    the samples of ``--rank 5`` on the 3 bundled tracts at rho = 10."""

    def __init__(self, m: Measurements, mats: CellMatrices) -> None:
        nb = m.block_values.shape[0]
        a = sp.vstack([mats.tract, mats.block[m.counts]], format="csr")
        weights = 1.0 / np.concatenate([m.sigma_tract, np.sqrt(nb) * m.sigma_block])
        self.fit = L1Fit(a, weights, None)
        if self.fit.highs is not None:
            self.fit.highs.setOptionValue("presolve", "on")
        self.first_basis: Any = None  # HiGHS's basis at the first fit's optimum

    def histogram(self, m: Measurements, total: int, deadline: Deadline
                  ) -> np.ndarray | None:
        """Persons per attribute cell of the tract (step 2)."""
        values = np.concatenate([m.tract_values, m.block_values.sum(axis=0)])
        h = self.fit.highs
        if h is not None and self.first_basis is not None:
            h.setBasis(self.first_basis)
        x = self.fit.solve(values, total, deadline)
        if h is not None and x is not None and self.first_basis is None:
            self.first_basis = h.getBasis()
        return None if x is None else _round_keeping_total(x, total)


def reconcile(fits: np.ndarray, block_totals: np.ndarray, class_totals: np.ndarray
              ) -> np.ndarray:
    """Integer counts (blocks x classes) with the given row and column sums, nearest to
    ``fits`` in L1: a transportation problem, solved as a min-cost flow (its convex cost per
    (block, class): -1 per person up to floor(fit), -frac(fit) for the next, 0 beyond)."""
    nb, nk = fits.shape
    flow = min_cost_flow.SimpleMinCostFlow()
    blocks = np.repeat(np.arange(nb), nk)
    classes = nb + np.tile(np.arange(nk), nb)
    f = fits.ravel()
    whole = np.floor(f + 1e-9)
    frac = f - whole
    cap_any = int(max(block_totals.max(initial=0), class_totals.max(initial=0)))
    tails, heads, caps, costs = [], [], [], []
    for cap, cost in ((whole, -FLOW_SCALE * np.ones_like(f)),
                      (np.where(frac > 1e-9, 1.0, 0.0), -np.rint(FLOW_SCALE * frac)),
                      (np.full_like(f, cap_any), np.zeros_like(f))):
        keep = cap > 0
        tails.append(blocks[keep])
        heads.append(classes[keep])
        caps.append(cap[keep].astype(np.int64))
        costs.append(cost[keep].astype(np.int64))
    arcs = flow.add_arcs_with_capacity_and_unit_cost(
        np.concatenate(tails), np.concatenate(heads), np.concatenate(caps),
        np.concatenate(costs))
    supplies = np.concatenate([block_totals, -class_totals]).astype(np.int64)
    flow.set_nodes_supplies(np.arange(nb + nk), supplies)
    status = flow.solve()
    if status != flow.OPTIMAL:
        raise RuntimeError(f"reconciling blocks with the tract: min-cost flow status {status}")
    out = np.zeros(nb * nk, dtype=np.int64)
    np.add.at(out, np.concatenate(tails) * nk + np.concatenate(heads) - nb,
              flow.flows(arcs))
    return out.reshape(nb, nk)


def deal_ages(h: np.ndarray, classes: np.ndarray, counts: np.ndarray,
              block_class: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Per block, the attribute cells of its persons: class ``classes[j]`` has
    ``counts[b, j]`` persons in block b, drawn without replacement from the tract histogram
    ``h``'s cells of that class (step 4)."""
    cells = np.repeat(np.arange(len(h)), h)
    by_class = block_class[cells]
    order = np.argsort(by_class, kind="stable")
    cells, by_class = cells[order], by_class[order]
    starts = np.searchsorted(by_class, classes)
    out: list[list[np.ndarray]] = [[] for _ in range(counts.shape[0])]
    for j in range(len(classes)):
        n = int(counts[:, j].sum())
        pool = rng.permutation(cells[starts[j]:starts[j] + n])
        at = 0
        for b in np.flatnonzero(counts[:, j]).tolist():
            c = int(counts[b, j])
            out[b].append(pool[at:at + c])
            at += c
    return [np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
            for parts in out]


def _redrawn(m: Measurements, seed: int) -> Measurements:
    """The measurements plus fresh discrete Gaussian noise of each cell's own scale: what
    the same mechanism could have published instead (a parametric bootstrap)."""
    block = m.block_values.copy()
    tract = m.tract_values.copy()
    for part, sigmas, offset in ((block, m.sigma_block, 0), (tract, m.sigma_tract, 1)):
        flat_sigma = np.broadcast_to(sigmas, part.shape).ravel()
        flat = part.reshape(-1)
        for k, s in enumerate(np.unique(flat_sigma).tolist()):
            where = np.flatnonzero(flat_sigma == s)
            noise, _ = sample(len(where), s, seed * 1_000_003 + 2 * k + offset)
            flat[where] += noise
    return Measurements(block, tract, m.sigma_block, m.sigma_tract, m.counts)


def _estimate(m: Measurements, mats: CellMatrices, deadline: Deadline, seed: int,
              tract_fit: TractFit | None = None, exact_total: int | None = None
              ) -> tuple[list[np.ndarray] | None, int, float, float]:
    """Steps 1-4 on ``m``: per block the persons' attribute cells (None: out of time), the
    tract's population, and the seconds of the tract and block stages."""
    t0 = time.perf_counter()
    nb = m.block_values.shape[0]
    total, block_totals = totals(m, mats, exact_total)
    h = (tract_fit or TractFit(m, mats)).histogram(m, total, deadline)
    t1 = time.perf_counter()
    if h is None:
        return None, total, t1 - t0, 0.0
    class_counts = np.bincount(mats.block_class, weights=h).astype(np.int64)
    classes = np.flatnonzero(class_counts)
    # one representative attribute cell per class: the block tables see them all the same
    first = np.full(int(mats.block_class.max()) + 1, -1, dtype=np.int64)
    first[mats.block_class[::-1]] = np.arange(GRID_SIZE)[::-1]
    a = mats.block[m.counts][:, first[classes]].tocsr()
    # a cell no class of the tract lies in adds the same |measurement| to every fit: drop it
    rows = np.flatnonzero(np.diff(a.indptr) > 0)
    fitter = L1Fit(a[rows], 1.0 / m.sigma_block[rows], class_counts[classes].astype(float))
    fits = np.zeros((nb, len(classes)))
    for b in range(nb):
        fit = fitter.solve(m.block_values[b, rows], int(block_totals[b]), deadline) \
            if block_totals[b] else np.zeros(len(classes))
        if fit is None:
            return None, total, t1 - t0, time.perf_counter() - t1
        fits[b] = fit
    counts = reconcile(fits, block_totals, class_counts[classes])
    records = deal_ages(h, classes, counts, mats.block_class, np.random.default_rng(seed))
    return records, total, t1 - t0, time.perf_counter() - t1


def _keys(records: list[np.ndarray]) -> np.ndarray:
    """One key per person, block-major: block position x GRID_SIZE + attribute cell (sorted
    when each block's records are)."""
    blocks = np.repeat(np.arange(len(records), dtype=np.int64), [len(r) for r in records])
    cells = np.concatenate(records) if records else np.zeros(0, dtype=np.int64)
    return blocks * GRID_SIZE + cells.astype(np.int64)


def person_scores(records: list[np.ndarray], samples: list[list[np.ndarray]]) -> list[
        np.ndarray]:
    """Per block, per person (in ``records`` order, which is sorted): the share of samples
    holding at least as many persons of that type in that block as this person's copy
    number (``rank.copy_scores`` over the (block, type) counts)."""
    types, copies = np.unique(_keys(records), return_counts=True)
    held = []
    for drawn in samples:
        keys, counts = np.unique(_keys(drawn), return_counts=True)
        at = np.minimum(np.searchsorted(keys, types), max(len(keys) - 1, 0))
        hit = (keys[at] == types) if len(keys) else np.zeros(len(types), dtype=bool)
        held.append(np.where(hit, counts[at] if len(keys) else 0, 0))
    scores = copy_scores(copies, held)  # copies in key order: the records' own order
    return np.split(scores, np.cumsum([len(r) for r in records])[:-1])


def reconstruct_noisy(tables: TractTables, mats: CellMatrices, sigma_block: np.ndarray,
                      sigma_tract: np.ndarray, options: CensusOptions,
                      exact_total: int | None = None) -> TractResult:
    """The top-down estimate of one tract as a ``TractResult`` (nothing certified: every
    block's ``unique`` is None); with ``options.samples`` K, every person scores its share of
    K estimates from re-drawn noise of the same scales. ``exact_total``: the tract's
    population when the release publishes it exactly (kept in every estimate)."""
    deadline = Deadline.after(options.time_limit)
    m = measurements(tables, mats, sigma_block, sigma_tract)
    tract_fit = TractFit(m, mats)
    records, _, tract_s, block_s = _estimate(m, mats, deadline, options.seed, tract_fit,
                                             exact_total)
    if records is None:
        return TractResult(tables.tract, "unknown", (), solve_s=tract_s + block_s)
    t1 = time.perf_counter()
    samples: list[list[np.ndarray]] = []
    for i in range(options.samples):
        if deadline.expired:
            break
        drawn, _, _, _ = _estimate(_redrawn(m, options.seed + 1 + i), mats, deadline,
                                   options.seed + 1 + i, tract_fit, exact_total)
        if drawn is not None:
            samples.append(drawn)
    scores = person_scores(records, samples) if options.samples else [None] * len(records)
    blocks = tuple(BlockResult(block, r, np.zeros(0, dtype=np.int64), None, 0, None, s)
                   for block, r, s in zip(tables.blocks, records, scores, strict=True))
    return TractResult(tables.tract, "ok", blocks, variables=GRID_SIZE,
                       constraints=int(len(m.tract_values) + m.block_values.size),
                       solve_s=tract_s + block_s, samples=len(samples),
                       sample_s=time.perf_counter() - t1)
