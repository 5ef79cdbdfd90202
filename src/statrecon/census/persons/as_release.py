"""SF1 cells as statrecon statistics: a block's published tables as a release file (YAML).

Every cell becomes ``SELECT COUNT(*) FROM persons WHERE ...`` in the release dialect (race
flags and Hispanic as Y/N categories, "two or more races" spelled out as pairs of flags), so
the general exact engine (`statrecon reconstruct block.yaml`) can enumerate a block's datasets
and cross-check the census engine. Tract cells are facts about the block only when it is the
tract's single block; otherwise they are left out and the description says so.
"""

from __future__ import annotations

import itertools
from typing import Any

from statrecon.census.geography import tract_of
from statrecon.census.persons.cells import MAX_AGE, MEDIAN_SCALE, RACES, Sf1Cell
from statrecon.census.persons.identities import group_sizes
from statrecon.census.persons.release import CensusRelease
from statrecon.errors import StatreconError
from statrecon.outputs import dump_yaml

TABLE = "persons"


def _two_or_more() -> str:
    pairs = [f"({a} = 'Y' AND {b} = 'Y')" for a, b in itertools.combinations(RACES, 2)]
    return "(" + " OR ".join(pairs) + ")"


def release_predicate(cell: Sf1Cell) -> str:
    """The cell's condition in the release SQL dialect (categorical Y/N flags)."""
    parts: list[str] = []
    for name, flag in zip(RACES, cell.race, strict=True):
        if flag is not None:
            parts.append(f"{name} = '{'Y' if flag else 'N'}'")
    if cell.two_or_more is not None:
        parts.append(_two_or_more() if cell.two_or_more else f"NOT {_two_or_more()}")
    if cell.hispanic is not None:
        parts.append(f"hispanic = '{'Y' if cell.hispanic else 'N'}'")
    if cell.sex is not None:
        parts.append(f"sex = '{cell.sex}'")
    if (cell.age_lo, cell.age_hi) != (0, MAX_AGE):
        parts.append(f"age BETWEEN {cell.age_lo} AND {cell.age_hi}")
    return " AND ".join(parts)


def block_release(release: CensusRelease, block: str) -> dict[str, Any]:
    """The release document (version 1) of one block's published cells, each an exact
    count: refused for noisy measurements and protected tables, whose values are not the
    counts (a statistic stated exact would make a reconstruction of them a false proof)."""
    if release.protection is not None or (release.noise is not None and release.noise.noisy):
        what = (f"tables protected by {release.protection.method}" if release.protection
                else "noisy measurements")
        raise StatreconError(f"{release.path}: {what}, not the counts: block-release writes "
                             "exact statistics; use `census certain` or `census reconstruct`")
    if block not in release.blocks:
        raise StatreconError(f"{release.path}: no block {block!r} in the release")
    b = release.blocks.index(block)
    tract = tract_of(block)
    alone = sum(1 for x in release.blocks if x.startswith(tract)) == 1
    cells: list[tuple[Sf1Cell, int]] = list(zip(release.block_cells,
                                                 release.block_values[b].tolist(), strict=True))
    if alone and tract in release.tracts:
        t = release.tracts.index(tract)
        cells += list(zip(release.tract_cells, release.tract_values[t].tolist(), strict=True))
    sizes = group_sizes(release.cells)
    statistics: list[dict[str, Any]] = []
    for i, (cell, value) in enumerate(cells):
        where = release_predicate(cell)
        suffix = f" WHERE {where}" if where else ""
        ident = f"{cell.table}:{cell.cell}"
        if cell.is_median:  # P13: a median of an empty group is not published
            if i in sizes and int(release.block_values[b, list(sizes[i])].sum()) > 0:
                statistics.append({"id": ident, "sql": f"SELECT MEDIAN(age) FROM {TABLE}"
                                   f"{suffix}", "value": value / MEDIAN_SCALE})
            continue
        statistics.append({"id": ident, "sql": f"SELECT COUNT(*) FROM {TABLE}{suffix}",
                           "value": int(value)})
    flags = {"type": "categorical", "values": ["N", "Y"]}
    note = ("tract cells included: the block is its tract's only block" if alone else
            "tract cells left out: they also count the tract's other blocks")
    return {
        "version": 1,
        "name": f"sf1-block-{block}",
        "description": f"SF1 person tables of block {block} ({note}).",
        "table": TABLE,
        "records": int(release.block_population()[block]),
        "columns": {"sex": {"type": "categorical", "values": ["female", "male"]},
                    "age": {"type": "integer", "min": 0, "max": MAX_AGE},
                    **{r: dict(flags) for r in RACES}, "hispanic": dict(flags)},
        "constraints": [" OR ".join(f"{r} = 'Y'" for r in RACES)],
        "statistics": statistics,
    }


def block_release_yaml(release: CensusRelease, block: str) -> str:
    return dump_yaml(block_release(release, block), width=1000)
