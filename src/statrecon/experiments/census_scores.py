"""Agreement and precision of a set of guessed persons against the true persons, as the
Bureau reports its reconstruction (HDSR 2025, Tables 6-7), and the baselines its critics
answer with.

Every guess is a frame of persons (``block, sex, age, race, hispanic``; ``race`` the six race
flags as a bit code). The measures:

* **agreement** (exact, binned age): the share of true persons paired one-to-one with a
  guessed person of the same block, sex, age (or age bin), race and Hispanic origin;
* **precision on uniques**: of the guessed persons who are alone in their block on (sex, age
  bin, race, origin), the persons an attacker would single out, the share for which the true
  block holds a person with the same sex, age (exact, or binned), race and origin;
* **precision on non-modal uniques**: the same over those whose race/origin differs from their
  block's most common one (the people the Bureau says are most exposed);
* **by block size**: agreement within classes of true persons per block (those of the
  census report).

Baselines use only what a release publishes (the published persons per block and per tract,
here those of the reconstruction, which meets the tables): **block majority** gives each of a
block's persons the block's most common race/origin and a sex and age drawn from the tract;
**tract draw** replaces each person by a draw from the tract's joint distribution.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from statrecon import inputs
from statrecon.census.geography import GEOID_LENGTH, TRACT_LENGTH
from statrecon.census.persons.cells import SEXES, Sf1Cell, definitions_digest, grid_index
from statrecon.census.persons.release import MAX_VALUE, cells_from_json, read_release
from statrecon.engines.census import CellMatrices
from statrecon.errors import StatreconError
from statrecon.report.census import SIZE_EDGES, SIZE_LABELS
from statrecon.runs.census_certain import META_KEY as CERTAIN_KEY
from statrecon.runs.census_certain import claim_ceilings

KEY = ["sex", "age", "race", "hispanic"]
# ``CensusRelease.digest``: definitions, values and (with invariants) invariants, 16 hex each
DIGEST = re.compile(r"[0-9a-f]{16}(:[0-9a-f]{16}){1,2}")
ORIGIN = ["race", "hispanic"]


def binned(frame: pd.DataFrame, bins: list[int]) -> pd.DataFrame:
    """``frame`` with each age replaced by the first age of its bin (``bins``: bin starts)."""
    out = frame.copy()
    starts = np.array(sorted(bins))
    out["age"] = starts[np.searchsorted(starts, out["age"].to_numpy(), side="right") - 1]
    return out


def matched_per_block(a: pd.DataFrame, b: pd.DataFrame) -> pd.Series:
    """Per block: how many persons of ``a`` pair one-to-one with an identical person of ``b``
    (same block and ``KEY``)."""
    ca = a.groupby(["block", *KEY], observed=True).size().rename("a")
    cb = b.groupby(["block", *KEY], observed=True).size().rename("b")
    both = pd.concat([ca, cb], axis=1, join="inner")
    return both.min(axis=1).groupby(level="block").sum()


def modal_origin(persons: pd.DataFrame) -> pd.DataFrame:
    """Per block, its most common (race, hispanic); a tie goes to the smaller code, so the
    result does not depend on row order."""
    counts = persons.groupby(["block", *ORIGIN], observed=True).size().rename("n").reset_index()
    counts = counts.sort_values(["block", "n", "race", "hispanic"],
                                ascending=[True, False, True, True], kind="stable")
    return counts.drop_duplicates("block").set_index("block")[ORIGIN]


def _holds(truth: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """Per row of ``rows``: does the true block hold a person with the same ``KEY``?"""
    present = truth[["block", *KEY]].drop_duplicates()
    present["_hit"] = True
    hit = rows[["block", *KEY]].merge(present, on=["block", *KEY], how="left")["_hit"]
    return hit.fillna(False).to_numpy(dtype=bool)


def precision(truth: pd.DataFrame, guess: pd.DataFrame, bins: list[int]) -> dict[str, Any]:
    """Precision on the guess's block uniques (on sex, age bin, race, origin), all and
    non-modal, with exact and binned age; ``None`` where the guess has no such person."""
    if len(guess) == 0:
        return {"unique_rows": 0, "precision_unique": None, "precision_unique_binned": None,
                "nonmodal_unique_rows": 0, "precision_nonmodal": None,
                "precision_nonmodal_binned": None}
    guess_b = binned(guess, bins)
    alone = (guess_b.groupby(["block", *KEY], observed=True)["age"].transform("size") == 1
             ).to_numpy()
    modal = modal_origin(guess).reindex(guess["block"])
    nonmodal = ((modal["race"].to_numpy() != guess["race"].to_numpy())
                | (modal["hispanic"].to_numpy() != guess["hispanic"].to_numpy())) & alone
    exact_hit = _holds(truth, guess)
    binned_hit = _holds(binned(truth, bins), guess_b)

    def share(hit: np.ndarray, chosen: np.ndarray) -> float | None:
        return float(hit[chosen].mean()) if chosen.any() else None

    return {"unique_rows": int(alone.sum()),
            "precision_unique": share(exact_hit, alone),
            "precision_unique_binned": share(binned_hit, alone),
            "nonmodal_unique_rows": int(nonmodal.sum()),
            "precision_nonmodal": share(exact_hit, nonmodal),
            "precision_nonmodal_binned": share(binned_hit, nonmodal)}


def scores(truth: pd.DataFrame, guess: pd.DataFrame, bins: list[int]) -> dict[str, Any]:
    """Agreement (exact, binned), precision on uniques and agreement by block size of one
    guess; ``truth`` and ``guess`` cover the same tracts."""
    persons = len(truth)
    sizes = truth.groupby("block").size()
    exact = matched_per_block(truth, guess).reindex(sizes.index, fill_value=0)
    within_bin = matched_per_block(binned(truth, bins), binned(guess, bins)).reindex(
        sizes.index, fill_value=0)
    frame = pd.DataFrame({"persons": sizes, "exact": exact, "binned": within_bin})
    frame["size"] = pd.cut(frame["persons"].astype(float), SIZE_EDGES, labels=SIZE_LABELS)
    by_size = []
    for label, part in frame.groupby("size", observed=True, sort=True):
        total = int(part["persons"].sum())
        by_size.append({"size": str(label), "blocks": len(part), "persons": total,
                        "agreement_exact": float(part["exact"].sum()) / total,
                        "agreement_binned": float(part["binned"].sum()) / total})
    return {"persons": persons, "guessed": len(guess),
            "agreement_exact": float(exact.sum()) / persons if persons else 0.0,
            "agreement_binned": float(within_bin.sum()) / persons if persons else 0.0,
            **precision(truth, guess, bins), "by_block_size": by_size}


def _tract_of(frame: pd.DataFrame) -> pd.Series:
    return frame["block"].str[:TRACT_LENGTH]


def tract_draw(published: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Each published person replaced by a person drawn from its tract's published joint
    distribution (the proportional guess, drawn)."""
    rng = np.random.default_rng(seed)
    out = published.reset_index(drop=True).copy()
    values = {col: out[col].to_numpy().copy() for col in KEY}
    for idx in out.groupby(_tract_of(out)).indices.values():
        pick = rng.choice(idx, size=len(idx), replace=True)
        for col in KEY:
            values[col][idx] = out[col].to_numpy()[pick]
    for col in KEY:
        out[col] = values[col]
    return out


