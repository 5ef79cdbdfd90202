"""Resumable run stores: one rule for every run, census tracts and claims blocks alike.

The rule (``UnitStore``):

* each unit is stored as soon as it finishes, durably (a file renamed into place, or a line
  flushed and fsync'ed), so ``kill -9`` loses only the units in flight;
* the store is tied to a digest of the run's inputs; a store made from other inputs is
  refused with a one-line ``StatreconError`` naming it, never mixed in (files written before
  digests were recorded carry none and resume);
* a rerun skips every unit stored with a final status (``FINAL``), runs the others again
  (``unknown``: a time limit cut it short), and the newest record of a unit wins;
* what a crash mid-write leaves (temporary files, a torn last line) is dropped.

``ReconStore`` (census): one Parquet part per tract in ``OUT.parts/``, merged into ``OUT`` when
every tract is done; the release digest is in each file's metadata. Each row is one block: its
reconstructed persons (with a ``certain`` flag per person) and what was proven (``unique``,
``certain_persons``, and the same at the tables' age resolution).

``PartStore`` (census certain): one Parquet part per tract in ``OUT.parts/``, each tagged with
the run's key (release digest and delta); the caller merges them into ``OUT`` and clears them.

``BlockStore`` (claims): one JSON line per block record (a ``runs.records.BlockRecord``, in
the shape of ``claims verify --json``); the run's parameters, its digest, in ``run.json`` next
to it.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from statrecon import inputs
from statrecon.census.persons.cells import RACES, SEXES, attribute_grid
from statrecon.engines.census import TractResult
from statrecon.errors import StatreconError
from statrecon.outputs import write_atomically
from statrecon.runs.records import BlockRecord

META_KEY = b"statrecon.census.recon"
FINAL = ("ok", "infeasible")  # a unit stored with one of these is not run again


@runtime_checkable
class UnitStore(Protocol):
    """What a run needs from its store (the rule in the module docstring)."""

    digest: str  # of the run's inputs; a store of another digest is refused

    def check(self) -> None:
        """Refuse (StatreconError) a store made from other inputs, before any work."""

    def finished(self) -> set[str]:
        """Check, drop a crash's leftovers, and name the units not to run again."""

    def write(self, unit: str, record: Any) -> None:
        """Store one finished unit durably, with the digest."""


PERSON = pa.struct([("sex", pa.string()), ("age", pa.int16())]
                   + [(r, pa.bool_()) for r in RACES]
                   + [("hispanic", pa.bool_()), ("certain", pa.bool_()),
                      ("score", pa.float32())])
SCHEMA = pa.schema([
    ("tract", pa.string()), ("block", pa.string()), ("status", pa.string()),
    ("persons", pa.int32()), ("unique", pa.bool_()), ("certain_persons", pa.int32()),
    ("unique_binned", pa.bool_()), ("certain_persons_binned", pa.int32()),
    ("records", pa.list_(PERSON)),
])


def decode_persons(records: np.ndarray, certain: np.ndarray,
                   scores: np.ndarray | None = None) -> list[dict[str, Any]]:
    """Attribute-cell indices -> person dicts; the first k copies of a cell that is certain k
    times are flagged certain; ``scores[i]`` (when drawn) is record i's sample share."""
    g = attribute_grid()
    left = dict(zip(*np.unique(certain, return_counts=True), strict=True)) if len(certain) \
        else {}
    out = []
    for at, c in enumerate(records.tolist()):
        race = int(g.race[c])
        flag = left.get(c, 0) > 0
        if flag:
            left[c] -= 1
        person: dict[str, Any] = {"sex": SEXES[int(g.sex[c])], "age": int(g.age[c])}
        person.update({r: bool((race >> i) & 1) for i, r in enumerate(RACES)})
        person.update(hispanic=bool(g.hispanic[c]), certain=flag,
                      score=None if scores is None else float(scores[at]))
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
        rows["records"].append(decode_persons(b.records, b.certain, b.scores) if b else None)
    summary = {"status": result.status, "variables": result.variables,
               "constraints": result.constraints, "solve_s": round(result.solve_s, 4),
               "certify_s": round(result.certify_s, 4), "certify_rounds": result.certify_rounds,
               "conflict": list(result.conflict), "samples": result.samples,
               "sample_s": round(result.sample_s, 4)}
    return pa.table(rows, schema=SCHEMA).replace_schema_metadata(
        {META_KEY: json.dumps({"tracts": {result.tract: summary}}).encode()})


