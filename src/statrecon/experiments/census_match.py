"""Score a reconstruction against the true persons, as the Bureau reports it.

A person matches exactly when the same block holds a reconstructed person with the same sex,
single-year age, race combination and Hispanic origin (a multiset match per block); "age within
one year" allows the ages to differ by at most one (an optimal one-to-one matching, found
greedily on sorted ages, which is exact for a tolerance on a line). The baseline draws every
person of a block at random from its tract's own joint sex/age/race/Hispanic distribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from statrecon.census.geography import TRACT_LENGTH
from statrecon.census.persons.cells import RACES
from statrecon.census.persons.microdata import load_persons
from statrecon.db import open_connection
from statrecon.errors import StatreconError
from statrecon.experiments.census_scores import (
    KEY,
    binned,
    block_majority,
    check_claims_release,
    matched_per_block,
    precision_at_k,
    read_certain,
    scores,
    tract_draw,
    truth_classes,
)
from statrecon.report.census import TruthScores
from statrecon.runs.stores import read_recon


def _race_code(frame: pd.DataFrame) -> np.ndarray:
    code = np.zeros(len(frame), dtype=np.int64)
    for i, r in enumerate(RACES):
        code |= frame[r].to_numpy(dtype=bool).astype(np.int64) << i
    return code


def _truth(path: Path) -> pd.DataFrame:
    con = open_connection()
    load_persons(path, con)  # locks con once the file is in
    frame = con.sql(f"SELECT block, sex, age, {', '.join(RACES)}, hispanic FROM persons"
                    ).df()
    frame["race"] = _race_code(frame)
    frame["hispanic"] = frame["hispanic"].astype(bool)
    return frame[["block", *KEY]]


def _recon(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    table, meta = read_recon(path)
    blocks = table.drop_columns(["records"]).to_pandas()
    records = table.select(["block", "records"]).to_pandas().explode("records")
    records = records.dropna(subset=["records"])
    persons = pd.DataFrame(list(records["records"]), index=records.index)
    persons.insert(0, "block", records["block"].to_numpy())
    if len(persons):
        persons["race"] = _race_code(persons)
        persons["hispanic"] = persons["hispanic"].astype(bool)
    else:
        persons = pd.DataFrame(columns=["block", *KEY, "certain"])
    return blocks, persons.reset_index(drop=True), meta


def _within_one(a: pd.DataFrame, b: pd.DataFrame) -> pd.Series:
    """Per block: the largest one-to-one matching with equal sex/race/origin and |age| <= 1.

    Age by age over every group at once (numpy): a person left unmatched at age t - 1 can
    only still match one of the other side at t, so those are matched first, then the two
    sides at t with each other, and what is left waits for t + 1. Taking the person who
    leaves the window first is optimal (the exchange argument of interval matching), as
    the two-pointer walk over each group's sorted ages was (tests/experiments compare)."""
    group = ["block", "sex", "race", "hispanic"]
    both = pd.concat([a[[*group, "age"]], b[[*group, "age"]]], ignore_index=True)
    if not len(both):
        return pd.Series(dtype=np.int64)
    ids = both.groupby(group, observed=True, sort=False).ngroup().to_numpy()
    kept = ids >= 0  # a person with a missing key is in no group, as groupby has it
    if not kept.any():
        return pd.Series(dtype=np.int64)
    both, ids = both[kept], ids[kept]
    side = np.repeat([0, 1], [len(a), len(b)])[kept]
    age = both["age"].to_numpy(dtype=np.int64)
    groups = int(ids.max()) + 1
    per_age = (pd.DataFrame({"g": ids, "age": age, "side": side}).value_counts()
               .unstack("side", fill_value=0).reindex(columns=[0, 1], fill_value=0)
               .reset_index().sort_values("age", kind="stable"))
    g_of, age_of = per_age["g"].to_numpy(), per_age["age"].to_numpy()
    count = per_age[[0, 1]].to_numpy(dtype=np.int64).T
    left = np.zeros((2, groups), dtype=np.int64)  # unmatched at left_age, per group
    left_age = np.full(groups, np.iinfo(np.int64).min)
    matched = np.zeros(groups, dtype=np.int64)
    bounds = np.flatnonzero(np.diff(age_of)) + 1
    for rows in np.split(np.arange(len(age_of)), bounds):
        t, g = age_of[rows[0]], g_of[rows]
        fresh = left_age[g] == t - 1
        left_a, left_b = np.where(fresh, left[0, g], 0), np.where(fresh, left[1, g], 0)
        new_a, new_b = count[0, rows], count[1, rows]
        first_a, first_b = np.minimum(left_a, new_b), np.minimum(left_b, new_a)
        new_a, new_b = new_a - first_b, new_b - first_a
        pairs = np.minimum(new_a, new_b)
        matched[g] += first_a + first_b + pairs
        left[0, g], left[1, g], left_age[g] = new_a - pairs, new_b - pairs, t
    blocks = both["block"].astype(str).to_numpy()
    row_of = np.zeros(groups, dtype=np.int64)
    row_of[ids] = np.arange(len(ids))  # any row of the group: they share its block
    return pd.Series(matched, index=blocks[row_of]).groupby(level=0).sum()