def block_majority(published: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Each published person of a block given the block's most common race/origin, and a sex
    and age drawn from the tract's published persons."""
    out = tract_draw(published, seed)
    modal = modal_origin(published).reindex(out["block"])
    out["race"] = modal["race"].to_numpy()
    out["hispanic"] = modal["hispanic"].to_numpy()
    return out


TOP_SHARES = (1, 5, 10, 25, 50, 100)  # percent of the ranked persons


def matched_in_rank_order(truth: pd.DataFrame, guess: pd.DataFrame) -> np.ndarray:
    """Per guessed person: does it pair with a true person, the higher-scored copies of a
    (block, person type) pairing first (``guess`` has a ``score`` column)?"""
    order = np.argsort(-guess["score"].to_numpy(dtype=float), kind="stable")
    ranked = guess.iloc[order]
    position = ranked.groupby(["block", *KEY], observed=True).cumcount().to_numpy()
    have = truth.groupby(["block", *KEY], observed=True).size().rename("have")
    have_of = ranked[["block", *KEY]].merge(have, left_on=["block", *KEY], right_index=True,
                                            how="left")["have"].fillna(0).to_numpy()
    matched = np.empty(len(guess), dtype=bool)
    matched[order] = position < have_of
    return matched


def precision_at_k(truth: pd.DataFrame, guess: pd.DataFrame, bins: list[int], seed: int
                   ) -> dict[str, Any] | None:
    """Precision of the top k% of guessed persons by score (exact and binned age), and the
    whole curve; None when the guess carries no scores. Among equal scores, persons proven
    certain (a ``certain`` column) come first, then a seeded random order."""
    if "score" not in guess or len(guess) == 0 or guess["score"].isna().all():
        return None
    scores = guess["score"].to_numpy(dtype=float)
    certain = guess["certain"].to_numpy(dtype=bool) if "certain" in guess else \
        np.zeros(len(guess), dtype=bool)
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.permutation(len(guess)), ~certain,
                        -np.nan_to_num(scores, nan=-1.0)))
    out: dict[str, Any] = {}
    for name, t, g in (("exact", truth, guess),
                       ("binned", binned(truth, bins), binned(guess, bins))):
        hits = matched_in_rank_order(t, g)[order]
        running = np.cumsum(hits) / np.arange(1, len(hits) + 1)
        out[name] = {f"{k}%": float(running[max(1, math.ceil(len(hits) * k / 100)) - 1])
                     for k in TOP_SHARES}
        points = np.unique(np.linspace(1, len(hits), num=min(len(hits), 200)).astype(int))
        out[f"curve_{name}"] = [[int(n), float(running[n - 1])] for n in points]
    return out