def _stored_meta(path: Path, key: bytes, what: str) -> dict[str, Any]:
    """A stored file's metadata object through the metadata gate (``inputs.json_metadata``:
    too large or malformed is one line naming the file); a file Parquet cannot read, or
    metadata that is no JSON object, counts as none."""
    try:
        meta = inputs.json_metadata(pq.read_schema(path).metadata, key, path, what)
    except (OSError, pa.ArrowInvalid):
        return {}
    return meta if isinstance(meta, dict) else {}


def _tract_statuses(meta: dict[str, Any], path: Path) -> dict[str, str]:
    """Tract -> status from a stored file's metadata; records of another shape are one line
    naming the file (a resumed run reads what is in its output folder)."""
    tracts = meta.get("tracts", {})
    if not isinstance(tracts, dict) or not all(
            isinstance(rec, dict) and isinstance(rec.get("status"), str)
            for rec in tracts.values()):
        raise StatreconError(f"{path}: its tract records are not those of a statrecon census "
                             f"reconstruction; remove it or choose another --out")
    return {str(t): rec["status"] for t, rec in tracts.items()}


class ReconStore:
    """Where a census reconstruction keeps its finished tracts (see module docstring)."""

    def __init__(self, out: Path, release_digest: str) -> None:
        self.out = out
        self.parts = out.with_name(out.name + ".parts")
        self.digest = release_digest

    def _meta(self, path: Path) -> dict[str, Any]:
        meta = _stored_meta(path, META_KEY, "census reconstruction")
        if meta.get("release") not in (None, self.digest):
            raise StatreconError(f"{path} was made from a different release; remove it or "
                                 f"choose another --out")
        return meta

    def _statuses(self) -> dict[str, str]:
        """Tract -> status of every tract already stored (final file, then parts)."""
        done: dict[str, str] = {}
        if self.out.exists():
            meta = self._meta(self.out)
            if not meta:
                raise StatreconError(f"{self.out} exists and is not a statrecon census "
                                     f"reconstruction; remove it or choose another --out")
            done.update(_tract_statuses(meta, self.out))
        if self.parts.is_dir():
            for part in sorted(self.parts.glob("*.parquet")):
                done.update(_tract_statuses(self._meta(part), part))
        return done

    def check(self) -> None:
        """Refuse an OUT or a part made from another release (each part records its own)."""
        self._statuses()

    def finished(self) -> set[str]:
        """Tracts already stored with a final status (final file and parts)."""
        self._remove_stale()
        return {t for t, s in self._statuses().items() if s in FINAL}

    def _remove_stale(self) -> None:
        """Temporary files of a run killed mid-write (kill -9) are never valid: remove them."""
        stale = [self.out.with_name(self.out.name + ".tmp"),  # as named before outputs.py
                 *self.out.parent.glob(f".{glob.escape(self.out.name)}.*.tmp")]
        if self.parts.is_dir():
            stale += list(self.parts.glob(".*.tmp"))
        for path in stale:
            path.unlink(missing_ok=True)

    def write(self, unit: str, record: pa.Table) -> None:
        """Store one tract (its rows, from ``tract_table``) atomically."""
        self.parts.mkdir(parents=True, exist_ok=True)
        meta = json.loads(record.schema.metadata[META_KEY])
        meta["release"] = self.digest
        table = record.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        write_atomically(self.parts / f"{unit}.parquet", lambda tmp: pq.write_table(table, tmp))

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


