"""Targeted record swapping (issue 30, item 3): ``census/swapping.py`` against sdcMicro's
``recordSwap`` as its vignette and tests document it, ``census swap`` on the bundled persons,
and properties on small random populations (hypothesis)."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SLICE, CliRunner, assert_one_line_error, json_of, statrecon
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.census.persons.cells import RACES
from statrecon.census.persons.swap import PersonsSwap, swap_persons
from statrecon.census.swapping import PARTNER, SwapPlan, SwapResult, record_swap, target_pairs
from statrecon.errors import StatreconError

# ------------------------------------------------------------------- a population to swap


def households(n: int, seed: int) -> pd.DataFrame:
    """``n`` households laid out as sdcMicro's ``createDat`` lays them out (its vignette's
    data): three nuts1 regions, five nuts2 in each, fifteen nuts3 in each of those; household
    size 1-6, type 1-10, income 1-10; per person gender 1-2, age group 1-7, nationality 1-5;
    all uniform."""
    rng = np.random.default_rng(seed)
    units = pd.DataFrame({"hid": np.arange(1, n + 1), "nuts1": rng.integers(1, 4, n),
                          "nuts2": rng.integers(1, 6, n), "nuts3": rng.integers(1, 16, n),
                          "hsize": rng.integers(1, 7, n), "htype": rng.integers(1, 11, n),
                          "hincome": rng.integers(1, 11, n)})
    units["nuts2"] += 10 * units["nuts1"]
    units["nuts3"] += 100 * units["nuts2"]
    persons = units.loc[units.index.repeat(units["hsize"])].reset_index(drop=True)
    m = len(persons)
    persons["gender"] = rng.integers(1, 3, m)
    persons["ageGroup"] = rng.integers(1, 8, m)
    persons["national"] = rng.integers(1, 6, m)
    return persons


@pytest.fixture(scope="module")
def vignette() -> pd.DataFrame:
    return households(100_000, seed=2021)


@pytest.fixture(scope="module")
def ten_thousand() -> pd.DataFrame:
    return households(10_000, seed=2021)


# ------------------------------------------------------- what every swap must satisfy


def _heads(frame: pd.DataFrame, plan: SwapPlan) -> pd.DataFrame:
    """Each unit's first record (units in order of first appearance)."""
    if plan.unit is None:
        return frame.reset_index(drop=True)
    return frame.drop_duplicates(plan.unit).reset_index(drop=True)


def _keys(heads: pd.DataFrame, plan: SwapPlan) -> list[list[tuple[object, ...]]]:
    """Every unit's key under each similarity profile (``within`` included)."""
    within = [plan.within] if plan.within else []
    return [list(heads[[*within, *p]].itertuples(index=False, name=None)) for p in plan.similar]


def _all_areas(heads: pd.DataFrame, plan: SwapPlan) -> list[list[tuple[object, ...]]]:
    """Every unit's area at each level."""
    return [list(heads[list(plan.hierarchy[:h + 1])].itertuples(index=False, name=None))
            for h in range(len(plan.hierarchy))]


