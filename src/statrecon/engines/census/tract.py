"""Census tract reconstruction and per-block uniqueness certification (CP-SAT).

Formulation: one integer variable per (block, attribute cell) counts the block's persons with
that sex, single-year age, race combination and Hispanic origin. A variable exists only where
no published zero forbids it (a block cell or tract cell with value 0 that contains the
attribute cell), which leaves a few thousand variables per tract instead of
blocks x 27,972. Every nonzero block cell and every nonzero tract cell is one equality.

Certification is a backbone computation over the "certain counts": for each (block, attribute
cell) in the first solution, the least count any consistent dataset gives it. One CP-SAT
model asks "is some open count below its current bound?"; every witness lowers bounds (it is a
real dataset), and INFEASIBLE proves all remaining bounds at once. A block is *unique* when its
certain counts add up to its population. The same loop runs on counts per (block, sex, age bin
of the block tables, race, Hispanic): uniqueness at the tables' own age resolution, the sense in
which the Bureau measured "solution variability". A time limit leaves the open counts unproven
(status ``unknown``), never certified.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model

from statrecon.census.persons.cells import (
    GRID_SIZE,
    MAX_AGE,
    MEDIAN_SCALE,
    N_AGES,
    N_RACES,
    Sf1Cell,
    attribute_grid,
    mask_matrix,
)
from statrecon.census.persons.identities import group_sizes
from statrecon.census.persons.release import TractTables
from statrecon.engines.census.rank import copy_scores, draw_samples
from statrecon.engines.solvers.cpsat import Deadline, found, new_solver
from statrecon.errors import check_count, check_time_limit


@dataclass(frozen=True)
class CellMatrices:
    """The published cells as 0/1 matrices over the attribute grid (built once per process)."""

    block_cells: tuple[str, ...]
    tract_cells: tuple[str, ...]
    block: sp.csr_matrix  # block cells x GRID_SIZE
    tract: sp.csr_matrix  # tract cells x GRID_SIZE
    age_bin: np.ndarray  # age -> first age of its bin at block-table resolution
    block_class: np.ndarray  # attribute cell -> id of its set of block cells (same id: no
    #                          block table tells the two apart)
    is_count: np.ndarray  # per block cell: a count (True) or a median (P13)
    group_sizes: dict[int, tuple[int, ...]]  # median cell -> count cells summing to its group
    # derived, for compile_tract: block cells x classes of block_class (the cells over each
    # class), how many count cells lie over each class, how many tract cells over each
    # attribute cell, and the block cells over each attribute cell (GRID_SIZE x block cells)
    class_cells: sp.csr_matrix = field(init=False)
    class_cover: np.ndarray = field(init=False)
    tract_cover: np.ndarray = field(init=False)
    cells_over: sp.csr_matrix = field(init=False)

    def __post_init__(self) -> None:
        first = np.unique(self.block_class, return_index=True)[1]  # one attribute cell each
        by_class = self.block[:, first].tocsr()
        cover = np.asarray(by_class[np.flatnonzero(self.is_count)].sum(axis=0)).ravel()
        object.__setattr__(self, "class_cells", by_class)
        object.__setattr__(self, "class_cover", cover)
        object.__setattr__(self, "tract_cover", np.asarray(self.tract.sum(axis=0)).ravel())
        object.__setattr__(self, "cells_over", self.block.T.tocsr())

    @classmethod
    def build(cls, cells: tuple[Sf1Cell, ...]) -> CellMatrices:
        block = [c for c in cells if c.level == "block"]
        tract = [c for c in cells if c.level == "tract"]

        def matrix(cs: list[Sf1Cell]) -> sp.csr_matrix:
            return mask_matrix(cs)

        starts = sorted({0} | {c.age_lo for c in block} | {c.age_hi + 1 for c in block})
        starts = [a for a in starts if a <= MAX_AGE]
        age_bin = np.zeros(N_AGES, dtype=np.int64)
        for a in starts:
            age_bin[a:] = a
        mb = matrix(block)
        is_count = np.array([not c.is_median for c in block], dtype=bool)
        columns = mb[np.flatnonzero(is_count)].T.tocsr()
        signature = [columns.indices[columns.indptr[j]:columns.indptr[j + 1]].tobytes()
                     for j in range(GRID_SIZE)]
        _, block_class = np.unique(np.array(signature, dtype=object), return_inverse=True)
        return cls(tuple(c.table + ":" + c.cell for c in block),
                   tuple(c.table + ":" + c.cell for c in tract),
                   mb, matrix(tract), age_bin, block_class.astype(np.int64), is_count,
                   group_sizes(cells))

    def binned(self, grid_index: np.ndarray) -> np.ndarray:
        """Attribute cell -> the same cell with its age replaced by its bin's first age."""
        g = attribute_grid()
        age = g.age[grid_index]
        return grid_index + (self.age_bin[age] - age) * (2 * N_RACES)


