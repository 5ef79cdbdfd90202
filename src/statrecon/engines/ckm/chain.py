"""A Markov chain over the integer tables that add up, for posteriors too large to enumerate.

The moves are integer vectors ``m`` with ``A m = 0``: a basis of the null space of the
component's equations (exact elimination, ``engines/solvers/elimination``, pivoting on
totals where it can, so each basis move is one inner cell and the totals above it), and
sums of up to ``MAX_COMBINED`` of them taken along a walk between moves that share a cell,
rare cells first (a move within a row whose total is pinned, a 2 x 2 swap where the margins
are); and *local* moves that keep the totals above a level (``local_moves``: the 2 x 2 x 2
moves of three-way tables that keep every margin, then moves that shift a margin between two
districts of a region and keep the region's), which such sums rarely assemble and which
change few cells, so they are taken far more often (on the 4,662 linked cells of the CKM
benchmark, 2.7 times as many cells mixed in the same time). Each sign is drawn at random,
and which kind of move is proposed never depends on the state, so ``m`` and ``-m`` are
equally likely and the Metropolis-Hastings chain with acceptance ``min(1, w(x + m) / w(x))``
(0 outside the supports) has the posterior as its stationary law on the tables its moves
connect to the start. The marginals it gives are estimates, never called exact: moves that
connect every table within bounds are not guaranteed (a Markov basis of bounded tables can
be large), which is why the chain is only used where enumeration is out of reach.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from statrecon.engines.solvers.cpsat import Deadline
from statrecon.engines.solvers.elimination import SparseBasis

MAX_COMBINED = 4  # basis moves summed into one proposal, at most
MAX_HEIGHT = 32  # levels of totals above totals that local moves are made for, at most
MAX_DENSE = 20_000_000  # cell values in the dense table of log likelihoods grouped steps read
GROUP_COST = (4, 250)  # a grouped step costs about a + entries / b single proposals
Move = tuple[tuple[int, int], ...]  # (local cell, change), the changes nonzero


@dataclass(frozen=True)
class ChainRun:
    """Per cell, how long the chain held each value (``held[c][v]``, in steps after the
    burn-in) and how often it changed after the burn-in (``changes[c]``), the steps taken
    and the moves accepted."""

    held: tuple[dict[int, int], ...]
    changes: tuple[int, ...]
    steps: int
    accepted: int


def null_moves(rows: Sequence[dict[int, int]], n: int,
               deadline: Deadline | None = None) -> list[Move] | None:
    """An integer basis of ``{m : row . m = 0 for every row}`` over ``n`` cells: one move per
    free cell (1 there, the pivots it sets), scaled to whole numbers where a coefficient is
    a fraction (unit pivots keep whole numbers whole: 34,854 linked cells in 2 s); None if
    ``deadline`` passes first."""
    basis = SparseBasis(None)
    for k, row in enumerate(rows):
        if deadline is not None and k % 64 == 0 and deadline.expired:
            return None
        left = basis.reduce({c: a for c, a in row.items() if a})  # whole, pivots of ±1
        if left:
            basis.add(left, _pivot(left))
    free = [c for c in range(n) if c not in basis.rows]
    moves = []
    for f in free:
        change: dict[int, Fraction | int] = {f: 1}
        for q in basis.holders.get(f, ()):
            change[q] = -basis.rows[q][f]
        scale = math.lcm(*(Fraction(v).denominator for v in change.values()))
        moves.append(tuple(sorted((c, int(v * scale)) for c, v in change.items() if v)))
    return moves


def local_moves(rows: Sequence[dict[int, int]], n: int,
                deadline: Deadline | None = None) -> list[Move] | None:
    """Moves that keep the totals above a level, for every level below the top two: an
    integer basis of the null space over the cells of height at most k (``heights``: 0 for
    a cell that is no row's total), for k = 0 .. top - 2. At height 0 in linked tables with
    their margins these are the 2 x 2 x 2 moves of each three-way table (8 cells, every
    margin kept); above, moves that shift a margin between two districts of a region and
    keep the region's. The sums of ``null_moves`` (each an inner cell and every total above
    it, 8 to 30 cells) rarely assemble them, and each of their cells must stay within its
    support for a move to be taken. None if ``deadline`` passes first."""
    height = heights(rows, n)
    out: list[Move] = []
    for k in range(max(height, default=0) - 1):
        kept = [c for c in range(n) if height[c] <= k]
        local = {c: i for i, c in enumerate(kept)}
        restricted = [r for r in ({local[c]: a for c, a in row.items() if c in local}
                                  for row in rows) if r]
        found = null_moves(restricted, len(kept), deadline)
        if found is None:
            return None
        out += [tuple((kept[c], d) for c, d in move) for move in found]
    return out


def heights(rows: Sequence[dict[int, int]], n: int) -> list[int]:
    """Each cell's height: 0 unless it is a row's total (the one cell whose sign differs
    from the rest of a row of three or more), then one more than its highest part. A cell
    still rising after MAX_HEIGHT rounds (equations in a cycle) gets MAX_HEIGHT + 1: it is
    then in no level's local moves, which only makes them fewer."""
    parts: list[tuple[int, list[int]]] = []
    for row in rows:
        for sign in (1, -1):
            side = [c for c, a in row.items() if a * sign > 0]
            if len(side) == 1 and len(row) > 2:
                parts.append((side[0], [c for c in row if c != side[0]]))
    height = [0] * n
    for _ in range(MAX_HEIGHT + 1):
        changed = False
        for total, below in parts:
            h = 1 + max(height[c] for c in below)
            if h > height[total]:
                height[total], changed = min(h, MAX_HEIGHT + 1), True
        if not changed:
            break
    return height


