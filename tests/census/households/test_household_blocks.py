"""Synthetic household blocks and the households CSV format: coherence, shares, files, CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from statrecon.census.households import files as hf
from statrecon.census.households import schema as hh
from statrecon.census.households import synthetic as hb
from statrecon.errors import StatreconError

COLUMNS = list(hf.OUTPUT_COLUMNS)


@pytest.fixture(scope="module")
def small() -> hb.GeneratedBlocks:
    return hb.generate_blocks(12, 7)


@pytest.fixture(scope="module")
def big() -> hb.GeneratedBlocks:
    return hb.generate_blocks(300, 2)  # about 200,000 housing units


def test_same_seed_same_output_other_seed_differs(small: hb.GeneratedBlocks) -> None:
    again = hb.generate_blocks(12, 7)
    pdt.assert_frame_equal(small.targets, again.targets)
    pdt.assert_frame_equal(small.population, again.population)
    other = hb.generate_blocks(12, 8)
    assert not small.population.equals(other.population)
    assert small.target_blocks != other.target_blocks


def test_every_unit_coherent_and_exactly_n_targets(small: hb.GeneratedBlocks) -> None:
    for frame in (small.targets, small.population):
        assert list(frame.columns) == COLUMNS
        assert all(pd.api.types.is_string_dtype(frame[c]) for c in COLUMNS)
        assert (hh.type_index(hf.encode(frame)) >= 0).all()
    rows = small.population.sample(200, random_state=0)
    assert all(hh.broken_rule(r) is None for r in rows[list(hh.COLUMN_NAMES)]
               .to_dict("records"))
    sizes = small.targets.groupby("block").size()
    assert len(sizes) == 12 and len(small.target_blocks) == 12
    assert sizes.between(hb.MIN_TARGET_UNITS, hb.MAX_TARGET_UNITS).all()
    # one target per tract; the tracts are all in the population file
    assert small.targets.groupby("tract")["block"].nunique().eq(1).all()
    assert set(small.population["tract"]) == set(small.targets["tract"])
    vacant = small.population[small.population["vacancy"] != "occupied"]
    assert len(vacant) and (vacant[list(hh.HOUSEHOLD_COLUMNS)] == hh.NA).all().all()


def test_targets_are_contained_in_the_population(small: hb.GeneratedBlocks) -> None:
    inside = small.population[small.population["block"].isin(small.target_blocks)]
    pdt.assert_frame_equal(inside.reset_index(drop=True), small.targets)
    blocks_per_tract = small.population.groupby("tract")["block"].nunique()
    assert blocks_per_tract.between(*hb.BLOCKS_PER_TRACT).all()


def test_block_ids_are_geoids(small: hb.GeneratedBlocks) -> None:
    pop = small.population
    assert pop["block"].str.fullmatch(r"\d{15}").all()
    assert (pop["tract"] == pop["block"].str[:11]).all()
    assert (pop["state"] == pop["block"].str[:2]).all()
    assert set(pop["state"]) == {s for s, _, _ in hb.STATES}
    counties = {s + c for s, c, _ in hb.STATES}
    assert set(pop["block"].str[:5]) <= counties


def test_block_sizes_skewed_with_median_about_ten(big: hb.GeneratedBlocks) -> None:
    sizes = big.population.groupby("block").size()
    assert len(sizes) > 9000
    assert 8 <= sizes.median() <= 12
    assert sizes.mean() > 1.4 * sizes.median()  # right-skewed, as real blocks are
    assert sizes.max() <= hf.MAX_BLOCK_UNITS
    targets = big.targets.groupby("block").size()
    assert 7 <= targets.median() <= 13


def test_national_2010_shares_roughly_respected(big: hb.GeneratedBlocks) -> None:
    pop = big.population
    occ = pop[pop["vacancy"] == "occupied"]
    assert abs((pop["vacancy"] != "occupied").mean() - 0.114) < 0.03
    assert abs(occ["tenure"].str.startswith("owned").mean() - 0.651) < 0.05
    assert abs(occ["hh_type"].isin(hh.ALONE).mean() - 0.267) < 0.03
    assert abs((occ["hh_type"] == "married").mean() - 0.484) < 0.04
    assert abs((occ["under18"] == "yes").mean() - 0.334) < 0.04
    assert abs((occ["over65"] == "yes").mean() - 0.249) < 0.04
    assert abs((occ["race"] == "white").mean() - 0.775) < 0.07
    assert abs((occ["hispanic"] == "yes").mean() - 0.116) < 0.05
    seasonal = (pop["vacancy"] == "seasonal").sum() / (pop["vacancy"] != "occupied").sum()
    assert abs(seasonal - 0.31) < 0.08


def test_blocks_are_more_homogeneous_than_tracts(big: hb.GeneratedBlocks) -> None:
    occ = big.population[big.population["vacancy"] == "occupied"]
    owner = occ["tenure"].str.startswith("owned")
    by_block = owner.groupby(occ["block"]).mean()
    by_tract = owner.groupby(occ["tract"]).mean()
    by_state = owner.groupby(occ["state"]).mean()
    assert by_block.std() > by_tract.std() > by_state.std()


def test_bad_arguments() -> None:
    with pytest.raises(StatreconError, match="between 1 and"):
        hb.generate_blocks(0, 1)
    with pytest.raises(StatreconError, match="seed"):
        hb.generate_blocks(3, -1)


# ------------------------------------------------------------------------- files


def test_csv_round_trip(small: hb.GeneratedBlocks, tmp_path: Path) -> None:
    path = tmp_path / "units.csv"
    hf.write_households_csv(small.population, path)
    back = hf.read_households(path)
    pdt.assert_frame_equal(back, small.population)
    assert np.array_equal(hf.encode(back), hf.encode(small.population))
    assert hf.encode(back).dtype == np.uint8 and hf.encode(back).shape == (len(back), 10)


def test_read_derives_tract_and_state_and_skips_blank_lines(small: hb.GeneratedBlocks,
                                                            tmp_path: Path) -> None:
    rows = small.targets.head(3)
    path = tmp_path / "units.csv"
    text = rows.drop(columns=["tract", "state"]).to_csv(index=False, lineterminator="\n")
    lines = text.splitlines()
    path.write_text("\n".join([lines[0], lines[1], "", lines[2], lines[3]]) + "\n")
    pdt.assert_frame_equal(hf.read_households(path), rows.reset_index(drop=True))


def write_rows(path: Path, rows: list[dict[str, str]], header: list[str] | None = None) -> Path:
    header = header or COLUMNS
    path.write_text("\n".join([",".join(header)]
                              + [",".join(r.get(c, "") for c in header) for r in rows]) + "\n")
    return path


GOOD = {"block": "010030150001000", "tract": "01003015000", "state": "01",
        "tenure": "rented", "vacancy": "occupied", "size": "1",
        "hh_type": "nonfamily_female_alone", "hh_type_detail": "female_alone",
        "under18": "no", "over65": "no", "hispanic": "no", "age": "25-34", "race": "white"}
VACANT = {**dict.fromkeys(hh.HOUSEHOLD_COLUMNS, hh.NA), "vacancy": "for_rent",
          "block": GOOD["block"], "tract": GOOD["tract"], "state": GOOD["state"]}


def test_read_errors_name_file_and_line(tmp_path: Path) -> None:
    def fails(rows: list[dict[str, str]], *parts: str, header: list[str] | None = None) -> None:
        path = write_rows(tmp_path / "units.csv", rows, header)
        with pytest.raises(StatreconError) as err:
            hf.read_households(path)
        for part in (str(path), *parts):
            assert part in str(err.value), str(err.value)

    five = [GOOD, VACANT, GOOD, GOOD, VACANT]
    fails([*five, {**GOOD, "size": "2"}],
          "line 7 breaks a structural rule: a householder living alone has household size 1")
    fails([*five, {**GOOD, "race": "purple"}, {**GOOD, "race": "x"}],
          "line 7: unknown race value 'purple'", "white, black", "two_or_more, NA",
          "(1 more such rows)")
    fails([GOOD, {**GOOD, "vacancy": hh.NA}], "line 3: unknown vacancy value 'NA'")
    fails([GOOD], "line 1: missing column(s) age", header=[c for c in COLUMNS if c != "age"])
    fails([GOOD, {**GOOD, "block": "1234"}], "line 3: block id '1234' is not 15 digits")
    fails([GOOD, {**GOOD, "tract": "01003015001"}], "line 3: tract '01003015001' disagrees")
    fails([{**VACANT, "tenure": "rented"}], "line 2 breaks a structural rule",
          "a vacant unit has tenure NA")
    fails([], "no housing units")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(StatreconError, match=r"empty\.csv: empty file"):
        hf.read_households(tmp_path / "empty.csv")
    with pytest.raises(StatreconError, match="no such file"):
        hf.read_households(tmp_path / "nope.csv")


# --------------------------------------------------------------------------- CLI


def test_cli_generate_blocks_writes_both_files(tmp_path: Path) -> None:
    from conftest import json_of, statrecon

    out = tmp_path / "blocks.csv"
    proc = statrecon("claims", "generate-blocks", "--blocks", "4", "--seed", "3", "--out", out,
                     "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    population = tmp_path / "blocks_population.csv"
    assert data["population_out"] == str(population) and data["out"] == str(out)
    assert data["blocks"] == 4 and data["tracts"] == 4 and data["states"] == 4
    gen = hb.generate_blocks(4, 3)
    pdt.assert_frame_equal(hf.read_households(out), gen.targets)
    pdt.assert_frame_equal(hf.read_households(population), gen.population)
    assert data["units"] == len(gen.targets)
    assert data["population_units"] == len(gen.population)


def test_cli_user_errors(tmp_path: Path) -> None:
    """One line naming file and line, exit 1. (Each call starts the CLI, about 2 s.)"""
    from conftest import assert_user_error, statrecon

    bad = write_rows(tmp_path / "bad.csv", [GOOD, GOOD, VACANT, GOOD, GOOD,
                                            {**GOOD, "size": "3"}])
    assert_user_error(statrecon("claims", "check-households", bad),
                      f"{bad}: line 7 breaks a structural rule",
                      "a householder living alone has household size 1")
    unknown = write_rows(tmp_path / "unknown.csv", [GOOD, {**GOOD, "age": "12-14"}])
    assert_user_error(statrecon("claims", "check-households", unknown),
                      f"{unknown}: line 3: unknown age value '12-14'", "15-24")
    missing = write_rows(tmp_path / "missing.csv", [GOOD],
                         [c for c in COLUMNS if c != "hh_type"])
    assert_user_error(statrecon("claims", "check-households", missing),
                      f"{missing}: line 1: missing column(s) hh_type")
    block = write_rows(tmp_path / "block.csv", [{**GOOD, "block": "01003015000100X"}])
    assert_user_error(statrecon("claims", "check-households", block),
                      f"{block}: line 2: block id '01003015000100X' is not 15 digits")
