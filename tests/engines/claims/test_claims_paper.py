"""The paper's one-hot integer programme (claims_paper): brute-force oracle, agreement with the
default formulation, exhaustive generation, and time limits."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_claims import consistent_datasets, tiny_block

from statrecon.census.households import schema as hh
from statrecon.census.households.tabulate import tabulate_types
from statrecon.engines import claims as C
from statrecon.engines.claims import fast as CF
from statrecon.engines.claims import model as CM
from statrecon.engines.claims.paper import (
    breaks_claim,
    build_paper_model,
    dataset_rows,
    generate_paper,
    one_hot,
    verify_paper,
)

TYPES = hh.unit_types()
OCCUPIED = np.flatnonzero(TYPES[:, hh.COL["vacancy"]] == 0)
CLAIMS_PER_BLOCK = 6


def oracle_verified(claim: C.Claim, datasets: list[np.ndarray]) -> bool:
    return all(int(claim.matches(TYPES[d]).sum()) == claim.multiplicity for d in datasets)


def sample_claims(ids: np.ndarray, datasets: list[np.ndarray], seed: int) -> list[C.Claim]:
    """Claims true in the real block, some with a wrong multiplicity; verified and not."""
    m = C.compile_block(C.BlockRelease("b", tabulate_types(ids)))
    x = np.zeros(len(m.type_ids), dtype=np.int64)
    for t in ids:
        x[np.searchsorted(m.type_ids, t)] += 1
    claims = [CM.decode_claim(int(c)) for c in CM.solution_claims(m, x)]
    rng = np.random.default_rng(seed)
    half = CLAIMS_PER_BLOCK // 2
    yes: list[C.Claim] = []
    no: list[C.Claim] = []
    for i in rng.permutation(len(claims)):  # the oracle only on what is needed
        c = claims[i]
        bucket = yes if oracle_verified(c, datasets) else no
        if len(bucket) < half:
            bucket.append(c)
        if len(yes) == len(no) == half:
            break
    picked = yes + no
    if picked:  # the real block has count m, so it refutes multiplicity m + 1
        c = picked[0]
        picked.append(C.Claim(c.columns, c.values, c.multiplicity + 1))
    return picked


def test_one_hot_layout() -> None:
    layout = one_hot()
    assert layout.d == sum(len(c.values) for c in hh.COLUMNS) + len(hh.HOUSEHOLD_COLUMNS)
    assert layout.position[(hh.COL["vacancy"], 0)] in layout.of_column[hh.COL["vacancy"]]
    assert (hh.COL["vacancy"], hh.NA_CODE) not in layout.position
    assert (hh.COL["tenure"], hh.NA_CODE) in layout.position


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), units=st.integers(2, 4))
def test_verify_paper_equals_brute_force_oracle(seed: int, units: int) -> None:
    ids = tiny_block(seed, units)
    release = C.BlockRelease("b", tabulate_types(ids))
    datasets = consistent_datasets(release)
    if datasets is None:
        return
    claims = sample_claims(ids, datasets, seed)
    got = verify_paper(release, claims)
    want = np.array([1 if oracle_verified(c, datasets) else 0 for c in claims], dtype=np.int8)
    assert got.dtype == np.int8
    assert got.tolist() == want.tolist()


def test_generate_paper_finds_every_consistent_dataset() -> None:
    for seed, units in ((0, 2), (4, 3), (16, 3)):
        ids = tiny_block(seed, units)
        release = C.BlockRelease("b", tabulate_types(ids))
        datasets = consistent_datasets(release)
        assert datasets is not None
        want = {tuple(sorted(d.tolist())) for d in datasets}
        hists = generate_paper(release, k=len(want) + 5, seed=seed)
        got = {tuple(np.repeat(np.arange(len(h)), h).tolist()) for h in hists}
        assert len(got) == len(hists)  # distinct
        assert got == want
        for h in hists:
            assert h.dtype == np.int64 and len(h) == len(TYPES) and h.sum() == units
            nz = np.flatnonzero(h)
            assert np.array_equal(tabulate_types(nz, h[nz]), release.values)
    # k caps the number returned
    assert len(generate_paper(release, k=1)) == 1


def test_paper_agrees_with_default_formulation() -> None:
    """Same candidates as verify_block builds; the paper verifies exactly the same ones."""
    k = 10
    for seed, units in ((1, 3), (5, 4), (11, 4)):
        ids = tiny_block(seed, units)
        release = C.BlockRelease("b", tabulate_types(ids))
        fast = C.verify_block(release, C.ClaimsOptions(k_solutions=k, seed=seed))
        assert fast.status == "ok" and fast.unknown == 0
        verified = {(c.columns, c.values, c.multiplicity) for c in fast.verified}
        m = C.compile_block(release)
        sols = CM.generate_solutions(m, k, seed=seed)
        cand = CM.solution_claims(m, sols[0])
        for x in sols[1:]:
            cand = np.intersect1d(cand, CM.solution_claims(m, x), assume_unique=True)
        claims = [CM.decode_claim(int(c)) for c in cand]
        assert len(claims) == fast.candidates
        rng = np.random.default_rng(seed)
        is_ver = np.array([(c.columns, c.values, c.multiplicity) in verified for c in claims])
        pick = np.concatenate([rng.permutation(np.flatnonzero(is_ver))[:5],
                               rng.permutation(np.flatnonzero(~is_ver))[:5]])
        got = verify_paper(release, [claims[i] for i in pick])
        assert got.tolist() == [1 if is_ver[i] else 0 for i in pick]


def test_breaks_claim_checks_a_dataset_in_the_paper_model() -> None:
    """A dataset solves the paper's "count != m" model iff it is consistent and breaks the
    claim: the check the bench uses to confirm each refutation in the paper's own model."""
    for seed, units in ((0, 2), (16, 3)):
        ids = tiny_block(seed, units)
        release = C.BlockRelease("b", tabulate_types(ids))
        datasets = consistent_datasets(release)
        assert datasets is not None
        base = build_paper_model(release, seed)
        claims = sample_claims(ids, datasets, seed)
        rng = np.random.default_rng(seed)
        foreign = rng.choice(OCCUPIED, size=units)  # almost surely not consistent
        consistent = any(np.array_equal(np.sort(foreign), np.sort(d)) for d in datasets)
        for claim in claims:
            for d in [*datasets[:2], foreign]:
                rows = dataset_rows(base, TYPES[d], np.ones(len(d), dtype=np.int64))
                assert rows.sum() == units * hh.N_COLUMNS
                count = int(claim.matches(TYPES[d]).sum())
                fits = d is not foreign or consistent
                want = int(fits and count != claim.multiplicity)
                assert breaks_claim(base, claim, rows) == want


