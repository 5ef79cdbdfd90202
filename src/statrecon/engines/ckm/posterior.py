"""Each true count's posterior behind a perturbed publication, by enumeration.

The attacker knows the ptable and not the cell keys, so a cell of true count ``t`` is
published as ``y`` with the ptable's probability ``P(y | t)`` (its *likelihood*), and the
true tables add up. Under a flat prior over the integer tables that add up, the posterior of
a table ``x`` is proportional to ``prod_c P(y_c | x_c)``, and each cell's posterior is that
summed over the tables where it takes each value.

Two assumptions, stated wherever the result is shown: the prior is flat over the tables that
add up, and the cells' perturbations are taken as independent (their cell keys uniform and
unknown; a total's key is in fact the sum of its parts' keys, which this ignores).

The sums are exact: the cells linked through equations (a component) are enumerated with
CP-SAT, every table whose cells lie in their likelihood's support and that adds up, and the
weights are multiplied as whole numbers. A component with more tables than ``max_tables``
(or more than ``MAX_ENTRIES`` cell values in all), or one a deadline stops, gets no
posterior (``too-many``, ``unknown``), never a partial sum called exact; a component with a
cell of no upper bound (not published) has none either (``unbounded``: a flat prior over
infinitely many tables is no distribution).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model
from scipy.sparse.csgraph import connected_components

from statrecon.engines.solvers.cpsat import Deadline, new_solver
from statrecon.errors import InconsistentReleaseError, check_option

Status = Literal["exact", "too-many", "unbounded", "unknown"]
MAX_TABLES = 20_000  # tables enumerated per component before it is called too many
MAX_ENTRIES = 4_000_000  # and at most this many cell values kept (a large component: fewer)
Likelihood = Mapping[int, Fraction]  # true value -> P(published | value) > 0


@dataclass(frozen=True)
class CellPosterior:
    """One true count's posterior: ``distribution`` (value, probability; exact, summing to
    1, ascending values) when ``status`` is exact, else empty; ``tables``: how many tables
    of its component were enumerated (all of them when exact)."""

    status: Status
    distribution: tuple[tuple[int, Fraction], ...] = ()
    tables: int = 0

    def __post_init__(self) -> None:
        exact = self.status == "exact"
        check_option(self, "distribution", bool(self.distribution) == exact and (
            not exact or sum(p for _, p in self.distribution) == 1), "a distribution "
            "summing to 1 exactly when the status is exact")

    @property
    def mode(self) -> tuple[int, Fraction] | None:
        """The most probable value and its probability (the least value on a tie)."""
        if not self.distribution:
            return None
        return max(self.distribution, key=lambda vp: (vp[1], -vp[0]))


@dataclass(frozen=True)
class PosteriorOptions:
    max_tables: int = MAX_TABLES
    time_limit: float | None = 60.0

    def __post_init__(self) -> None:
        check_option(self, "max_tables", self.max_tables >= 1, "at least 1")
        check_option(self, "time_limit", self.time_limit is None or self.time_limit > 0,
                     "positive, or None for no limit")


def posteriors(matrix: sp.spmatrix, likelihoods: Sequence[Likelihood | None],
               options: PosteriorOptions | None = None) -> tuple[CellPosterior, ...]:
    """The posterior of every cell. ``matrix @ x == 0`` are the equations the true tables
    satisfy (integer coefficients); ``likelihoods[c]`` the nonzero ``P(published_c | t)`` by
    ``t`` (None: the cell is not published, any ``t >= 0``). No table that adds up within the
    likelihoods' supports is an :class:`InconsistentReleaseError`."""
    options = options or PosteriorOptions()
    deadline = Deadline.after(options.time_limit)
    a = sp.csr_matrix(matrix)
    n = a.shape[1]
    if len(likelihoods) != n:
        raise ValueError(f"{len(likelihoods)} likelihoods for {n} cells")
    link = (a.T @ a) if a.shape[0] else sp.csr_matrix((n, n))
    _, label = connected_components(link, directed=False)
    out: list[CellPosterior | None] = [None] * n
    for comp in _components(label):
        for cell, post in zip(comp, _component(a, comp, likelihoods, options, deadline),
                              strict=True):
            out[cell] = post
    return tuple(p for p in out if p is not None)


