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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.linalg
from ortools.sat.python import cp_model

from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.census.households.schema import Claim
from statrecon.engines.claims.model import (
    BlockModel,
    Histogram,
    WorkBudget,
    block_solver,
    cell_mask,
    time_left,
)
from statrecon.engines.solvers.cpsat import found


@dataclass
class ClaimGroups:
    """Distinct questions: (type set, multiplicity) shared by one or more claims."""

    members: np.ndarray  # groups x types bool
    mult: np.ndarray  # groups
    of_claim: np.ndarray  # claim -> group


def group_claims(members: np.ndarray, mult: np.ndarray) -> ClaimGroups:
    if len(mult) == 0:
        return ClaimGroups(members, mult, np.zeros(0, dtype=np.int64))
    packed = np.packbits(members, axis=1)
    keyed = np.concatenate([packed, mult[:, None].astype(">u2").view(np.uint8)], axis=1)
    _, first, inv = np.unique(keyed, axis=0, return_index=True, return_inverse=True)
    return ClaimGroups(members[first], mult[first], inv.ravel())


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
        left = time_left(end)
        if _out_of_budget(left, work):
            return status
        h = Histogram(m)
        _add_batched_question(h, members, mult, open_, mode)
        round_no += 1
        solver = block_solver(left, workers, seed + round_no)
        if work is None:
            solver.parameters.max_time_in_seconds = min(solver.parameters.max_time_in_seconds,
                                                        slice_s)
        else:
            work.limit(solver, slice_s)
        st = _solve_charged(solver, h, work)
        if st == cp_model.INFEASIBLE:
            status[open_] = 1
            return status
        if found(st):
            x = _witness(solver, h, witnesses)
            status[open_[broken(x)[open_]]] = 0
            continue
        # the batched question is hard here: settle a few questions one by one (each solution
        # met refutes more), then ask the smaller batched question again with more time
        status = _refute_each(m, members, mult, status, broken, mode, end, workers, seed,
                              limit=EACH_CHUNK, witnesses=witnesses, work=work)
        slice_s = min(2 * slice_s, 8.0)
    return status


def _out_of_budget(left: float | None, work: WorkBudget | None) -> bool:
    """No seconds left before the deadline, or no deterministic work left in the budget."""
    return (left is not None and left <= 0) or (work is not None and work.spent())


def _add_batched_question(h: Histogram, members: np.ndarray, mult: np.ndarray,
                          open_: np.ndarray, mode: str) -> None:
    """The batched question: does some consistent block break at least one open question?

    It maximises how many it breaks, so one answer refutes as many as it can.
    """
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


def _solve_charged(solver: cp_model.CpSolver, h: Histogram,
                   work: WorkBudget | None) -> cp_model.CpSolverStatus:
    """Solve the histogram model; charge the work budget, if any, for the solve."""
    st = solver.solve(h.model)
    if work is not None:
        work.charge(solver)
    return st


def _set_objective(h: Histogram, count: cp_model.LinearExprT, sense: str) -> None:
    """Replace the model's objective by the least ("min") or greatest ("max") ``count``."""
    h.model.clear_objective()
    if sense == "min":
        h.model.minimize(count)
    else:
        h.model.maximize(count)


def _witness(solver: cp_model.CpSolver, h: Histogram,
             witnesses: list[np.ndarray] | None) -> np.ndarray:
    """The consistent block the solver found (kept in ``witnesses`` when given)."""
    x = np.array([solver.value(v) for v in h.x], dtype=np.int64)
    if witnesses is not None:
        witnesses.append(x)
    return x


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
    h = Histogram(m)
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
            left = time_left(end)
            if _out_of_budget(left, work):
                return status
            _set_objective(h, count, sense)
            solver = block_solver(left, workers, seed + g)
            if work is not None:
                work.limit(solver)
            st = _solve_charged(solver, h, work)
            if found(st):
                x = _witness(solver, h, witnesses)
                status[(status == -1) & broken(x)] = 0
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
        index = hht.table_index()
        types = hh.unit_types()
        by_hash: dict[int, list[int]] = {}
        for i in range(len(index.cells)):
            by_hash.setdefault(hash(np.packbits(cell_mask(i)).tobytes()), []).append(i)
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


def binomial_baseline(n: int, m: int, p: float) -> float:
    """Equation 17: the chance that exactly m of n units drawn from a prior match (p each)."""
    if p <= 0.0:
        return 1.0 if m == 0 else 0.0
    if p >= 1.0:
        return 1.0 if m == n else 0.0
    return math.comb(n, m) * p ** m * (1 - p) ** (n - m)
