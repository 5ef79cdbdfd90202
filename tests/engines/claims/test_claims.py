"""Generate-then-Verify claims engine: brute-force oracle, soundness, tabulation, bad input."""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.census.households import schema as hh
from statrecon.census.households import tables as hht
from statrecon.census.households.tabulate import tabulate_sql, tabulate_types
from statrecon.engines.claims import (
    N_COLS,
    BlockRelease,
    Claim,
    ClaimsOptions,
    binomial_baseline,
    compile_block,
    verify_block,
)
from statrecon.engines.claims.verify import _contains_some
from statrecon.errors import InconsistentReleaseError

TYPES = hh.unit_types()
OCCUPIED = np.flatnonzero(TYPES[:, hh.COL["vacancy"]] == 0)


def tiny_block(seed: int, units: int) -> np.ndarray:
    """Unit type ids of a small block whose units look alike (so few datasets fit)."""
    rng = np.random.default_rng(seed)
    base = TYPES[rng.choice(OCCUPIED)]
    near = np.flatnonzero((base != TYPES).sum(axis=1) <= 2)
    ids = rng.choice(near, size=units)
    if rng.random() < 0.3:  # sometimes a vacant unit
        ids[-1] = len(TYPES) - 1 - rng.integers(0, 7)
    return ids


def consistent_datasets(release: BlockRelease) -> list[np.ndarray] | None:
    """Every multiset of unit types whose tables equal the release (None: too many)."""
    allowed = compile_block(release).type_ids  # types in no published zero cell
    n = release.units
    if math.comb(len(allowed) + n - 1, n) > 30_000:
        return None
    single = np.array([tabulate_types(np.array([t])) for t in allowed])  # types x cells
    combos = np.array(list(itertools.combinations_with_replacement(range(len(allowed)), n)))
    match = (single[combos].sum(axis=1) == release.values).all(axis=1)
    return [allowed[c] for c in combos[match]]


@functools.cache
def _projections(t: int) -> tuple[tuple, ...]:
    """Every (columns, values) a unit of type t matches, over its non-NA columns."""
    row = TYPES[t]
    cols = [j for j in range(N_COLS) if row[j] != hh.NA_CODE]
    return tuple((sub, tuple(int(row[j]) for j in sub))
                 for r in range(1, len(cols) + 1) for sub in itertools.combinations(cols, r))


def oracle_claims(datasets: list[np.ndarray]) -> tuple[set[tuple], set[tuple]]:
    """(claims true in every dataset, assignments always present but of varying count)."""
    def claims_of(ids: np.ndarray) -> Counter[tuple]:
        out: Counter[tuple] = Counter()
        for t in ids:
            out.update(_projections(int(t)))
        return out

    all_claims = [claims_of(d) for d in datasets]
    keys = set(all_claims[0])
    for c in all_claims[1:]:
        keys &= set(c)
    verified, negative = set(), set()
    for key in keys:
        counts = {c[key] for c in all_claims}
        if len(counts) == 1:
            verified.add((*key, counts.pop()))
        else:
            negative.add(key)
    return verified, negative


@settings(max_examples=18, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), units=st.integers(2, 4))
def test_verified_claims_equal_brute_force_oracle(seed: int, units: int) -> None:
    ids = tiny_block(seed, units)
    release = BlockRelease("b", tabulate_types(ids))
    datasets = consistent_datasets(release)
    if datasets is None:
        return
    assert any(sorted(d.tolist()) == sorted(ids.tolist()) for d in datasets)
    want_verified, want_negative = oracle_claims(datasets)
    got = verify_block(release, ClaimsOptions(k_solutions=10, seed=seed))
    assert got.status == "ok"
    assert {(c.columns, c.values, c.multiplicity) for c in got.verified} == want_verified
    assert {(c.columns, c.values) for c in got.negative} == want_negative
    assert got.reconstructed == (len(datasets) == 1)


def test_verified_claims_hold_in_the_true_block_and_generation_is_diverse() -> None:
    rng = np.random.default_rng(3)
    ids = rng.choice(OCCUPIED, size=12)
    release = BlockRelease("b", tabulate_types(ids))
    got = verify_block(release, ClaimsOptions(k_solutions=30))
    truth = TYPES[ids]
    assert got.status == "ok" and got.verified
    for claim in got.verified:
        assert int(claim.matches(truth).sum()) == claim.multiplicity
    for claim in got.negative:
        assert int(claim.matches(truth).sum()) >= 1
    assert got.solutions > 1  # random units of 12 types are never pinned down
    # trivial claims are read off a cell: H1 (all units) is one
    units_claims = [c for c, t in zip(got.verified, got.trivial, strict=True)
                    if t and c.columns == (hh.COL["vacancy"],)]
    assert units_claims