def check_swap(frame: pd.DataFrame, plan: SwapPlan, result: SwapResult) -> None:
    """The method's promises, checked from the frames alone."""
    swapped, units, moved = result.frame, result.units, list(plan.moved)
    heads, new = _heads(frame, plan), _heads(swapped, plan)
    n = len(heads)
    assert len(units) == n and result.target_pairs == target_pairs(plan.rate, n)
    # attributes never change, rows never move
    pd.testing.assert_frame_equal(swapped.drop(columns=moved), frame.drop(columns=moved))
    # a unit's records move together
    if plan.unit is not None:
        assert (swapped.groupby(plan.unit)[moved].nunique() <= 1).all().all()
    # pairs: symmetric, the two geographies exchanged, across the stated level, same profile
    label = {u: i for i, u in enumerate(units["unit"])}
    keys, areas = _keys(heads, plan), _all_areas(heads, plan)
    old_geo = list(heads[moved].itertuples(index=False, name=None))
    new_geo = list(new[moved].itertuples(index=False, name=None))
    for i, row in enumerate(units.itertuples()):
        if not row.swapped:
            assert old_geo[i] == new_geo[i]
            continue
        j = label[row.partner]
        assert units["partner"].iloc[j] == row.unit and j != i
        assert new_geo[i] == old_geo[j]
        h = plan.level_names.index(row.level)
        assert areas[h][i] != areas[h][j]
        assert keys[row.profile - 1][i] == keys[row.profile - 1][j]
    assert int(units["swapped"].sum()) == 2 * result.pairs
    assert ((units["reason"] == PARTNER).sum()) == result.pairs
    # every area keeps its units by the variables every profile shares (and its within area
    # every record)
    common = [c for c in plan.similar[0] if all(c in p for p in plan.similar)]
    for h in range(len(plan.hierarchy)):
        by = [*plan.hierarchy[:h + 1], *common]
        assert heads.value_counts(by).sort_index().equals(new.value_counts(by).sort_index())
    if plan.within:
        rest = [c for c in frame.columns if c not in moved]
        assert (frame.groupby(plan.within)[rest].value_counts().sort_index()
                .equals(swapped.groupby(plan.within)[rest].value_counts().sort_index()))
    _check_risk(frame, plan, result, heads)
    _check_enough(plan, result, areas, keys)


def _check_risk(frame: pd.DataFrame, plan: SwapPlan, result: SwapResult,
                heads: pd.DataFrame) -> None:
    """Risk = 1 / the count of a record's risk combination in its area, a unit's the largest
    of its records'; at risk where a count is below k, at the highest such level."""
    unit_of = (frame[plan.unit] if plan.unit else pd.Series(range(len(frame)),
                                                            index=frame.index))
    first = list(heads[plan.unit]) if plan.unit else list(range(len(frame)))
    must: list[str | None] = [None] * len(first)
    for h, name in enumerate(plan.level_names):
        by = [*plan.hierarchy[:h + 1], *plan.risk]
        counts = frame.groupby(by)[by[0]].transform("size")
        smallest = counts.groupby(unit_of.to_numpy()).min().loc[first].to_numpy()
        assert np.allclose(result.units[f"risk_{name}"].to_numpy(), 1 / smallest)
        for i, c in enumerate(smallest):
            if must[i] is None and c < plan.k:
                must[i] = name
    assert list(result.units["risk_level"]) == must


def _check_enough(plan: SwapPlan, result: SwapResult, areas: list[list[tuple[object, ...]]],
                  keys: list[list[tuple[object, ...]]]) -> None:
    """Short of the rate, or a unit at risk left in its area, only when no partner is left:
    no two unswapped units could still be paired."""
    units = result.units
    free = [i for i in range(len(units)) if not units["swapped"].iloc[i]]

    def could_pair(i: int, j: int, h: int) -> bool:
        return areas[h][i] != areas[h][j] and any(k[i] == k[j] for k in keys)

    lowest = len(plan.hierarchy) - 1
    if result.pairs < result.target_pairs:
        assert not any(could_pair(i, j, lowest) for i, j in combinations(free, 2))
    for i in np.flatnonzero(units["risk_level"].notna() & ~units["protected"]):
        h = plan.level_names.index(units["risk_level"].iloc[i])
        assert not any(could_pair(int(i), j, h) for j in free if j != i)


# ---------------------------------------------------------------- sdcMicro, as documented


