"""Run Generate-then-Verify over many blocks: tasks, one worker per block, a resumable store.

Each block is one unit of work: the published tables (and, when known, the true units for the
soundness check and household coverage) go in; a ``BlockRecord`` (``runs.records``: the shape
of ``claims verify --json``, typed) comes out. With a ``BlockStore`` records are stored as
blocks finish, so a crash loses only the blocks in flight and a rerun skips the finished ones
(``runs.stores``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from statrecon.census.geography import state_of, tract_of
from statrecon.census.households.files import encode
from statrecon.census.households.priors import Prior
from statrecon.census.households.tabulate import tabulate_sql
from statrecon.engines.claims import (
    BlockClaims,
    BlockRelease,
    Claim,
    ClaimsOptions,
    binomial_baseline,
    verify_block,
)
from statrecon.errors import StatreconError
from statrecon.runs.parallel import run_units
from statrecon.runs.progress import Progress, Step
from statrecon.runs.records import (
    BlockRecord,
    ClaimRecord,
    NegativeClaimRecord,
    TruthCheck,
)
from statrecon.runs.stores import BlockStore


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
                 state: Prior | None) -> ClaimRecord:
    """One verified claim, with its tract and state baselines (None without a prior)."""
    def baseline(prior: Prior | None) -> float | None:
        if prior is None or prior.counts.sum() == 0:
            return None
        return binomial_baseline(units, claim.multiplicity, prior.probability(claim))

    return ClaimRecord(claim.assignment(), claim.multiplicity, claim.k,
                       claim.multiplicity == 1, trivial, baseline(tract), baseline(state))


def coverage(claims: list[Claim], trivial: list[bool], truth: np.ndarray,
             singleton: bool) -> dict[int, int]:
    """Per number of columns k: distinct true units matched by a non-trivial verified claim."""
    covered: dict[int, np.ndarray] = {}
    for claim, triv in zip(claims, trivial, strict=True):
        if triv or (singleton and claim.multiplicity != 1):
            continue
        hit = claim.matches(truth)
        covered[claim.k] = covered.get(claim.k, np.zeros(len(truth), dtype=bool)) | hit
    return {k: int(v.sum()) for k, v in sorted(covered.items())}


def truth_check(result: BlockClaims, truth: np.ndarray) -> TruthCheck:
    """Every verified claim holds in the true units (and every negative one), and the true
    units the claims cover."""
    sound = all(int(c.matches(truth).sum()) == c.multiplicity for c in result.verified) \
        and all(int(c.matches(truth).sum()) >= 1 for c in result.negative)
    return TruthCheck(sound, coverage(result.verified, result.trivial, truth, singleton=True),
                      coverage(result.verified, result.trivial, truth, singleton=False))


def attack_block(shared: Shared, task: BlockTask) -> BlockRecord:
    """Verify one block and describe it (runs in a worker; no I/O)."""
    result: BlockClaims = verify_block(BlockRelease(task.block, task.values), shared.options)
    tract = shared.tract_priors.get(task.tract)
    state = shared.state_priors.get(task.state)
    return BlockRecord(
        block=task.block, tract=task.tract, state=task.state,
        households=result.units, statistics=result.statistics, status=result.status,
        claims=tuple(claim_record(c, t, result.units, tract, state)
                     for c, t in zip(result.verified, result.trivial, strict=True)),
        negative_claims=tuple(
            NegativeClaimRecord(c.assignment(), c.k, t)
            for c, t in zip(result.negative, result.negative_trivial, strict=True)),
        negative_undecided=result.negative_undecided,
        reconstructed=result.reconstructed,
        candidates=result.candidates, unknown_candidates=result.unknown,
        solutions=result.solutions, allowed_types=result.allowed_types,
        elapsed_s=round(result.elapsed_s, 4),
        timings_s={k: round(v, 4) for k, v in result.timings.items()},
        truth=truth_check(result, task.truth) if task.truth is not None else None,
    )


def tasks_from_households(units: pd.DataFrame, blocks: list[str] | None,
                          source: str) -> list[BlockTask]:
    """One task per block: its tables (DuckDB) and its true units (for soundness checks)."""
    known = sorted(units["block"].unique())
    if blocks:
        missing = [b for b in blocks if b not in set(known)]
        if missing:
            raise StatreconError(f"{source}: unknown block id {missing[0]}; the file has "
                                 f"{len(known)} blocks (for example {known[0]})")
        units = units[units["block"].isin(blocks)]
    tables = tabulate_sql(units)
    codes = encode(units)
    by_block = units.groupby("block").indices
    first = units.groupby("block").first()
    return [BlockTask(b, str(first.loc[b, "tract"]), str(first.loc[b, "state"]), tables[b],
                      codes[by_block[b]]) for b in sorted(tables)]


def tasks_from_tables(published: dict[str, np.ndarray], blocks: list[str] | None,
                      source: str) -> list[BlockTask]:
    """One task per published block (all of them, or ``blocks``); no truth to check against."""
    wanted = blocks or sorted(published)
    for b in wanted:
        if b not in published:
            raise StatreconError(f"{source}: unknown block id {b}")
    return [BlockTask(b, tract_of(b), state_of(b), published[b], None) for b in wanted]


def run_blocks(tasks: Iterable[BlockTask], shared: Shared, *, workers: int = 1,
               executor: str | None = None, store: BlockStore | None = None,
               progress: Progress | None = None) -> Iterator[BlockRecord]:
    """Yield a record per block as it finishes; with ``store``, store it there first.

    Blocks ``store`` holds as finished are yielded from it and not run again. ``progress``
    counts every block (stored ones too) and the non-trivial claims verified so far.
    """
    tasks = list(tasks)
    finished = store.finished() if store is not None else set()
    done = claims = 0

    def step(rec: BlockRecord) -> Step:
        nonlocal done, claims
        done += 1
        claims += len(rec.nontrivial())
        return Step(done, len(tasks), claims, rec.block)

    if progress is not None:
        progress(Step(0, len(tasks), 0))
    todo = []
    for task in tasks:
        if store is not None and task.block in finished:
            rec = store.record(task.block)
            if progress is not None:
                progress(step(rec))
            yield rec
        else:
            todo.append(task)
    results = run_units(attack_block, shared, todo, workers=workers, executor=executor)
    try:
        for task, rec in results:
            if store is not None:
                store.write(task.block, rec)
            if progress is not None:
                progress(step(rec))
            yield rec
    finally:  # on Ctrl-C or an error the pool stops now, not when the generator is collected
        results.close()


def run_all_blocks(tasks: list[BlockTask], shared: Shared, *, workers: int = 1,
                   executor: str | None = None, store: BlockStore | None = None,
                   progress: Progress | None = None) -> list[BlockRecord]:
    """Every block's record (``run_blocks``), in the order of ``tasks``."""
    records = list(run_blocks(tasks, shared, workers=workers, executor=executor, store=store,
                              progress=progress))
    order = {t.block: i for i, t in enumerate(tasks)}
    return sorted(records, key=lambda r: order.get(r.block, 0))
