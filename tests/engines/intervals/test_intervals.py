"""The interval audit (issue 15) against brute force: on tiny tables (2x3 with margins, a
2-level hierarchy, two linked tables) with random suppressed cells, the integer intervals
equal the min/max over every integer completion and the LP intervals equal the exact LP
optimum from vertex enumeration; every proof re-checks exactly, a tampered one does not; a
time limit gives unknown, never a bound."""

from __future__ import annotations

import pickle
import time
from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_intervals_tables import (
    TWO_LEVEL,
    Tables,
    flat,
    integer_oracle,
    linked,
    lp_oracle,
)

from statrecon.engines.intervals import (
    AuditOptions,
    Bound,
    CellAudit,
    Interval,
    IntervalProblem,
    audit,
    audit_cell,
    check_bound,
    check_cell,
    prepare,
    verdict,
)
from statrecon.engines.intervals.check import _witness as check_witness
from statrecon.engines.solvers.cpsat import Deadline
from statrecon.errors import StatreconError

SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NO_LIMIT = AuditOptions(time_limit=None)


def two_by_three(leaves: np.ndarray) -> Tables:
    return linked({"A": flat("a", 2), "B": flat("b", 3)}, [("A", "B")], leaves)


def hierarchy(leaves: np.ndarray) -> Tables:
    return linked({"H": TWO_LEVEL, "V": flat("v", 2)}, [("H", "V")], leaves)


def two_linked(leaves: np.ndarray) -> Tables:
    return linked({"A": flat("a", 2), "B": flat("b", 2), "C": flat("c", 2)},
                  [("A", "B"), ("A", "C")], leaves)


def three_way(leaves: np.ndarray) -> Tables:
    return linked({"A": flat("a", 2), "B": flat("b", 2), "C": flat("c", 2)},
                  [("A", "B", "C")], leaves)


SHAPES = {"2x3": (two_by_three, (2, 3)), "hierarchy": (hierarchy, (4, 2)),
          "linked": (two_linked, (2, 2, 2)), "3-way": (three_way, (2, 2, 2))}


@st.composite
def audits(draw: st.DrawFn) -> tuple[Tables, list[int], int, bool]:
    build, shape = SHAPES[draw(st.sampled_from(sorted(SHAPES)))]
    scale = draw(st.sampled_from([1, 1, 2]))
    leaves = np.array(draw(st.lists(st.integers(0, 2), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape))))).reshape(shape)
    t = build(leaves)
    # no upper bound (counts): then the grand total must be published to bound the oracle's
    # enumeration, which is no loss since every completion has cells <= the grand total
    unbounded = draw(st.booleans())
    cells = [j for j in range(len(t.keys)) if not (unbounded and j == t.grand())]
    k = draw(st.integers(1, 3 if scale > 1 else 4))
    hidden = draw(st.lists(st.sampled_from(cells), min_size=1, max_size=k, unique=True))
    return t, hidden, scale, unbounded


def _problem(t: Tables, hidden: list[int], scale: int, unbounded: bool,
             protection: list[tuple[int, int]] | None = None
             ) -> tuple[IntervalProblem, Fraction]:
    """Cell values are the table's integers / scale; the cap: the grand total, a bound every
    completion keeps (also given as ``upper`` unless ``unbounded``)."""
    grand = t.values[t.grand()]
    upper = None if unbounded else [grand] * len(t.keys)
    return t.problem(hidden, scale, upper, protection), Fraction(grand, scale)