def test_the_vignette_100000_households_k0_rate_5pc_swap_exactly_5000(
        vignette: pd.DataFrame) -> None:
    """sdcMicro's vignette: recordSwap on createDat(N=100000) with hierarchy nuts1, nuts2,
    similar hsize, risk variables hincome, ageGroup, gender, k_anonymity 0, swaprate 0.05
    swaps 5,000 households (2,500 swaps of two); a household's persons move with it."""
    plan = SwapPlan(hierarchy=("nuts1", "nuts2"), risk=("hincome", "ageGroup", "gender"),
                    rate=0.05, k=0, similar=(("hsize",),), unit="hid", seed=123456)
    result = record_swap(vignette, plan)
    geo = ["nuts1", "nuts2"]
    before = vignette.groupby("hid")[geo].first()
    after = result.frame.groupby("hid")[geo].first()
    assert int((before != after).any(axis=1).sum()) == 5000
    assert result.pairs == 2500 and result.pairs_by_level() == {"nuts1": 0, "nuts2": 2500}
    assert result.at_risk == 0
    # the swapped persons: every person of a swapped household, nothing else moved
    moved = (vignette[geo] != result.frame[geo]).any(axis=1)
    swapped_hids = set(result.units.loc[result.units["swapped"], "unit"])
    assert set(vignette.loc[moved, "hid"]) == swapped_hids
    assert moved.sum() == vignette["hid"].isin(swapped_hids).sum()
    # partners: same household size, geographies exchanged, in another nuts2
    pairs = result.units[result.units["swapped"]].set_index("unit")
    size = vignette.groupby("hid")["hsize"].first()
    assert (size.loc[pairs.index].to_numpy() == size.loc[pairs["partner"]].to_numpy()).all()
    assert (after.loc[pairs.index].to_numpy() == before.loc[pairs["partner"]].to_numpy()).all()
    # nuts3 is not in the hierarchy, so it stays (sdcMicro's carry_along would move it)
    assert result.frame["nuts3"].equals(vignette["nuts3"])


@pytest.mark.parametrize(("rate", "swapped"), [(0.05, 500), (0.1, 1000), (0.25, 2500)])
def test_sdcmicros_own_test_numbers_of_swapped_households(ten_thousand: pd.DataFrame,
                                                          rate: float, swapped: int) -> None:
    """sdcMicro's tests (test_recordSwap_outputs.R): 10,000 households, hierarchy nuts1 >
    nuts2 > nuts3, similar hsize, risk ageGroup and national, k_anonymity 1: exactly
    rate x 10,000 households swapped."""
    plan = SwapPlan(hierarchy=("nuts1", "nuts2", "nuts3"), risk=("ageGroup", "national"),
                    rate=rate, k=1, similar=(("hsize",),), unit="hid", seed=2021)
    result = record_swap(ten_thousand, plan)
    assert 2 * result.pairs == swapped and result.at_risk == 0
    assert result.pairs_by_level()["nuts3"] == result.pairs


def test_k_anonymity_swaps_every_household_at_risk_across_its_level(
        ten_thousand: pd.DataFrame) -> None:
    """sdcMicro's k-anonymity test: hierarchy nuts1 > nuts2, risk ageGroup, national, hsize;
    with k = 2 at least rate x households are swapped, k = 3 swaps at least as many, and a
    household at risk at a level is swapped out of its area there."""
    counts = []
    for k in (2, 3):
        plan = SwapPlan(hierarchy=("nuts1", "nuts2"), risk=("ageGroup", "national", "hsize"),
                        rate=0.05, k=k, similar=(("hsize",),), unit="hid", seed=2021)
        result = record_swap(ten_thousand, plan)
        units = result.units
        assert result.at_risk > 0 and result.protected == result.at_risk
        assert 2 * result.pairs >= 500
        counts.append(result.pairs)
        before = ten_thousand.groupby("hid")[["nuts1", "nuts2"]].first()
        after = result.frame.groupby("hid")[["nuts1", "nuts2"]].first()
        for level in ("nuts1", "nuts2"):
            hids = units.loc[units["risk_level"] == level, "unit"]
            cols = ["nuts1"] if level == "nuts1" else ["nuts1", "nuts2"]
            assert ((before.loc[hids, cols] != after.loc[hids, cols]).any(axis=1)).all()
        check_risk_only = units.iloc[:2000]
        assert check_risk_only["risk_nuts2"].ge(check_risk_only["risk_nuts1"]).all()
    assert counts[1] >= counts[0]