def ranking(found: Sequence[CellPosterior]) -> list[int]:
    """The cells with an exact posterior, most surely recovered first: by the probability
    of their most probable value, then by cell order."""
    modes = [(c, p.mode) for c, p in enumerate(found)]
    exact = [(-m[1], c) for c, m in modes if m is not None]
    return [c for _, c in sorted(exact)]


def _components(label: np.ndarray) -> list[list[int]]:
    order = np.argsort(label, kind="stable")
    splits = np.flatnonzero(np.diff(label[order])) + 1
    return [part.tolist() for part in np.split(order, splits)]


def _component(a: sp.csr_matrix, cells: list[int], likelihoods: Sequence[Likelihood | None],
               options: PosteriorOptions, deadline: Deadline) -> list[CellPosterior]:
    """The posteriors of one component's cells, all with the same status."""
    own = [likelihoods[c] for c in cells]
    if any(lik is None for lik in own):
        return [CellPosterior("unbounded")] * len(cells)
    supports = [dict(lik) for lik in own if lik is not None]
    if any(not s or any(p <= 0 for p in s.values()) for s in supports):
        raise ValueError("every likelihood has a nonempty support of positive probabilities")
    tables, status = _enumerate(a, cells, supports, options, deadline)
    if status != "exact":
        return [CellPosterior(status, tables=len(tables))] * len(cells)
    if not tables:
        raise InconsistentReleaseError(
            f"no tables that add up give the published values of {len(cells)} linked cells "
            "a positive probability under the ptable: the release is inconsistent with it")
    return _marginals(tables, supports)


def _enumerate(a: sp.csr_matrix, cells: list[int], supports: list[dict[int, Fraction]],
               options: PosteriorOptions, deadline: Deadline
               ) -> tuple[list[tuple[int, ...]], Status]:
    """Every table of the component (cells in their supports, adding up) and ``exact``
    when CP-SAT enumerated them all; else those found, ``too-many`` past the cap, or
    ``unknown`` at the deadline."""
    if len(cells) == 1 and not a[:, cells].nnz:
        return [(v,) for v in sorted(supports[0])], "exact"  # a cell in no equation
    model = cp_model.CpModel()
    x = [model.new_int_var_from_domain(cp_model.Domain.from_values(sorted(s)), "")
         for s in supports]
    local = {c: i for i, c in enumerate(cells)}
    rows = np.unique(a[:, cells].nonzero()[0])
    for r in rows:
        start, end = a.indptr[r], a.indptr[r + 1]
        model.add(sum(int(v) * x[local[int(c)]] for c, v in
                      zip(a.indices[start:end], a.data[start:end], strict=True)) == 0)
    collect = _Collect(x, min(options.max_tables, MAX_ENTRIES // len(cells)))
    solver = new_solver(left=deadline.left())
    solver.parameters.enumerate_all_solutions = True
    status = solver.solve(model, collect)
    if collect.stopped:
        return collect.tables, "too-many"
    if status == cp_model.INFEASIBLE:
        return [], "exact"
    return collect.tables, "exact" if status == cp_model.OPTIMAL else "unknown"


class _Collect(cp_model.CpSolverSolutionCallback):
    """Keeps each table found; stops the search past ``cap`` of them."""

    def __init__(self, x: list[cp_model.IntVar], cap: int) -> None:
        super().__init__()
        self.x, self.cap = x, cap
        self.tables: list[tuple[int, ...]] = []
        self.stopped = False

    def on_solution_callback(self) -> None:
        self.tables.append(tuple(int(self.value(v)) for v in self.x))
        if len(self.tables) > self.cap:
            self.stopped = True
            self.stop_search()


def _marginals(tables: list[tuple[int, ...]], supports: list[dict[int, Fraction]]
               ) -> list[CellPosterior]:
    """Exact marginals: each cell's likelihoods as whole numbers over one denominator, each
    table's weight their product, summed by value."""
    whole = []
    for s in supports:
        den = math.lcm(*(p.denominator for p in s.values()))
        whole.append({v: int(p * den) for v, p in s.items()})
    weights = [math.prod(w[v] for w, v in zip(whole, t, strict=True)) for t in tables]
    total = sum(weights)
    out = []
    for i in range(len(supports)):
        by_value: dict[int, int] = {}
        for t, weight in zip(tables, weights, strict=True):
            by_value[t[i]] = by_value.get(t[i], 0) + weight
        out.append(CellPosterior("exact", tuple((v, Fraction(w, total))
                                                for v, w in sorted(by_value.items()) if w),
                                 len(tables)))
    return out