def read_certain(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The claims of ``census certain`` (block, class, persons) and their metadata, checked
    as evidence: each (block, class) once, classes of the claims' own cell definitions,
    counts a block can hold, and a release digest made from those definitions."""
    table, meta = _certain_table(path)
    cells = _claims_cells(path, meta["cells"])
    _check_digest(path, meta.get("release"), cells)
    frame = table.select(["block", "class", "persons"]).to_pandas()
    _check_claims(path, frame, int(_matrices(cells).block_class.max()) + 1)
    return frame, {"delta": float(meta["delta"]), "cells": meta["cells"],
                   "release": meta["release"]}


def _certain_table(path: Path) -> tuple[pa.Table, dict[str, Any]]:
    """The claims table and its metadata: delta in (0, 1), the three typed columns."""
    table = inputs.read_columnar(path, "certain persons file")
    raw = inputs.metadata_bytes(table.schema.metadata, CERTAIN_KEY, path,
                                "certain persons file")
    if raw is None:
        raise StatreconError(f"{path}: not the output of `statrecon census certain`")
    try:
        meta = json.loads(raw)
        delta = meta["delta"]
        if "cells" not in meta:
            raise KeyError("cells")
    except (ValueError, KeyError, TypeError):
        raise StatreconError(f"{path}: unreadable metadata (make the file with `statrecon "
                             "census certain`)") from None
    protected = "protection" in meta  # hard bounds: the claims hold with no probability
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not (
            delta == 0 if protected else 0 < delta < 1):
        raise StatreconError(f"{path}: delta must lie in (0, 1) (0 for the claims of a "
                             f"protected release), got {str(delta)[:40]!r}")
    columns = {"block": pa.string(), "class": pa.int32(), "persons": pa.int32()}
    if any(name not in table.column_names or not table.schema.field(name).type.equals(kind)
           for name, kind in columns.items()):
        raise StatreconError(f"{path}: expected the columns block (text), class and persons "
                             "(integers)")
    return table, meta


def _claims_cells(path: Path, cells: object) -> tuple[Sf1Cell, ...]:
    try:
        return cells_from_json(cells)
    except StatreconError as e:
        raise StatreconError(f"{path}: {e}") from None


@lru_cache(maxsize=2)
def _matrices(cells: tuple[Sf1Cell, ...]) -> CellMatrices:
    """The cells' matrices, built once for the claims' checks and the truth's classes."""
    return CellMatrices.build(cells)


def _check_digest(path: Path, digest: object, cells: tuple[Sf1Cell, ...]) -> None:
    """The release digest the claims name (``CensusRelease.digest``: the definitions', the
    values' and the invariants' hashes) starts with the hash of the claims' own cells."""
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise StatreconError(f"{path}: no release digest (got {str(digest)[:60]!r}): the "
                             "claims must name the release they are about (make the file "
                             "with `statrecon census certain`)")
    own = definitions_digest(cells)
    if digest.split(":")[0] != own:
        raise StatreconError(f"{path}: the claims name release {digest}, whose cell "
                             f"definitions ({digest.split(':')[0]}) are not the claims' own "
                             f"({own}): not the release they are about")


def _check_claims(path: Path, frame: pd.DataFrame, classes: int) -> None:
    """Each (block, class) once, in a block GEOID; a class of the definitions; at least
    one person, and no more in a block than a census block holds."""
    if (frame["persons"] < 1).any() or frame["block"].isna().any():
        raise StatreconError(f"{path}: a claim must name a block and at least one person")
    geoid = frame["block"].str.fullmatch(rf"\d{{{GEOID_LENGTH}}}")
    if not geoid.all():
        raise StatreconError(f"{path}: block {frame['block'][~geoid].iloc[0][:40]!r} is not "
                             f"a {GEOID_LENGTH}-digit block GEOID")
    twice = frame.duplicated(["block", "class"])
    if twice.any():
        row = frame[twice].iloc[0]
        raise StatreconError(f"{path}: block {row['block']} class {row['class']} is claimed "
                             "more than once (each class of a block is one claim)")
    outside = (frame["class"] < 0) | (frame["class"] >= classes)
    if outside.any():
        row = frame[outside].iloc[0]
        raise StatreconError(f"{path}: block {row['block']}: class {row['class']} is not a "
                             f"class of the claims' cell definitions (0 to {classes - 1:,})")
    per_block = frame["persons"].astype(np.int64).groupby(frame["block"]).sum()
    if (per_block > MAX_VALUE["block"]).any():
        block = per_block[per_block > MAX_VALUE["block"]].index[0]
        raise StatreconError(f"{path}: block {block}: {int(per_block[block]):,} persons "
                             f"claimed, more than a census block holds (at most "
                             f"{MAX_VALUE['block']:,})")


def check_claims_release(path: Path, claims: pd.DataFrame, meta: dict[str, Any],
                         release_path: Path) -> None:
    """Claims checked against the release they name: its digest, and no claim above what
    its noisy cells allow within the noise bounds at the claims' delta
    (``census_certain.claim_ceilings``)."""
    release = read_release(release_path)
    if meta["release"] != release.digest:
        raise StatreconError(f"{path}: the claims are about release {meta['release']}, not "
                             f"{release_path} (release {release.digest})")
    if (meta["delta"] == 0) != (release.protection is not None):
        kind = "protected tables" if release.protection is not None else "noisy measurements"
        made = "with no probability" if meta["delta"] == 0 else f"at delta {meta['delta']:g}"
        raise StatreconError(f"{path}: the claims were made {made}, but {release_path} holds "
                             f"{kind}: not the claims of this release")
    ceilings = claim_ceilings(release, meta["delta"], claims["block"].tolist(),
                              claims["class"].to_numpy())
    over = np.flatnonzero(claims["persons"].to_numpy() > ceilings)
    if len(over):
        row, most = claims.iloc[int(over[0])], int(ceilings[over[0]])
        holds = (f"holds at most {most:,} within the noise of" if most >= 0
                 else "is not a block of")
        raise StatreconError(f"{path}: block {row['block']}: {int(row['persons']):,} persons "
                             f"of class {row['class']} claimed, but the block {holds} "
                             f"{release_path}")


def truth_classes(truth: pd.DataFrame, cells: list[dict[str, Any]]) -> pd.DataFrame:
    """Each true person's block and class (the set of person types no block count cell of
    ``cells`` tells apart), from the claims' own cell definitions."""
    mats = _matrices(cells_from_json(cells))
    sex = (truth["sex"] == SEXES[1]).to_numpy(dtype=np.int64)
    index = grid_index(sex, truth["age"].to_numpy(dtype=np.int64),
                       truth["race"].to_numpy(dtype=np.int64),
                       truth["hispanic"].to_numpy(dtype=np.int64))
    return pd.DataFrame({"block": truth["block"].to_numpy(),
                         "class": mats.block_class[index]})