def test_risk_is_one_over_the_count_in_each_area_and_a_household_takes_its_largest() -> None:
    frame = pd.DataFrame({"hid": [1, 1, 2, 3, 3], "region": ["A", "A", "A", "B", "B"],
                          "district": ["A1", "A1", "A2", "B1", "B1"],
                          "x": ["a", "b", "a", "a", "c"]})
    plan = SwapPlan(hierarchy=("region", "district"), risk=("x",), rate=0, k=2, unit="hid")
    units = record_swap(frame, plan).units
    # region A: (a) twice, (b) once; district A1: a once, b once; A2: a once
    assert list(units["risk_region"]) == [1.0, 0.5, 1.0]
    assert list(units["risk_district"]) == [1.0, 1.0, 1.0]
    assert list(units["risk_level"]) == ["region", "district", "region"]
    # k = 0 and k = 1 mark none (a count is never below 1)
    for k in (0, 1):
        assert record_swap(frame, SwapPlan(hierarchy=plan.hierarchy, risk=("x",), rate=0,
                                           k=k, unit="hid")).at_risk == 0


def test_the_pairs_are_the_rate_rounded_to_the_nearest_pair() -> None:
    assert target_pairs(0.05, 100_000) == 2500
    assert target_pairs(0.05, 10) == 0  # 0.25 pairs
    assert target_pairs(0.1, 25) == 1  # 1.25
    assert target_pairs(0.2, 5) == 1  # 0.5: a half up
    assert target_pairs(1, 7) == 4  # 3.5
    assert target_pairs(0, 7) == 0


def test_seeded_and_reproducible(ten_thousand: pd.DataFrame) -> None:
    plan = SwapPlan(hierarchy=("nuts1", "nuts2"), risk=("ageGroup",), rate=0.1, k=0,
                    similar=(("hsize",),), unit="hid", seed=7)
    first, again = record_swap(ten_thousand, plan), record_swap(ten_thousand, plan)
    pd.testing.assert_frame_equal(first.frame, again.frame)
    pd.testing.assert_frame_equal(first.units, again.units)
    other = record_swap(ten_thousand, SwapPlan(**{**plan.__dict__, "seed": 8}))
    assert not other.units["swapped"].equals(first.units["swapped"])


