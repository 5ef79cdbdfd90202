"""Run Generate-then-Verify over many blocks: priors, one worker per block, a resumable store.

Each block is one unit of work: the published tables (and, when known, the true units for the
soundness check and household coverage) go in; a JSON-able record comes out, in the shape of
``claims verify --json``. Records are appended to a JSON-lines file as blocks finish, so a
crash loses only the blocks in flight and a rerun skips the finished ones.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from statrecon.census.households import schema as hh
from statrecon.engines.claims import (
    BlockClaims,
    BlockRelease,
    Claim,
    ClaimsOptions,
    binomial_baseline,
    verify_block,
)
from statrecon.runs.parallel import run_units


@dataclass(frozen=True)
class Prior:
    """The unit types of a population (tract or state) with their counts: the baseline's P."""

    types: np.ndarray  # (n, 10) codes of the distinct unit types
    counts: np.ndarray  # units of each

    @classmethod
    def of(cls, codes: np.ndarray) -> Prior:
        if len(codes) == 0:
            return cls(np.zeros((0, hh.N_COLUMNS), dtype=np.uint8), np.zeros(0, dtype=np.int64))
        uniq, counts = np.unique(codes, axis=0, return_counts=True)
        return cls(uniq.astype(np.uint8), counts.astype(np.int64))

    def probability(self, claim: Claim) -> float:
        total = int(self.counts.sum())
        return float(self.counts[claim.matches(self.types)].sum()) / total if total else 0.0


@dataclass(frozen=True)
class BlockTask:
    block: str
    tract: str
    state: str
    values: np.ndarray  # published cells
    truth: np.ndarray | None  # (units, 10) codes of the true units, when known


@dataclass(frozen=True)
class Shared:
    """Sent once per worker: options and the tract and state priors."""

    options: ClaimsOptions
    tract_priors: dict[str, Prior] = field(default_factory=dict)
    state_priors: dict[str, Prior] = field(default_factory=dict)


def claim_record(claim: Claim, trivial: bool, units: int, tract: Prior | None,
                 state: Prior | None) -> dict[str, Any]:
    """One verified claim in the JSON contract of ``claims verify --json``."""
    def baseline(prior: Prior | None) -> float | None:
        if prior is None or prior.counts.sum() == 0:
            return None
        return binomial_baseline(units, claim.multiplicity, prior.probability(claim))

    return {"assignment": claim.assignment(), "multiplicity": claim.multiplicity,
            "columns": claim.k, "singleton": claim.multiplicity == 1, "trivial": trivial,
            "baseline_tract": baseline(tract), "baseline_state": baseline(state)}


def coverage(claims: list[Claim], trivial: list[bool], truth: np.ndarray,
             singleton: bool) -> dict[str, int]:
    """Per number of columns k (a string key, as in JSON): distinct true units matched by a
    non-trivial verified claim."""
    covered: dict[int, np.ndarray] = {}
    for claim, triv in zip(claims, trivial, strict=True):
        if triv or (singleton and claim.multiplicity != 1):
            continue
        hit = claim.matches(truth)
        covered[claim.k] = covered.get(claim.k, np.zeros(len(truth), dtype=bool)) | hit
    return {str(k): int(v.sum()) for k, v in sorted(covered.items())}


def attack_block(shared: Shared, task: BlockTask) -> dict[str, Any]:
    """Verify one block and describe it (runs in a worker; no I/O)."""
    result: BlockClaims = verify_block(BlockRelease(task.block, task.values), shared.options)
    tract = shared.tract_priors.get(task.tract)
    state = shared.state_priors.get(task.state)
    record: dict[str, Any] = {
        "block": task.block, "tract": task.tract, "state": task.state,
        "households": result.units, "statistics": result.statistics,
        "status": result.status,
        "claims": [claim_record(c, t, result.units, tract, state)
                   for c, t in zip(result.verified, result.trivial, strict=True)],
        "negative_claims": [
            {"assignment": c.assignment(), "columns": c.k, "impossible_multiplicities": [0],
             "at_least": 1, "trivial": t}
            for c, t in zip(result.negative, result.negative_trivial, strict=True)],
        "negative_undecided": result.negative_undecided,
        "reconstructed": result.reconstructed,
        "candidates": result.candidates, "unknown_candidates": result.unknown,
        "solutions": result.solutions, "allowed_types": result.allowed_types,
        "elapsed_s": round(result.elapsed_s, 4),
        "timings_s": {k: round(v, 4) for k, v in result.timings.items()},
    }
    if task.truth is not None:
        record["sound"] = all(int(c.matches(task.truth).sum()) == c.multiplicity
                              for c in result.verified) and all(
            int(c.matches(task.truth).sum()) >= 1 for c in result.negative)
        record["covered_singleton"] = coverage(result.verified, result.trivial, task.truth,
                                               singleton=True)
        record["covered_all"] = coverage(result.verified, result.trivial, task.truth,
                                         singleton=False)
    return record


def read_records(path: Path) -> dict[str, dict[str, Any]]:
    """Finished blocks of an earlier run (a torn last line from a crash is ignored)."""
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


def run_blocks(tasks: Iterable[BlockTask], shared: Shared, *, workers: int = 1,
               executor: str | None = None, store: Path | None = None,
               progress: Callable[[dict[str, Any]], None] | None = None
               ) -> Iterator[dict[str, Any]]:
    """Yield a record per block as it finishes; with ``store``, append it there first.

    Blocks already in ``store`` with status "ok" are yielded from it and not run again.
    """
    done = read_records(store) if store is not None else {}
    todo = []
    for task in tasks:
        rec = done.get(task.block)
        if rec is not None and rec.get("status") == "ok":
            if progress is not None:
                progress(rec)
            yield rec
        else:
            todo.append(task)
    handle = _append(store) if store is not None else None
    results = run_units(attack_block, shared, todo, workers=workers, executor=executor)
    try:
        for _, rec in results:
            if handle is not None:
                handle.write(json.dumps(rec) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            if progress is not None:
                progress(rec)
            yield rec
    finally:  # on Ctrl-C or an error the pool stops now, not when the generator is collected
        results.close()
        if handle is not None:
            handle.close()


def _append(store: Path) -> TextIO:
    """Open the store for appending; a line torn by a crash is ended first, so the next record
    starts on a line of its own (the torn one is ignored by ``read_records``)."""
    torn = False
    if store.exists() and store.stat().st_size:
        with store.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    handle = store.open("a", encoding="utf-8")
    if torn:
        handle.write("\n")
    return handle