@SETTINGS
@given(audits(), st.data())
def test_intervals_equal_the_brute_force_oracles(case: tuple[Tables, list[int], int, bool],
                                                 data: st.DataObject) -> None:
    t, hidden, scale, unbounded = case
    protection = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                    min_size=len(t.keys), max_size=len(t.keys)))
    p, cap = _problem(t, hidden, scale, unbounded, protection)
    sliding = data.draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 5]), min_size=len(t.keys),
                                 max_size=len(t.keys)))
    p = replace(p, sliding=tuple(Fraction(s, scale) for s in sliding))
    ints = integer_oracle(p, cap)
    lps = lp_oracle(p, cap)
    result = audit(p, options=NO_LIMIT)
    assert sorted(c.cell for c in result.cells) == sorted(hidden)
    for c in result.cells:
        assert c.lp.proven and c.integer is not None and c.integer.proven, c
        assert (c.lp.lower.value, c.lp.upper.value) == lps[c.cell]
        assert (c.integer.lower.value, c.integer.upper.value) == ints[c.cell]
        assert check_cell(p, c) == []
        lo, hi = ints[c.cell]
        pl, pu = p.protection_of(c.cell)
        want = "disclosed" if lo == hi else "protected" if (
            lo <= c.value - pl and hi >= c.value + pu and hi - lo >= p.sliding_of(c.cell)
        ) else "under-protected"
        assert c.verdict == want


@st.composite
def systems(draw: st.DrawFn) -> tuple[IntervalProblem, int]:
    """Any integer system (coefficients -1..2, not a table: fractional LP vertices, integer
    gaps) over cells in 0..3 with a random true point."""
    n = draw(st.integers(3, 6))
    k = draw(st.integers(1, 4))
    coef = np.array(draw(st.lists(st.integers(-1, 2), min_size=n * k, max_size=n * k)),
                    dtype=np.int64).reshape(k, n)
    truth = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    hidden = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    if sum(hidden) > 4:
        hidden = [h and i < 4 for i, h in enumerate(hidden)]
    scale = draw(st.sampled_from([1, 2]))
    import scipy.sparse as sp

    return IntervalProblem(
        matrix=sp.csr_matrix(coef), rhs=tuple(int(v) for v in coef @ np.array(truth)),
        values=tuple(Fraction(v) for v in truth), hidden=tuple(hidden),
        lower=(Fraction(0),) * n, upper=(Fraction(3),) * n, scale=scale,
        cell_names=tuple(f"x{i}" for i in range(n)),
        equation_names=tuple(f"e{i}" for i in range(k))), n


@SETTINGS
@given(systems())
def test_general_integer_systems_equal_the_oracles(case: tuple[IntervalProblem, int]) -> None:
    p, _ = case
    ints, lps = integer_oracle(p, 3), lp_oracle(p, 3)
    for c in audit(p, options=NO_LIMIT).cells:
        assert c.integer is not None and c.lp.proven and c.integer.proven, c
        assert (c.lp.lower.value, c.lp.upper.value) == lps[c.cell]
        assert (c.integer.lower.value, c.integer.upper.value) == ints[c.cell]
        assert check_cell(p, c) == []


def double_triangle(cycles: int = 2) -> IntervalProblem:
    """Two odd cycles: published pair totals x1+x2+s1 = x2+x3+s2 = x1+x3+s3 = 1 (and the same
    for y), and a suppressed total t = x1+x2+x3+y1+y2+y3. Reals reach t = 3 (every x and y
    1/2); integers only 2 (at most one x and one y can be 1), and 2 is below the LP bound
    rounded down, so only CP-SAT's INFEASIBLE proves it. ``cycles=1``: the x cycle alone."""
    parts = (("x", "s", "p"), ("y", "r", "q"))[:cycles]
    names = [f"{a}{i}" for v, s, _ in parts for a in (v, s) for i in (1, 2, 3)]
    names += [f"{p}{i}" for *_, p in parts for i in (1, 2, 3)] + ["t"]
    at = {n: i for i, n in enumerate(names)}
    truth = {"x1": 1, "s2": 1, "y2": 1, "r3": 1, "t": cycles} | {
        f"{p}{i}": 1 for *_, p in parts for i in (1, 2, 3)}
    eqs = []
    for v, s, p in parts:
        for (a, b), k in zip(((1, 2), (2, 3), (1, 3)), (1, 2, 3), strict=True):
            eqs.append({at[f"{p}{k}"]: 1, at[f"{v}{a}"]: -1, at[f"{v}{b}"]: -1,
                        at[f"{s}{k}"]: -1})
    eqs.append({at["t"]: 1} | {at[f"{v}{i}"]: -1 for v, *_ in parts for i in (1, 2, 3)})
    A = np.zeros((len(eqs), len(names)), dtype=np.int64)
    for i, row in enumerate(eqs):
        for j, v in row.items():
            A[i, j] = v
    import scipy.sparse as sp

    return IntervalProblem(
        matrix=sp.csr_matrix(A), rhs=(0,) * len(eqs),
        values=tuple(Fraction(truth.get(n, 0)) for n in names),
        hidden=tuple(not n.startswith(("p", "q")) for n in names),
        lower=(Fraction(0),) * len(names), upper=(None,) * len(names), scale=1,
        cell_names=tuple(names), equation_names=tuple(f"e{i}" for i in range(len(eqs))),
        protection=tuple((Fraction(0), Fraction(1)) if n == "t" else (Fraction(0),) * 2
                         for n in names))