def _baseline(truth: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every true person replaced by a draw from the tract's own joint distribution."""
    rng = np.random.default_rng(seed)
    drawn = truth.copy()
    tract = truth["block"].str[:TRACT_LENGTH]
    for _, idx in truth.groupby(tract).indices.items():
        pick = rng.choice(idx, size=len(idx), replace=True)
        for col in KEY:
            column = drawn[col].to_numpy().copy()
            column[idx] = truth[col].to_numpy()[pick]
            drawn[col] = column
    return drawn


def _common_tracts(truth: pd.DataFrame, blocks: pd.DataFrame, truth_path: Path,
                   recon_path: Path, strict: bool) -> tuple[pd.DataFrame, dict[str, int]]:
    """The truth restricted to the reconstruction's tracts, and what was left out.

    Scoring a reconstruction of three tracts against a whole county's persons would report
    the county's match rate, not the reconstruction's; so by default only the common tracts
    are compared and the rest is counted, and ``strict`` refuses instead.
    """
    tract = truth["block"].str[:TRACT_LENGTH]
    keep = tract.isin(set(blocks["tract"]))
    left = truth.loc[~keep, "block"]
    out = {"truth_tracts_left_out": int(tract[~keep].nunique()),
           "truth_blocks_left_out": int(left.nunique()),
           "truth_persons_left_out": len(left)}
    if not keep.any():
        raise StatreconError(f"{truth_path}: no tract in common with {recon_path}; compare a "
                             "reconstruction with the persons it was made from")
    if strict and len(left):
        raise StatreconError(
            f"{truth_path}: {out['truth_blocks_left_out']:,} blocks in "
            f"{out['truth_tracts_left_out']:,} tracts (for example {left.iloc[0]}) are not in "
            f"{recon_path}; leave out --strict to compare the common tracts only")
    return truth[keep.to_numpy()], out


@dataclass(frozen=True)
class _Loaded:
    """The true persons of the reconstructed tracts, the reconstruction (blocks, persons,
    metadata) and what of the truth was left out."""

    truth: pd.DataFrame
    blocks: pd.DataFrame
    recon: pd.DataFrame
    meta: dict[str, Any]
    left_out: dict[str, int]

    @property
    def bins(self) -> list[int]:
        return list(self.meta.get("age_bins") or range(111))


def _load(truth_path: Path, recon_path: Path, strict: bool) -> _Loaded:
    truth = _truth(truth_path)
    blocks, recon, meta = _recon(recon_path)
    truth, left_out = _common_tracts(truth, blocks, truth_path, recon_path, strict)
    return _Loaded(truth, blocks, recon, meta, left_out)


def block_scores(truth_path: Path, recon_path: Path, *, seed: int = 0, strict: bool = False
                 ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One row per true block of the reconstructed tracts: sizes, matches, baseline matches
    and what was certified (truth outside those tracts: counted in the info, or refused when
    ``strict``)."""
    return _block_scores(_load(truth_path, recon_path, strict), seed)


def _block_scores(loaded: _Loaded, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    truth, blocks, recon, meta = loaded.truth, loaded.blocks, loaded.recon, loaded.meta
    frame = truth.groupby("block").size().rename("persons").to_frame()
    frame["tract"] = frame.index.str[:TRACT_LENGTH]
    frame["reconstructed"] = recon.groupby("block").size()
    frame["exact"] = matched_per_block(truth, recon)
    frame["within_1"] = _within_one(truth, recon)
    base = _baseline(truth, seed)
    frame["baseline_exact"] = matched_per_block(truth, base)
    frame["baseline_within_1"] = _within_one(truth, base)
    bins = loaded.bins
    frame["exact_binned"] = matched_per_block(binned(truth, bins), binned(recon, bins))
    if len(recon):
        certain = recon[recon["certain"].astype(bool)]
        c = certain.groupby(["block", *KEY]).size().rename("c")
        t = truth.groupby(["block", *KEY]).size().rename("t")
        both = pd.concat([c, t], axis=1).fillna(0)
        both = both[both["c"] > 0]
        frame["certain"] = both["c"].groupby(level="block").sum()
        frame["certain_wrong"] = (both["c"] - both["t"]).clip(lower=0).groupby(
            level="block").sum()
    info = blocks.set_index("block")[["status", "unique", "unique_binned"]]
    frame = frame.join(info, how="left")
    for col in ("reconstructed", "exact", "within_1", "baseline_exact", "baseline_within_1",
                "exact_binned", "certain", "certain_wrong"):
        frame[col] = frame[col].fillna(0).astype(np.int64) if col in frame else 0
    frame["block_exact"] = (frame["exact"] == frame["persons"]) & (
        frame["reconstructed"] == frame["persons"])
    frame["block_exact_binned"] = (frame["exact_binned"] == frame["persons"]) & (
        frame["reconstructed"] == frame["persons"])
    frame["unique"] = frame["unique"].astype("boolean").fillna(False).astype(bool)
    frame["unique_binned"] = frame["unique_binned"].astype("boolean").fillna(False).astype(bool)
    extra = sorted(set(blocks["block"]) - set(frame.index))
    return frame, {"meta": meta, "blocks_not_in_truth": extra, **loaded.left_out}


def compare(truth_path: Path, recon_path: Path, *, seed: int = 0, strict: bool = False,
            microdata: Path | None = None, certain: Path | None = None,
            release: Path | None = None) -> dict[str, Any]:
    """The summary the Bureau reports (stable JSON keys; see the README), with the measures
    of ``census_scores`` for the reconstruction and for each baseline (``microdata``: a
    persons file scored as if it were a reconstruction, such as a DP run's own microdata;
    ``release``: the noisy release the ``certain`` claims are checked against)."""
    claims = None
    if certain is not None:  # the claims are checked before any scoring
        claims = read_certain(certain)
        if release is not None:
            check_claims_release(certain, *claims, release)
    elif release is not None:
        raise StatreconError("--release checks the claims of --certain; give --certain too")
    loaded = _load(truth_path, recon_path, strict)
    if claims is not None:
        _check_same_release(certain, claims[1], recon_path, loaded.meta)
    f, info = _block_scores(loaded, seed)
    persons = int(f["persons"].sum())
    unique = f["unique"]
    unique_binned = f["unique_binned"]

    def rate(n: Any) -> float:
        return float(n) / persons if persons else 0.0

    return {
        "persons": persons,
        "blocks": len(f),
        "tracts": int(f["tract"].nunique()),
        "exact_match_rate": rate(f["exact"].sum()),
        "age_within_1_rate": rate(f["within_1"].sum()),
        "blocks_exact": int(f["block_exact"].sum()),
        "blocks_certified_unique": int(unique.sum()),
        "persons_in_certified_blocks": int(f.loc[unique, "persons"].sum()),
        "certified_blocks_mismatched": int((unique & ~f["block_exact"]).sum()),
        "baseline_exact_match_rate": rate(f["baseline_exact"].sum()),
        "baseline_age_within_1_rate": rate(f["baseline_within_1"].sum()),
        "certain_persons": int(f["certain"].sum()),
        "certain_persons_not_in_truth": int(f["certain_wrong"].sum()),
        "binned_match_rate": rate(f["exact_binned"].sum()),
        "blocks_exact_binned": int(f["block_exact_binned"].sum()),
        "blocks_certified_unique_binned": int(unique_binned.sum()),
        "persons_in_certified_binned_blocks": int(f.loc[unique_binned, "persons"].sum()),
        "certified_binned_blocks_mismatched": int(
            (unique_binned & ~f["block_exact_binned"]).sum()),
        "blocks_not_reconstructed": int((f["status"].fillna("missing") != "ok").sum()),
        "blocks_not_in_truth": len(info["blocks_not_in_truth"]),
        "truth_blocks_left_out": info["truth_blocks_left_out"],
        "truth_tracts_left_out": info["truth_tracts_left_out"],
        "truth_persons_left_out": info["truth_persons_left_out"],
        "seed": seed,
        "scores": scores(loaded.truth, loaded.recon, loaded.bins),
        "baselines": _baselines(loaded, seed, microdata),
        **_ranked(loaded, seed),
        **_within_noise(loaded, claims),
    }


def _check_same_release(certain: Path | None, claims_meta: dict[str, Any], recon: Path,
                        recon_meta: dict[str, Any]) -> None:
    """Claims compared beside a reconstruction must be about the release it was made from
    (both files record that release's digest): claims about another release are refused."""
    ours, theirs = claims_meta.get("release"), recon_meta.get("release")
    if ours is not None and theirs is not None and ours != theirs:
        raise StatreconError(f"{certain}: its claims are about release {str(ours)[:40]}, but "
                             f"{recon} was reconstructed from release {str(theirs)[:40]}; "
                             "compare claims with the reconstruction of the same release")


def _within_noise(loaded: _Loaded, certain: tuple[pd.DataFrame, dict[str, Any]] | None
                  ) -> dict[str, Any]:
    """The persons ``census certain`` proved within the noise (``read_certain``'s claims
    and metadata), and how many of them the truth lacks (at the block tables' resolution,
    the resolution of the claims)."""
    if certain is None:
        return {"certain_within_noise": None, "certain_within_noise_not_in_truth": None,
                "delta": None}
    claims, meta = certain
    classes = truth_classes(loaded.truth, meta["cells"])
    have = classes.groupby(["block", "class"]).size().rename("have")
    merged = claims.merge(have, left_on=["block", "class"], right_index=True, how="left")
    missing = (merged["persons"] - merged["have"].fillna(0)).clip(lower=0)
    return {"certain_within_noise": int(claims["persons"].sum()),
            "certain_within_noise_not_in_truth": int(missing.sum()),
            "delta": meta["delta"]}


def _ranked(loaded: _Loaded, seed: int) -> dict[str, Any]:
    """Precision of the top-scored persons (``census reconstruct --rank K``); None without
    scores."""
    ranked = precision_at_k(loaded.truth, loaded.recon, loaded.bins, seed)
    if ranked is None:
        return {"precision_at_k": None, "precision_at_k_binned": None, "precision_curve": None}
    return {"precision_at_k": ranked["exact"], "precision_at_k_binned": ranked["binned"],
            "precision_curve": {"exact": ranked["curve_exact"],
                                "binned": ranked["curve_binned"]}}


def _baselines(loaded: _Loaded, seed: int, microdata: Path | None) -> dict[str, Any]:
    """The measures of each baseline guess; they know what the release publishes (the
    reconstruction's persons per block and tract, which meet the tables)."""
    published = loaded.recon[["block", *KEY]]
    out = {"block_majority": scores(loaded.truth, block_majority(published, seed), loaded.bins),
           "tract_draw": scores(loaded.truth, tract_draw(published, seed), loaded.bins)}
    if microdata is not None:
        persons = _truth(microdata)
        tracts = set(loaded.blocks["tract"])
        persons = persons[persons["block"].str[:TRACT_LENGTH].isin(tracts).to_numpy()]
        out["microdata"] = {"source": str(microdata),
                            **scores(loaded.truth, persons, loaded.bins)}
    return out


def truth_scores(truth_path: Path, recon_path: Path, *, seed: int = 0) -> TruthScores:
    """What the HTML report shows about the true persons: the summary and per-block scores."""
    return TruthScores(truth_path.name, compare(truth_path, recon_path, seed=seed),
                       block_scores(truth_path, recon_path, seed=seed)[0])
