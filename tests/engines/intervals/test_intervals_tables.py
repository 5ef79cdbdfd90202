"""Tiny hierarchical tables (one or several linked) as interval problems, and the brute-force
oracles the interval audit is checked against: every integer completion enumerated, and the
exact LP optimum from every vertex (Fractions, own elimination). Shared by the interval
tests; nothing here uses the engine."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from statrecon.engines.intervals import IntervalProblem

# variable -> (root code, {parent: children}); leaves are codes that are no parent
Hier = tuple[str, dict[str, tuple[str, ...]]]


def flat(prefix: str, n: int) -> Hier:
    return "T", {"T": tuple(f"{prefix}{i}" for i in range(n))}


TWO_LEVEL: Hier = ("T", {"T": ("A", "B"), "A": ("a1", "a2"), "B": ("b1", "b2")})


def codes(h: Hier) -> list[str]:
    root, kids = h
    out = [root]
    for c in kids.get(root, ()):
        out += codes((c, kids))
    return out


def leaves_under(h: Hier, code: str) -> list[str]:
    kids = h[1].get(code)
    return [code] if not kids else [leaf for c in kids for leaf in leaves_under(h, c)]


@dataclass
class Tables:
    """Cells of linked tables (a cell published in two tables is one cell), their values
    from leaf counts over every variable, and the additivity equations (parent - children)."""

    keys: list[frozenset[tuple[str, str]]]
    values: list[int]
    rows: list[dict[int, int]]
    names: list[str]

    def problem(self, hidden: list[int], scale: int = 1, upper: list[int | None] | None = None,
                protection: list[tuple[int, int]] | None = None) -> IntervalProblem:
        n, k = len(self.keys), len(self.rows)
        A = sp.lil_matrix((k, n), dtype=np.int64)
        for i, row in enumerate(self.rows):
            for j, v in row.items():
                A[i, j] = v
        hid = [j in set(hidden) for j in range(n)]
        up = [None] * n if upper is None else upper
        return IntervalProblem(
            matrix=A.tocsr(), rhs=(0,) * k,
            values=tuple(Fraction(v, scale) for v in self.values), hidden=tuple(hid),
            lower=(Fraction(0),) * n,
            upper=tuple(None if u is None else Fraction(u, scale) for u in up), scale=scale,
            cell_names=tuple(self.cell_name(j) for j in range(n)),
            equation_names=tuple(self.names),
            protection=() if protection is None else tuple(
                (Fraction(a, scale), Fraction(b, scale)) for a, b in protection))

    def cell_name(self, j: int) -> str:
        return "{" + ",".join(f"{v}={c}" for v, c in sorted(self.keys[j])) + "}"

    def grand(self) -> int:
        return self.keys.index(frozenset())


def linked(hiers: dict[str, Hier], tables: list[tuple[str, ...]], leaf_values: np.ndarray
           ) -> Tables:
    """Cells and equations of each table (a tuple of variables) over the same leaf counts
    ``leaf_values`` (one axis per variable of ``hiers``, in order)."""
    variables = list(hiers)
    leaf_index = {v: {c: i for i, c in enumerate(
        [c for c in codes(hiers[v]) if c not in hiers[v][1]])} for v in variables}
    keys: list[frozenset[tuple[str, str]]] = []
    values: list[int] = []

    def cell(assign: dict[str, str]) -> int:
        key = frozenset((v, c) for v, c in assign.items() if c != hiers[v][0])
        if key not in keys:
            keys.append(key)
            sel = []
            for v in variables:
                if v in assign:
                    sel.append([leaf_index[v][leaf] for leaf in leaves_under(hiers[v],
                                                                            assign[v])])
                else:
                    sel.append(list(range(leaf_values.shape[variables.index(v)])))
            values.append(int(leaf_values[np.ix_(*sel)].sum()))
        return keys.index(key)

    rows: list[dict[int, int]] = []
    names: list[str] = []
    for t, tv in enumerate(tables):
        for combo in itertools.product(*(codes(hiers[v]) for v in tv)):
            assign = dict(zip(tv, combo, strict=True))
            for v in tv:
                for child in hiers[v][1].get(assign[v], ()):
                    cell({**assign, v: child})
                cell(assign)
        for combo in itertools.product(*(codes(hiers[v]) for v in tv)):
            assign = dict(zip(tv, combo, strict=True))
            for v in tv:
                kids = hiers[v][1].get(assign[v])
                if not kids:
                    continue
                row = {cell(assign): 1}
                for child in kids:
                    row[cell({**assign, v: child})] = -1
                if row not in rows:
                    rows.append(row)
                    names.append(f"t{t}: {v} {assign[v]} = {' + '.join(kids)} "
                                 f"({', '.join(f'{w}={assign[w]}' for w in tv if w != v)})")
    return Tables(keys, values, rows, names)


# ------------------------------------------------------------------------- the oracles

def reduced(p: IntervalProblem) -> tuple[list[int], np.ndarray, list[Fraction]]:
    """Hidden cells, their columns of the matrix (int array), and the right-hand sides with
    the published cells moved over (rows touching no hidden cell dropped)."""
    A = p.matrix.toarray()
    hidden = [j for j, h in enumerate(p.hidden) if h]
    vis = [j for j, h in enumerate(p.hidden) if not h]
    keep = [i for i in range(A.shape[0]) if A[i, hidden].any()]
    b = [Fraction(p.rhs[i]) - sum((int(A[i, j]) * p.values[j] for j in vis), Fraction(0))
         for i in keep]
    return hidden, A[np.ix_(keep, hidden)], b


def integer_oracle(p: IntervalProblem, cap: Fraction | int) -> dict[int, tuple[Fraction, Fraction]]:
    """min and max of each hidden cell over every completion on the lattice within
    [lower, min(upper, cap)] (cap: a bound every completion obeys anyway, e.g. the grand
    total), by enumeration."""
    hidden, AH, b = reduced(p)
    s = p.scale
    axes = []
    for j in hidden:
        hi = cap if p.upper[j] is None else min(cap, p.upper[j])
        axes.append(np.arange(int(np.ceil(p.lower[j] * s)), int(np.floor(hi * s)) + 1))
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(hidden))
    rhs = np.array([int(v * s) for v in b], dtype=np.int64)
    ok = grid[(grid @ AH.T == rhs).all(axis=1)] if len(b) else grid
    assert len(ok), "the truth is a completion"
    return {j: (Fraction(int(ok[:, t].min()), s), Fraction(int(ok[:, t].max()), s))
            for t, j in enumerate(hidden)}


def _solve_exact(M: list[list[Fraction]], r: list[Fraction], n: int) -> list[Fraction] | None:
    """The unique solution of M z = r (n unknowns, Fractions), None when none or many."""
    rows = [[*row, rv] for row, rv in zip(M, r, strict=True)]
    piv_cols = []
    at = 0
    for c in range(n):
        p = next((i for i in range(at, len(rows)) if rows[i][c] != 0), None)
        if p is None:
            return None  # a free column: not a vertex
        rows[at], rows[p] = rows[p], rows[at]
        inv = 1 / rows[at][c]
        rows[at] = [v * inv for v in rows[at]]
        for i in range(len(rows)):
            if i != at and rows[i][c] != 0:
                f = rows[i][c]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[at], strict=True)]
        piv_cols.append(c)
        at += 1
    if any(row[-1] != 0 for row in rows[at:]):
        return None
    return [rows[t][-1] for t in range(n)]


def lp_oracle(p: IntervalProblem, cap: Fraction | int) -> dict[int, tuple[Fraction, Fraction]]:
    """The exact LP interval of each hidden cell (box [lower, min(upper, cap)]): the optimum
    of a bounded LP is at a vertex, and every vertex is some cells at a bound and the rest
    the unique solution of the equations."""
    hidden, AH, b = reduced(p)
    k = len(hidden)
    lo = [p.lower[j] for j in hidden]
    hi = [Fraction(cap) if p.upper[j] is None else min(Fraction(cap), p.upper[j])
          for j in hidden]
    best: dict[int, list[Fraction]] = {}
    for states in itertools.product((0, 1, 2), repeat=k):
        free = [t for t in range(k) if states[t] == 2]
        x: list[Fraction] = [lo[t] if s == 0 else hi[t] if s == 1 else Fraction(0)
                             for t, s in enumerate(states)]
        r = [b[i] - sum((int(AH[i, t]) * x[t] for t in range(k) if t not in free),
                        Fraction(0)) for i in range(len(b))]
        if free:
            sol = _solve_exact([[Fraction(int(AH[i, t])) for t in free]
                                for i in range(len(b))], r, len(free))
            if sol is None:
                continue
            for t, v in zip(free, sol, strict=True):
                x[t] = v
        elif any(v != 0 for v in r):
            continue
        if any(x[t] < lo[t] or x[t] > hi[t] for t in range(k)):
            continue
        for t, j in enumerate(hidden):
            cur = best.setdefault(j, [x[t], x[t]])
            cur[0], cur[1] = min(cur[0], x[t]), max(cur[1], x[t])
    return {j: (v[0], v[1]) for j, v in best.items()}


# ------------------------------------------------------------- the oracles' own checks

def test_the_builder_derives_every_equation_from_the_hierarchies() -> None:
    t = linked({"A": flat("a", 2), "B": flat("b", 3)}, [("A", "B")],
               np.array([[1, 2, 3], [4, 5, 6]]))
    assert len(t.keys) == 12 and len(t.rows) == 3 + 4  # rows a0, a1, T; columns b0..b2, T
    x = np.array(t.values)
    assert all(sum(v * x[j] for j, v in row.items()) == 0 for row in t.rows)
    assert t.values[t.grand()] == 21


def test_linked_tables_share_their_common_cells() -> None:
    leaves = np.arange(8).reshape(2, 2, 2)
    t = linked({"A": flat("a", 2), "B": flat("b", 2), "C": flat("c", 2)},
               [("A", "B"), ("A", "C")], leaves)
    assert len(t.keys) == 9 + 9 - 3  # {A=a0}, {A=a1} and {} are in both tables
    assert t.values[t.keys.index(frozenset({("A", "a1")}))] == int(leaves[1].sum())


def test_the_oracles_on_a_hand_solved_table() -> None:
    # 2x2 with margins 3 | 3 and 2 | 4, interior hidden: x00 = t, x01 = 3-t, x10 = 2-t,
    # x11 = 1+t with t in [0, 2] (LP and integers agree: the matrix is unimodular)
    t = linked({"A": flat("a", 2), "B": flat("b", 2)}, [("A", "B")],
               np.array([[1, 2], [1, 2]]))
    inner = [t.keys.index(frozenset({("A", f"a{i}"), ("B", f"b{j}")}))
             for i in range(2) for j in range(2)]
    p = t.problem(inner)
    want = {inner[0]: (0, 2), inner[1]: (1, 3), inner[2]: (0, 2), inner[3]: (1, 3)}
    assert integer_oracle(p, 6) == lp_oracle(p, 6) == {
        j: (Fraction(a), Fraction(b)) for j, (a, b) in want.items()}