# Seconds per tract by default: the 28 real tracts take about 3 s each, so only a runaway
# search meets it; None (``--time-limit inf``) lifts it.
DEFAULT_TRACT_TIME_LIMIT = 600.0


@dataclass(frozen=True)
class CensusOptions:
    """``time_limit``, like in every ``*Options``: seconds (per tract, solve and certify),
    None for no limit, the field's default (``CensusOptions.time_limit``) the engine's. A value
    out of range raises ``OptionError`` when the options are made."""

    time_limit: float | None = DEFAULT_TRACT_TIME_LIMIT  # per tract, solve and certify
    seed: int = 0
    certify: bool = True
    samples: int = 0  # consistent datasets drawn to score each person (0: no scores)

    def __post_init__(self) -> None:
        check_time_limit(self)
        check_count(self, "seed", 0)
        check_count(self, "samples", 0)


@dataclass(frozen=True)
class BlockResult:
    """One block: the reconstructed persons and what is proven about them.

    ``records`` and ``certain`` are attribute-cell indices (a multiset: one entry per person).
    ``certain`` are persons present in every consistent dataset; ``unique`` is True when the
    block is the same in every consistent dataset, False when a witness differs, None when not
    decided (time limit). ``*_binned`` are the same at the block tables' age resolution.
    """

    block: str
    records: np.ndarray
    certain: np.ndarray
    unique: bool | None
    certain_binned: int
    unique_binned: bool | None
    scores: np.ndarray | None = None  # per record: its share of the samples (census/rank.py)

    @property
    def persons(self) -> int:
        return len(self.records)


# ok: solved (and certified when asked); infeasible: proven by CP-SAT or by arithmetic;
# unknown: a time limit cut the solve or the certification short
TractStatus = Literal["ok", "infeasible", "unknown"]


@dataclass(frozen=True)
class TractResult:
    tract: str
    status: TractStatus
    blocks: tuple[BlockResult, ...]
    variables: int = 0
    constraints: int = 0
    solve_s: float = 0.0
    certify_s: float = 0.0
    certify_rounds: int = 0
    conflict: tuple[str, ...] = field(default_factory=tuple)  # cells, for "infeasible"
    samples: int = 0  # consistent datasets drawn for the scores
    sample_s: float = 0.0

    @property
    def persons(self) -> int:
        return sum(b.persons for b in self.blocks)