class PartStore:
    """One Parquet part per finished unit in ``OUT.parts/``, its metadata (under
    ``meta_key``) the run's ``key`` plus the unit's own information (module docstring)."""

    def __init__(self, out: Path, key: dict[str, Any], meta_key: bytes) -> None:
        self.parts = out.with_name(out.name + ".parts")
        self.key = key
        self.meta_key = meta_key

    def _meta(self, path: Path) -> dict[str, Any]:
        return _stored_meta(path, self.meta_key, "stored part")

    def finished(self) -> dict[str, tuple[Path, dict[str, Any]]]:
        """Unit -> (its part, its metadata); a part made with another key is refused (never
        mixed in), a torn temporary file removed."""
        done: dict[str, tuple[Path, dict[str, Any]]] = {}
        if not self.parts.is_dir():
            return done
        for stale in self.parts.glob(".*.tmp"):
            stale.unlink(missing_ok=True)
        for part in sorted(self.parts.glob("*.parquet")):
            meta = self._meta(part)
            if {k: meta.get(k) for k in self.key} != self.key or "unit" not in meta:
                raise StatreconError(f"{part} was made from another release or delta; "
                                     f"remove {self.parts} or choose another --out")
            done[str(meta["unit"])] = (part, meta)
        return done

    def write(self, unit: str, table: pa.Table, info: dict[str, Any]) -> None:
        """Store one unit atomically."""
        self.parts.mkdir(parents=True, exist_ok=True)
        meta = {**self.key, "unit": unit, **info}
        tagged = table.replace_schema_metadata({self.meta_key: json.dumps(meta).encode()})
        write_atomically(self.parts / f"{unit}.parquet",
                         lambda tmp: pq.write_table(tagged, tmp))

    def clear(self) -> None:
        """Remove the parts once merged into OUT."""
        if self.parts.is_dir():
            for part in self.parts.glob("*.parquet"):
                part.unlink()
            if not any(self.parts.iterdir()):
                self.parts.rmdir()


def read_recon(path: Path) -> tuple[pa.Table, dict[str, Any]]:
    """A finished reconstruction and its metadata (tract summaries, run information)."""
    table = inputs.read_columnar(path, "census reconstruction")  # a user's file: the gate
    meta = inputs.json_metadata(table.schema.metadata, META_KEY, path, "census reconstruction")
    if not isinstance(meta, dict) or not set(SCHEMA.names) <= set(table.column_names):
        raise StatreconError(f"{path}: not a statrecon census reconstruction (make one with "
                             f"`statrecon census reconstruct`)")
    return table, meta


class BlockStore:
    """Where a claims run keeps its finished blocks (see module docstring).

    ``inputs`` are the run's parameters (``claims experiment``: blocks, seed, formulation, k,
    time limit), written to ``run.json`` as they were before this class existed, so a folder
    of an older run resumes.
    """

    def __init__(self, path: Path, inputs: Mapping[str, Any]) -> None:
        self.path = path
        self.meta = path.with_name("run.json")
        self.inputs = dict(inputs)
        self.digest = json.dumps(self.inputs)
        self.stored: dict[str, dict[str, Any]] = {}  # the JSON lines, as read by ``finished``

    def check(self) -> None:
        """Refuse a folder holding another run's results; record this run's parameters."""
        if self.meta.exists() and _read_json(self.meta) != self.inputs:
            raise StatreconError(f"{self.path.parent} holds results of a different run "
                                 f"({self.meta.read_text(encoding='utf-8').strip()[:200]}); "
                                 "use another --out")
        write_atomically(self.meta, lambda tmp: tmp.write_text(self.digest, encoding="utf-8"))

    def finished(self) -> set[str]:
        """Blocks already stored with a final status; ``record`` reads them back."""
        self.check()
        self._end_torn_line()
        self.stored = read_records(self.path)
        return {b for b, r in self.stored.items() if r.get("status") in FINAL}

    def record(self, block: str) -> BlockRecord:
        """The stored record of a block ``finished`` named."""
        return BlockRecord.from_json(self.stored[block])

    def write(self, unit: str, record: BlockRecord) -> None:
        """Append the record of block ``unit`` and make it durable (flush and fsync)."""
        if record.block != unit:
            raise ValueError(f"record of block {record.block} stored as {unit}")
        self._end_torn_line()
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record.to_json()) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _end_torn_line(self) -> None:
        """End a line a crash cut short, so the next record starts on a line of its own (the
        torn one is ignored by ``read_records``)."""
        if not self.path.exists() or not self.path.stat().st_size:
            return
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
        if torn:
            with self.path.open("a", encoding="utf-8") as f:
                f.write("\n")


def _read_json(path: Path) -> object:
    """The content of a JSON file (None if unreadable)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Block -> newest record of a claims store (a torn last line from a crash is ignored)."""
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            out[rec["block"]] = rec
    return out
