"""ONS's ``cell-key-perturbation`` (PyPI, in the dev extra) as a peer: on the same microdata,
record keys and ptable, ``tables perturb`` publishes the same table, cell by cell: the true
count, the cell key, the noise and the published count (NA/x below the threshold). The
ptable's noise depends on the cell key (a maximum-entropy ptable in ONS's format; the
package's own 10-5 ptable is plain rounding, which would not tell keys apart). Skipped
cleanly where the package cannot be had."""

from __future__ import annotations

import contextlib
import io
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from statrecon.engines.ckm import PTableParams, build_ptable
from statrecon.runs.ckm import PerturbOptions, perturb_microdata
from statrecon.tables.ckm import keyed, ptable_frame
from tests.conftest import EXAMPLES, CliRunner

ons = pytest.importorskip("cell_key_perturbation.create_perturbed_table",
                          exc_type=ImportError)
test_data = pytest.importorskip("cell_key_perturbation.utils.generate_test_data",
                                exc_type=ImportError)


def _ons(data: pd.DataFrame, ptable: pd.DataFrame, variables: list[str],
         threshold: int) -> pd.DataFrame:
    with contextlib.redirect_stdout(io.StringIO()):  # it prints its validation
        return ons.create_perturbed_table(data, ptable, geog=[], tab_vars=variables,
                                          record_key="record_key",
                                          use_existing_ons_id=False, threshold=threshold)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("ons")
    ptable = keyed(build_ptable(PTableParams(3, Fraction(3), 2)))
    frame = ptable_frame(ptable)
    frame.to_csv(folder / "ptable.csv", index=False)
    with contextlib.redirect_stdout(io.StringIO()):
        data = test_data.generate_test_data(size=4000)
    # more records in two codes: counts above 750, looked up in rows 501-750
    big = pd.DataFrame({"record_key": np.random.default_rng(3).integers(0, 256, 3000),
                        "var1": 1, "var2": 1, "var3": 1, "var4": 1, "var5": 1, "var6": 1,
                        "var7": 1, "var8": "A", "var9": "A", "var10": 1})
    data = pd.concat([data, big], ignore_index=True)
    data.to_csv(folder / "micro.csv", index=False)
    assert any(len(set(row)) > 1 for row in ptable.values.values())  # keys matter
    return {"folder": folder, "data": pd.read_csv(folder / "micro.csv"),
            "ptable": pd.read_csv(folder / "ptable.csv")}


def _mine(setup: dict[str, Any], tables: tuple[tuple[str, ...], ...], threshold: int
          ) -> dict[tuple[tuple[str, str], ...], Any]:
    run = perturb_microdata(setup["folder"] / "micro.csv", setup["folder"] / "ptable.csv",
                            PerturbOptions(tables, record_key="record_key",
                                           threshold=threshold))
    return {tuple(sorted(k)): c for k, c in zip(run.tables.keys(), run.cells, strict=True)}


@pytest.mark.parametrize("variables", [["var1", "var5", "var8"], ["var2", "var9"],
                                       ["var10"], ["var3", "var4", "var6", "var7"]])
@pytest.mark.parametrize("threshold", [10, 0])
def test_the_same_cells_the_same_keys_the_same_noise(setup: dict[str, Any],
                                                     variables: list[str],
                                                     threshold: int) -> None:
    theirs = _ons(setup["data"], setup["ptable"], variables, threshold)
    mine = _mine(setup, (tuple(variables),), threshold)
    inner = {k: c for k, c in mine.items() if len(k) == len(variables)}
    assert len(theirs) == len(inner)
    changed = 0
    for row in theirs.itertuples(index=False):
        key = tuple(sorted((v, str(getattr(row, v))) for v in variables))
        cell = inner[key]
        published = None if pd.isna(row.count) else int(row.count)
        assert (cell.count, int(cell.ckey), cell.noise, cell.published) == \
            (row.pre_sdc_count, row.ckey, row.pvalue, published), key
        changed += cell.noise != 0
    assert changed  # the ptable's noise is at work
    if variables == ["var2", "var9"]:
        assert theirs["pre_sdc_count"].max() > 750  # the rows 501-750 are exercised


def test_a_margin_is_ons_table_of_fewer_variables(setup: dict[str, Any]) -> None:
    """ONS's package tabulates no margins; its table of var1 alone is the var1 margin of
    ours, with the same noise (one cell key per set of records)."""
    mine = _mine(setup, (("var1", "var5"),), 10)
    theirs = _ons(setup["data"], setup["ptable"], ["var1"], 10)
    for row in theirs.itertuples(index=False):
        cell = mine[(("var1", str(row.var1)),)]
        assert (cell.count, cell.noise) == (row.pre_sdc_count, row.pvalue)


def test_the_publication_file_is_ons_table(setup: dict[str, Any], run_cli: CliRunner) -> None:
    folder: Path = setup["folder"]
    code, _, err = run_cli("tables", "perturb", folder / "micro.csv", "--ptable",
                           folder / "ptable.csv", "--dimensions", "var1,var8",
                           "--record-key", "record_key", "--no-margins", "--out",
                           folder / "pub.csv")
    assert code == 0, err
    published = pd.read_csv(folder / "pub.csv", dtype=str)
    theirs = _ons(setup["data"], setup["ptable"], ["var1", "var8"], 10)
    expected = [(str(r.var1), r.var8, "x" if pd.isna(r.count) else str(int(r.count)))
                for r in theirs.itertuples(index=False)]
    assert sorted(map(tuple, published[["var1", "var8", "value"]].to_numpy().tolist())) == \
        sorted(expected)


