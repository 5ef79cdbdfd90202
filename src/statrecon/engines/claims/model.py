"""The block model of Generate-then-Verify: a histogram over coherent unit types, its
consistent blocks (K solutions) and the candidate claims they share.

Shared by every claim formulation (``engines/claims/formulations.py``); the claim ids and
the per-block result live here too (the options: ``options.py``, above the registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model

from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.census.households.schema import Claim
from statrecon.census.households.tables import BlockRelease
from statrecon.engines.solvers.cpsat import Deadline, found, new_solver
from statrecon.errors import InconsistentReleaseError

N_COLS = hh.N_COLUMNS
VALUE_BITS = 4 * N_COLS  # packed values occupy the low 40 bits of a claim key
MULT_BITS = 12  # multiplicity m < 4096 in a claim id
ALL_SUBSETS = np.arange(1, 1 << N_COLS, dtype=np.int64)


BlockStatus = Literal["ok", "unknown"]  # "unknown": a time limit cut the block short


@dataclass
class BlockClaims:
    """Everything proven about one block; ``status`` is "unknown" when a limit cut it short."""

    block: str
    units: int
    statistics: int
    status: BlockStatus
    verified: list[Claim]
    trivial: list[bool]
    negative: list[Claim]  # assignment with multiplicity = the smallest value proven possible
    negative_trivial: list[bool]
    negative_undecided: int  # assignments whose "at least one" the negative budget left open
    candidates: int
    unknown: int  # candidates neither verified nor refuted (time limit)
    solutions: int  # distinct consistent blocks generated
    allowed_types: int
    reconstructed: bool  # the whole block is determined (every full record verified)
    elapsed_s: float
    timings: dict[str, float] = field(default_factory=dict)


# --- the histogram model -----------------------------------------------------------------

@dataclass(frozen=True)
class BlockModel:
    """Unit types a block may contain and the published cells as equalities over them."""

    release: BlockRelease
    types: np.ndarray  # (n, 10) codes of the allowed unit types
    type_ids: np.ndarray  # their indices in hh.unit_types()
    upper: np.ndarray  # the largest count each type can have (smallest cell containing it)
    matrix: sp.csr_matrix  # cells x allowed types, 0/1
    packed: np.ndarray  # hh.pack(types)


def compile_block(release: BlockRelease) -> BlockModel:
    """Prune unit types by published zeros and write every cell as an equality.

    Raises InconsistentReleaseError naming the cells when a positive cell has no type left.
    """
    index = hht.table_index()
    values = np.asarray(release.values, dtype=np.int64)
    if len(values) != len(index.cells):
        raise ValueError(f"block {release.block}: {len(values)} values for "
                         f"{len(index.cells)} cells")
    # the smallest value on each cell's chain of ancestors
    chain_min = values.copy()
    for cell in range(len(values)):  # parents come first within a table
        p = int(index.parent[cell])
        if p >= 0:
            chain_min[cell] = min(chain_min[cell], chain_min[p])
    deepest = index.deepest
    upper = np.minimum(index.least_over_deepest(chain_min), release.units)
    type_ids = np.flatnonzero(upper > 0)
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    sub = deepest[type_ids]
    for j in range(sub.shape[1]):
        cur = sub[:, j].astype(np.int64)
        local = np.arange(len(type_ids))
        while True:
            keep = cur >= 0
            if not keep.any():
                break
            cur, local = cur[keep], local[keep]
            rows.append(cur)
            cols.append(local)
            cur = index.parent[cur].astype(np.int64)
    r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    matrix = sp.csr_matrix((np.ones(len(r), dtype=np.int64), (r, c)),
                           shape=(len(values), len(type_ids)))
    empty = np.flatnonzero((values > 0) & (np.asarray(matrix.sum(axis=1)).ravel() == 0))
    if len(empty):
        raise InconsistentReleaseError(_zero_conflict(release, int(empty[0]), values))
    types = hh.unit_types()[type_ids]
    return BlockModel(release, types, type_ids, upper[type_ids], matrix, hh.pack(types))


def _zero_conflict(release: BlockRelease, cell: int, values: np.ndarray) -> str:
    """Name a positive cell and a small set of zero cells that together exclude it."""
    index = hht.table_index()
    uncovered = np.flatnonzero(cell_mask(cell))
    zero_masks = {int(z): cell_mask(int(z)) for z in np.flatnonzero(values == 0)}
    chosen: list[int] = []
    while len(uncovered) and zero_masks:
        best = max(zero_masks, key=lambda z: int(zero_masks[z][uncovered].sum()))
        hit = zero_masks[best][uncovered]
        if not hit.any():
            break
        chosen.append(best)
        uncovered = uncovered[~hit]
    named = ", ".join(f"{index.cells[z].cell} = 0" for z in chosen)
    c = index.cells[cell]
    return (f"block {release.block}: the published cells contradict each other: "
            f"{c.cell} ({c.title}) = {int(values[cell])}, but {named or 'the structural rules'} "
            f"leave no housing unit it could count")


def _solver_conflict(m: BlockModel, end: float | None) -> str:
    """Name a small set of positive cells no consistent block can satisfy together.

    Each positive cell's equality is guarded by an assumption; CP-SAT's infeasible core is then
    shrunk by deletion (each removal re-proven INFEASIBLE). Published zeros stay implicit: they
    removed unit types before the model was built, and the message says so.
    """
    index = hht.table_index()
    a = m.matrix.tocsr()
    model = cp_model.CpModel()
    # bounded by the largest published value only: the per-type bounds come from positive
    # cells, which the message would otherwise lean on without naming them
    top = int(m.release.values.max())
    x = [model.new_int_var(0, top, "") for _ in m.upper]
    guards: dict[int, cp_model.IntVar] = {}
    for row in np.flatnonzero(m.release.values > 0):
        idx = a.indices[a.indptr[row]:a.indptr[row + 1]]
        guards[int(row)] = model.new_bool_var("")
        model.add(sum(x[i] for i in idx) == int(m.release.values[row])).only_enforce_if(
            guards[int(row)])

    def infeasible(cells: list[int]) -> bool:
        model.clear_assumptions()
        model.add_assumptions([guards[c] for c in cells])
        solver = block_solver(time_left(end), 1, 0)
        return solver.solve(model) == cp_model.INFEASIBLE

    model.add_assumptions(list(guards.values()))
    solver = block_solver(time_left(end), 1, 0)
    core = list(guards)
    if solver.solve(model) == cp_model.INFEASIBLE:
        lits = {guards[c].index: c for c in guards}
        core = sorted(lits[i] for i in solver.sufficient_assumptions_for_infeasibility()
                      if i in lits) or core
    for c in list(core):
        if len(core) > 1 and infeasible([d for d in core if d != c]):
            core.remove(c)
    named = ", ".join(f"{index.cells[c].cell} = {int(m.release.values[c])}" for c in core[:12])
    more = f" and {len(core) - 12} more" if len(core) > 12 else ""
    return (f"block {m.release.block}: the published cells contradict each other: no set of "
            f"housing units gives {named}{more} (with the published zeros)")


def cell_mask(cell: int) -> np.ndarray:
    """Which unit types the cell counts: those whose deepest cell lies in its subtree."""
    index = hht.table_index()
    j = int(index.table_of[cell])
    return np.isin(index.deepest[:, j], _subtree(cell))


def _subtree(cell: int) -> np.ndarray:
    index = hht.table_index()
    same = np.flatnonzero(index.table_of == index.table_of[cell])
    out = [cell]
    for c in same:  # parents precede children within a table
        if int(index.parent[c]) in out:
            out.append(int(c))
    return np.array(out, dtype=np.int32)


class Histogram:
    """A CP-SAT model of the block: x_t units of allowed type t, A x = published values."""

    def __init__(self, m: BlockModel) -> None:
        self.m = m
        self.model = cp_model.CpModel()
        self.x = [self.model.new_int_var(0, int(u), f"x{i}") for i, u in enumerate(m.upper)]
        a = m.matrix.tocsr()
        for row in range(a.shape[0]):
            idx = a.indices[a.indptr[row]:a.indptr[row + 1]]
            value = int(m.release.values[row])
            if len(idx) == 0:
                continue  # a zero cell with no allowed type
            self.model.add(sum(self.x[i] for i in idx) == value)

    def count(self, members: np.ndarray) -> cp_model.LinearExprT:
        return sum(self.x[i] for i in np.flatnonzero(members))


def block_solver(time_limit: float | None, workers: int, seed: int) -> cp_model.CpSolver:
    return new_solver(left=time_limit, workers=workers, seed=seed, floor=0.01)


def time_left(end: float | None) -> float | None:
    """Seconds left before ``end`` (a ``Deadline.end`` on the monotonic clock)."""
    return Deadline(end).left()


@dataclass
class WorkBudget:
    """CP-SAT deterministic seconds left for a phase, charged after every solve.

    A wall-clock budget proves more on an idle machine than on a busy one; deterministic time
    counts the solver's own work, so with one search worker the same input always stops at
    the same place.
    """

    left: float

    def spent(self) -> bool:
        return self.left <= 0

    def limit(self, solver: cp_model.CpSolver, cap: float | None = None) -> None:
        """Cap the next solve at what is left (and at ``cap`` deterministic seconds)."""
        most = self.left if cap is None else min(self.left, cap)
        solver.parameters.max_deterministic_time = max(most, 1e-6)

    def charge(self, solver: cp_model.CpSolver) -> None:
        self.left -= float(solver.response_proto.deterministic_time)


# --- generate ----------------------------------------------------------------------------

def generate_solutions(m: BlockModel, k: int, *, seed: int = 0, end: float | None = None,
                       workers: int = 1, patience: int | None = None) -> list[np.ndarray]:
    """Up to k distinct consistent blocks (histograms), from random linear objectives.

    With ``patience``, stop early once that many distinct blocks in a row removed no claim
    from the running candidate set: more blocks would only cost time, and verification
    decides every candidate anyway (the verified set never depends on K).
    Raises InconsistentReleaseError when there is none (the tables contradict each other).
    """
    cand: np.ndarray | None = None
    quiet = 0
    rng = np.random.default_rng(seed)
    h = Histogram(m)
    seen: set[bytes] = set()
    out: list[np.ndarray] = []
    attempts = 0
    while len(out) < k and attempts < 3 * k:
        attempts += 1
        weights = rng.integers(-20, 21, size=len(h.x)) if attempts > 1 else np.zeros(len(h.x))
        h.model.clear_objective()
        if np.any(weights):
            h.model.maximize(cp_model.LinearExpr.weighted_sum(h.x, [int(w) for w in weights]))
        left = time_left(end)
        if left is not None and left <= 0:
            break
        solver = block_solver(left, workers, seed + attempts)
        status = solver.solve(h.model)
        if status == cp_model.INFEASIBLE and not out:
            raise InconsistentReleaseError(_solver_conflict(m, end))
        if not found(status):
            break
        x = np.array([solver.value(v) for v in h.x], dtype=np.int64)
        key = x.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(x)
            if patience is not None:
                claims = solution_claims(m, x)
                before = None if cand is None else len(cand)
                cand = claims if cand is None else np.intersect1d(cand, claims,
                                                                  assume_unique=True)
                quiet = quiet + 1 if before == len(cand) else 0
                if quiet >= patience:
                    break
    return out


def _subset_masks() -> np.ndarray:
    """For each non-empty subset A of columns (bitmask), the packed-value mask of A."""
    masks = np.zeros(len(ALL_SUBSETS), dtype=np.int64)
    for j in range(N_COLS):
        has = (ALL_SUBSETS >> j) & 1
        masks |= has * (np.int64(15) << (4 * j))
    return masks


SUBSET_MASKS = _subset_masks()


def _na_bits(types: np.ndarray) -> np.ndarray:
    """Per type, the bitmask of its NA columns."""
    bits = np.zeros(len(types), dtype=np.int64)
    for j in range(N_COLS):
        bits |= (types[:, j] == hh.NA_CODE).astype(np.int64) << j
    return bits


def solution_claims(m: BlockModel, x: np.ndarray) -> np.ndarray:
    """Every claim true in one block, as sorted int64 ids (subset, values, multiplicity).

    Claims range over every subset of the columns a unit has (vacant units: vacancy only).
    """
    present = np.flatnonzero(x > 0)
    packed = m.packed[present]
    counts = x[present]
    na = _na_bits(m.types[present])
    subset = np.repeat(ALL_SUBSETS[None, :], len(present), axis=0)
    ok = (subset & na[:, None]) == 0
    keys = (subset << VALUE_BITS) | (packed[:, None] & SUBSET_MASKS[None, :])
    keys = keys[ok]
    weights = np.repeat(counts[:, None], len(ALL_SUBSETS), axis=1)[ok]
    uniq, inv = np.unique(keys, return_inverse=True)
    mult = np.bincount(inv, weights=weights).astype(np.int64)
    return np.sort((uniq << MULT_BITS) | mult)


def decode_claim(claim_id: int) -> Claim:
    mult = claim_id & ((1 << MULT_BITS) - 1)
    key = claim_id >> MULT_BITS
    subset = key >> VALUE_BITS
    cols = tuple(j for j in range(N_COLS) if (subset >> j) & 1)
    vals = tuple(int((key >> (4 * j)) & 15) for j in cols)
    return Claim(cols, vals, int(mult))


def claim_members(m: BlockModel, claim_ids: np.ndarray) -> np.ndarray:
    """(claims x allowed types) bool: which allowed types each claim counts."""
    keys = claim_ids >> MULT_BITS
    subsets = keys >> VALUE_BITS
    values = keys & ((np.int64(1) << VALUE_BITS) - 1)
    masks = SUBSET_MASKS[subsets - 1]
    return (m.packed[None, :] & masks[:, None]) == values[:, None]


# --- verify ------------------------------------------------------------------------------

