"""Generate-then-Verify (reference 003): claims R(a, m) that every consistent block satisfies.

A claim R(a, m) says "exactly m housing units of this block match the partial assignment a"
(a fixes the values of a subset of the ten columns). It is *verified* when every dataset
consistent with the published block tables satisfies it; that is proven by an INFEASIBLE
solver status, never by a time-out.

The default formulation (``formulation="fast"``) differs from the paper's in three ways, each
sound on its own:

* **Histogram, not rows.** One integer per coherent unit type that no published zero cell
  forbids (a few hundred per block instead of N one-hot rows with W helpers per statistic and
  row). Each published cell is one linear equality; row symmetry disappears.
* **Claims as type sets.** A claim's count is the sum of the types matching it. Claims with
  the same type set in this block (for example ``size=1`` and ``hh_type=nonfamily_*_alone`` on
  the alone types) and the same multiplicity are one question.
* **Batched refutation.** Instead of one "count(a) != m" model per claim, one model asks "does
  some consistent block break at least one open claim?" (maximising how many it breaks). Each
  answer is a real consistent block and refutes every claim it breaks; INFEASIBLE proves all
  remaining claims at once.

Candidates are generated as in the paper: K distinct consistent blocks (random objectives over
the histogram), and the claims true in all K over every subset of columns.

Negative claims (the paper's footnote 4) are reported for assignments present in all K
blocks whose multiplicity is not determined: "multiplicity 0 is impossible", i.e. at least
one unit matches, proven by the same batched refutation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from ortools.sat.python import cp_model

from statrecon.census import households as hh
from statrecon.engines.cpsat import Deadline, found, new_solver
from statrecon.errors import InconsistentReleaseError

N_COLS = hh.N_COLUMNS
VALUE_BITS = 4 * N_COLS  # packed values occupy the low 40 bits of a claim key
MULT_BITS = 12  # multiplicity m < 4096 in a claim id
ALL_SUBSETS = np.arange(1, 1 << N_COLS, dtype=np.int64)


@dataclass(frozen=True)
class BlockRelease:
    """What is published for one block: one count per cell of ``hh.table_index().cells``."""

    block: str
    values: np.ndarray  # int64, one per published cell (zeros included)

    @property
    def units(self) -> int:
        """Housing units in the block (H1)."""
        return int(self.values[hh.cell_position("H1_001")])


@dataclass(frozen=True)
class Claim:
    """R(a, m): exactly ``multiplicity`` units match ``values`` on ``columns``."""

    columns: tuple[int, ...]  # sorted column indices into hh.COLUMNS
    values: tuple[int, ...]  # codes, one per column
    multiplicity: int

    @property
    def k(self) -> int:
        return len(self.columns)

    def assignment(self) -> dict[str, str]:
        return {hh.COLUMNS[c].name: hh.COLUMNS[c].values[v]
                for c, v in zip(self.columns, self.values, strict=True)}

    def matches(self, types: np.ndarray) -> np.ndarray:
        """Which rows of a type-code array match the assignment."""
        mask = np.ones(len(types), dtype=bool)
        for c, v in zip(self.columns, self.values, strict=True):
            mask &= types[:, c] == v
        return mask


@dataclass(frozen=True)
class ClaimsOptions:
    formulation: str = "fast"  # "fast" (default) or "paper"
    k_solutions: int = 100  # K consistent blocks to generate candidates from (at most)
    patience: int | None = 10  # stop generating after this many blocks that change nothing
    time_limit: float | None = None  # seconds for the whole block; None: no limit
    seed: int = 0
    negative: bool = True  # also prove "at least one unit matches" for undetermined claims
    # Work for them per block, in CP-SAT deterministic seconds (best effort): unlike wall
    # seconds, the same input proves the same negative claims however loaded the machine is.
    negative_work_limit: float | None = 10.0
    workers: int = 1  # CP-SAT search workers per solve


@dataclass
class BlockClaims:
    """Everything proven about one block; ``status`` is "unknown" when a limit cut it short."""

    block: str
    units: int
    statistics: int
    status: str
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
    index = hh.table_index()
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
    upper = np.full(len(deepest), np.iinfo(np.int64).max, dtype=np.int64)
    for j in range(deepest.shape[1]):
        d = deepest[:, j]
        inside = d >= 0
        upper[inside] = np.minimum(upper[inside], chain_min[d[inside]])
    upper = np.minimum(upper, release.units)
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
    index = hh.table_index()
    uncovered = np.flatnonzero(_cell_mask(cell))
    zero_masks = {int(z): _cell_mask(int(z)) for z in np.flatnonzero(values == 0)}
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
    index = hh.table_index()
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
        solver = _solver(_left(end), 1, 0)
        return solver.solve(model) == cp_model.INFEASIBLE

    model.add_assumptions(list(guards.values()))
    solver = _solver(_left(end), 1, 0)
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


def _cell_mask(cell: int) -> np.ndarray:
    """Which unit types the cell counts: those whose deepest cell lies in its subtree."""
    index = hh.table_index()
    j = int(index.table_of[cell])
    return np.isin(index.deepest[:, j], _subtree(cell))


def _subtree(cell: int) -> np.ndarray:
    index = hh.table_index()
    same = np.flatnonzero(index.table_of == index.table_of[cell])
    out = [cell]
    for c in same:  # parents precede children within a table
        if int(index.parent[c]) in out:
            out.append(int(c))
    return np.array(out, dtype=np.int32)


class _Histogram:
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


def _solver(time_limit: float | None, workers: int, seed: int) -> cp_model.CpSolver:
    return new_solver(left=time_limit, workers=workers, seed=seed, floor=0.01)


def _left(end: float | None) -> float | None:
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
    h = _Histogram(m)
    seen: set[bytes] = set()
    out: list[np.ndarray] = []
    attempts = 0
    while len(out) < k and attempts < 3 * k:
        attempts += 1
        weights = rng.integers(-20, 21, size=len(h.x)) if attempts > 1 else np.zeros(len(h.x))
        h.model.clear_objective()
        if np.any(weights):
            h.model.maximize(cp_model.LinearExpr.weighted_sum(h.x, [int(w) for w in weights]))
        left = _left(end)
        if left is not None and left <= 0:
            break
        solver = _solver(left, workers, seed + attempts)
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

@dataclass
class _Groups:
    """Distinct questions: (type set, multiplicity) shared by one or more claims."""

    members: np.ndarray  # groups x types bool
    mult: np.ndarray  # groups
    of_claim: np.ndarray  # claim -> group


def _group(members: np.ndarray, mult: np.ndarray) -> _Groups:
    if len(mult) == 0:
        return _Groups(members, mult, np.zeros(0, dtype=np.int64))
    packed = np.packbits(members, axis=1)
    keyed = np.concatenate([packed, mult[:, None].astype(">u2").view(np.uint8)], axis=1)
    _, first, inv = np.unique(keyed, axis=0, return_index=True, return_inverse=True)
    return _Groups(members[first], mult[first], inv.ravel())


def refute(m: BlockModel, members: np.ndarray, mult: np.ndarray, *, mode: str = "ne",
           end: float | None = None, workers: int = 1, seed: int = 0,
           known: Sequence[np.ndarray] = (),
           witnesses: list[np.ndarray] | None = None,
           work: WorkBudget | None = None) -> np.ndarray:
    """Status per question: 1 proven (no consistent block breaks it), 0 refuted, -1 unknown.

    mode "ne": the claim is count == mult (broken by count != mult).
    mode "ge": the claim is count >= mult (broken by count < mult).
    ``known`` consistent blocks refute what they break before any solve.
    ``witnesses``, if given, receives every consistent block the solver found (histograms
    over ``m.types``), so a caller can show each refutation to another checker.
    ``work``, if given, bounds the solves in deterministic time (slices too), not seconds.
    """
    status = np.full(len(mult), -1, dtype=np.int8)
    counts_of = members.astype(np.int64)

    def broken(x: np.ndarray) -> np.ndarray:
        c = counts_of @ x
        return c != mult if mode == "ne" else c < mult

    for x in known:
        status[(status == -1) & broken(x)] = 0
    if mode == "ne":
        open_ = np.flatnonzero(status == -1)
        status[open_[linear_determined(m, members[open_], mult[open_])]] = 1
    round_no = 0
    slice_s = BATCH_SLICE_S
    while (status == -1).any():
        open_ = np.flatnonzero(status == -1)
        left = _left(end)
        if (left is not None and left <= 0) or (work is not None and work.spent()):
            return status
        h = _Histogram(m)
        lits = []
        for g in open_:
            count = h.count(members[g])
            lo = h.model.new_bool_var("")
            h.model.add(count <= int(mult[g]) - 1).only_enforce_if(lo)
            lits.append(lo)
            if mode == "ne":
                hi = h.model.new_bool_var("")
                h.model.add(count >= int(mult[g]) + 1).only_enforce_if(hi)
                lits.append(hi)
        h.model.add_bool_or(lits)
        h.model.maximize(sum(lits))
        round_no += 1
        solver = _solver(left, workers, seed + round_no)
        if work is None:
            solver.parameters.max_time_in_seconds = min(solver.parameters.max_time_in_seconds,
                                                        slice_s)
        else:
            work.limit(solver, slice_s)
        st = solver.solve(h.model)
        if work is not None:
            work.charge(solver)
        if st == cp_model.INFEASIBLE:
            status[open_] = 1
            return status
        if found(st):
            x = np.array([solver.value(v) for v in h.x], dtype=np.int64)
            status[open_[broken(x)[open_]]] = 0
            if witnesses is not None:
                witnesses.append(x)
            continue
        # the batched question is hard here: settle a few questions one by one (each solution
        # met refutes more), then ask the smaller batched question again with more time
        status = _refute_each(m, members, mult, status, broken, mode, end, workers, seed,
                              limit=EACH_CHUNK, witnesses=witnesses, work=work)
        slice_s = min(2 * slice_s, 8.0)
    return status


def linear_determined(m: BlockModel, members: np.ndarray, mult: np.ndarray) -> np.ndarray:
    """Claims whose count is a fixed combination of published cells: proven by exact arithmetic.

    If integers lam and D satisfy A^T lam = D s (s: the claim's type indicator), then every
    consistent block x (A x = b) has s.x = lam.b / D. lam comes from a floating least-squares
    solve, rounded to small rationals; the equality is then checked in exact integer
    arithmetic, and only that check counts as proof. A claim it cannot prove goes to the
    solver.
    """
    out = np.zeros(len(mult), dtype=bool)
    if len(mult) == 0:
        return out
    a = m.matrix.tocsr()
    keep = np.flatnonzero(np.diff(a.indptr) > 0)
    a = a[keep]
    b = m.release.values[keep].astype(np.int64)
    dense = a.toarray().astype(np.float64)
    # a basis of the cells (pivoted QR): the combination on it is unique and has small
    # denominators, unlike the minimum-norm one spread over every redundant cell
    _, r, piv = scipy.linalg.qr(dense.T, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    basis = piv[:int((diag > 1e-9 * max(float(diag[0]), 1.0)).sum())]
    lam, *_ = np.linalg.lstsq(dense.T[:, basis], members.T.astype(np.float64), rcond=None)
    resid = np.abs(dense.T[:, basis] @ lam - members.T).max(axis=0)
    at = a.T.tocsr().astype(np.int64)
    for g in np.flatnonzero(resid < 1e-6):
        fracs = [Fraction(float(v)).limit_denominator(LAMBDA_DENOMINATOR) for v in lam[:, g]]
        denom = 1
        for f in fracs:
            denom = denom * f.denominator // math.gcd(denom, f.denominator)
            if denom > LAMBDA_DENOMINATOR:
                break
        if denom > LAMBDA_DENOMINATOR:
            continue
        lam_int = np.zeros(a.shape[0], dtype=np.int64)
        lam_int[basis] = [f.numerator * (denom // f.denominator) for f in fracs]
        if np.array_equal(at @ lam_int, members[g].astype(np.int64) * denom):
            out[g] = int(lam_int @ b) == int(mult[g]) * denom
    return out


LAMBDA_DENOMINATOR = 720  # rationals tried for the combination (2..6 and their products)
BATCH_SLICE_S = 1.0  # seconds of the first batched round before some per-claim solves
EACH_CHUNK = 8  # per-claim questions settled between two batched rounds
NEGATIVE_CHUNK = 64  # "at least one" questions per refute call, most specific first


def _refute_each(m: BlockModel, members: np.ndarray, mult: np.ndarray, status: np.ndarray,
                 broken: Callable[[np.ndarray], np.ndarray], mode: str, end: float | None,
                 workers: int, seed: int, limit: int | None = None,
                 witnesses: list[np.ndarray] | None = None,
                 work: WorkBudget | None = None) -> np.ndarray:
    """The exact range of each open count: min (and max) by optimisation over one model.

    A question is proven when the OPTIMAL minimum (and maximum) equal its multiplicity
    ("ge": the minimum reaches it); every solution met on the way refutes what it breaks.
    """
    h = _Histogram(m)
    done = 0
    for g in range(len(mult)):
        if status[g] != -1:
            continue
        if limit is not None and done >= limit:
            return status
        done += 1
        count = h.count(members[g])
        proven = True
        for sense in ("min", "max") if mode == "ne" else ("min",):
            left = _left(end)
            if (left is not None and left <= 0) or (work is not None and work.spent()):
                return status
            h.model.clear_objective()
            if sense == "min":
                h.model.minimize(count)
            else:
                h.model.maximize(count)
            solver = _solver(left, workers, seed + g)
            if work is not None:
                work.limit(solver)
            st = solver.solve(h.model)
            if work is not None:
                work.charge(solver)
            if found(st):
                x = np.array([solver.value(v) for v in h.x], dtype=np.int64)
                status[(status == -1) & broken(x)] = 0
                if witnesses is not None:
                    witnesses.append(x)
            if st != cp_model.OPTIMAL or status[g] == 0:
                proven = False
                break
            value = round(solver.objective_value)
            if (sense == "min" and value < mult[g]) or (sense == "max" and value > mult[g]):
                proven = False  # cannot happen: the optimum itself would have refuted it
                break
        if proven:
            status[g] = 1
    return status


# --- trivial claims ----------------------------------------------------------------------

@dataclass(frozen=True)
class _CellSets:
    """Each cell's set of coherent unit types, hashed, to spot claims read off one cell."""

    by_hash: dict[int, list[int]]
    value_masks: dict[tuple[int, int], np.ndarray]  # (column, code) -> packed bits over types


_CELL_SETS: _CellSets | None = None


def _cell_sets() -> _CellSets:
    global _CELL_SETS
    if _CELL_SETS is None:
        index = hh.table_index()
        types = hh.unit_types()
        by_hash: dict[int, list[int]] = {}
        for i in range(len(index.cells)):
            by_hash.setdefault(hash(np.packbits(_cell_mask(i)).tobytes()), []).append(i)
        value_masks = {}
        for j, col in enumerate(hh.COLUMNS):
            for v in range(len(col.values)):
                value_masks[(j, v)] = np.packbits(types[:, j] == v)
        _CELL_SETS = _CellSets(by_hash, value_masks)
    return _CELL_SETS


def same_cells(claim: Claim) -> list[int]:
    """The published cells that count exactly the unit types the claim's assignment matches."""
    sets = _cell_sets()
    bits: np.ndarray | None = None
    for c, v in zip(claim.columns, claim.values, strict=True):
        mask = sets.value_masks[(c, v)]
        bits = mask if bits is None else bits & mask
    assert bits is not None
    return sets.by_hash.get(hash(bits.tobytes()), [])


def is_trivial(claim: Claim, values: np.ndarray) -> bool:
    """True when one published cell counts exactly the same unit types with value m."""
    return any(int(values[i]) == claim.multiplicity for i in same_cells(claim))


# --- the whole block ---------------------------------------------------------------------

def verify_block(release: BlockRelease, options: ClaimsOptions = ClaimsOptions()
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
    mult = cand & ((1 << MULT_BITS) - 1)
    timings["candidates"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    if options.formulation == "paper":
        from statrecon.engines.claims_paper import verify_paper

        claims = [decode_claim(int(c)) for c in cand]
        status = verify_paper(release, claims, end=end, workers=options.workers)
    else:
        groups = _group(members, mult)
        gstatus = refute(m, groups.members, groups.mult, end=end, workers=options.workers,
                         seed=options.seed, known=sols)
        status = gstatus[groups.of_claim] if len(cand) else np.zeros(0, dtype=np.int8)
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
    groups = _group(members, np.ones(len(ids), dtype=np.int64))
    gstatus = np.full(len(groups.mult), -1, dtype=np.int8)
    verified_mult = verified_ids & ((1 << MULT_BITS) - 1)
    if len(verified_ids):
        gstatus[_contains_some(groups.members,
                               claim_members(m, verified_ids[verified_mult >= 1]))] = 1
    # the most specific questions first: each one proven settles every question containing it
    found: list[np.ndarray] = []
    size = groups.members.sum(axis=1)
    while (gstatus == -1).any():
        left = _left(end)
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


def binomial_baseline(n: int, m: int, p: float) -> float:
    """Equation 17: the chance that exactly m of n units drawn from a prior match (p each)."""
    if p <= 0.0:
        return 1.0 if m == 0 else 0.0
    if p >= 1.0:
        return 1.0 if m == n else 0.0
    return math.comb(n, m) * p ** m * (1 - p) ** (n - m)