def test_the_integer_interval_can_be_strictly_tighter_than_the_lp_one() -> None:
    p = double_triangle()
    t = p.cell_names.index("t")
    c = audit_cell(p, t, NO_LIMIT)
    assert (c.lp.lower.value, c.lp.upper.value) == (0, 3)
    assert (c.integer.lower.value, c.integer.upper.value) == (0, 2)  # type: ignore[union-attr]
    assert c.integer.upper.proof == "infeasible"  # type: ignore[union-attr]
    assert c.tighter and check_cell(p, c) == []
    # the LP attacker sees t up to 3 = 2 + protection 1; the integer attacker only 2
    assert c.verdict == "under-protected"
    assert verdict(c.value, c.protection, c.lp, None) == "protected"
    # one cycle alone: the LP's 3/2 rounds down to the integer bound, no search beyond needed
    x1 = audit_cell(p, p.cell_names.index("x1"), NO_LIMIT)
    assert x1.lp.upper.value == 1 and not x1.tighter


def test_an_unbounded_cell_is_proven_unbounded_by_a_ray() -> None:
    # suppress a0b0, its row total, its column total and the grand total: all four can grow
    t = two_by_three(np.array([[1, 2, 0], [1, 1, 2]]))
    key = t.keys.index
    cyc = [key(frozenset({("A", "a0"), ("B", "b0")})), key(frozenset({("A", "a0")})),
           key(frozenset({("B", "b0")})), t.grand()]
    p = t.problem(cyc)
    for c in audit(p, options=NO_LIMIT).cells:
        assert c.lp.upper.proven and c.lp.upper.value is None and c.lp.upper.proof == "ray"
        assert c.integer is not None and c.integer.upper.value is None
        assert c.integer.upper.proven and check_cell(p, c) == []
        assert c.lp.lower.value == c.integer.lower.value == c.value - t.values[cyc[0]]
        bad = replace(c.lp.upper, ray=tuple((i, -v) for i, v in c.lp.upper.ray))
        assert check_bound(p, c.cell, "upper", bad) is not None


def test_tampered_certificates_are_rejected() -> None:
    t = hierarchy(np.array([[2, 1], [1, 1], [0, 2], [1, 1]]))
    hidden = [t.keys.index(frozenset(k)) for k in (
        {("H", "a1"), ("V", "v0")}, {("H", "a2"), ("V", "v0")}, {("H", "a1"), ("V", "v1")},
        {("H", "a2"), ("V", "v1")})]
    p = t.problem(hidden)
    c = audit_cell(p, hidden[0], NO_LIMIT)
    up = c.lp.upper
    assert up.proven and up.multipliers and check_cell(p, c) == []
    (k, y), *rest = up.multipliers
    tampered = [
        replace(up, multipliers=((k, y + Fraction(1, 2)), *rest)),  # implies another bound
        replace(up, multipliers=((k + 1, y), *rest)),  # the wrong equation
        replace(up, value=up.value + 1),  # type: ignore[operator]  # claims more than proven
        replace(up, witness=tuple((i, v + 1) for i, v in up.witness)),  # breaks an equation
        replace(up, witness=(*up.witness, (t.grand(), Fraction(0)))),  # a published cell
    ]
    for bad in tampered:
        assert check_bound(p, c.cell, "upper", bad) is not None, bad
    half = replace(c.integer.upper, witness=tuple(  # type: ignore[union-attr]
        (i, v + Fraction(1, 2) if i == hidden[1] else v - Fraction(1, 2) if i == hidden[3]
         else v) for i, v in c.integer.upper.witness))  # type: ignore[union-attr]
    assert check_bound(p, c.cell, "upper", half, lattice=True) is not None