def test_refute_hands_out_consistent_witnesses_the_paper_model_accepts() -> None:
    """Every refutation comes with a consistent block that breaks the claim, and the paper's
    model accepts that block as a counterexample (what the bench checks on all 50 blocks)."""
    ids = tiny_block(4, 3)
    release = C.BlockRelease("b", tabulate_types(ids))
    m = C.compile_block(release)
    x = np.zeros(len(m.type_ids), dtype=np.int64)
    for t in ids:
        x[np.searchsorted(m.type_ids, t)] += 1
    cand = CM.solution_claims(m, x)
    members = CM.claim_members(m, cand)
    mult = cand & ((1 << CM.MULT_BITS) - 1)
    # the true multiplicities (some verified, some not) and one more (all refuted)
    both = np.concatenate([members, members])
    wanted = np.concatenate([mult, mult + 1])
    found: list[np.ndarray] = []
    status = CF.refute(m, both, wanted, witnesses=found)
    assert (status[len(mult):] == 0).all() and found
    for w in found:
        assert np.array_equal(m.matrix @ w, release.values)  # consistent
    counts = both.astype(np.int64) @ np.array(found).T
    broken = counts != wanted[:, None]
    assert broken[status == 0].any(axis=1).all()  # each refutation has its witness
    base = build_paper_model(release)
    for q in np.flatnonzero(status == 0)[:3]:
        d = int(np.flatnonzero(broken[q])[0])
        claim = CM.decode_claim(int(cand[q % len(mult)]))
        claim = C.Claim(claim.columns, claim.values, int(wanted[q]))
        assert breaks_claim(base, claim, dataset_rows(base, m.types, found[d])) == 1


def test_time_limit_in_the_past_gives_unknown() -> None:
    rng = np.random.default_rng(5)
    ids = rng.choice(OCCUPIED, size=6)
    release = C.BlockRelease("b", tabulate_types(ids))
    truth = TYPES[ids]
    claims = [C.Claim((j,), (int(truth[0, j]),), int((truth[:, j] == truth[0, j]).sum()))
              for j in range(hh.N_COLUMNS)]
    got = verify_paper(release, claims, end=time.monotonic() - 1.0)
    assert got.tolist() == [-1] * len(claims)
    assert generate_paper(release, k=3, end=time.monotonic() - 1.0) == []
    # a limit too short to prove anything leaves claims unknown, never wrongly verified
    wrong = [C.Claim(c.columns, c.values, c.multiplicity + 1) for c in claims]
    got = verify_paper(release, wrong, end=time.monotonic() + 0.05)
    assert not (got == 1).any()


def test_verify_block_with_paper_formulation() -> None:
    vacant = np.flatnonzero(TYPES[:, hh.COL["vacancy"]] != 0)
    release = C.BlockRelease("b", tabulate_types(vacant[[0, 0, 3]]))
    paper = C.verify_block(release, C.ClaimsOptions(formulation="paper", k_solutions=5))
    fast = C.verify_block(release, C.ClaimsOptions(k_solutions=5))
    assert paper.status == fast.status == "ok"
    assert paper.verified == fast.verified and len(paper.verified) == 2
