"""Resumable reconstruction output: one Parquet part per finished tract, merged at the end.

While a run is going, ``OUT.parts/`` holds one file per finished tract, each written to a
temporary name and renamed (atomic on POSIX), so ``kill -9`` loses only the tracts in flight.
A rerun reads the parts (and a previous ``OUT``), skips every tract that finished with status
``ok`` or ``infeasible``, and redoes the ``unknown`` ones. When every tract is done the parts
are merged into ``OUT`` (again via a temporary file) and removed.

Each row is one block: its reconstructed persons (with a ``certain`` flag per person) and what
was proven (``unique``, ``certain_persons``, and the same at the tables' age resolution).
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from statrecon.census.persons.cells import RACES, SEXES, attribute_grid
from statrecon.engines.census import TractResult
from statrecon.errors import StatreconError
from statrecon.outputs import write_atomically

META_KEY = b"statrecon.census.recon"
DONE = ("ok", "infeasible")

PERSON = pa.struct([("sex", pa.string()), ("age", pa.int16())]
                   + [(r, pa.bool_()) for r in RACES]
                   + [("hispanic", pa.bool_()), ("certain", pa.bool_())])
SCHEMA = pa.schema([
    ("tract", pa.string()), ("block", pa.string()), ("status", pa.string()),
    ("persons", pa.int32()), ("unique", pa.bool_()), ("certain_persons", pa.int32()),
    ("unique_binned", pa.bool_()), ("certain_persons_binned", pa.int32()),
    ("records", pa.list_(PERSON)),
])


def decode_persons(records: np.ndarray, certain: np.ndarray) -> list[dict[str, Any]]:
    """Attribute-cell indices -> person dicts; the first k copies of a cell that is certain k
    times are flagged certain."""
    g = attribute_grid()
    left = dict(zip(*np.unique(certain, return_counts=True), strict=True)) if len(certain) \
        else {}
    out = []
    for c in records.tolist():
        race = int(g.race[c])
        flag = left.get(c, 0) > 0
        if flag:
            left[c] -= 1
        person: dict[str, Any] = {"sex": SEXES[int(g.sex[c])], "age": int(g.age[c])}
        person.update({r: bool((race >> i) & 1) for i, r in enumerate(RACES)})
        person.update(hispanic=bool(g.hispanic[c]), certain=flag)
        out.append(person)
    return out


def tract_table(result: TractResult, blocks: tuple[str, ...]) -> pa.Table:
    """The rows of one finished tract (every block of it, whatever the status)."""
    by_block = {b.block: b for b in result.blocks}
    rows: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for block in blocks:
        b = by_block.get(block)
        rows["tract"].append(result.tract)
        rows["block"].append(block)
        rows["status"].append(result.status)
        rows["persons"].append(b.persons if b else None)
        rows["unique"].append(b.unique if b else None)
        proven = b is not None and b.unique is not None
        rows["certain_persons"].append(len(b.certain) if b and proven else None)
        rows["unique_binned"].append(b.unique_binned if b else None)
        rows["certain_persons_binned"].append(b.certain_binned if b and proven else None)
        rows["records"].append(decode_persons(b.records, b.certain) if b else None)
    summary = {"status": result.status, "variables": result.variables,
               "constraints": result.constraints, "solve_s": round(result.solve_s, 4),
               "certify_s": round(result.certify_s, 4), "certify_rounds": result.certify_rounds,
               "conflict": list(result.conflict)}
    return pa.table(rows, schema=SCHEMA).replace_schema_metadata(
        {META_KEY: json.dumps({"tracts": {result.tract: summary}}).encode()})


class ReconStore:
    """Where a reconstruction run keeps its finished tracts (see module docstring)."""

    def __init__(self, out: Path, release_digest: str) -> None:
        self.out = out
        self.parts = out.with_name(out.name + ".parts")
        self.digest = release_digest

    def _meta(self, path: Path) -> dict[str, Any]:
        try:
            raw = (pq.read_schema(path).metadata or {}).get(META_KEY)
            meta: dict[str, Any] = json.loads(raw) if raw else {}
        except (OSError, pa.ArrowInvalid, ValueError):
            meta = {}
        if meta.get("release") not in (None, self.digest):
            raise StatreconError(f"{path} was made from a different release; remove it or "
                                 f"choose another --out")
        return meta

    def finished(self) -> dict[str, str]:
        """Tract -> status of every tract already stored (final file and parts)."""
        done: dict[str, str] = {}
        self._remove_stale()
        if self.out.exists():
            meta = self._meta(self.out)
            if not meta:
                raise StatreconError(f"{self.out} exists and is not a statrecon census "
                                     f"reconstruction; remove it or choose another --out")
            done.update({t: s["status"] for t, s in meta.get("tracts", {}).items()})
        if self.parts.is_dir():
            for part in sorted(self.parts.glob("*.parquet")):
                meta = self._meta(part)
                done.update({t: s["status"] for t, s in meta.get("tracts", {}).items()})
        return {t: s for t, s in done.items() if s in DONE}

    def _remove_stale(self) -> None:
        """Temporary files of a run killed mid-write (kill -9) are never valid: remove them."""
        stale = [self.out.with_name(self.out.name + ".tmp"),  # as named before outputs.py
                 *self.out.parent.glob(f".{glob.escape(self.out.name)}.*.tmp")]
        if self.parts.is_dir():
            stale += list(self.parts.glob(".*.tmp"))
        for path in stale:
            path.unlink(missing_ok=True)

    def write(self, table: pa.Table, tract: str) -> None:
        """Store one tract atomically."""
        self.parts.mkdir(parents=True, exist_ok=True)
        meta = json.loads(table.schema.metadata[META_KEY])
        meta["release"] = self.digest
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        write_atomically(self.parts / f"{tract}.parquet", lambda tmp: pq.write_table(table, tmp))

    def merge(self, run_info: dict[str, Any]) -> pa.Table:
        """Fold the parts into OUT (atomically), newest status per tract wins."""
        tables: list[pa.Table] = []
        tracts: dict[str, Any] = {}
        if self.out.exists():
            old = pq.read_table(self.out)
            tracts.update(self._meta(self.out).get("tracts", {}))
            tables.append(old.replace_schema_metadata(None))
        parts = sorted(self.parts.glob("*.parquet")) if self.parts.is_dir() else []
        fresh: set[str] = set()
        for part in parts:
            table = pq.read_table(part)
            meta = self._meta(part)
            tracts.update(meta.get("tracts", {}))
            fresh.update(meta.get("tracts", {}))
            tables.append(table.replace_schema_metadata(None))
        if tables and fresh and len(tables) > len(parts):  # drop stale rows of redone tracts
            tables[0] = tables[0].filter(
                pa.compute.invert(pa.compute.is_in(tables[0]["tract"],
                                                   value_set=pa.array(sorted(fresh)))))
        merged = pa.concat_tables(tables) if tables else SCHEMA.empty_table()
        merged = merged.sort_by([("block", "ascending")])
        meta = {"release": self.digest, "tracts": dict(sorted(tracts.items())), **run_info}
        merged = merged.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        write_atomically(self.out, lambda tmp: pq.write_table(merged, tmp))
        for part in parts:
            part.unlink()
        if self.parts.is_dir() and not any(self.parts.iterdir()):
            self.parts.rmdir()
        return merged


def read_recon(path: Path) -> tuple[pa.Table, dict[str, Any]]:
    """A finished reconstruction and its metadata (tract summaries, run information)."""
    if not path.exists():
        raise StatreconError(f"{path}: no such file")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise StatreconError(f"{path}: not a Parquet file ({e})") from None
    raw = (table.schema.metadata or {}).get(META_KEY)
    if raw is None or not set(SCHEMA.names) <= set(table.column_names):
        raise StatreconError(f"{path}: not a statrecon census reconstruction (make one with "
                             f"`statrecon census reconstruct`)")
    return table, json.loads(raw)