def random_two_way(rows: int, cols: int, hidden: int, seed: int) -> IntervalProblem:
    rng = np.random.default_rng(seed)
    t = linked({"A": flat("a", rows), "B": flat("b", cols)}, [("A", "B")],
               rng.integers(0, 30, (rows, cols)))
    inner = [j for j, k in enumerate(t.keys) if len(k) == 2]
    return t.problem(sorted(rng.choice(inner, hidden, replace=False).tolist()))


def test_a_zero_time_limit_gives_unknown_never_a_bound() -> None:
    p = random_two_way(6, 6, 10, 1)
    result = audit(p, options=AuditOptions(time_limit=0.0))
    for c in result.cells:
        assert c.integer is not None
        for b in (c.lp.lower, c.lp.upper, c.integer.lower, c.integer.upper):
            assert b.status == "unknown" and b.value is None
        assert c.verdict == "unknown"


def test_a_batch_deadline_bounds_every_cell_whatever_its_own_limit() -> None:
    """A batch of cells shares one end: a passed deadline leaves every cell unknown even
    with no limit of its own (otherwise a batch can take its limit once per cell)."""
    p = random_two_way(6, 6, 10, 1)
    passed = Deadline(time.monotonic() - 1)
    result = audit(p, options=AuditOptions(time_limit=None, deadline=passed))
    assert result.cells and all(c.verdict == "unknown" for c in result.cells)
    later = Deadline.after(3600)
    full = audit(p, options=AuditOptions(time_limit=None, deadline=later))
    assert all(c.verdict != "unknown" for c in full.cells)


def test_a_tiny_time_limit_proves_only_what_it_proves() -> None:
    p = double_triangle()
    t = p.cell_names.index("t")
    full = audit_cell(p, t, NO_LIMIT)
    assert full.integer is not None
    for limit in (1e-4, 1e-3, 1e-2):
        c = audit_cell(p, t, AuditOptions(time_limit=limit))
        assert c.integer is not None
        pairs = ((c.lp.lower, full.lp.lower), (c.lp.upper, full.lp.upper),
                 (c.integer.lower, full.integer.lower), (c.integer.upper, full.integer.upper))
        for got, want in pairs:
            assert got.status == "unknown" or got.value == want.value
        assert c.verdict in ("unknown", full.verdict)


def _bound(v: int | None, proven: bool = True) -> Bound:
    return Bound(None if v is None else Fraction(v), "proven" if proven else "unknown")


@pytest.mark.parametrize(("lp", "integer", "want"), [
    ((0, 10), (0, 10), "protected"),
    ((0, 10), (5, 5), "disclosed"),  # the integer bounds meet
    ((5, 5), None, "disclosed"),
    ((0, 10), (4, 10), "under-protected"),  # 4 > 5 - 2: the lower level is not kept
    ((0, 10), (0, 6), "under-protected"),  # 6 < 5 + 2
    ((0, None), (0, None), "protected"),  # unbounded above
    ((0, 10), None, "protected"),  # no integer audit asked: the LP attacker
    ((4, 10), "unknown", "under-protected"),  # the LP bound alone proves it
    ((0, 10), "unknown", "unknown"),  # the integer attacker might do better
    ("unknown", None, "unknown"),
])
def test_the_verdict_is_a_function_of_proven_bounds(lp: object, integer: object,
                                                    want: str) -> None:
    def interval(spec: object) -> Interval | None:
        if spec is None:
            return None
        if spec == "unknown":
            return Interval(_bound(None, False), _bound(None, False))
        lo, hi = spec  # type: ignore[misc]
        return Interval(_bound(lo), _bound(hi))

    lp_iv = interval(lp)
    assert lp_iv is not None
    assert verdict(Fraction(5), (Fraction(2), Fraction(2)), lp_iv, interval(integer)) == want