def _pivot(left: dict[int, Fraction]) -> int:
    """A total where the row has one (coefficient -1), else a unit coefficient, else any:
    free cells are then inner cells, and their moves stay small."""
    for wanted in (-1, 1):
        found = [c for c, a in left.items() if a == wanted]
        if found:
            return min(found)
    return min(left)


def run_chain(moves: list[Move], start: Sequence[int],
              log_weight: Sequence[dict[int, float]], steps: int, seed: int,
              deadline: Deadline, local: Sequence[Move] = (),
              boxes: Sequence[Move] = ()) -> ChainRun:
    """Metropolis-Hastings from ``start`` over ``steps`` proposals (fewer if the deadline
    comes first), the first fifth a burn-in: of the steps, or of the time to the deadline
    when that comes first (a chain the deadline stops at a third of its steps keeps four
    fifths of them, not none); ``log_weight[c][v]``: the log likelihood of value v of cell
    c (absent: outside its support). ``local``: moves that keep every total
    (``local_moves``), each proposed with a random sign, in a share of the steps that grows
    with their number. ``boxes``: moves of few cells that keep every total
    (``tables/box_moves``), proposed a whole group with no cell in common at a time
    (``_Groups``) in a share of the steps that gives them about half the time. No choice
    depends on the state, so the proposal stays symmetric."""
    rng = random.Random(seed)
    walk = _walk(moves)
    # as many of the proposals as the local moves' share of the null space's dimensions
    local_share = len(local) / (len(moves) + len(local)) if local else 0.0
    groups = _Groups.of(boxes, log_weight, seed) if boxes else None
    group_share = 0.0 if groups is None else groups.share
    burn = steps // 5
    left = deadline.left()
    burnt_at = None if left is None else Deadline.after(left / 5)
    state = _State(list(start), burn, *((groups.lo, groups.table.shape[1])
                                         if groups is not None else ()))
    end = 0
    for step in range(steps):
        if step % 1024 == 0:
            if deadline.expired:
                break
            if step < state.burn and burnt_at is not None and burnt_at.expired:
                state.burn_until(step)
        end = step + 1
        if groups is not None and rng.random() < group_share:
            groups.step(state, rng.randrange(len(groups.cells)), step)
            continue
        if rng.random() < local_share:
            sign = rng.choice((-1, 1))
            change = {c: sign * d for c, d in local[rng.randrange(len(local))]}
        else:
            change = _proposal(moves, walk, rng)
        x = state.x
        new = [(c, x[c] + d) for c, d in change.items() if d]
        if not new or any(v not in log_weight[c] for c, v in new):
            continue
        gain = sum(log_weight[c][v] - log_weight[c][x[c]] for c, v in new)
        if gain < 0 and rng.random() >= math.exp(gain):
            continue
        state.take(new, step)
    return state.run(end)


