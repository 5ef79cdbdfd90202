"""One block, end to end: K consistent blocks, their shared claims, each proven or refuted by
the chosen formulation, then the negative claims ("at least one unit matches")."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from statrecon.census.households import schema as hh
from statrecon.census.households.schema import Claim
from statrecon.census.households.tables import BlockRelease
from statrecon.engines.claims.fast import (
    NEGATIVE_CHUNK,
    group_claims,
    is_trivial,
    refute,
    same_cells,
)
from statrecon.engines.claims.formulations import formulation
from statrecon.engines.claims.model import (
    MULT_BITS,
    N_COLS,
    BlockClaims,
    BlockModel,
    WorkBudget,
    claim_members,
    compile_block,
    decode_claim,
    generate_solutions,
    solution_claims,
    time_left,
)
from statrecon.engines.claims.options import ClaimsOptions
from statrecon.engines.solvers.cpsat import Deadline

DEFAULT_OPTIONS = ClaimsOptions()


def verify_block(release: BlockRelease, options: ClaimsOptions = DEFAULT_OPTIONS
                 ) -> BlockClaims:
    """Generate candidate claims from K consistent blocks, then prove or refute each."""
    t0 = time.perf_counter()
    end = Deadline.after(options.time_limit).end
    timings: dict[str, float] = {}
    m = compile_block(release)
    sols = generate_solutions(m, options.k_solutions, seed=options.seed, end=end,
                              workers=options.workers, patience=options.patience)
    timings["generate"] = time.perf_counter() - t0
    if not sols:  # out of time before the first consistent block: nothing is known
        return BlockClaims(
            block=release.block, units=release.units, statistics=len(release.values),
            status="unknown", verified=[], trivial=[], negative=[], negative_trivial=[],
            negative_undecided=0,
            candidates=0, unknown=0, solutions=0, allowed_types=len(m.types),
            reconstructed=False, elapsed_s=time.perf_counter() - t0, timings=timings)
    t1 = time.perf_counter()
    claim_sets = [solution_claims(m, x) for x in sols]
    cand = claim_sets[0]
    for s in claim_sets[1:]:
        cand = np.intersect1d(cand, s, assume_unique=True)
    members = claim_members(m, cand)
    timings["candidates"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    status = formulation(options.formulation).verify(release, m, cand, members, sols,
                                                     end=end, options=options)
    timings["verify"] = time.perf_counter() - t2
    verified_ids = cand[status == 1]
    verified = [decode_claim(int(c)) for c in verified_ids]
    unknown = int((status == -1).sum())

    negative: list[Claim] = []
    undecided = 0
    t3 = time.perf_counter()
    if options.negative and len(sols) and unknown == 0:
        work = None if options.negative_work_limit is None else \
            WorkBudget(options.negative_work_limit)
        negative, undecided = _negative_claims(m, claim_sets, verified_ids, sols, end,
                                               options, work)
    timings["negative"] = time.perf_counter() - t3
    t4 = time.perf_counter()
    trivial = [is_trivial(c, release.values) for c in verified]
    negative_trivial = [_negative_trivial(c, release.values) for c in negative]
    timings["trivial"] = time.perf_counter() - t4
    complete = unknown == 0  # every candidate decided (negative claims are best effort)
    full = [c for c in verified if c.k == N_COLS or
            (c.columns == (hh.COL["vacancy"],) and c.values[0] != 0)]
    reconstructed = unknown == 0 and sum(c.multiplicity for c in full) == release.units
    return BlockClaims(
        block=release.block, units=release.units, statistics=len(release.values),
        status="ok" if complete else "unknown", verified=verified, trivial=trivial,
        negative=negative, negative_trivial=negative_trivial, negative_undecided=undecided,
        candidates=len(cand),
        unknown=unknown, solutions=len(sols), allowed_types=len(m.types),
        reconstructed=reconstructed, elapsed_s=time.perf_counter() - t0, timings=timings)


def _negative_claims(m: BlockModel, claim_sets: list[np.ndarray], verified_ids: np.ndarray,
                     sols: list[np.ndarray], end: float | None, options: ClaimsOptions,
                     work: WorkBudget | None = None) -> tuple[list[Claim], int]:
    """Assignments present in every generated block, multiplicity undetermined: prove >= 1.

    Returns the proven ones and how many the work budget (or the block's time limit) left
    undecided. With ``work`` the search runs on one worker, so the result is reproducible.
    """
    keys = [np.unique(s >> MULT_BITS) for s in claim_sets]
    present = keys[0]
    for k in keys[1:]:
        present = np.intersect1d(present, k, assume_unique=True)
    present = np.setdiff1d(present, np.unique(verified_ids >> MULT_BITS), assume_unique=True)
    if len(present) == 0:
        return [], 0
    ids = (present << MULT_BITS) | 1
    members = claim_members(m, ids)
    groups = group_claims(members, np.ones(len(ids), dtype=np.int64))
    gstatus = np.full(len(groups.mult), -1, dtype=np.int8)
    verified_mult = verified_ids & ((1 << MULT_BITS) - 1)
    if len(verified_ids):
        gstatus[_contains_some(groups.members,
                               claim_members(m, verified_ids[verified_mult >= 1]))] = 1
    # the most specific questions first: each one proven settles every question containing it
    found: list[np.ndarray] = []
    size = groups.members.sum(axis=1)
    while (gstatus == -1).any():
        left = time_left(end)
        if (left is not None and left <= 0) or (work is not None and work.spent()):
            break
        open_ = np.flatnonzero(gstatus == -1)
        chunk = open_[np.argsort(size[open_], kind="stable")[:NEGATIVE_CHUNK]]
        gstatus[chunk] = refute(m, groups.members[chunk], groups.mult[chunk], mode="ge",
                                end=end, workers=1 if work is not None else options.workers,
                                seed=options.seed, known=[*sols, *found], witnesses=found,
                                work=work)
        proven = chunk[gstatus[chunk] == 1]
        if len(proven):
            settled = _contains_some(groups.members, groups.members[proven])
            gstatus[settled & (gstatus == -1)] = 1
    status = gstatus[groups.of_claim]
    return [decode_claim(int(i)) for i in ids[status == 1]], int((status == -1).sum())


def _contains_some(members: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Which rows of ``members`` contain at least one row of ``subsets`` (as sets of types).

    The claim lattice for "at least one": if every consistent block has count >= 1 on a
    subset of a question's types (a verified claim with m >= 1, or a proven question), the
    question's count is at least as large, so it is proven by set inclusion, no solve.
    """
    out = np.zeros(len(members), dtype=bool)
    if len(subsets) == 0 or len(members) == 0:
        return out
    v = sp.csr_matrix(np.unique(subsets, axis=0).astype(np.int32))
    q = sp.csr_matrix(members.astype(np.int32))
    shared = (v @ q.T).tocoo()  # |V & Q| for every pair that meets
    size = np.asarray(v.sum(axis=1)).ravel()
    inside = (shared.data == size[shared.row]) & (size[shared.row] > 0)
    out[np.unique(shared.col[inside])] = True
    return out


def _negative_trivial(claim: Claim, values: np.ndarray) -> bool:
    """"At least one" read off a positive cell counting exactly the same types."""
    return any(int(values[i]) >= 1 for i in same_cells(claim))