def test_user_mistakes_are_one_line_errors() -> None:
    t = two_by_three(np.array([[1, 2, 0], [1, 1, 2]]))
    p = t.problem([0])
    published = next(j for j, h in enumerate(p.hidden) if not h)
    with pytest.raises(StatreconError, match="published, not suppressed"):
        audit(p, cells=[published])
    wrong = list(p.values)
    wrong[0] += 1
    with pytest.raises(StatreconError, match="do not satisfy equation") as e:
        prepare(replace(p, values=tuple(wrong)))
    assert e.value.statistic in p.equation_names
    with pytest.raises(StatreconError, match="not a multiple of 1/2"):
        prepare(replace(p, scale=2, values=(Fraction(1, 3), *p.values[1:])))
    with pytest.raises(StatreconError, match="hidden has 2"):
        prepare(replace(p, hidden=(True, False)))


def test_cells_audit_alone_after_a_round_trip_through_pickle() -> None:
    p = random_two_way(4, 5, 6, 3)
    prep = prepare(p)
    seen: list[tuple[int, int]] = []
    together = audit(prep, options=AuditOptions(time_limit=None,
                                                on_progress=lambda d, n: seen.append((d, n))))
    assert seen == [(i, 6) for i in range(1, 7)]
    alone = pickle.loads(pickle.dumps((prep, NO_LIMIT)))
    for c in together.cells:
        d = audit_cell(alone[0], c.cell, alone[1])
        assert _same(c, d)


def _same(a: CellAudit, b: CellAudit) -> bool:
    return (a.lp, a.integer, a.attack, a.verdict) == (b.lp, b.integer, b.attack, b.verdict)


def test_the_attack_names_the_equations_and_published_cells_used() -> None:
    # 2x2 interior all suppressed: each bound combines a row and a column total
    t = linked({"A": flat("a", 2), "B": flat("b", 2)}, [("A", "B")],
               np.array([[1, 2], [1, 2]]))
    inner = [j for j, k in enumerate(t.keys) if len(k) == 2]
    p = t.problem(inner)
    c = audit_cell(p, inner[3], NO_LIMIT)  # a1b1 in [1, 3]: a1 total - (b0 total - a0b0)
    assert (c.lp.lower.value, c.lp.upper.value) == (1, 3)
    used = set(c.attack.published)
    assert used and used <= {p.cell_names[j] for j, h in enumerate(p.hidden) if not h}
    assert set(c.attack.equations) <= set(p.equation_names)
    eqs = {p.equation_names[k] for b in (c.lp.lower, c.lp.upper) for k, y in b.multipliers}
    assert eqs == set(c.attack.equations)


def test_vertices_with_large_denominators_are_recovered_exactly() -> None:
    # (10^6 + 3) x1 = x2 with x2 <= 1: the LP maximum of x1 is 1/(10^6 + 3), which no
    # fraction with a denominator up to 10^6 approximates exactly; integers stop at 0
    import scipy.sparse as sp

    big = 10**6 + 3
    p = IntervalProblem(
        matrix=sp.csr_matrix(np.array([[big, -1]], dtype=np.int64)), rhs=(0,),
        values=(Fraction(0), Fraction(0)), hidden=(True, True),
        lower=(Fraction(0), Fraction(0)), upper=(None, Fraction(1)), scale=1,
        cell_names=("x1", "x2"), equation_names=("e",))
    c = audit_cell(p, 0, NO_LIMIT)
    assert c.lp.upper.proven and c.lp.upper.value == Fraction(1, big)
    assert c.lp.upper.multipliers == ((0, Fraction(1, big)),)
    assert c.integer is not None and c.integer.upper.value == 0
    assert check_cell(p, c) == []