class _State:
    """The chain's table (``x``, and ``array`` for the grouped steps), when each cell last
    changed after the burn-in (``since``), how often, and how long it held each value:
    ``held`` for single moves, ``hist`` (by value - lo, when grouped steps are taken) for
    grouped ones, added up at the end."""

    def __init__(self, x: list[int], burn: int, lo: np.ndarray | None = None,
                 width: int = 0) -> None:
        self.x, self.burn = x, burn
        self.array = np.array(x, dtype=np.int64)
        self.since = np.full(len(x), burn, dtype=np.int64)
        self.changes = np.zeros(len(x), dtype=np.int64)
        self.held: dict[tuple[int, int], int] = {}
        self.lo = lo
        self.hist = None if lo is None else np.zeros((len(x), width), dtype=np.int64)
        self.accepted = 0

    def burn_until(self, step: int) -> None:
        """The burn-in ends at ``step`` (before the planned one: nothing was counted yet)."""
        self.burn = step
        self.since[:] = step

    def take(self, new: Sequence[tuple[int, int]], step: int) -> None:
        """One accepted move: each (cell, value) set at ``step``."""
        self.accepted += 1
        x, held, since = self.x, self.held, self.since
        for c, v in new:
            if step >= self.burn:
                key = (c, x[c])
                held[key] = held.get(key, 0) + step - int(since[c])
                since[c] = step
                self.changes[c] += 1
            x[c] = v
            self.array[c] = v

    def take_all(self, cells: np.ndarray, new: np.ndarray, step: int, moves: int) -> None:
        """``moves`` accepted moves of a group (distinct cells) set at ``step``."""
        assert self.hist is not None and self.lo is not None
        self.accepted += moves
        if step >= self.burn:
            self.hist[cells, self.array[cells] - self.lo[cells]] += step - self.since[cells]
            self.since[cells] = step
            self.changes[cells] += 1
        self.array[cells] = new
        x = self.x
        for c, v in zip(cells.tolist(), new.tolist(), strict=True):
            x[c] = v

    def run(self, end: int) -> ChainRun:
        held: list[dict[int, int]] = [{} for _ in self.x]
        for (c, v), n in self.held.items():
            held[c][v] = held[c].get(v, 0) + n
        if self.hist is not None and self.lo is not None:
            for c, at in zip(*(a.tolist() for a in np.nonzero(self.hist)), strict=True):
                v = at + int(self.lo[c])
                held[c][v] = held[c].get(v, 0) + int(self.hist[c, at])
        for c, v in enumerate(self.x):
            if end > self.since[c]:
                held[c][v] = held[c].get(v, 0) + end - int(self.since[c])
        return ChainRun(tuple(held), tuple(self.changes.tolist()), end, self.accepted)