def test_keys_from_ons_ids_are_ons_keys(setup: dict[str, Any], run_cli: CliRunner) -> None:
    """With an ``ons_id`` column, ONS's package makes each record key the id modulo 4096;
    ``--ons-id`` does the same, so the two publish the same table (ids past 4096, so the
    modulo matters, and a cell key past the ptable's 256 keys)."""
    folder: Path = setup["folder"]
    data = setup["data"].drop(columns=["record_key"]).assign(
        ons_id=np.random.default_rng(5).integers(0, 10**9, len(setup["data"])))
    data.to_csv(folder / "ids.csv", index=False)
    with contextlib.redirect_stdout(io.StringIO()):
        theirs = ons.create_perturbed_table(data, setup["ptable"], geog=[],
                                            tab_vars=["var1", "var8"], record_key=None,
                                            use_existing_ons_id=True, threshold=10)
    code, _, err = run_cli("tables", "perturb", folder / "ids.csv", "--ptable",
                           folder / "ptable.csv", "--dimensions", "var1,var8", "--ons-id",
                           "ons_id", "--no-margins", "--out", folder / "pub_ids.csv")
    assert code == 0, err
    published = pd.read_csv(folder / "pub_ids.csv", dtype=str)
    expected = [(str(r.var1), r.var8, "x" if pd.isna(r.count) else str(int(r.count)))
                for r in theirs.itertuples(index=False)]
    assert sorted(map(tuple, published[["var1", "var8", "value"]].to_numpy().tolist())) == \
        sorted(expected)
    assert (theirs["pvalue"] != 0).any()
    # and the keys are not the plain ids' residues modulo 256 of a different rule: the
    # publication differs from keys drawn at random (the ids decide the noise)
    code, _, err = run_cli("tables", "perturb", folder / "ids.csv", "--ptable",
                           folder / "ptable.csv", "--dimensions", "var1,var8", "--seed", "1",
                           "--no-margins", "--out", folder / "pub_drawn.csv")
    assert code == 0, err
    drawn = pd.read_csv(folder / "pub_drawn.csv", dtype=str)
    assert sorted(map(tuple, drawn[["var1", "var8", "value"]].to_numpy().tolist())) != \
        sorted(expected)


@pytest.mark.parametrize(("variables", "threshold"), [(("tract", "sex", "agegroup"), 10),
                                                      (("block", "sex"), 0)])
def test_the_28_tracts_persons_are_perturbed_alike(tmp_path: Path, variables: tuple[str, ...],
                                                   threshold: int) -> None:
    """Issue 30's check on real data: the bundled 28 tracts' 63,969 persons (tract, block,
    sex, five-year age group) with seeded record keys and a D = 2 ptable in ONS's format;
    every cell the package publishes (17,060 by block and sex) is ours, key, noise and
    published count alike."""
    persons = pd.read_csv(EXAMPLES / "census" / "census2010_reconstructed_persons.csv.gz",
                          dtype=str)
    data = pd.DataFrame({
        "tract": persons["block_geoid"].str[:11], "block": persons["block_geoid"],
        "sex": persons["sex"],
        "agegroup": (persons["age"].astype(int) // 5 * 5).clip(upper=85).astype(str),
        "record_key": np.random.default_rng(30).integers(0, 256, len(persons))})
    data.to_csv(tmp_path / "micro.csv", index=False)
    ptable_frame(keyed(build_ptable(PTableParams(2, Fraction("1.08"), 1)))).to_csv(
        tmp_path / "ptable.csv", index=False)
    with contextlib.redirect_stdout(io.StringIO()):
        theirs = ons.create_perturbed_table(data, pd.read_csv(tmp_path / "ptable.csv"),
                                            geog=[], tab_vars=list(variables),
                                            record_key="record_key",
                                            use_existing_ons_id=False, threshold=threshold)
    run = perturb_microdata(tmp_path / "micro.csv", tmp_path / "ptable.csv",
                            PerturbOptions((variables,), record_key="record_key",
                                           threshold=threshold))
    mine = {tuple(sorted(k)): c for k, c in zip(run.tables.keys(), run.cells, strict=True)}
    assert len(theirs) == sum(1 for k in mine if len(k) == len(variables)) > 1000
    changed = 0
    for row in theirs.itertuples(index=False):
        cell = mine[tuple(sorted((v, str(getattr(row, v))) for v in variables))]
        published = None if pd.isna(row.count) else int(row.count)
        assert (cell.count, int(cell.ckey), cell.noise, cell.published) == \
            (row.pre_sdc_count, row.ckey, row.pvalue, published)
        changed += cell.noise != 0
    assert changed > len(theirs) // 3
    if threshold:
        assert theirs["count"].isna().any()  # cells withheld below the threshold