@pytest.mark.parametrize("hot", [True, False])
def test_both_ways_of_calling_highs_agree(hot: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from statrecon.engines.solvers import highs

    if hot and not highs.HOT_START:
        pytest.skip("this scipy has no HiGHS object")
    monkeypatch.setattr(highs, "HOT_START", hot)
    p = double_triangle(cycles=1)
    ints, lps = integer_oracle(p, 2), lp_oracle(p, 2)  # every cell <= 3/2 in reals
    for c in audit(p, options=NO_LIMIT).cells:
        assert c.integer is not None
        assert (c.lp.lower.value, c.lp.upper.value) == lps[c.cell]
        assert (c.integer.lower.value, c.integer.upper.value) == ints[c.cell]


def test_a_time_limit_is_per_solve_not_for_the_life_of_a_highs_object() -> None:
    # HiGHS's clock keeps running across solves of one object: 400 solves of ~0.1 ms each,
    # each allowed 20 ms, must all finish though together they take longer than 20 ms
    p = random_two_way(6, 6, 12, 5)
    prep = prepare(p)
    c = max(range(len(prep.components)), key=lambda i: len(prep.components[i].cells))
    solver = prep.solver(c)
    answers = [solver.solve({i: s}, 0.02).status for _ in range(20)
               for i in range(len(prep.components[c].cells)) for s in (1.0, -1.0)]
    assert len(answers) >= 200 and set(answers) == {"optimal"}


def test_a_component_with_an_unbounded_cell_claims_no_integer_bound_it_cannot_prove() -> None:
    # the double triangle, plus t2 = t + u with t2 and u suppressed and unbounded: CP-SAT
    # needs finite domains, so t's integer upper (2) is left unknown, never the LP's 3
    import scipy.sparse as sp

    p = double_triangle()
    n, k = len(p.values), p.matrix.shape[0]
    row = np.zeros((1, n + 2), dtype=np.int64)
    row[0, p.cell_names.index("t")], row[0, n], row[0, n + 1] = 1, 1, -1  # t + u - t2 = 0
    A = sp.vstack([sp.hstack([p.matrix, sp.csr_matrix((k, 2), dtype=np.int64)]),
                   sp.csr_matrix(row)]).tocsr()
    q = replace(p, matrix=A, rhs=(*p.rhs, 0),
                values=(*p.values, Fraction(0), p.values[p.cell_names.index("t")]),
                hidden=(*p.hidden, True, True), lower=(*p.lower, Fraction(0), Fraction(0)),
                upper=(*p.upper, None, None), cell_names=(*p.cell_names, "u", "t2"),
                equation_names=(*p.equation_names, "t2 = t + u"),
                protection=(*p.protection, (Fraction(0),) * 2, (Fraction(0),) * 2))
    c = audit_cell(q, q.cell_names.index("t"), NO_LIMIT)
    assert c.lp.upper.value == 3 and c.integer is not None
    assert c.integer.upper.status == "unknown" and "no finite upper bound" in \
        c.integer.upper.note
    assert c.verdict == "unknown"
    t2 = audit_cell(q, q.cell_names.index("t2"), NO_LIMIT)
    assert t2.lp.upper.proven and t2.lp.upper.value is None and check_cell(q, t2) == []


def test_json_gives_floats_for_reading_and_exact_strings_for_comparing() -> None:
    import json

    p = double_triangle()
    result = audit(p, cells=[p.cell_names.index("t")], options=NO_LIMIT)
    data = json.loads(json.dumps(result.to_json(certificates=True)))
    (cell,) = data["cells"]
    assert cell["lp"]["upper"] == 3.0 and cell["lp"]["upper_exact"] == "3"
    assert cell["integer"]["upper_exact"] == "2" and cell["tighter"]
    assert data["tighter"] == [cell["cell"]] and cell["verdict"] == "under-protected"
    up = cell["certificates"]["integer"]["upper"]
    assert up["proof"] == "infeasible" and up["status"] == "proven"
    witness = {i: Fraction(v) for i, v in up["witness"]}
    assert witness[cell["cell"]] == 2
    lp_up = cell["certificates"]["lp"]["upper"]
    assert {p.equation_names[k] for k, _ in lp_up["multipliers"]} <= set(
        cell["attack"]["equations"])


def test_a_cell_in_no_equation_keeps_its_a_priori_bounds() -> None:
    import scipy.sparse as sp

    p = IntervalProblem(
        matrix=sp.csr_matrix((0, 3), dtype=np.int64), rhs=(), hidden=(True, False, True),
        values=(Fraction(1), Fraction(2), Fraction(0)),
        lower=(Fraction(0), Fraction(0), Fraction(-1)), upper=(Fraction(5), None, None),
        scale=1, cell_names=("a", "b", "c"), equation_names=())
    a, c = audit(p, options=NO_LIMIT).cells
    assert (a.lp.lower.value, a.lp.upper.value) == (0, 5) and a.attack.equations == ()
    assert (c.integer.lower.value, c.integer.upper.value) == (-1, None)  # type: ignore[union-attr]
    assert c.integer.upper.proven and check_cell(p, c) == []  # type: ignore[union-attr]


def _whole_table_reading(p: IntervalProblem, j: int, bound: Bound, lattice: bool
                         ) -> str | None:
    """The witness check done the plain way: the whole table written out and read again,
    cell by cell and equation by equation, in rationals."""
    x = list(p.values)
    for i, v in bound.witness:
        if not p.hidden[i]:
            return f"the witness changes published cell {p.cell_names[i]!r}"
        x[i] = Fraction(v)
    if x[j] != bound.value:
        return f"the witness has {x[j]}, not {bound.value}"
    if lattice and any((v * p.scale).denominator != 1 for v in x):
        return "the witness is off the lattice"
    for i, v in enumerate(x):
        hi = p.upper[i]
        if v < p.lower[i] or (hi is not None and v > hi):
            return f"the witness breaks the bounds of {p.cell_names[i]!r}"
    a = p.matrix.tocsr()
    for r in range(a.shape[0]):
        row = a.getrow(r)
        if sum(int(c) * x[int(k)] for k, c in zip(row.indices, row.data, strict=True)) \
                != p.rhs[r]:
            return f"the witness breaks equation {p.equation_names[r]!r}"
    return None


@settings(SETTINGS, max_examples=100)  # 8 witnesses each
@given(audits(), st.data())
def test_a_witness_is_read_as_the_whole_table_would_be(
        case: tuple[Tables, list[int], int, bool], data: st.DataObject) -> None:
    """The checker reads a witness through the cells it changes (the published values' facts
    kept per problem); any witness, right or wrong (a published cell moved, off the lattice,
    out of bounds, an equation broken), gets the verdict of reading the whole table."""
    t, hidden, scale, unbounded = case
    p, _ = _problem(t, hidden, scale, unbounded)
    values = st.fractions(min_value=-1, max_value=5, max_denominator=2 * scale)
    if data.draw(st.booleans()):  # values the published facts break (the checker's base)
        moved = data.draw(st.dictionaries(st.sampled_from(hidden), values, max_size=2))
        p = replace(p, values=tuple(moved.get(i, v) for i, v in enumerate(p.values)))
    cells = st.integers(0, len(t.keys) - 1)
    for _ in range(8):
        witness = tuple(data.draw(st.lists(st.tuples(cells, values), max_size=4)))
        if data.draw(st.booleans()):  # a plausible one: a completion the oracle keeps
            witness = tuple((i, p.values[i] + data.draw(st.sampled_from([0, 0, 1, -1])))
                            for i in hidden)
        j = data.draw(st.sampled_from(hidden))
        shown = dict(witness).get(j, p.values[j])
        value = shown if data.draw(st.booleans()) else shown + 1
        bound = Bound(value, "proven", "witness", witness=witness)
        for lattice in (False, True):
            want = _whole_table_reading(p, j, bound, lattice)
            assert check_witness(p, j, bound, lattice) == want, (witness, j, value)
