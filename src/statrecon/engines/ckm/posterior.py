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
(or more than ``MAX_ENTRIES`` cell values in all) is *sampled* instead: a Markov chain over
its tables (``chain``) estimates the marginals, which are never called exact. A component a
deadline stops is ``unknown``; one with a cell of no upper bound (not published) is
``unbounded``: a flat prior over infinitely many tables is no distribution.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

import numpy as np
import scipy.sparse as sp
from ortools.sat.python import cp_model
from scipy.sparse.csgraph import connected_components

from statrecon.engines.ckm.chain import (
    Move,
    equations_of,
    local_moves,
    null_moves,
    run_chain,
)
from statrecon.engines.solvers.cpsat import Deadline, found, new_solver
from statrecon.errors import InconsistentReleaseError, check_option

Status = Literal["exact", "sampled", "unmixed", "too-many", "unbounded", "unknown"]
MAX_TABLES = 20_000  # tables enumerated per component before it is called too many
MAX_ENTRIES = 4_000_000  # and at most this many cell values kept (a large component: fewer)
ENUMERATE_SHARE = 0.25  # of the time left, at most, for one component's enumeration
ENUMERATE_S = 10.0  # and at most this many seconds (CP-SAT enumerates without presolve)
STEPS_PER_MOVE = 20_000  # a chain's default steps: this many per basis move, within
STEPS = (20_000, 20_000_000)  # these bounds (the time limit stops it sooner)
MIX_TV = Fraction(1, 10)  # two chains farther apart than this on a cell: it is unmixed
MIN_CHANGES = 100  # and so is a cell either chain changed fewer times (one value: exempt)
MIN_NEIGHBOUR_CHANGES = 5  # or that shares an equation with a cell changed fewer times
Likelihood = Mapping[int, Fraction]  # true value -> P(published | value) > 0


@dataclass(frozen=True)
class CellPosterior:
    """One true count's posterior: ``distribution`` (value, probability, ascending values,
    summing to 1) when ``status`` is exact (enumerated) or sampled (the share of a Markov
    chain's steps: an estimate), else empty; ``tables``: how many tables of its component
    were enumerated (all of them when exact), ``steps`` both chains' steps when sampled.
    ``alone``: the probability of the most probable value from the cell's own published
    value alone, under the same prior, the equations ignored (``posteriors`` sets it; None:
    no distribution): what the tables add is ``added``."""

    status: Status
    distribution: tuple[tuple[int, Fraction], ...] = ()
    tables: int = 0
    steps: int = 0
    alone: Fraction | None = None

    def __post_init__(self) -> None:
        known = self.status in ("exact", "sampled")
        check_option(self, "distribution", bool(self.distribution) == known and (
            not known or sum(p for _, p in self.distribution) == 1), "a distribution "
            "summing to 1 exactly when the status is exact or sampled")
        check_option(self, "alone", self.alone is None or (known and 0 <= self.alone <= 1),
                     "a probability, and only beside a distribution")

    @property
    def added(self) -> Fraction | None:
        """What the linked tables add to the most probable value's probability beyond the
        cell's own published value (negative: they make it less sure); None: not known."""
        mode = self.mode
        return None if mode is None or self.alone is None else mode[1] - self.alone

    @property
    def mode(self) -> tuple[int, Fraction] | None:
        """The most probable value and its probability (the least value on a tie)."""
        if not self.distribution:
            return None
        return max(self.distribution, key=lambda vp: (vp[1], -vp[0]))


@dataclass(frozen=True)
class PosteriorOptions:
    """``max_tables``: enumerated per component before the chain takes over (``sample``;
    ``chain_steps`` proposals, None: STEPS_PER_MOVE per basis move, within STEPS);
    ``time_limit`` for all components together."""

    max_tables: int = MAX_TABLES
    time_limit: float | None = 60.0
    sample: bool = True
    chain_steps: int | None = None
    seed: int = 0
    on_progress: Callable[[int, int], None] | None = None  # (cells done, cells) per component

    def __post_init__(self) -> None:
        check_option(self, "max_tables", self.max_tables >= 1, "at least 1")
        check_option(self, "chain_steps", self.chain_steps is None or self.chain_steps >= 1,
                     "at least 1, or None")
        check_option(self, "seed", self.seed >= 0, "at least 0")
        check_option(self, "time_limit", self.time_limit is None or self.time_limit >= 0,
                     "at least 0 seconds, or None for no limit")


