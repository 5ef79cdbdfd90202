"""The paper's one-hot integer programme (claims_paper): brute-force oracle, agreement with the
default formulation, exhaustive generation, and time limits."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_claims import consistent_datasets, tiny_block

from statrecon.census import households as hh
from statrecon.census.household_release import tabulate_types
from statrecon.engines import claims as C
from statrecon.engines.claims_paper import generate_paper, one_hot, verify_paper

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
    claims = [C.decode_claim(int(c)) for c in C.solution_claims(m, x)]
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
        sols = C.generate_solutions(m, k, seed=seed)
        cand = C.solution_claims(m, sols[0])
        for x in sols[1:]:
            cand = np.intersect1d(cand, C.solution_claims(m, x), assume_unique=True)
        claims = [C.decode_claim(int(c)) for c in cand]
        assert len(claims) == fast.candidates
        rng = np.random.default_rng(seed)
        is_ver = np.array([(c.columns, c.values, c.multiplicity) in verified for c in claims])
        pick = np.concatenate([rng.permutation(np.flatnonzero(is_ver))[:5],
                               rng.permutation(np.flatnonzero(~is_ver))[:5]])
        got = verify_paper(release, [claims[i] for i in pick])
        assert got.tolist() == [1 if is_ver[i] else 0 for i in pick]


def test_time_limit_in_the_past_gives_unknown() -> None:
    rng = np.random.default_rng(5)
    ids = rng.choice(OCCUPIED, size=6)
    release = C.BlockRelease("b", tabulate_types(ids))
    truth = TYPES[ids]
    claims = [C.Claim((j,), (int(truth[0, j]),), int((truth[:, j] == truth[0, j]).sum()))
              for j in range(hh.N_COLUMNS)]
    got = verify_paper(release, claims, end=time.perf_counter() - 1.0)
    assert got.tolist() == [-1] * len(claims)
    assert generate_paper(release, k=3, end=time.perf_counter() - 1.0) == []
    # a limit too short to prove anything leaves claims unknown, never wrongly verified
    wrong = [C.Claim(c.columns, c.values, c.multiplicity + 1) for c in claims]
    got = verify_paper(release, wrong, end=time.perf_counter() + 0.05)
    assert not (got == 1).any()


def test_verify_block_with_paper_formulation() -> None:
    vacant = np.flatnonzero(TYPES[:, hh.COL["vacancy"]] != 0)
    release = C.BlockRelease("b", tabulate_types(vacant[[0, 0, 3]]))
    paper = C.verify_block(release, C.ClaimsOptions(formulation="paper", k_solutions=5))
    fast = C.verify_block(release, C.ClaimsOptions(k_solutions=5))
    assert paper.status == fast.status == "ok"
    assert paper.verified == fast.verified and len(paper.verified) == 2