def test_a_statement_of_a_tiny_rate_reads_back(
        swapped_slice: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    """JSON writes a rate of 0.00001 as 1e-05 (text, were it read as YAML 1.1): it reads back
    as the number census swap wrote."""
    from statrecon.census.persons.release import read_release

    out, _ = swapped_slice
    statement = json.loads(out.with_name("slice.swap.json").read_text(encoding="utf-8"))
    statement["swap_rate"] = 0.00001
    path = tmp_path / "tiny.swap.json"
    path.write_text(json.dumps(statement), encoding="utf-8")
    assert "1e-05" in path.read_text(encoding="utf-8")
    release = tmp_path / "r.parquet"
    run = statrecon("census", "tabulate", "--persons", out, "--out", release, "--tables", "P1",
                    "--swap-statement", path, "--quiet")
    assert run.returncode == 0, run.stderr
    swap = read_release(release).swap
    assert swap is not None and swap["swap_rate"] == 0.00001


@pytest.mark.parametrize(("change", "words"), [
    ({"rate": 1.5}, "swap rate must lie in [0, 1], got 1.5"),
    ({"rate": -0.1}, "got -0.1"),
    ({"rate": float("nan")}, "got nan"),
    ({"k": -1}, "k (the k-anonymity threshold) must be a whole number >= 0, got -1"),
    ({"risk": ("income",)}, "unknown column(s) income"),
    ({"similar": (("hsize", "rooms"),)}, "unknown column(s) rooms"),
    ({"unit": "household"}, "unknown column(s) household"),
    ({"hierarchy": ()}, "at least one geographic level"),
])
def test_bad_plans_are_refused_in_one_line(change: dict[str, object], words: str) -> None:
    frame = households(20, seed=1)
    plan = {"hierarchy": ("nuts1",), "risk": ("gender",), "rate": 0.1, "unit": "hid",
            "similar": (("hsize",),), **change}
    with pytest.raises(StatreconError) as refused:
        record_swap(frame, SwapPlan(**plan))  # type: ignore[arg-type]
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_household_in_two_areas_is_refused() -> None:
    frame = pd.DataFrame({"hid": [1, 1], "area": ["a", "b"], "x": [0, 0]})
    with pytest.raises(StatreconError, match="household 1: column area differs"):
        record_swap(frame, SwapPlan(hierarchy=("area",), risk=("x",), rate=1, unit="hid"))


# --------------------------------------------------------- properties on small populations


@st.composite
def populations(draw: st.DrawFn) -> tuple[pd.DataFrame, SwapPlan]:
    units = draw(st.integers(1, 24))
    grouped = draw(st.booleans())
    rows = []
    for u in range(units):
        region, district = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        s, t = draw(st.integers(0, 1)), draw(st.integers(0, 1))
        for _ in range(draw(st.integers(1, 3)) if grouped else 1):
            rows.append({"hid": f"h{u}", "region": region, "district": f"{region}.{district}",
                         "s": s, "t": t, "x": draw(st.integers(0, 2)),
                         "y": draw(st.integers(0, 1))})
    frame = pd.DataFrame(rows)
    nested = draw(st.booleans())
    plan = SwapPlan(hierarchy=("region", "district") if nested else ("district",),
                    within=None if nested else "region",
                    risk=draw(st.sampled_from([("x",), ("x", "y")])),
                    similar=draw(st.sampled_from([((),), (("s",),), (("s", "t"), ("s",))])),
                    rate=draw(st.floats(0, 1)), k=draw(st.integers(0, 3)),
                    unit="hid" if grouped else None, seed=draw(st.integers(0, 2**32 - 1)))
    return frame, plan


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(populations())
def test_swaps_keep_their_promises_on_random_populations(
        case: tuple[pd.DataFrame, SwapPlan]) -> None:
    frame, plan = case
    result = record_swap(frame, plan)
    check_swap(frame, plan, result)
    again = record_swap(frame, plan)
    pd.testing.assert_frame_equal(result.units, again.units)
    if plan.k == 0:
        assert result.pairs <= result.target_pairs


# ------------------------------------------------------------------ census swap, persons


@pytest.fixture(scope="module")
def swapped_slice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    folder = tmp_path_factory.mktemp("swap")
    out = folder / "slice.working.csv"
    run = statrecon("census", "swap", "--persons", SLICE, "--rate", "0.05", "--k", "3",
                    "--seed", "1", "--out", out, "--json")
    assert run.returncode == 0, run.stderr
    return out, json_of(run)


def _persons(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame["tract"] = frame["block_geoid"].str[:11]
    frame["adult"] = frame["age"].astype(int) >= 18
    return frame


def test_census_swap_keeps_tracts_and_each_blocks_persons_and_adults(
        swapped_slice: tuple[Path, dict[str, object]]) -> None:
    """Swaps within each tract, across blocks, partners of the same voting age (the default
    profile, household size and adults, for persons): every tract keeps every person as it
    was, every block its population and its persons aged 18 and over."""
    out, summary = swapped_slice
    before, after = _persons(SLICE), _persons(out)
    assert list(after.columns) == list(before.columns) and len(after) == len(before)
    moved = before["block_geoid"] != after["block_geoid"]
    assert int(moved.sum()) == summary["swapped_units"] == summary["swapped_persons"]
    pd.testing.assert_frame_equal(after.drop(columns="block_geoid"),
                                  before.drop(columns="block_geoid"))  # tract, attributes
    for by in (["block_geoid"], ["block_geoid", "adult"]):
        assert before.value_counts(by).sort_index().equals(after.value_counts(by).sort_index())
    assert summary["preserved"] == [
        "every tract keeps all its counts (and so every larger area)",
        "every block keeps its number of persons by household_size, adults"]


def test_census_swap_counts_the_rate_and_moves_everyone_at_risk(
        swapped_slice: tuple[Path, dict[str, object]]) -> None:
    out, summary = swapped_slice
    assert summary["units"] == 920 and summary["target_pairs"] == 23  # 920 x 0.05 / 2
    assert summary["pairs"] >= 23 and summary["swapped_units"] == 2 * summary["pairs"]
    # at risk: a person whose voting age, Hispanic origin and races are shared by fewer
    # than 3 persons of its block
    persons = _persons(SLICE)
    persons["voting_age"] = persons["adult"].map({True: "Y", False: "N"})
    by = ["block_geoid", "voting_age", "hispanic", *RACES]
    at_risk = persons.groupby(by)["row_id"].transform("size") < 3
    assert summary["at_risk"] == int(at_risk.sum()) > 0
    record = pd.read_csv(out.with_name("slice.swaps.working.csv"), dtype=str,
                         keep_default_na=False)
    # the record: every unit swapped or at risk (at risk and left in place: no partner)
    left = record[record["to_block"] == ""]
    assert (left["at_risk_in"] == "block").all()
    assert set(record["at_risk_in"]) <= {"block", ""}
    assert int((record["at_risk_in"] == "block").sum()) == summary["at_risk"]
    swapped = record[record["to_block"] != ""]
    assert len(swapped) == summary["swapped_units"]
    rows = persons.set_index(persons.index + 1)
    assert (rows.loc[swapped["row"].astype(int), "block_geoid"].to_numpy()
            == swapped["from_block"].to_numpy()).all()
    after = _persons(out).set_index(persons.index + 1)
    assert (after.loc[swapped["row"].astype(int), "block_geoid"].to_numpy()
            == swapped["to_block"].to_numpy()).all()
    unmoved = record[(record["at_risk_in"] == "block") & (record["protected"] != "True")]
    assert len(unmoved) == summary["at_risk"] - summary["at_risk_protected"]
    # ... because no partner was left: no unswapped person of its voting age in another
    # block of its tract
    still = persons.index.difference(swapped["row"].astype(int) - 1)
    for row in unmoved["row"].astype(int) - 1:
        mine = persons.loc[row]
        others = persons.loc[still]
        assert not ((others["tract"] == mine["tract"]) & (others["adult"] == mine["adult"])
                    & (others["block_geoid"] != mine["block_geoid"])).any()
    statement = json.loads(out.with_name("slice.swap.json").read_text(encoding="utf-8"))
    assert statement["swap_rate"] == 0.05 and "seed" not in statement


def test_the_swapped_file_tabulates_to_the_same_tract_tables(
        swapped_slice: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    """Through ``census tabulate``, as a release is published: every tract cell and every
    block's total population (P1) as the true file gives them; only block cells differ."""
    out, _ = swapped_slice
    tables = {}
    for name, persons in (("true", SLICE), ("swapped", out)):
        release = tmp_path / f"{name}.parquet"
        run = statrecon("census", "tabulate", "--persons", persons, "--out", release,
                        "--tables", "P1,P10,P12,PCT12", "--quiet")
        assert run.returncode == 0, run.stderr
        tables[name] = pd.read_parquet(release).set_index(["level", "geoid", "table", "cell"])
    true, swapped = tables["true"]["value"], tables["swapped"]["value"]
    assert true.index.equals(swapped.index)
    differs = true != swapped
    levels = true.index.get_level_values
    assert not differs[levels("level") == "tract"].any()
    assert not differs[levels("table") == "P1"].any()
    assert differs.any()  # the block tables do change


def test_the_release_states_the_swap_it_was_made_after(
        swapped_slice: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    """``census tabulate --swap-statement``: the release carries census swap's statement
    (read back, checked, from the release alone) and says so; without it, none."""
    from statrecon.census.persons.release import read_release

    out, _ = swapped_slice
    statement = out.with_name("slice.swap.json")
    release = tmp_path / "swapped.parquet"
    run = statrecon("census", "tabulate", "--persons", out, "--out", release, "--tables",
                    "P1,P12", "--swap-statement", statement, "--json", "--quiet")
    assert run.returncode == 0, run.stderr
    assert json_of(run)["swap"] == ("targeted record swapping of 5.0% of the persons, and "
                                    "every unit counted below 3 in its area")
    written = json.loads(statement.read_text(encoding="utf-8"))
    assert read_release(release).swap == written
    plain = tmp_path / "plain.parquet"
    assert statrecon("census", "tabulate", "--persons", out, "--out", plain, "--tables",
                     "P1", "--quiet").returncode == 0
    assert read_release(plain).swap is None


@pytest.mark.parametrize(("change", "words"), [
    ('"swap_rate": 0.05', '"swap_rate": 1.5'), ('"k_anonymity": 3', '"k_anonymity": -1'),
    ('"units": "persons"', '"units": "robots"'),
    ('"within": "tract"', '"within": "tract", "within": "block"'),
    ('"within": "tract"', '"within": "tract", "seed": 7'),
    ('"swap_rate": 0.05', '"swap_rate": NaN'),
    ('"levels": [', '"levels": ["planet", '),
])
def test_a_bad_swap_statement_is_one_line_naming_its_field(
        swapped_slice: tuple[Path, dict[str, object]], tmp_path: Path, run_cli: CliRunner,
        change: tuple[str, str], words: str) -> None:
    out, _ = swapped_slice
    text = json.dumps(json.loads(out.with_name("slice.swap.json").read_text(
        encoding="utf-8")))
    assert change in text
    bad = tmp_path / "bad.swap.json"
    bad.write_text(text.replace(change, words), encoding="utf-8")
    field = words.split('"')[1] if "seed" not in words else "not understood: 'seed'"
    if "NaN" in words:
        field = "NaN is not a JSON number"
    if "within" in words and "block" in words:
        field = "'within' is given twice"
    assert_one_line_error(run_cli("census", "tabulate", "--persons", out, "--out",
                                  tmp_path / "r.parquet", "--swap-statement", bad),
                          "bad.swap.json", field)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.swap.json"]


def test_census_swap_is_reproducible_with_its_seed(tmp_path: Path) -> None:
    written = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        out = tmp_path / f"{name}.working.csv"
        run = statrecon("census", "swap", "--persons", SLICE, "--rate", "0.2", "--k", "0",
                        "--seed", seed, "--out", out, "--quiet")
        assert run.returncode == 0, run.stderr
        written.append(out.read_bytes())
    assert written[0] == written[1] != written[2]


def test_households_of_a_column_move_together_and_blocks_keep_their_persons(
        tmp_path: Path) -> None:
    """--household: persons grouped by a column (here two or three persons of a block per
    household) move together; with household size among the similarity variables every block
    keeps its persons."""
    persons = pd.read_csv(SLICE, dtype=str, keep_default_na=False)
    persons["hh"] = persons["block_geoid"] + "-" + (
        persons.groupby("block_geoid").cumcount() // 3).astype(str)
    source = tmp_path / "households.csv"
    persons.to_csv(source, index=False)
    out = tmp_path / "hh.working.csv"
    run = statrecon("census", "swap", "--persons", source, "--household", "hh", "--rate",
                    "0.3", "--k", "0", "--seed", "3", "--out", out, "--json")
    assert run.returncode == 0, run.stderr
    summary = json_of(run)
    after = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert summary["unit"] == "households" and summary["pairs"] == summary["target_pairs"]
    assert (after.groupby("hh")["block_geoid"].nunique() == 1).all()
    moved = persons["block_geoid"] != after["block_geoid"]
    assert after.loc[moved, "hh"].nunique() == summary["swapped_units"]
    assert (persons.value_counts("block_geoid").sort_index()
            .equals(after.value_counts("block_geoid").sort_index()))


def test_swap_persons_across_states_moves_those_at_risk_in_their_state() -> None:
    """The pure function on a frame, anywhere (the slice's three tracts lie in three
    states): a person counted below k in its state leaves it; every block keeps its
    population and its persons of voting age, tracts do not keep theirs."""
    persons = pd.read_csv(SLICE, dtype=str, keep_default_na=False)
    options = PersonsSwap(rate=0.1, k=2, levels=("state", "block"), within=None, seed=4)
    result = swap_persons(persons, options)
    units = result.units
    assert result.pairs >= result.target_pairs == 46
    assert units["protected"].sum() == result.at_risk > 0
    state_risk = units.index[units["risk_level"] == "state"]
    before = persons["block_geoid"].str[:2]
    after = result.frame["block_geoid"].str[:2]
    assert len(state_risk) and (before.iloc[state_risk] != after.iloc[state_risk]).all()
    adult = persons["age"].astype(int) >= 18
    for frame in (persons, result.frame):
        frame["adult"] = adult
    by = ["block_geoid", "adult"]
    assert persons.value_counts(by).sort_index().equals(
        result.frame.value_counts(by).sort_index())
    assert (persons["block_geoid"].str[:11] != result.frame["block_geoid"].str[:11]).any()


@pytest.mark.parametrize(("args", "words"), [
    (["--rate", "1.5"], "the swap rate must lie in [0, 1], got 1.5"),
    (["--rate", "-0.05"], "got -0.05"),
    (["--k", "-1"], "must be a whole number >= 0, got -1"),
    (["--risk", "sex,income"], "unknown column(s) income"),
    (["--similar", "household_size,rooms"], "unknown column(s) rooms"),
    (["--household", "hid"], "unknown column(s) hid"),
    (["--levels", "block,tract", "--within", "none"], "from the highest down"),
    (["--levels", "district"], "unknown geographic level 'district'"),
    (["--levels", "tract,block"], "must lie below tract"),
    (["--household", "sex"], "household male: its persons live in blocks"),
    (["--out-name", "swapped.csv"], "name it swapped.working.csv"),
    (["--out-name", "swapped.working.txt"], "write a .csv or .parquet file"),
])
def test_bad_input_one_line_exit_1_nothing_written(run_cli: CliRunner, tmp_path: Path,
                                                   args: list[str], words: str) -> None:
    name = "swapped.working.csv"
    if args[0] == "--out-name":
        name, args = args[1], []
    argv = ["census", "swap", "--persons", str(SLICE), "--out", str(tmp_path / name),
            "--seed", "1", *(["--rate", "0.05"] if "--rate" not in args else []), *args]
    assert_one_line_error(run_cli(*argv), words)
    assert list(tmp_path.iterdir()) == []


def test_a_bad_persons_file_names_its_line(run_cli: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "p.csv"
    text = SLICE.read_text(encoding="utf-8").splitlines()
    text[3] = text[3].replace(",male,", ",robot,")
    bad.write_text("\n".join(text) + "\n", encoding="utf-8")
    out = tmp_path / "o.working.csv"
    assert_one_line_error(run_cli("census", "swap", "--persons", bad, "--rate", "0.1",
                                  "--out", out), "line 4", "sex must be male or female")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]


def test_the_output_never_replaces_the_persons_file_and_names_stay_plain(
        run_cli: CliRunner, tmp_path: Path) -> None:
    source = tmp_path / "p.working.csv"
    source.write_bytes(SLICE.read_bytes())
    assert_one_line_error(run_cli("census", "swap", "--persons", source, "--rate", "0.1",
                                  "--out", source), "never replaces an input")
    code, out, err = run_cli("census", "swap", "--persons", SLICE, "--rate", "0.1", "--risk",
                             "sex,a\x1b[31mb", "--out", tmp_path / "o.working.csv")
    assert code == 1 and "\x1b" not in out + err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.working.csv"]
    assert source.read_bytes() == SLICE.read_bytes()