def posteriors(matrix: sp.spmatrix, likelihoods: Sequence[Likelihood | None],
               options: PosteriorOptions | None = None,
               known: Sequence[int] | None = None,
               boxes: Sequence[Move] = ()) -> tuple[CellPosterior, ...]:
    """The posterior of every cell. ``matrix @ x == 0`` are the equations the true tables
    satisfy (integer coefficients); ``likelihoods[c]`` the nonzero ``P(published_c | t)`` by
    ``t`` (None: the cell is not published, any ``t >= 0``); ``known``: a table that adds up,
    if one is at hand (a chain starts from it where it lies within the supports, and CP-SAT
    from it as a hint); ``boxes``: moves of few cells the tables' layout offers
    (``tables/box_moves``), which the chains propose in groups where the equations keep
    them (the others are dropped). No table that adds up within the likelihoods' supports
    is an :class:`InconsistentReleaseError`."""
    options = options or PosteriorOptions()
    deadline = Deadline.after(options.time_limit)
    a = sp.csr_matrix(matrix)
    n = a.shape[1]
    if len(likelihoods) != n:
        raise ValueError(f"{len(likelihoods)} likelihoods for {n} cells")
    link = (a.T @ a) if a.shape[0] else sp.csr_matrix((n, n))
    _, label = connected_components(link, directed=False)
    out: list[CellPosterior | None] = [None] * n
    done = 0
    kept = _kept_boxes(a, boxes, label)
    for comp in _components(label):
        hint = None if known is None else tuple(int(known[c]) for c in comp)
        local = {c: i for i, c in enumerate(comp)}
        own = [tuple((local[c], d) for c, d in box) for box in kept.get(int(label[comp[0]]),
                                                                         ())]
        for cell, post in zip(comp, _component(a, comp, likelihoods, options, deadline,
                                               hint, own), strict=True):
            out[cell] = _with_alone(post, likelihoods[cell])
        done += len(comp)
        if options.on_progress is not None:
            options.on_progress(done, n)
    return tuple(p for p in out if p is not None)


def ranking(cells: Sequence[CellPosterior], by: Literal["probability", "added"] =
            "probability") -> list[int]:
    """The cells with a posterior (exact or sampled), most surely recovered first: by the
    probability of their most probable value (``probability``), or by what the linked
    tables add to it beyond the cell's own published value (``added``: the attack's own
    share, not the prior's; BENCHMARKS.md, issue 30), then by cell order."""
    keys = [(c, p.mode[1] if by == "probability" and p.mode else p.added)
            for c, p in enumerate(cells)]
    return [c for _, c in sorted((-k, c) for c, k in keys if k is not None)]


def _with_alone(post: CellPosterior, likelihood: Likelihood | None) -> CellPosterior:
    """``post`` with ``alone``: its most probable value's share of the cell's own
    likelihood (the posterior of a cell in no equation, under the same flat prior)."""
    mode = post.mode
    if mode is None or likelihood is None:
        return post
    return replace(post, alone=Fraction(likelihood.get(mode[0], 0)) / sum(
        likelihood.values()))


def _kept_boxes(a: sp.csr_matrix, boxes: Sequence[Move], label: np.ndarray
                ) -> dict[int, list[Move]]:
    """The boxes every equation keeps (``a @ m == 0``) within one component, by component."""
    if not boxes:
        return {}
    cols = np.repeat(np.arange(len(boxes)), [len(b) for b in boxes])
    cells = np.array([c for b in boxes for c, _ in b], dtype=np.int64)
    changes = np.array([d for b in boxes for _, d in b], dtype=np.int64)
    m = sp.csc_matrix((changes, (cells, cols)), shape=(a.shape[1], len(boxes)))
    broken = set(sp.coo_matrix(a.astype(np.int64) @ m).col.tolist()) if a.shape[0] else set()
    kept: dict[int, list[Move]] = {}
    for j, box in enumerate(boxes):
        where = {int(label[c]) for c, _ in box}
        if j not in broken and len(where) == 1:
            kept.setdefault(where.pop(), []).append(box)
    return kept


