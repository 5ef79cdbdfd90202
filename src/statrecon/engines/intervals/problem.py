"""What the audit reads: a linear system over every cell of a table (or linked tables), the
published cells fixed at their values, the suppressed ones unknown, and the a-priori bounds
every attacker knows. ``prepare`` checks it once and cuts the suppressed cells into
independent components (cells linked through equations), so that each LP, each CP-SAT model
and each exact check only sees the cells that can move together with the audited one.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from statrecon.engines.solvers.highs import ComponentLp
from statrecon.errors import StatreconError


@dataclass(frozen=True, eq=False)
class IntervalProblem:
    """``matrix @ x == rhs`` holds for the true ``values``; the attacker sees every cell whose
    ``hidden`` flag is False and knows ``lower <= x <= upper`` (None: no upper bound).
    ``scale``: values * scale are integers (10**decimals), the lattice of the integer audit.
    ``protection``: (lower, upper) protection level of each cell, absolute and >= 0; empty
    means 0 everywhere (only exact disclosure is then under-protection). ``sliding``: the
    sliding protection level of each cell (the attacker's interval must be at least this
    wide, wherever it lies; tau-Argus's and Fischetti-Salazar's SPL), >= 0; empty means 0.
    Compared by identity (``eq=False``): a sparse matrix has no truth value."""

    matrix: sp.csr_matrix
    rhs: tuple[int, ...]
    values: tuple[Fraction, ...]
    hidden: tuple[bool, ...]
    lower: tuple[Fraction, ...]
    upper: tuple[Fraction | None, ...]
    scale: int
    cell_names: tuple[str, ...]
    equation_names: tuple[str, ...]
    protection: tuple[tuple[Fraction, Fraction], ...] = ()
    sliding: tuple[Fraction, ...] = ()

    @property
    def n_cells(self) -> int:
        return len(self.values)

    def protection_of(self, j: int) -> tuple[Fraction, Fraction]:
        return self.protection[j] if self.protection else (Fraction(0), Fraction(0))

    def sliding_of(self, j: int) -> Fraction:
        return self.sliding[j] if self.sliding else Fraction(0)


@dataclass(frozen=True, eq=False)
class Component:
    """Suppressed cells linked through equations, with everything an LP over them needs.

    ``rows[k]``: the (local cell, coefficient) pairs of equation ``equations[k]`` over these
    cells; ``b[k]``: its right-hand side once the published cells are moved over (exact).
    Float copies (``a_float``, ``b_float``, ``bounds_float``) are built once for HiGHS."""

    cells: tuple[int, ...]
    equations: tuple[int, ...]
    rows: tuple[tuple[tuple[int, int], ...], ...]
    b: tuple[Fraction, ...]
    lo: tuple[Fraction, ...]
    hi: tuple[Fraction | None, ...]
    a_float: sp.csc_matrix
    b_float: np.ndarray
    bounds_float: np.ndarray
    local: dict[int, int]  # global cell -> local index


@dataclass(frozen=True, eq=False)
class Prepared:
    """A checked problem and its components. ``cache`` holds what is computed on demand (each
    component's HiGHS object, one per thread; the proven box of its integer models); it is
    not pickled: a worker that receives a copy rebuilds what it needs, which changes no
    answer."""

    problem: IntervalProblem
    components: tuple[Component, ...]
    component_of: dict[int, int]
    cache: dict[Any, Any] = field(default_factory=dict)

    def solver(self, c: int) -> ComponentLp:
        """HiGHS over component c, built on first use (one per thread: not shareable)."""
        key = ("highs", c, threading.get_ident())
        if key not in self.cache:
            comp = self.components[c]
            self.cache[key] = ComponentLp(comp.a_float, comp.b_float, comp.bounds_float)
        solver: ComponentLp = self.cache[key]
        return solver

    def __getstate__(self) -> dict[str, Any]:
        return {"problem": self.problem, "components": self.components,
                "component_of": self.component_of}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in (*state.items(), ("cache", {})):
            object.__setattr__(self, name, value)


def check_problem(p: IntervalProblem) -> None:
    """Shapes agree, the values sit on the lattice and inside the bounds, and the true values
    satisfy every equation: otherwise a one-line StatreconError naming the cell or equation."""
    k, n = p.matrix.shape
    sizes = {"values": len(p.values), "hidden": len(p.hidden), "lower": len(p.lower),
             "upper": len(p.upper), "cell_names": len(p.cell_names)}
    wrong = [f"{name} has {size}" for name, size in sizes.items() if size != n]
    if p.protection and len(p.protection) != n:
        wrong.append(f"protection has {len(p.protection)}")
    if p.sliding and len(p.sliding) != n:
        wrong.append(f"sliding has {len(p.sliding)}")
    if len(p.rhs) != k or len(p.equation_names) != k:
        wrong.append(f"rhs has {len(p.rhs)} and equation_names {len(p.equation_names)} "
                     f"for {k} equations")
    if wrong:
        raise StatreconError(f"interval problem with {n} cells: " + "; ".join(wrong))
    if not isinstance(p.scale, int) or p.scale < 1:
        raise StatreconError(f"interval problem: scale must be a positive integer, not "
                             f"{p.scale!r}")
    if p.matrix.nnz and not np.issubdtype(p.matrix.dtype, np.integer):
        raise StatreconError("interval problem: the matrix must have integer coefficients")
    for j in range(n):
        _check_cell(p, j)
    bad = first_failing_row(p.matrix, [v * p.scale for v in p.values],
                            [Fraction(r * p.scale) for r in p.rhs])
    if bad is not None:
        raise StatreconError(f"the true values do not satisfy equation "
                             f"{p.equation_names[bad]!r}", statistic=p.equation_names[bad])


def _check_cell(p: IntervalProblem, j: int) -> None:
    v, lo, hi, name = p.values[j], p.lower[j], p.upper[j], p.cell_names[j]
    if (v * p.scale).denominator != 1:
        raise StatreconError(f"cell {name!r}: value {v} is not a multiple of 1/{p.scale}",
                             statistic=name)
    if v < lo or (hi is not None and v > hi):
        raise StatreconError(f"cell {name!r}: value {v} outside its bounds [{lo}, "
                             f"{'inf' if hi is None else hi}]", statistic=name)
    if (p.protection and min(p.protection[j]) < 0) or p.sliding_of(j) < 0:
        raise StatreconError(f"cell {name!r}: negative protection level", statistic=name)


def first_failing_row(matrix: sp.csr_matrix, x: list[Fraction], rhs: list[Fraction]
                      ) -> int | None:
    """The first row i with ``matrix[i] @ x != rhs[i]``, exactly (None: every row holds).
    Integer vectors go through int64 sparse products when no sum can overflow."""
    A = sp.csr_matrix(matrix)
    den = math.lcm(*(v.denominator for v in (*x, *rhs)), 1)
    xi = [int(v * den) for v in x]
    ri = [int(v * den) for v in rhs]
    amax = int(np.abs(A.data).max()) if A.nnz else 0
    worst = amax * sum(abs(v) for v in xi) + max((abs(v) for v in ri), default=0)
    if worst < 2**62:
        lhs = A.astype(np.int64) @ np.asarray(xi, dtype=np.int64)
        bad = np.flatnonzero(lhs != np.asarray(ri, dtype=np.int64))
        return int(bad[0]) if bad.size else None
    for i in range(A.shape[0]):
        s, e = A.indptr[i], A.indptr[i + 1]
        if sum(int(a) * xi[int(c)] for c, a in zip(A.indices[s:e], A.data[s:e],
                                                   strict=True)) != ri[i]:
            return i
    return None


def prepare(problem: IntervalProblem, checked: bool = False) -> Prepared:
    """Check the problem and split its suppressed cells into components (once per problem).
    ``checked``: the caller has checked a problem that differs from this one only in which
    cells are hidden (no check reads them), so the check is not repeated."""
    if not checked:
        check_problem(problem)
    A = sp.csr_matrix(problem.matrix).astype(np.int64)
    A.sum_duplicates()
    A.eliminate_zeros()
    hidden = np.flatnonzero(np.asarray(problem.hidden, dtype=bool))
    if hidden.size == 0:
        return Prepared(problem, (), {})
    AH = A[:, hidden].tocsc()
    # components of the bipartite graph equations - suppressed cells (linear in its size;
    # cells x cells would square a long equation)
    k = AH.shape[0]
    graph = sp.bmat([[None, AH], [AH.T, None]], format="csr")
    _, labels_all = connected_components(graph, directed=False)
    labels = labels_all[k:]
    _, labels = np.unique(labels, return_inverse=True)
    count = int(labels.max()) + 1
    b = _moved_rhs(problem, A)
    components = []
    component_of: dict[int, int] = {}
    for c in range(count):
        local_cols = np.flatnonzero(labels == c)
        cells = tuple(int(hidden[i]) for i in local_cols)
        components.append(_component(problem, AH[:, local_cols].tocsr(), cells, b))
        for cell in cells:
            component_of[cell] = c
    return Prepared(problem, tuple(components), component_of)


def _moved_rhs(p: IntervalProblem, A: sp.csr_matrix) -> list[Fraction]:
    """rhs - (published cells' part of each row), exactly: in int64 (values times the
    scale) when no sum can overflow, else in Fractions."""
    scaled = [v * p.scale for v in p.values]
    if all(v.denominator == 1 for v in scaled):
        shown = np.array([0 if h else int(v) for v, h in zip(scaled, p.hidden, strict=True)],
                         dtype=object)
        amax = int(np.abs(A.data).max()) if A.nnz else 0
        worst = amax * int(np.abs(shown).sum()) + max((abs(r) for r in p.rhs), default=0) \
            * p.scale
        if worst < 2**62:
            moved = np.asarray(p.rhs, dtype=np.int64) * p.scale \
                - A.astype(np.int64) @ shown.astype(np.int64)
            return [Fraction(int(v), p.scale) for v in moved]
    out = []
    for i in range(A.shape[0]):
        s, e = A.indptr[i], A.indptr[i + 1]
        acc = Fraction(p.rhs[i])
        for c, a in zip(A.indices[s:e], A.data[s:e], strict=True):
            if not p.hidden[c]:
                acc -= int(a) * p.values[c]
        out.append(acc)
    return out


def _component(p: IntervalProblem, sub: sp.csr_matrix, cells: tuple[int, ...],
               b: list[Fraction]) -> Component:
    eqs = np.flatnonzero(np.diff(sub.indptr) > 0)
    rows = []
    for i in eqs:
        s, e = sub.indptr[i], sub.indptr[i + 1]
        rows.append(tuple((int(c), int(a)) for c, a in zip(sub.indices[s:e], sub.data[s:e],
                                                           strict=True)))
    lo = tuple(p.lower[c] for c in cells)
    hi = tuple(p.upper[c] for c in cells)
    bs = tuple(b[int(i)] for i in eqs)
    return Component(cells=cells, equations=tuple(int(i) for i in eqs), rows=tuple(rows),
                     b=bs, lo=lo, hi=hi, a_float=sub[eqs].astype(float).tocsc(),
                     b_float=np.array([float(v) for v in bs], dtype=float),
                     bounds_float=float_bounds(lo, hi),
                     local={c: i for i, c in enumerate(cells)})


def float_bounds(lo: Sequence[Fraction], hi: Sequence[Fraction | None]) -> np.ndarray:
    """HiGHS's copy of cells' bounds: one row (lower, upper) per cell, inf for none."""
    return np.array([[float(a), np.inf if b is None else float(b)] for a, b in
                     zip(lo, hi, strict=True)], dtype=float).reshape(len(lo), 2)
