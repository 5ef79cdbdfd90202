"""Exact determinability at scale (issue 14, item 6): components, collapsed columns,
elimination modulo a prime with every claim checked exactly, block proofs for large dense
systems. The mod-p path must agree with the full exact elimination (``rref``) everywhere."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statrecon
from statrecon.engines.linear import LinearResult, component, determine
from statrecon.engines.linear.proofs import Determination
from statrecon.engines.solvers import modp
from statrecon.release.files import parse_release
from statrecon.release.known import PublicTable

blocks = st.lists(  # a few independent blocks of small integer rows, stacked block-diagonally
    st.integers(1, 4).flatmap(lambda n: st.lists(
        st.lists(st.sampled_from([0, 0, 1, 1, 1, -1, 2]), min_size=n, max_size=n),
        min_size=1, max_size=5)), min_size=1, max_size=3)


def block_diagonal(parts: list[list[list[int]]], duplicate: bool) -> np.ndarray:
    width = sum(len(p[0]) for p in parts)
    rows = []
    at = 0
    for p in parts:
        for r in p:
            rows.append([0] * at + r + [0] * (width - at - len(r)))
        at += len(p[0])
    A = np.array(rows, dtype=np.int64)
    if duplicate:  # a record no statistic tells apart from record 0
        A = np.hstack([A, A[:, :1]])
    return A[np.random.default_rng(len(rows)).permutation(len(rows))]


def summary(det: Determination) -> tuple[bool, dict[int, Fraction]]:
    return det.consistent, {c.index: c.value for c in det.determined}


def check_conflict(A: np.ndarray, b: list[Fraction], conflict: tuple[int, ...]) -> None:
    """The named statistics alone are inconsistent: their answers are not in the column
    space (rank of [A | b] exceeds rank of A, exactly)."""
    import flint

    sub = [[int(v) for v in A[i]] for i in conflict]
    aug = [[flint.fmpq(int(v)) for v in A[i]] + [flint.fmpq(b[i].numerator, b[i].denominator)]
           for i in conflict]
    assert flint.fmpq_mat(aug).rank() > flint.fmpz_mat(sub).rank()


@settings(max_examples=150, deadline=None)
@given(blocks, st.integers(0, 10**6), st.booleans(), st.booleans())
def test_modp_path_agrees_with_rref(parts: list[list[list[int]]], seed: int, duplicate: bool,
                                    corrupt: bool) -> None:
    A = block_diagonal(parts, duplicate)
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, A.shape[1])
    b = [Fraction(int(v)) for v in A @ x]
    if corrupt:
        b[int(rng.integers(len(b)))] += Fraction(1, 2)
    fast, slow = determine(A, b), determine(A, b, algorithm="rref")
    assert summary(fast) == summary(slow)
    assert fast.rank == slow.rank or not fast.consistent
    if not fast.consistent:
        check_conflict(A, b, fast.conflict)
    elif not corrupt:
        assert all(c.value == x[c.index] for c in fast.determined)


@settings(max_examples=60, deadline=None)
@given(blocks, st.integers(0, 10**6), st.booleans())
def test_unlucky_tiny_primes_change_no_answer(parts: list[list[list[int]]], seed: int,
                                              corrupt: bool) -> None:
    """Primes 2, 3 and 5 divide many minors of these matrices; every claim is checked exactly
    and an unlucky prime is replaced, so the answers stay those of the exact elimination."""
    A = block_diagonal(parts, False)
    x = np.random.default_rng(seed).integers(-4, 5, A.shape[1])
    b = [Fraction(int(v)) for v in A @ x]
    if corrupt:
        b[0] += 1
    slow = determine(A, b, algorithm="rref")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(modp, "PRIMES", (2, 3, 5, *modp.PRIMES))
        fast = determine(A, b)
    assert summary(fast) == summary(slow)


@settings(max_examples=80, deadline=None)
@given(blocks, st.integers(0, 10**6), st.lists(st.sampled_from(["0", "0", "1/10", "1/2"]),
                                                min_size=20, max_size=20))
def test_bounded_rows_pin_the_same_records_on_both_paths(parts: list[list[list[int]]],
                                                         seed: int, errs: list[str]) -> None:
    """With bounded statistics the certificates may differ, but the records in the row space
    are the same, and each certificate's interval holds the true value."""
    A = block_diagonal(parts, False)
    x = np.random.default_rng(seed).integers(-4, 5, A.shape[1])
    b = [Fraction(int(v)) for v in A @ x]
    e = [Fraction(v) for v in errs[:len(b)]]
    fast, slow = determine(A, b, e), determine(A, b, e, algorithm="rref")
    assert fast.consistent and slow.consistent  # the truth fits every interval

    def pinned(det: Determination) -> set[int]:
        return {c.index for c in (*det.determined, *det.bounded)}

    assert pinned(fast) == pinned(slow)
    for c in (*fast.determined, *fast.bounded):
        assert c.low <= x[c.index] <= c.high
        if all(e[i] == 0 for i, _ in c.terms):
            assert c.half_width == 0