@dataclass(frozen=True)
class _Groups:
    """Moves in groups with no cell in common (a greedy colouring), for steps that propose
    a whole group at once, each move with its own random sign, each accepted or rejected on
    its own (``min(1, w(x + m) / w(x))``). Moves on disjoint cells commute, so such a step
    is the same as proposing them one after the other, and each leaves the posterior where
    it is; which group is drawn never depends on the state. ``lo`` and ``table``: each
    cell's log likelihoods by value - lo, -inf outside the support (and in a padding as wide
    as the largest change, either side); ``share``: of the
    steps, about half the time (GROUP_COST)."""

    cells: list[np.ndarray]  # per group, its moves' cells one after the other
    deltas: list[np.ndarray]  # and their changes
    owner: list[np.ndarray]  # and which move of the group each belongs to
    lo: np.ndarray
    table: np.ndarray
    rng: np.random.Generator
    share: float

    @staticmethod
    def of(boxes: Sequence[Move], log_weight: Sequence[dict[int, float]],
           seed: int) -> _Groups | None:
        """None where the supports are too wide for a dense table (then one at a time)."""
        pad = max(abs(d) for move in boxes for _, d in move)
        lo = np.array([min(w) for w in log_weight], dtype=np.int64) - pad
        width = max(max(w) - min(w) + 1 for w in log_weight) + 2 * pad
        if len(log_weight) * width > MAX_DENSE:
            return None
        table = np.full((len(log_weight), width), -np.inf)
        for c, w in enumerate(log_weight):
            for v, weight in w.items():
                table[c, v - lo[c]] = weight
        cells, deltas, owner = [], [], []
        for group in _colour(boxes):
            cells.append(np.array([c for i in group for c, _ in boxes[i]], dtype=np.int64))
            deltas.append(np.array([d for i in group for _, d in boxes[i]], dtype=np.int64))
            owner.append(np.repeat(np.arange(len(group)), [len(boxes[i]) for i in group]))
        entries = sum(len(c) for c in cells) / len(cells)
        share = 1 / (1 + GROUP_COST[0] + entries / GROUP_COST[1])
        return _Groups(cells, deltas, owner, lo, table, np.random.default_rng(seed), share)

    def step(self, state: _State, k: int, step: int) -> None:
        """Every move of group ``k`` proposed at once."""
        cells, owner = self.cells[k], self.owner[k]
        size = int(owner[-1]) + 1
        signs = self.rng.integers(0, 2, size) * 2 - 1
        old = state.array[cells]
        new = old + signs[owner] * self.deltas[k]
        base = self.lo[cells]  # a padding of -inf either side: a move never leaves the table
        gain = np.bincount(owner, weights=self.table[cells, new - base]
                           - self.table[cells, old - base], minlength=size)
        accept = np.log(self.rng.random(size)) < gain  # gain -inf: never; >= 0: always
        if not accept.any():
            return
        taken = accept[owner]
        state.take_all(cells[taken], new[taken], step, int(accept.sum()))


def _colour(moves: Sequence[Move]) -> list[list[int]]:
    """The moves in groups with no cell in common: each the first group none of its cells'
    moves so far is in."""
    taken: dict[int, set[int]] = {}
    groups: list[list[int]] = []
    for i, move in enumerate(moves):
        busy = set().union(*(taken.get(c, set()) for c, _ in move))
        g = next(g for g in range(len(groups) + 1) if g not in busy)
        if g == len(groups):
            groups.append([])
        groups[g].append(i)
        for c, _ in move:
            taken.setdefault(c, set()).add(g)
    return groups


@dataclass(frozen=True)
class _Walk:
    """Where a proposal's walk goes next from a move: to one of its cells (rarer cells
    likelier: a total shared by every move leads anywhere), then to any move on that cell."""

    cells: list[list[int]]  # per move, its cells
    cumulative: list[list[float]]  # per move, the cumulative weights of its cells
    moves_of: dict[int, list[int]]  # per cell, the moves on it


def _walk(moves: list[Move]) -> _Walk:
    moves_of: dict[int, list[int]] = {}
    for i, move in enumerate(moves):
        for c, _ in move:
            moves_of.setdefault(c, []).append(i)
    cells = [[c for c, _ in move] for move in moves]
    cumulative = []
    for mine in cells:
        total, acc = 0.0, []
        for c in mine:
            total += 1 / len(moves_of[c])
            acc.append(total)
        cumulative.append(acc)
    return _Walk(cells, cumulative, moves_of)


def _proposal(moves: list[Move], walk: _Walk, rng: random.Random) -> dict[int, int]:
    """The sum of 1 to MAX_COMBINED basis moves, each reached from the previous one through
    a cell they share, each with a random sign (so ``m`` and ``-m`` are equally likely)."""
    i = rng.randrange(len(moves))
    change: dict[int, int] = {}
    for _ in range(rng.randint(1, MAX_COMBINED)):
        sign = rng.choice((-1, 1))
        for c, d in moves[i]:
            change[c] = change.get(c, 0) + sign * d
        c = rng.choices(walk.cells[i], cum_weights=walk.cumulative[i])[0]
        i = rng.choice(walk.moves_of[c])
    return change


def equations_of(a: sp.csr_matrix, cells: list[int]) -> list[dict[int, int]]:
    """The rows of ``a`` over ``cells``, each as {local cell: coefficient}."""
    sub = a[:, cells].tocsr()
    out = []
    for r in range(sub.shape[0]):
        start, end = sub.indptr[r], sub.indptr[r + 1]
        if end > start:
            out.append({int(c): int(v) for c, v in zip(sub.indices[start:end],
                                                       sub.data[start:end], strict=True)})
    return out
