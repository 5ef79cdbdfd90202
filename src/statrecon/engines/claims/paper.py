"""The paper's integer programme for Generate-then-Verify (reference 003, section 3), in CP-SAT.

The baseline the default formulation (``fast``) is measured against, so it follows the paper
closely rather than being fast: one-hot rows (3.1), the big-M statistics constraints (3.2,
eqs 5-7), the seeded hash order of rows (eq 8, sound for verification too) and one "count !=
m" solve per claim (3.4, eqs 9-16). INFEASIBLE proves a claim, a solution refutes it, a time
limit leaves it unknown. The paper has typos in (9)-(12) and (16), and (11)-(12) are not
linear as printed; what is implemented instead, and why each change is sound, is derived in
``docs/derivations/claims_paper_formulation.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.census.households.schema import Claim
from statrecon.census.households.tables import BlockRelease
from statrecon.engines.solvers.cpsat import Deadline, found, new_solver, refutation
from statrecon.errors import InconsistentReleaseError

HASH_MAX = 1 << 16  # hash coefficients h are drawn from [1, HASH_MAX)


@dataclass(frozen=True)
class OneHot:
    """The one-hot layout of a unit: (column, code) of every index, and back."""

    column: np.ndarray  # (d,) column index of each one-hot index
    code: np.ndarray  # (d,) value code of each one-hot index (hh.NA_CODE for NA)
    position: dict[tuple[int, int], int]  # (column, code) -> one-hot index
    of_column: tuple[tuple[int, ...], ...]  # one-hot indices of each column

    @property
    def d(self) -> int:
        return len(self.column)


def one_hot() -> OneHot:
    """Every column's values, plus NA for the household columns (d = 69)."""
    column: list[int] = []
    code: list[int] = []
    of_column: list[tuple[int, ...]] = []
    for j, col in enumerate(hh.COLUMNS):
        codes = list(range(len(col.values)))
        if col.name != "vacancy":
            codes.append(hh.NA_CODE)
        of_column.append(tuple(range(len(column), len(column) + len(codes))))
        column.extend([j] * len(codes))
        code.extend(codes)
    position = {(c, v): i for i, (c, v) in enumerate(zip(column, code, strict=True))}
    return OneHot(np.array(column), np.array(code), position, tuple(of_column))


def _indices(layout: OneHot, name: str, values: frozenset[str]) -> list[int]:
    """One-hot indices of a column condition ``name in values`` (NA as the string "NA")."""
    j = hh.COL[name]
    return sorted(layout.position[(j, hh.COLUMNS[j].code(v))] for v in values)


@dataclass
class PaperModel:
    """The base model of one block: rows X, rules, statistics W (5)-(7), hash order (8)."""

    model: cp_model.CpModel
    x: list[list[cp_model.IntVar]]  # N x d one-hot entries
    x_index: np.ndarray  # (N, d) proto indices of x, to find them in a clone
    layout: OneHot
    units: int
    hash: np.ndarray  # (d,) the hash vector h


def build_paper_model(release: BlockRelease, seed: int = 0) -> PaperModel:
    """Problem 1 of the paper: a one-hot dataset X with Q(X) = the published values."""
    cells = hht.table_index().cells
    values = np.asarray(release.values, dtype=np.int64)
    if len(values) != len(cells):
        raise ValueError(f"block {release.block}: {len(values)} values for {len(cells)} cells")
    layout = one_hot()
    n = release.units
    model = cp_model.CpModel()
    x = [[model.new_bool_var(f"x{k}_{p}") for p in range(layout.d)] for k in range(n)]
    for row in x:
        for idx in layout.of_column:
            model.add_exactly_one([row[p] for p in idx])
    # structural rules: one cut per (rule, row)
    rule_sets = [[_indices(layout, name, vals) for name, vals in rule.pattern.items()]
                 for rule in hh.rules()]
    for row in x:
        for sets in rule_sets:
            model.add(sum(row[p] for s in sets for p in s) <= len(sets) - 1)
    # statistics: W[i, k] = [row k satisfies every sub-predicate of cell i]   (5), (6), (7)
    for i, cell in enumerate(cells):
        subs = [_indices(layout, name, vals) for name, vals in cell.predicate]
        r = len(subs)
        w_row: list[cp_model.IntVar] = []
        for k, row in enumerate(x):
            w = model.new_bool_var(f"w{i}_{k}")
            z = [cp_model.LinearExpr.sum([row[p] for p in s]) for s in subs]
            for zj in z:
                model.add(w <= zj)  # (5)
            model.add(w >= cp_model.LinearExpr.sum(z) - (r - 1))  # (6)
            w_row.append(w)
        model.add(cp_model.LinearExpr.sum(w_row) == int(values[i]))  # (7)
    # symmetry: rows ordered by a fixed random hash   (8)
    h = np.random.default_rng(seed).integers(1, HASH_MAX, size=layout.d)
    coeffs = [int(c) for c in h]
    for k in range(1, n):
        model.add(cp_model.LinearExpr.weighted_sum(x[k], coeffs)
                  >= cp_model.LinearExpr.weighted_sum(x[k - 1], coeffs))
    x_index = np.array([[v.index for v in row] for row in x], dtype=np.int64).reshape(
        n, layout.d)
    return PaperModel(model, x, x_index, layout, n, h)