def dense(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[Fraction]]:
    rng = np.random.default_rng(seed)
    A = (rng.random((k, n)) < 0.5).astype(np.int64)
    x = rng.integers(0, 2, n)
    return A, x, [Fraction(int(v)) for v in A @ x]


def test_large_dense_release_is_proven_by_a_block_proof(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(component, "EXACT_LIMIT", 5)
    A, x, b = dense(40, 100, 1)  # C⁻¹ has entries of ~20 digits: no small certificates
    det = determine(A, b)
    assert det.consistent and det.rank == 40 and len(det.determined) == 40
    assert all(c.value == x[c.index] for c in det.determined)
    block_proven = [c for c in det.determined if c.block is not None]
    assert block_proven and all(c.terms == () for c in block_proven)
    [proof] = det.blocks
    assert len(proof.rows) == 40 and set(proof.records) == {c.index for c in block_proven}
    # a corrupted answer is caught and the named statistics are themselves inconsistent
    b[70] += 1
    det = determine(A, b)
    assert not det.consistent
    check_conflict(A, b, det.conflict)


def test_large_component_with_bounded_rows_claims_nothing_it_cannot_prove(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank above the exact limit, bounded statistics needed: a note, and no claim."""
    monkeypatch.setattr(component, "EXACT_LIMIT", 5)
    A, x, b = dense(30, 30, 2)
    while not modp.nonsingular(A, modp.PRIMES[0]):
        A, x, b = dense(30, 30, int(A.sum()))
    det = determine(A, b, [Fraction(1, 1000)] * 30)
    assert det.determined == () and det.blocks == ()  # the block proof needs exact rows
    for c in det.bounded:  # small certificates may still be found
        assert c.low <= x[c.index] <= c.high
    assert len(det.bounded) < 30 and any("not claimed" in note for note in det.notes)


def test_an_oversized_component_is_refused_with_a_note_not_skipped_silently() -> None:
    A, _, b = dense(10, 20, 3)
    det = determine(A, b, max_cells=100)
    assert det.determined == () and det.consistent
    assert any("over the limit" in note for note in det.notes)


def test_components_are_solved_separately_and_agree_with_the_whole() -> None:
    """Census-like: 30 blocks of 6 people, nested counts per block (difference attacks)."""
    rng = np.random.default_rng(4)
    n, rows = 180, []
    for blk in range(30):
        people = np.arange(blk * 6, blk * 6 + 6)
        for cut in range(1, 7):
            row = np.zeros(n, dtype=np.int64)
            row[people[:cut]] = 1
            rows.append(row)
        if blk % 3 == 0:  # a wider count joining this block and the next
            row = np.zeros(n, dtype=np.int64)
            row[[people[0], people[0] + 6]] = 1
            rows.append(row)
    A = np.array(rows)
    x = rng.integers(0, 2, n)
    b = [Fraction(int(v)) for v in A @ x]
    det = determine(A, b)
    assert len(det.determined) == n and all(c.value == x[c.index] for c in det.determined)
    # difference attacks: a few coefficients ±1 each, listed (no block proof)
    assert all(c.block is None and 1 <= len(c.terms) <= 4 for c in det.determined)
    assert all(abs(v) == 1 for c in det.determined for _, v in c.terms)
    assert summary(det) == summary(determine(A, b, algorithm="rref"))


def test_dense_release_at_moderate_size_is_fully_proven_quickly() -> None:
    A, x, b = dense(300, 1200, 5)
    det = determine(A.astype(float), b)
    assert det.consistent and det.rank == 300 and len(det.determined) == 300
    assert all(c.value == x[c.index] for c in det.determined)
    assert det.elapsed_s < 20


def no_small_certificates(a: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rational reconstruction that never succeeds: as on a dense random release."""
    return np.zeros_like(a), np.ones_like(a), np.zeros(np.shape(a), dtype=bool)


def test_reconstruct_json_reports_block_proofs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(component, "EXACT_LIMIT", 1)
    monkeypatch.setattr(modp, "reconstruct", no_small_certificates)
    groups = [[1, 2], [2, 3], [1, 3], [1, 2, 3], [3]]
    truth = {1: 2, 2: 0, 3: 1}
    lines = ["version: 1", "table: t", "columns:", "  id: {type: integer, known: true}",
             "  v: {type: integer, min: 0, max: 3}", "statistics:"]
    for i, g in enumerate(groups):
        lines.append(f"  - {{id: s{i}, sql: \"SELECT SUM(v) FROM t WHERE id IN "
                     f"({', '.join(map(str, g))})\", value: {sum(truth[j] for j in g)}}}")
    result = statrecon.reconstruct(parse_release("\n".join(lines) + "\n"),
                                   public=PublicTable("ids", 3, {"id": (1, 2, 3)}),
                                   method="determine")
    assert isinstance(result, LinearResult) and result.status == "determined"
    data = result.to_json()
    assert [d["value"] for d in data["determined"]] == [2, 0, 1]
    blocked = [d for d in data["determined"] if d["proof"] == "block"]
    assert blocked and all(d["certificate"] == [] for d in blocked)
    [proof] = data["proof_blocks"]
    assert len(proof["statistics"]) == 3 and proof["prime"] in modp.PRIMES