def test_time_limit_gives_unknown_never_verified() -> None:
    rng = np.random.default_rng(5)
    release = BlockRelease("b", tabulate_types(rng.choice(OCCUPIED, size=15)))
    got = verify_block(release, ClaimsOptions(time_limit=1e-6))
    assert got.status == "unknown"
    assert got.verified == [] or got.unknown == 0


def test_cells_sql_and_chains_agree() -> None:
    """DuckDB evaluating each cell's SQL gives what the engine's cell chains give."""
    rng = np.random.default_rng(0)
    ids = rng.choice(len(TYPES), 300)
    blocks = np.array([f"{i % 5:015d}" for i in range(300)])
    units = pd.DataFrame([hh.decode(TYPES[i]) for i in ids])
    units.insert(0, "block", blocks)
    by_sql = tabulate_sql(units)
    for b in sorted(set(blocks)):
        assert np.array_equal(by_sql[b], tabulate_types(ids[blocks == b]))


def test_least_over_deepest_is_the_least_over_each_tables_deepest_cell() -> None:
    """Per unit type, the least value over its deepest cell in each table (-1: none), read
    one type at a time; ``compile_block``'s pruning of published zeros and the types' upper
    bounds rest on it (it folds each cell's ancestors in first)."""
    index = hht.table_index()
    rng = np.random.default_rng(3)
    held_by = [np.flatnonzero(index.deepest[:, j] >= 0) for j in range(index.deepest.shape[1])]
    types = np.unique(np.concatenate([rng.choice(h, 5) for h in held_by]))  # every table's
    for per_cell in (rng.integers(0, 5, len(index.cells)), rng.integers(-3, 10**12,
                                                                       len(index.cells))):
        got = index.least_over_deepest(per_cell)
        for t in types.tolist():
            held = [int(per_cell[d]) for d in index.deepest[t].tolist() if d >= 0]
            assert got[t] == (min(held) if held else np.iinfo(np.int64).max)


def test_tables_come_from_the_descriptors() -> None:
    tables = {t.name: t for t in hht.household_tables()}
    assert {"P16", "P16V", "H4O", "H12I", "H13A", "H14", "H15"} <= set(tables)
    assert len(tables["H14"].cells) == 69  # 2010 H18: tenure by type by age of householder
    assert len(tables["P21"].cells) == 19  # 2010 P20 without the ages of the children
    h14 = {c.cell: c for c in tables["H14"].cells}
    assert h14["H14_005"].pattern() == {
        "vacancy": frozenset({"occupied"}),
        "tenure": frozenset({"owned_mortgage", "owned_free"}),
        "hh_type": frozenset({"married"}), "age": frozenset({"15-24", "25-34"})}
    assert "Owner occupied > Family households > Husband-wife family" in h14["H14_005"].title
    with pytest.raises(ValueError, match="unknown SF1 cell title"):
        hht.phrase("Householder who owns a boat")


def test_rules_forbid_and_name() -> None:
    alone = {"tenure": "rented", "vacancy": "occupied", "size": "2",
             "hh_type": "nonfamily_male_alone", "hh_type_detail": "male_alone",
             "under18": "no", "over65": "no", "hispanic": "no", "age": "25-34",
             "race": "white"}
    rule = hh.broken_rule(alone)
    assert rule is not None and "size 1" in rule.message
    assert hh.broken_rule({**alone, "size": "1"}) is None
    vacant = dict.fromkeys(hh.COLUMN_NAMES, hh.NA) | {"vacancy": "for_sale"}
    assert hh.broken_rule(vacant) is None
    assert hh.broken_rule(vacant | {"tenure": "rented"}) is not None
    # every enumerated type is coherent, and nothing coherent is missing
    rng = np.random.default_rng(1)
    codes = TYPES[rng.choice(len(TYPES), 200)]
    assert all(hh.broken_rule(hh.decode(c)) is None for c in codes)
    sizes = [len(c.values) for c in hh.COLUMNS]
    product = np.stack([rng.integers(0, n, 3000) for n in sizes], axis=1).astype(np.uint8)
    product[:, hh.COL["vacancy"]] = 0
    coherent = np.array([hh.broken_rule(hh.decode(c)) is None for c in product])
    assert coherent.any() and not coherent.all()
    assert np.array_equal(hh.type_index(product) >= 0, coherent)