def add_claim_negation(base: PaperModel, model: cp_model.CpModel, claim: Claim) -> None:
    """Problem 2's constraints (9)-(16) on ``model`` (a clone of ``base.model``): count != m.

    Typos corrected as the module docstring explains: a_j for v in (9)-(12), the product
    M(1 - T)U linearised, and (16) as sum S - m >= 1 - M(1 - Y).
    """
    layout = base.layout
    n = base.units
    big_m = n + 2
    # A_oh and the candidate's one-hot vector a restricted to it
    a_oh: list[int] = []
    a: list[int] = []
    for c, v in zip(claim.columns, claim.values, strict=True):
        own = layout.position[(c, v)]
        for p in layout.of_column[c]:
            a_oh.append(p)
            a.append(int(p == own))
    v_count = len(a_oh)  # |A_oh|, the "v" of (14)
    s_vars: list[cp_model.IntVar] = []
    for i in range(n):
        t_row: list[cp_model.IntVar] = []
        for p, a_j in zip(a_oh, a, strict=True):
            x_ij = model.get_bool_var_from_proto_index(int(base.x_index[i, p]))
            t = model.new_bool_var(f"t{i}_{p}")
            u = model.new_bool_var(f"u{i}_{p}")
            model.add(x_ij - a_j <= big_m * (1 - t))  # (9)
            model.add(a_j - x_ij <= big_m * (1 - t))  # (10)
            model.add(x_ij - a_j >= 1 - big_m * t - big_m * u)  # (11), linearised
            model.add(a_j - x_ij >= 1 - big_m * t - big_m * (1 - u))  # (12), linearised
            t_row.append(t)
        s = model.new_bool_var(f"s{i}")
        for t in t_row:
            model.add(s <= t)  # (13)
        model.add(s >= cp_model.LinearExpr.sum(t_row) - (v_count - 1))  # (14)
        s_vars.append(s)
    y = model.new_bool_var("y")
    count = cp_model.LinearExpr.sum(s_vars)
    m = claim.multiplicity
    model.add(count - m <= big_m * y - 1)  # (15)
    model.add(count - m >= 1 - big_m * (1 - y))  # (16), as intended


def _left(end: float | None) -> float | None:
    """Seconds left before ``end`` (a ``Deadline.end`` on the monotonic clock)."""
    return Deadline(end).left()


def _solver(left: float | None, workers: int, seed: int) -> cp_model.CpSolver:
    return new_solver(left=left, workers=max(1, workers), seed=seed)


def verify_paper(release: BlockRelease, claims: Sequence[Claim], *, end: float | None = None,
                 workers: int = 1, seed: int = 0) -> np.ndarray:
    """Status per claim (int8): 1 verified (INFEASIBLE), 0 refuted (feasible), -1 unknown.

    One model and one solve per claim, as in the paper. ``end`` is an absolute deadline on
    the monotonic clock (``Deadline.end``): each solve gets what is left, and once nothing is
    left the remaining claims stay -1 (a time-out is never taken as a proof).
    """
    status = np.full(len(claims), -1, dtype=np.int8)
    if not claims:
        return status
    left = _left(end)
    if left is not None and left <= 0:
        return status
    base = build_paper_model(release, seed)
    for c, claim in enumerate(claims):
        left = _left(end)
        if left is not None and left <= 0:
            break
        model = base.model.clone()
        add_claim_negation(base, model, claim)
        verdict = refutation(_solver(left, workers, seed).solve(model))
        if verdict != "unknown":  # the negation is INFEASIBLE (verified) or has a witness
            status[c] = 1 if verdict == "proven" else 0
    return status