@dataclass(frozen=True)
class MedianSpec:
    """A published median age (P13) of one block's group: the variables of the group, their
    ages, the group size n (from count cells) and twice the median."""

    label: str
    block: int
    variables: np.ndarray
    ages: np.ndarray
    n: int
    twice: int

    def holds_after(self, values: np.ndarray, changed: np.ndarray, step: np.ndarray) -> bool:
        """``holds`` for ``values`` changed at a few positions (a candidate witness)."""
        counts = values[self.variables].copy()
        position = np.searchsorted(self.variables, changed)
        inside = (position < len(self.variables)) & (
            self.variables[np.minimum(position, len(self.variables) - 1)] == changed)
        np.add.at(counts, position[inside], step[inside])
        return self._median_ok(counts)

    def _median_ok(self, counts: np.ndarray) -> bool:
        ages = np.repeat(self.ages, counts)
        if len(ages) != self.n:
            return False
        ages.sort()
        return int(ages[(self.n - 1) // 2] + ages[self.n // 2]) == self.twice

    def holds(self, values: np.ndarray) -> bool:
        """Do these counts give this median? (Checks witnesses exactly.)"""
        counts = values[self.variables]
        ages = np.repeat(self.ages, counts)
        if len(ages) != self.n:
            return False
        ages.sort()
        return int(ages[(self.n - 1) // 2] + ages[self.n // 2]) == self.twice


def _cumulative(x: list[cp_model.IntVar], spec: MedianSpec, age: int) -> Any:
    return cp_model.LinearExpr.sum([x[int(v)] for v, a in zip(spec.variables, spec.ages,
                                                               strict=True) if a <= age])


def _add_median(model: cp_model.CpModel, x: list[cp_model.IntVar], spec: MedianSpec) -> bool:
    """Median constraints on counts: the k-th (and k+1-th) smallest ages. False: impossible.

    With C(a) = persons aged <= a, the k-th smallest age is t exactly when C(t-1) <= k-1 and
    C(t) >= k. An odd group pins one age; an even group chooses a pair (lo, hi) with
    lo + hi = twice the median among the ages its variables can take.
    """
    n, twice = spec.n, spec.twice
    if n % 2:
        if twice % 2:
            return False
        k, m = (n + 1) // 2, twice // 2
        model.add(_cumulative(x, spec, m - 1) <= k - 1)
        model.add(_cumulative(x, spec, m) >= k)
        return True
    k = n // 2
    ages = sorted(set(spec.ages.tolist()))
    options = [(lo, twice - lo) for lo in ages if lo <= twice - lo and twice - lo in ages]
    if not options:
        return False
    choices = []
    for lo, hi in options:
        pick = model.new_bool_var("")
        for age, bound, sense in ((lo - 1, k - 1, "<="), (lo, k, ">="), (hi - 1, k, "<="),
                                  (hi, k + 1, ">=")):
            c = _cumulative(x, spec, age)
            model.add(c <= bound if sense == "<=" else c >= bound).only_enforce_if(pick)
        choices.append(pick)
    model.add_exactly_one(choices)
    return True


@dataclass
class _Model:
    model: cp_model.CpModel
    x: list[cp_model.IntVar]
    block_of: np.ndarray  # variable -> block position
    cell_of: np.ndarray  # variable -> attribute cell
    rows: list[tuple[str, list[int], int]]  # (cell label, variable indices, value)
    medians: list[MedianSpec] = field(default_factory=list)
    bad_medians: list[str] = field(default_factory=list)  # published medians no ages can give

    def matrix(self) -> sp.csr_matrix:
        """The equalities as a sparse 0/1 matrix (rows x variables)."""
        indptr = np.cumsum([0] + [len(idx) for _, idx, _ in self.rows])
        indices = np.fromiter((i for _, idx, _ in self.rows for i in idx), dtype=np.int64,
                              count=int(indptr[-1]))
        return sp.csr_matrix((np.ones(len(indices), dtype=np.int64), indices, indptr),
                             shape=(len(self.rows), len(self.x)))


def _solver(options: CensusOptions, end: float | None) -> cp_model.CpSolver:
    # one worker: parallelism is across tracts, and it keeps runs reproducible
    return new_solver(left=Deadline(end).left(), workers=1, seed=options.seed)


# Largest tract model built: CP-SAT needs a few KB per variable (and certification clones the
# model), so 200,000 variables stay near a gigabyte. Real SF1 tracts need a few thousand.
MAX_TRACT_VARIABLES = 200_000


def _free_cells(tables: TractTables, mats: CellMatrices) -> tuple[np.ndarray, np.ndarray]:
    """(block position, attribute cell) of every count no published zero forbids.

    An attribute cell is free in a block when every count cell containing it is nonzero there,
    and every tract cell containing it in the tract. The nonzero cells are counted, not the
    zeros (most of a block's cells), over the classes of attribute cells that the same count
    cells contain (``block_class``, a third as many): the same cells, three times faster.
    """
    free_class, tract_free = _free_parts(tables, mats)
    free = free_class[:, mats.block_class]
    free &= tract_free[None, :]
    block_of, cell_of = np.nonzero(free)
    return block_of, cell_of


def _free_parts(tables: TractTables, mats: CellMatrices) -> tuple[np.ndarray, np.ndarray]:
    """Which classes of attribute cells each block's zeros leave free (blocks x classes), and
    which attribute cells the tract's zeros leave free."""
    vb = tables.block_values
    nonzero = sp.csr_matrix(((vb != 0) & mats.is_count[None, :]).astype(np.int32))
    free_class = (nonzero @ mats.class_cells).toarray() == mats.class_cover[None, :]
    tract = sp.csr_matrix((tables.tract_values != 0).astype(np.int32)[None, :])
    return free_class, ((tract @ mats.tract).toarray() == mats.tract_cover[None, :])[0]


def model_variables(tables: TractTables, mats: CellMatrices) -> int:
    """How many variables ``compile_tract`` would create (checked before anything is built):
    ``_free_cells`` counted without listing them, each class of attribute cells free in a
    block weighed by its cells that the tract's zeros leave free (the guard took 1.1 s over
    28 tracts listing them)."""
    free_class, tract_free = _free_parts(tables, mats)
    weight = np.bincount(mats.block_class[tract_free], minlength=free_class.shape[1])
    return int((free_class.astype(np.int64) @ weight).sum())


def _block_entries(mats: CellMatrices, block_of: np.ndarray, cell_of: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(row key, variable) of every variable in a count cell of its block, sorted by key then
    variable; a key is ``block position * block cells + cell``."""
    over = mats.cells_over[cell_of]  # variable -> the block cells containing it
    var = np.repeat(np.arange(len(cell_of)), np.diff(over.indptr))
    cell = over.indices.astype(np.int64)
    keep = mats.is_count[cell]
    var, cell = var[keep], cell[keep]
    key = block_of[var] * len(mats.block_cells) + cell
    order = np.lexsort((var, key))
    return key[order], var[order]


def compile_tract(tables: TractTables, mats: CellMatrices) -> _Model:
    """Variables where no published zero forbids them; one equality per nonzero cell."""
    vb = tables.block_values
    counts = mats.is_count
    block_of, cell_of = _free_cells(tables, mats)
    model = cp_model.CpModel()
    key, var = _block_entries(mats, block_of, cell_of)
    n_cells = len(mats.block_cells)
    # Upper bound of each count: the smallest published cell containing it.
    ub = np.full(len(cell_of), int(vb[:, counts].max(initial=0)), dtype=np.int64)
    np.minimum.at(ub, var, vb.ravel()[key])
    x = [model.new_int_var(0, int(u), f"x{j}") for j, u in enumerate(ub)]
    rows_out: list[tuple[str, list[int], int]] = []
    # one equality per positive count cell of a block, in block then cell order
    rows = np.flatnonzero(((vb > 0) & counts[None, :]).ravel())
    lo, hi = np.searchsorted(key, rows), np.searchsorted(key, rows, side="right")
    for r, a, b in zip(rows.tolist(), lo.tolist(), hi.tolist(), strict=True):
        block, cell = divmod(r, n_cells)
        rows_out.append((f"{tables.blocks[block]} {mats.block_cells[cell]}", var[a:b].tolist(),
                         int(vb[block, cell])))
    tract_part = mats.tract[:, cell_of].tocsr()
    for k in np.flatnonzero(tables.tract_values > 0):
        idx = tract_part.indices[tract_part.indptr[k]:tract_part.indptr[k + 1]].tolist()
        rows_out.append((f"{tables.tract} {mats.tract_cells[k]}", idx,
                         int(tables.tract_values[k])))
    for _, idx, value in rows_out:
        model.add(cp_model.LinearExpr.sum([x[i] for i in idx]) == value)
    m = _Model(model, x, block_of, cell_of, rows_out)
    starts = np.searchsorted(block_of, np.arange(len(tables.blocks) + 1))
    _compile_medians(m, tables, mats, starts)
    return m


def _compile_medians(m: _Model, tables: TractTables, mats: CellMatrices,
                     starts: np.ndarray) -> None:
    """P13: one MedianSpec per block and published median whose group is not empty."""
    ages = attribute_grid().age
    vb = tables.block_values
    for k, parts in mats.group_sizes.items():
        members = np.zeros(GRID_SIZE, dtype=bool)
        members[mats.block[k].indices] = True
        for b, block in enumerate(tables.blocks):
            n = int(vb[b, list(parts)].sum())
            if n == 0:
                continue
            label = f"{block} {mats.block_cells[k]} = {vb[b, k]}"
            if (2 * int(vb[b, k])) % MEDIAN_SCALE:
                m.bad_medians.append(label + " (not a multiple of 0.5 years)")
                continue
            lo, hi = starts[b], starts[b + 1]
            variables = np.arange(lo, hi)[members[m.cell_of[lo:hi]]]
            spec = MedianSpec(label, b, variables, ages[m.cell_of[variables]], n,
                              2 * int(vb[b, k]) // MEDIAN_SCALE)
            if not _add_median(m.model, m.x, spec):
                m.bad_medians.append(label + " (no ages allowed by the other cells give it)")
            m.medians.append(spec)


def len_of_cell(mats: CellMatrices) -> Any:
    """Sort key: how many attribute cells a row's published cell counts."""
    sizes = {name: mats.block[i].nnz for i, name in enumerate(mats.block_cells)}
    sizes.update({name: mats.tract[i].nnz for i, name in enumerate(mats.tract_cells)})
    return lambda row: sizes[row[0].split(" ", 1)[1]]


def _zero_cover(tables: TractTables, mats: CellMatrices, row: tuple[str, list[int], int]
                ) -> tuple[str, ...]:
    """A positive cell none of whose persons survives the published zeros: that cell and a
    few zero cells (greedy set cover) that together exclude every person it counts."""
    label, _, value = row
    geoid, name = label.split(" ", 1)
    is_block = geoid in tables.blocks
    names = mats.block_cells if is_block else mats.tract_cells
    matrix = mats.block if is_block else mats.tract
    need = np.zeros(GRID_SIZE, dtype=np.int8)
    need[matrix[names.index(name)].indices] = 1
    labels: list[str] = []
    rows: list[sp.csr_matrix] = []
    if is_block:
        zero = np.flatnonzero(tables.block_values[tables.blocks.index(geoid)] == 0)
        labels += [f"{geoid} {mats.block_cells[k]}" for k in zero]
        rows.append(mats.block[zero])
    zero = np.flatnonzero(tables.tract_values == 0)
    labels += [f"{tables.tract} {mats.tract_cells[k]}" for k in zero]
    rows.append(mats.tract[zero])
    zeros = sp.vstack(rows).tocsr().astype(np.int64)
    chosen = [f"{label} = {value}"]  # the positive cell, then the zeros that exclude it
    while need.any():
        hits = zeros @ need.astype(np.int64)
        best = int(np.argmax(hits))
        if hits[best] == 0:
            break
        chosen.append(f"{labels[best]} = 0")
        need[zeros[best].indices] = 0
    return tuple(chosen)


def _conflict(m: _Model, options: CensusOptions, end: float | None) -> tuple[str, ...]:
    """A small set of published cells that cannot all hold (CP-SAT assumptions, then shrunk)."""
    model = cp_model.CpModel()
    # No per-variable bounds here: they come from positive cells, which must be named if
    # they take part in the conflict; only the published zeros stay implicit (pruning).
    big = max((value for _, _, value in m.rows), default=0)
    x = [model.new_int_var(0, big, "") for _ in m.x]
    lits = []
    for _, idx, value in m.rows:
        lit = model.new_bool_var("")
        model.add(cp_model.LinearExpr.sum([x[i] for i in idx]) == value).only_enforce_if(lit)
        lits.append(lit)
    for spec in m.medians:  # medians stay hard: the named cells are the counts
        _add_median(model, x, spec)
    model.add_assumptions(lits)
    solver = _solver(options, end)
    if solver.solve(model) != cp_model.INFEASIBLE:
        return ()
    core = {lit.index for lit in lits} & set(solver.sufficient_assumptions_for_infeasibility())
    chosen = [i for i, lit in enumerate(lits) if lit.index in core]
    # Deletion pass: drop each cell whose removal keeps the rest infeasible (small cores only).
    if len(chosen) <= 40:
        i = 0
        while i < len(chosen):
            trial = chosen[:i] + chosen[i + 1:]
            model.clear_assumptions()
            model.add_assumptions([lits[j] for j in trial])
            if _solver(options, end).solve(model) == cp_model.INFEASIBLE:
                chosen = trial
            else:
                i += 1
    return (*(f"{m.rows[i][0]} = {m.rows[i][2]}" for i in chosen),
            "(with the cells published as 0)")


SINGLE_SWAP_PARTNERS = 12


_Trade = tuple[int, list[tuple[int, int]]]  # (variable lowered, (variable, change) pairs)


def _swap_witnesses(m: _Model, mats: CellMatrices, first: np.ndarray) -> np.ndarray:
    """Upper bounds on each variable's least value from verified exchange witnesses.

    Two attribute cells no block table tells apart (same block class, e.g. ages 32 and 34 of
    one sex, race and origin) can trade persons between two blocks: block tables see the same
    counts, tract tables the same totals. Each candidate exchange is checked against every
    published equality (A d = 0, x + d >= 0, variables exist) before it lowers a bound.
    """
    bound = first.copy()
    used = np.flatnonzero(first > 0)
    if len(used) < 2:
        return bound
    a = m.matrix()
    deltas = _swap_candidates(m, mats, first, used)
    if not deltas:
        return bound
    _lower_by_verified_trades(m, a, first, bound, deltas)
    return bound


def _swap_candidates(m: _Model, mats: CellMatrices, first: np.ndarray,
                     used: np.ndarray) -> list[_Trade]:
    """Candidate exchanges within each block class (not yet checked against the cells)."""
    klass = mats.block_class[m.cell_of[used]]
    index = {(int(m.block_of[j]), int(m.cell_of[j])): j for j in range(len(m.x))}
    deltas: list[_Trade] = []  # (variable lowered, changes)
    for k in np.unique(klass):
        members = used[klass == k]
        if len(np.unique(m.cell_of[members])) < 2 or len(np.unique(m.block_of[members])) < 2:
            continue
        for j in members:
            b, c = int(m.block_of[j]), int(m.cell_of[j])
            partners = [p for p in members if m.block_of[p] != b and m.cell_of[p] != c]
            changes, moved = _bulk_trade(m, index, first, j, partners)
            if moved:
                deltas.append((int(j), list(changes.items())))
            if m.medians:  # medians reject most bulk trades: also try one person at a time
                deltas.extend(_single_trades(m, index, j, partners))
    return deltas


def _bulk_trade(m: _Model, index: dict[tuple[int, int], int], first: np.ndarray, j: int,
                partners: list[int]) -> tuple[dict[int, int], int]:
    """Move all of variable ``j``'s persons to partners' cells: (changes, persons moved)."""
    b, c = int(m.block_of[j]), int(m.cell_of[j])
    changes: dict[int, int] = {}
    moved = 0
    for p in partners:
        b2, c2 = int(m.block_of[p]), int(m.cell_of[p])
        into_b, into_b2 = index.get((b, c2)), index.get((b2, c))
        if into_b is None or into_b2 is None:
            continue
        n = min(int(first[j]) - moved, int(first[p]))
        for var, d in ((j, -n), (p, -n), (into_b, n), (into_b2, n)):
            changes[var] = changes.get(var, 0) + d
        moved += n
        if moved == first[j]:
            break
    return changes, moved


def _single_trades(m: _Model, index: dict[tuple[int, int], int], j: int,
                   partners: list[int]) -> list[_Trade]:
    """One-person exchanges of variable ``j`` with each of its first partners."""
    b, c = int(m.block_of[j]), int(m.cell_of[j])
    deltas: list[_Trade] = []
    for p in partners[:SINGLE_SWAP_PARTNERS]:
        b2, c2 = int(m.block_of[p]), int(m.cell_of[p])
        into_b, into_b2 = index.get((b, c2)), index.get((b2, c))
        if into_b is not None and into_b2 is not None:
            deltas.append((int(j), [(int(j), -1), (int(p), -1), (into_b, 1),
                                    (into_b2, 1)]))
    return deltas


def _lower_by_verified_trades(m: _Model, a: sp.csr_matrix, first: np.ndarray,
                              bound: np.ndarray, deltas: list[_Trade]) -> None:
    """Lower ``bound`` (in place) by each trade that keeps every published cell and median."""
    rows = [v for _, ch in deltas for v, _ in ch]
    cols = [w for w, (_, ch) in enumerate(deltas) for _ in ch]
    vals = [d for _, ch in deltas for _, d in ch]
    d = sp.csc_matrix((vals, (rows, cols)), shape=(len(m.x), len(deltas)))
    d.sum_duplicates()
    residual = abs(a @ d).sum(axis=0).A.ravel()
    by_block: dict[int, list[MedianSpec]] = {}
    for spec in m.medians:
        by_block.setdefault(spec.block, []).append(spec)
    for w, (j, _) in enumerate(deltas):
        if residual[w] != 0 or first[j] + d[j, w] >= bound[j]:
            continue
        changed = d.indices[d.indptr[w]:d.indptr[w + 1]]
        step = d.data[d.indptr[w]:d.indptr[w + 1]]
        if (first[changed] + step < 0).any():
            continue
        touched = {int(m.block_of[v]) for v in changed}
        if all(spec.holds_after(first, changed, step)
               for b in touched for spec in by_block.get(b, [])):
            bound[j] = first[j] + d[j, w]


OBJECTIVE_ROUND_S = 1.0


def _certify(m: _Model, groups: list[np.ndarray], bound: np.ndarray, options: CensusOptions,
             end: float | None, first: np.ndarray) -> tuple[np.ndarray, bool, int]:
    """Least value of each group sum over all consistent datasets (see module docstring).

    ``groups[p]`` are the variable indices of count p, ``bound[p]`` an upper bound on its
    least value (its value in some consistent dataset). Returns (least counts, proven,
    rounds); when not proven, only the groups whose bound reached 0 are settled.
    """
    bound = bound.copy()
    open_ = np.flatnonzero(bound > 0)
    rounds = 0
    while len(open_):
        rounds += 1
        model = m.model.clone()
        x = [model.get_int_var_from_proto_index(v.index) for v in m.x]
        lits = []
        for p in open_:
            lit = model.new_bool_var("")
            model.add(cp_model.LinearExpr.sum([x[i] for i in groups[p]]) <= int(bound[p]) - 1
                      ).only_enforce_if(lit)
            lits.append(lit)
        model.add_bool_or(lits)
        for v, value in zip(x, first, strict=True):
            model.add_hint(v, int(value))
        # First try to lower as many counts as one witness can (capped); if that finds no
        # witness in time, ask the plain question, which is what proofs need.
        model.maximize(cp_model.LinearExpr.sum(lits))
        solver = _solver(options, end)
        solver.parameters.max_time_in_seconds = min(solver.parameters.max_time_in_seconds,
                                                    OBJECTIVE_ROUND_S)
        status = solver.solve(model)
        if status == cp_model.UNKNOWN:
            model.clear_objective()
            solver = _solver(options, end)
            status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return bound, True, rounds
        if not found(status):
            return bound, False, rounds  # time limit: the open counts stay unproven
        values = np.array([solver.value(v) for v in x], dtype=np.int64)
        sums = np.array([values[groups[p]].sum() for p in open_])
        lower = sums < bound[open_]
        bound[open_[lower]] = sums[lower]
        open_ = open_[bound[open_] > 0]
    return bound, True, rounds


def _block_results(tables: TractTables, m: _Model, first: np.ndarray,
                   least: np.ndarray | None, binned_block: np.ndarray,
                   scores: np.ndarray | None) -> list[BlockResult]:
    """Each block's persons (``first``), what certification proved (``least``: the least
    counts of the used variables, then of the binned groups; None when not proven) and the
    persons' scores (one per copy, in variable order)."""
    used = np.flatnonzero(first > 0)
    proven = least is not None
    strict_least = least[:len(used)] if least is not None else None
    binned_least = least[len(used):] if least is not None else None
    score_at = np.concatenate([[0], np.cumsum(first[used])])  # copies before each variable
    blocks: list[BlockResult] = []
    for b, block in enumerate(tables.blocks):
        mine = m.block_of[used] == b
        # variables are ordered by block, then cell: a block's copies are one run, in the
        # order of its sorted records
        where = np.flatnonzero(mine)
        block_scores = None if scores is None else (
            scores[score_at[where[0]]:score_at[where[-1] + 1]] if len(where)
            else np.zeros(0))
        records = np.repeat(m.cell_of[used][mine], first[used][mine])
        certain = np.repeat(m.cell_of[used][mine], strict_least[mine]) \
            if strict_least is not None else np.zeros(0, dtype=np.int64)
        n = int(tables.block_values[b, 0])
        certain_binned = int(binned_least[binned_block == b].sum()) \
            if binned_least is not None else 0
        blocks.append(BlockResult(
            block=block,
            records=np.sort(records),
            certain=np.sort(certain),
            unique=(len(certain) == n) if proven else None,
            certain_binned=certain_binned,
            unique_binned=(certain_binned == n) if proven else None,
            scores=block_scores,
        ))
    return blocks


def reconstruct_tract(tables: TractTables, mats: CellMatrices,
                      options: CensusOptions | None = None) -> TractResult:
    """Reconstruct one tract and certify each of its blocks."""
    options = options or CensusOptions()
    end = Deadline.after(options.time_limit).end
    t0 = time.perf_counter()
    m = compile_tract(tables, mats)
    solver = _solver(options, end)
    status = solver.solve(m.model)
    solve_s = time.perf_counter() - t0
    info: dict[str, Any] = dict(variables=len(m.x), constraints=len(m.rows), solve_s=solve_s)
    if m.bad_medians:
        return TractResult(tables.tract, "infeasible", (), conflict=tuple(m.bad_medians[:1]),
                           **info)
    empty = [r for r in m.rows if not r[1]]
    if empty:
        empty.sort(key=len_of_cell(mats))  # small cells first: their covers are short
        covers = [_zero_cover(tables, mats, row) for row in empty[:10]]
        return TractResult(tables.tract, "infeasible", (), conflict=min(covers, key=len),
                           **info)
    if status == cp_model.INFEASIBLE:
        return TractResult(tables.tract, "infeasible", (), conflict=_conflict(m, options, end),
                           **info)
    if not found(status):
        return TractResult(tables.tract, "unknown", (), **info)
    first = np.array([solver.value(v) for v in m.x], dtype=np.int64)

    # Counts to certify: (block, attribute cell) and (block, binned attribute cell).
    used = np.flatnonzero(first > 0)
    t1 = time.perf_counter()
    swapped = _swap_witnesses(m, mats, first) if options.certify else first
    strict_groups = [np.array([j]) for j in used]
    binned_cell = mats.binned(m.cell_of)
    key = m.block_of.astype(np.int64) * GRID_SIZE + binned_cell
    keys, inverse = np.unique(key, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    splits = np.split(order, np.cumsum(np.bincount(inverse, minlength=len(keys)))[:-1])
    binned_sums = np.bincount(inverse, weights=first, minlength=len(keys)).astype(np.int64)
    binned_used = np.flatnonzero(binned_sums > 0)
    groups = strict_groups + [splits[k] for k in binned_used]
    bound = np.concatenate([swapped[used], binned_sums[binned_used]]).astype(np.int64)
    rounds = 0
    if options.certify:
        least, proven, rounds = _certify(m, groups, bound, options, end, first)
    else:
        least, proven = np.zeros_like(bound), False
    certify_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    samples = draw_samples(m.model, m.x, options.samples, options.seed, end) \
        if options.samples else []
    sample_s = time.perf_counter() - t2
    scores = copy_scores(first, samples) if options.samples else None
    binned_block = (keys[binned_used] // GRID_SIZE).astype(np.int64)
    blocks = _block_results(tables, m, first, least if proven else None, binned_block, scores)
    return TractResult(tables.tract, "ok" if proven or not options.certify else "unknown",
                       tuple(blocks), certify_s=certify_s, certify_rounds=rounds,
                       samples=len(samples), sample_s=sample_s, **info)
