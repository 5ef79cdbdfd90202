"""Arithmetic identities between published cells, found from the definitions.

A table whose finest cells ("leaves") are disjoint adds up: its leaves sum to any cell with the
same set of persons (P12's 46 sex-by-age cells sum to P1; P12A's to P8's "White alone"; a
tract's PCT12 to the sum of its blocks' P1). Nothing is hand-listed: containment and equality
are computed on the cells' attribute masks. A broken identity names both sides and exits 2.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from statrecon.census.geography import tract_of
from statrecon.census.persons.cells import mask_matrix
from statrecon.errors import InconsistentReleaseError

if TYPE_CHECKING:
    from statrecon.census.persons.cells import Sf1Cell
    from statrecon.census.persons.release import CensusRelease

MAX_REPORTED = 5


@dataclass(frozen=True)
class Identity:
    """sum of ``parts`` (cells of ``parts_level``) == ``whole`` (a cell of ``whole_level``)."""

    parts_table: str
    parts_level: str
    parts: tuple[int, ...]  # indices among that level's cells
    whole_level: str
    whole: int


def _masks(cells: list[Sf1Cell]) -> sp.csr_matrix:
    return mask_matrix(cells)


def _digest(members: np.ndarray) -> str:
    """Fingerprint of a set of attribute cells (sorted indices)."""
    return hashlib.sha1(np.asarray(members, dtype=np.int64).tobytes()).hexdigest()


def _count_cells_by_mask(levels: dict[str, list[Sf1Cell]],
                         masks: dict[str, sp.csr_matrix]) -> dict[str, list[tuple[str, int]]]:
    """Count cells of every level keyed by the digest of their attribute set."""
    by_mask: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for lv, m in masks.items():
        starts = m.indptr  # row i's columns, read from the arrays (a row slice is slow)
        for i in range(m.shape[0]):
            if not levels[lv][i].is_median:  # medians are not counts: no sums to check
                row = np.sort(m.indices[starts[i]:starts[i + 1]])
                by_mask[_digest(row)].append((lv, i))
    return by_mask


def _table_identities(name: str, lv: str, idx: list[int], level_masks: sp.csr_matrix,
                      by_mask: dict[str, list[tuple[str, int]]]) -> list[Identity]:
    """Identities of one table: its leaves sum to its inner cells and to equal cells elsewhere."""
    identities: list[Identity] = []
    m = level_masks[idx]
    size = np.asarray(m.sum(axis=1)).ravel()
    overlap = (m @ m.T).toarray()
    contains = (overlap == size[None, :]) & (size[:, None] > size[None, :])
    leaf = ~contains.any(axis=1)
    leaves = np.flatnonzero(leaf)
    lo = overlap[np.ix_(leaves, leaves)]
    if (lo - np.diag(np.diag(lo))).any():
        return identities  # leaves overlap: no partition to add up
    for k in np.flatnonzero(~leaf):  # inner cells of the table itself
        inside = leaves[overlap[k, leaves] == size[leaves]]
        if size[inside].sum() == size[k]:
            identities.append(Identity(name, lv, tuple(idx[i] for i in inside), lv,
                                       idx[k]))
    union = np.asarray(m[leaves].sum(axis=0)).ravel() > 0
    for whole_level, j in by_mask.get(_digest(np.flatnonzero(union)), []):
        if whole_level == lv and j in idx:
            continue
        identities.append(Identity(name, lv, tuple(idx[i] for i in leaves),
                                   whole_level, j))
    return identities


@functools.lru_cache(maxsize=4)
def find_identities(cells: tuple[Sf1Cell, ...]) -> tuple[Identity, ...]:
    """Every identity of these definitions, worked out once per process for each set of
    them (40 % of reading a 3-tract release; every release of the same tables has the same)."""
    levels = {lv: [c for c in cells if c.level == lv] for lv in ("block", "tract")}
    masks = {lv: _masks(cs) for lv, cs in levels.items()}
    by_mask = _count_cells_by_mask(levels, masks)
    identities: list[Identity] = []
    for lv, cs in levels.items():
        tables: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(cs):
            if not c.is_median:
                tables[c.table].append(i)
        for name, idx in tables.items():
            identities.extend(_table_identities(name, lv, idx, masks[lv], by_mask))
    return tuple(identities)


def group_sizes(cells: tuple[Sf1Cell, ...]) -> dict[int, tuple[int, ...]]:
    """For each block-level median cell (index among block cells): block count cells whose sum
    is the size of the group the median is taken over (a table's leaves that tile it)."""
    block = [c for c in cells if c.level == "block"]
    out: dict[int, tuple[int, ...]] = {}
    medians = [i for i, c in enumerate(block) if c.is_median]
    if not medians:
        return out
    masks = _masks(block)
    tables: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(block):
        if not c.is_median:
            tables[c.table].append(i)
    for k in medians:
        group = masks[k]
        size_k = group.nnz
        for idx in tables.values():
            m = masks[idx]
            size = np.asarray(m.sum(axis=1)).ravel()
            overlap = (m @ m.T).toarray()
            contains = (overlap == size[None, :]) & (size[:, None] > size[None, :])
            leaves = np.flatnonzero(~contains.any(axis=1))
            lo = overlap[np.ix_(leaves, leaves)]
            if (lo - np.diag(np.diag(lo))).any():
                continue
            inside = np.asarray((m[leaves] @ group.T).toarray()).ravel() == size[leaves]
            if size[leaves][inside].sum() == size_k:
                out[k] = tuple(idx[i] for i in leaves[inside])
                break
    return out


def _per_tract(release: CensusRelease, block_matrix: np.ndarray) -> np.ndarray:
    """Sum block rows into their tracts (tract order of the release)."""
    tract_index = np.searchsorted(np.array(release.tracts),
                                  np.array([tract_of(b) for b in release.blocks]))
    out = np.zeros((len(release.tracts), block_matrix.shape[1]), dtype=np.int64)
    np.add.at(out, tract_index, block_matrix)
    return out


def check_identities(release: CensusRelease) -> None:
    """Raise InconsistentReleaseError naming the first broken identities."""
    cells = {"block": release.block_cells, "tract": release.tract_cells}
    values = {"block": release.block_values, "tract": release.tract_values}
    geos = {"block": release.blocks, "tract": release.tracts}
    problems: list[str] = []
    total = 0
    for ident in find_identities(release.cells):
        parts = values[ident.parts_level][:, list(ident.parts)].sum(axis=1, keepdims=True)
        whole = values[ident.whole_level][:, [ident.whole]]
        level = ident.whole_level
        if ident.parts_level == "block" and ident.whole_level == "tract":
            parts = _per_tract(release, parts)
        elif ident.parts_level == "tract" and ident.whole_level == "block":
            whole, level = _per_tract(release, whole), "tract"
        if parts.shape[0] != whole.shape[0]:
            continue
        bad = np.flatnonzero(parts[:, 0] != whole[:, 0])
        total += len(bad)
        w = cells[ident.whole_level][ident.whole]
        for g in bad[: MAX_REPORTED - len(problems)]:
            where = f"{level} {geos[level][g]}"
            cross = ident.parts_level != ident.whole_level
            note = " (summed over its blocks)" if cross else ""
            parts_note = note if ident.parts_level == "block" else ""
            whole_note = note if ident.whole_level == "block" else ""
            problems.append(
                f"{where}: the {len(ident.parts)} {ident.parts_table} cells sum to "
                f"{parts[g, 0]}{parts_note} but {w.table} {w.cell} ({w.title}){whole_note}"
                f" = {whole[g, 0]}")
    if problems:
        more = f" ({total - len(problems)} more)" if total > len(problems) else ""
        raise InconsistentReleaseError(f"{release.path}: tables do not add up: "
                                       + "; ".join(problems) + more)