def dataset_rows(base: PaperModel, types: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """A dataset given as counts over unit types (rows of codes) as the paper's X: one-hot
    rows (N, d) in the hash order of (8), so it can be checked against the paper's model."""
    codes = np.repeat(np.asarray(types), np.asarray(counts, dtype=np.int64), axis=0)
    if len(codes) != base.units:
        raise ValueError(f"{len(codes)} units given for a block of {base.units}")
    rows = np.zeros((len(codes), base.layout.d), dtype=np.int64)
    for j in range(hh.N_COLUMNS):
        rows[np.arange(len(codes)),
             [base.layout.position[(j, int(v))] for v in codes[:, j]]] = 1
    return rows[np.argsort(rows @ base.hash, kind="stable")]


def breaks_claim(base: PaperModel, claim: Claim, rows: np.ndarray, *, workers: int = 1,
                 seed: int = 0) -> int:
    """Does this dataset solve the paper's model of "count(a) != m" (Problems 1 and 2)?

    The claim's model with X fixed to ``rows``: 1 when CP-SAT finds it feasible (the dataset
    is consistent and breaks the claim, so the paper's formulation cannot verify the claim),
    0 when it proves it infeasible, -1 when it decides neither. Used to confirm, in the
    paper's own model, every refutation the default formulation found.
    """
    model = base.model.clone()
    add_claim_negation(base, model, claim)
    for k in range(base.units):
        for p in range(base.layout.d):
            var = model.get_bool_var_from_proto_index(int(base.x_index[k, p]))
            model.add(var == int(rows[k, p]))
    st = _solver(None, workers, seed).solve(model)
    return 1 if found(st) else (
        0 if st == cp_model.INFEASIBLE else -1)


def row_types(layout: OneHot, onehot: np.ndarray) -> np.ndarray:
    """Indices in ``hh.unit_types()`` of one-hot rows (N, d) of 0/1."""
    codes = np.zeros((len(onehot), hh.N_COLUMNS), dtype=np.uint8)
    for j, idx in enumerate(layout.of_column):
        codes[:, j] = layout.code[np.array(idx)[np.argmax(onehot[:, idx], axis=1)]]
    ids = hh.type_index(codes)
    if (ids < 0).any():  # the rule cuts make this impossible
        raise AssertionError("the paper model produced an incoherent housing unit")
    return ids


class _Collect(cp_model.CpSolverSolutionCallback):
    """Keeps distinct datasets (as histograms) until k are found."""

    def __init__(self, base: PaperModel, k: int) -> None:
        super().__init__()
        self.base = base
        self.k = k
        self.seen: set[bytes] = set()
        self.out: list[np.ndarray] = []
        self.n_types = len(hh.unit_types())

    def on_solution_callback(self) -> None:
        onehot = np.array([[self.boolean_value(v) for v in row] for row in self.base.x],
                          dtype=np.int64).reshape(self.base.units, self.base.layout.d)
        hist = np.bincount(row_types(self.base.layout, onehot),
                           minlength=self.n_types).astype(np.int64)
        key = hist.tobytes()
        if key not in self.seen:
            self.seen.add(key)
            self.out.append(hist)
        if len(self.out) >= self.k:
            self.stop_search()


def generate_paper(release: BlockRelease, k: int, seed: int = 0, end: float | None = None
                   ) -> list[np.ndarray]:
    """Up to k distinct consistent datasets from the paper's model (its solution pool).

    CP-SAT enumerates solutions of Problem 1 (as Gurobi's pool does); the hash order (8) makes
    row order canonical, and the histograms are deduplicated in case of hash collisions.
    Each dataset is returned as a histogram over ``hh.unit_types()`` indices (int64).
    Raises InconsistentReleaseError when no dataset matches the release.
    """
    left = _left(end)
    if k <= 0 or (left is not None and left <= 0):
        return []
    base = build_paper_model(release, seed)
    solver = _solver(left, 1, seed)  # solution enumeration is single-threaded in CP-SAT
    solver.parameters.enumerate_all_solutions = True
    collect = _Collect(base, k)
    st = solver.solve(base.model, collect)
    if st == cp_model.INFEASIBLE:
        raise InconsistentReleaseError(
            f"block {release.block}: no set of housing units matches every published cell")
    return collect.out