def test_inconsistent_tables_name_the_cells() -> None:
    ids = tiny_block(1, 3)
    values = tabulate_types(ids)
    h13 = [i for i, c in enumerate(hht.table_index().cells) if c.table == "H13"
           and c.depth == 2 and values[i] == 0]
    values = values.copy()
    values[h13[0]] = 1  # a householder age nobody in H13's iterations or H14 has
    with pytest.raises(InconsistentReleaseError, match=r"contradict|no set of housing"):
        verify_block(BlockRelease("b", values), ClaimsOptions(k_solutions=2))


def test_binomial_baseline() -> None:
    assert binomial_baseline(10, 1, 0.1) == pytest.approx(10 * 0.1 * 0.9 ** 9)
    assert binomial_baseline(5, 0, 0.0) == 1.0
    assert sum(binomial_baseline(7, m, 0.3) for m in range(8)) == pytest.approx(1.0)


def test_claim_decoding_round_trip() -> None:
    claim = Claim((0, 8), (2, 3), 1)
    assert claim.assignment() == {"tenure": "rented", "age": "45-54"}


def test_block_release_agrees_with_the_general_exact_engine(tmp_path) -> None:
    """The block's cells as SQL statistics plus the rules as constraints, solved by the
    general record engine, give exactly the datasets the brute-force oracle finds."""
    import yaml
    from conftest import json_of, statrecon

    from statrecon.census.households.tabulate import block_release_document

    ids = np.array([OCCUPIED[100], OCCUPIED[100]])
    release = BlockRelease("b", tabulate_types(ids))
    path = tmp_path / "block.yaml"
    path.write_text(yaml.safe_dump(block_release_document("b", release.values)))
    out = statrecon("reconstruct", path, "--json", "--all")
    assert out.returncode == 0, out.stderr
    general = json_of(out)
    assert general["complete"] is True
    codes = {hh.pack(np.array([[hh.COLUMNS[j].code(row[c.name])
                                for j, c in enumerate(hh.COLUMNS)]], dtype=np.uint8))[0]
             for sol in general["solutions"] for row in sol}
    solutions = sorted(sorted(hh.type_index(np.array(
        [[hh.COLUMNS[j].code(row[c.name]) for j, c in enumerate(hh.COLUMNS)] for row in sol],
        dtype=np.uint8)).tolist()) for sol in general["solutions"])
    oracle = consistent_datasets(release)
    assert oracle is not None and len(codes) > 1
    assert solutions == sorted(sorted(d.tolist()) for d in oracle)


def test_contradiction_only_the_solver_sees_names_a_small_set() -> None:
    values = tabulate_types(tiny_block(2, 3)).copy()
    values[hht.cell_position("H1_001")] += 1  # one more unit than H3's total counts
    with pytest.raises(InconsistentReleaseError) as err:
        verify_block(BlockRelease("b", values), ClaimsOptions(k_solutions=2))
    message = str(err.value)
    assert "H1_001" in message  # the changed cell is in every conflicting set
    assert 2 <= message.count(" = ") <= 4


@settings(max_examples=60, deadline=None)
@given(members=st.lists(st.lists(st.booleans(), min_size=6, max_size=6), max_size=8),
       subsets=st.lists(st.lists(st.booleans(), min_size=6, max_size=6), max_size=8))
def test_lattice_inclusion_matches_brute_force(members: list[list[bool]],
                                               subsets: list[list[bool]]) -> None:
    """A question is settled by the lattice iff some non-empty known set lies inside it."""
    q = np.array(members, dtype=bool).reshape(len(members), 6)
    v = np.array(subsets, dtype=bool).reshape(len(subsets), 6)
    want = [any(s.any() and not (s & ~row).any() for s in v) for row in q]
    assert _contains_some(q, v).tolist() == want


def test_negative_claims_settled_by_the_lattice_equal_the_oracle(monkeypatch) -> None:
    """Blocks where the claim lattice (not a solve) proves some "at least one" questions:
    the negative claims are still exactly the brute-force oracle's."""
    from statrecon.engines.claims import verify as claims_verify

    real = claims_verify._contains_some
    settled: list[int] = []

    def counting(members: np.ndarray, subsets: np.ndarray) -> np.ndarray:
        out = real(members, subsets)
        settled.append(int(out.sum()))
        return out

    monkeypatch.setattr(claims_verify, "_contains_some", counting)
    for seed in (9, 11):
        settled.clear()
        release = BlockRelease("b", tabulate_types(tiny_block(seed, 3)))
        datasets = consistent_datasets(release)
        assert datasets is not None
        _, want_negative = oracle_claims(datasets)
        got = verify_block(release, ClaimsOptions(k_solutions=10, seed=seed))
        assert sum(settled) >= 1  # the lattice did prove something here
        assert {(c.columns, c.values) for c in got.negative} == want_negative