def _components(label: np.ndarray) -> list[list[int]]:
    order = np.argsort(label, kind="stable")
    splits = np.flatnonzero(np.diff(label[order])) + 1
    return [part.tolist() for part in np.split(order, splits)]


def _component(a: sp.csr_matrix, cells: list[int], likelihoods: Sequence[Likelihood | None],
               options: PosteriorOptions, deadline: Deadline,
               hint: tuple[int, ...] | None, boxes: list[Move]) -> list[CellPosterior]:
    """The posteriors of one component's cells, all with the same status: enumerated in at
    most ENUMERATE_SHARE of the time left, else sampled from a table found (the
    enumeration's first, or CP-SAT's with presolve) in what remains."""
    own = [likelihoods[c] for c in cells]
    if any(lik is None for lik in own):
        return [CellPosterior("unbounded")] * len(cells)
    supports = [dict(lik) for lik in own if lik is not None]
    if any(not s or any(p <= 0 for p in s.values()) for s in supports):
        raise ValueError("every likelihood has a nonempty support of positive probabilities")
    rows = equations_of(a, cells)
    if not rows:  # a cell in no equation
        return _marginals([(v,) for v in sorted(supports[0])], supports)
    model, x = _model(rows, supports)
    fits = hint is not None and all(v in s for v, s in zip(hint, supports, strict=True))
    if hint is not None:
        for v, value, s in zip(x, hint, supports, strict=True):
            if value in s:
                model.add_hint(v, value)
    tables, status = _enumerate(model, x, min(options.max_tables, MAX_ENTRIES // len(cells)),
                                _share(deadline, ENUMERATE_SHARE, ENUMERATE_S))
    if status == "exact":
        if not tables:
            raise _inconsistent(cells)
        return _marginals(tables, supports)
    if not options.sample:
        return [CellPosterior(status, tables=len(tables))] * len(cells)
    first = tables[0] if tables else hint if fits else _one_table(model, x, cells, deadline)
    if first is None:
        return [CellPosterior(status, tables=len(tables))] * len(cells)
    second = _one_table(model, x, cells, _share(deadline, ENUMERATE_SHARE),
                        seed=options.seed + 1)
    return _sampled(rows, supports, (first, second or first), options, deadline, boxes)


def _share(deadline: Deadline, share: float, most: float | None = None) -> Deadline:
    """A deadline ``share`` of the time ``deadline`` leaves from now (none: none), and at
    most ``most`` seconds away."""
    left = deadline.left()
    seconds = None if left is None else left * share
    if most is not None:
        seconds = most if seconds is None else min(seconds, most)
    return Deadline.after(seconds)


def _inconsistent(cells: list[int]) -> InconsistentReleaseError:
    return InconsistentReleaseError(
        f"no tables that add up give the published values of {len(cells)} linked cells a "
        "positive probability under the ptable: the release is inconsistent with it")


def _model(rows: list[dict[int, int]], supports: list[dict[int, Fraction]]
           ) -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """The component's tables: each cell within its support, every equation over them."""
    model = cp_model.CpModel()
    x = [model.new_int_var_from_domain(cp_model.Domain.from_values(sorted(s)), "")
         for s in supports]
    for row in rows:
        model.add(cp_model.LinearExpr.weighted_sum([x[c] for c in row], list(row.values()))
                  == 0)
    return model, x


def _enumerate(model: cp_model.CpModel, x: list[cp_model.IntVar], cap: int,
               deadline: Deadline) -> tuple[list[tuple[int, ...]], Status]:
    """Every table of the model and ``exact`` when CP-SAT enumerated them all (none: the
    model is infeasible); else those found, ``too-many`` past ``cap`` of them, or
    ``unknown`` at the deadline."""
    collect = _Collect(x, cap)
    solver = new_solver(left=deadline.left())
    solver.parameters.enumerate_all_solutions = True
    status = solver.solve(model, collect)
    if collect.stopped:
        return collect.tables, "too-many"
    if status == cp_model.INFEASIBLE:
        return [], "exact"
    return collect.tables, "exact" if status == cp_model.OPTIMAL else "unknown"


def _one_table(model: cp_model.CpModel, x: list[cp_model.IntVar], cells: list[int],
               deadline: Deadline, seed: int | None = None) -> tuple[int, ...] | None:
    """One table of the model (CP-SAT with its presolve; with a ``seed``, the best found
    for a random objective, a start far from the first), None at the deadline; none at all
    is an inconsistent release (INFEASIBLE: a proof)."""
    if seed is not None:
        model = model.clone()
        rng = np.random.default_rng(seed)
        model.maximize(sum(int(w) * model.get_int_var_from_proto_index(v.index)
                           for w, v in zip(rng.choice((-1, 1), len(x)), x, strict=True)))
    solver = new_solver(left=deadline.left())
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        raise _inconsistent(cells)
    return tuple(int(solver.value(v)) for v in x) if found(status) else None


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


def _sampled(rows: list[dict[int, int]], supports: list[dict[int, Fraction]],
             starts: tuple[tuple[int, ...], tuple[int, ...]], options: PosteriorOptions,
             deadline: Deadline, boxes: list[Move]) -> list[CellPosterior]:
    """The marginals two Markov chains over the component's tables estimate (``chain``),
    one from each start (the same table twice where CP-SAT found no second in time: the
    seeds still differ), each given half the steps and half the time left. A cell whose two
    chains disagree (total variation over MIX_TV), or that either chain changed fewer than
    MIN_CHANGES times, or that shares an equation with a cell either chain changed fewer
    than MIN_NEIGHBOUR_CHANGES times (its parts and totals), is ``unmixed``: its estimate is
    not given; the others pool both chains. Agreement is not enough: two chains that move
    a cell a few dozen times agree on a posterior that is too sure of itself (on 102,786
    linked cells, record moves on: at 20 changes the mode's probability averaged 0.50 where
    44 % were right, at 100 changes 0.48 where 48 % were; BENCHMARKS.md, "a guard for short
    chains")."""
    moves = null_moves(rows, len(supports), deadline)
    local = local_moves(rows, len(supports), deadline)
    if not moves or local is None:  # the deadline passed (or one table: enumerated)
        return [CellPosterior("unknown")] * len(supports)
    steps = options.chain_steps or min(max(STEPS_PER_MOVE * len(moves), STEPS[0]), STEPS[1])
    log_weight = [{v: math.log(p) for v, p in s.items()} for s in supports]
    runs = [run_chain(moves, start, log_weight, steps // 2, options.seed + k,
                      _share(deadline, 0.5) if k == 0 else deadline, local, boxes)
            for k, start in enumerate(starts)]
    out = []
    total_steps = sum(run.steps for run in runs)
    moved = _moved(rows, [len(s) for s in supports], [run.changes for run in runs])
    for c, (first, second) in enumerate(zip(runs[0].held, runs[1].held, strict=True)):
        shares = [_shares(first), _shares(second)]
        if not shares[0] or not shares[1]:
            return [CellPosterior("unknown", steps=total_steps)] * len(supports)
        values = {*shares[0], *shares[1]}
        gap = sum((abs(shares[0].get(v, Fraction(0)) - shares[1].get(v, Fraction(0)))
                   for v in values), Fraction(0)) / 2
        if gap > MIX_TV or not moved[c]:
            out.append(CellPosterior("unmixed", steps=total_steps))
            continue
        pooled = {v: first.get(v, 0) + second.get(v, 0) for v in values}
        total = sum(pooled.values())
        out.append(CellPosterior("sampled", tuple((v, Fraction(n, total))
                                                  for v, n in sorted(pooled.items()) if n),
                                 steps=total_steps))
    return out


def _moved(rows: list[dict[int, int]], sizes: Sequence[int],
           changes: Sequence[Sequence[int]]) -> list[bool]:
    """Per cell, whether every chain changed it at least MIN_CHANGES times and every cell
    it shares an equation with at least MIN_NEIGHBOUR_CHANGES times (a cell of one possible
    value never needs to)."""
    fewest = [min(run[c] for run in changes) if size > 1 else math.inf
              for c, size in enumerate(sizes)]
    moved = [f >= MIN_CHANGES for f in fewest]
    for row in rows:
        if any(fewest[c] < MIN_NEIGHBOUR_CHANGES for c in row):
            for c in row:
                moved[c] = False
    return moved


def _shares(held: dict[int, int]) -> dict[int, Fraction]:
    total = sum(held.values())
    return {v: Fraction(n, total) for v, n in held.items()} if total else {}


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
