"""The Generate-then-Verify experiment (reference 003, section 5 and appendix A), end to end.

``run_experiment`` generates synthetic blocks, tabulates them, verifies claims block by block
(resumably) and writes the results. From the per-block records of ``runs.claims`` this builds
the paper's Figure 2 (blocks with at least one verified singleton claim per number of columns
k, and box plots of the tract- and state-level baseline probabilities of those claims), its
appendix Figure 3 (the same for all claims) and Tables 2-3 (households covered by verified
claims per k). Trivial claims, read straight off one published cell, are left out of all of
them, as in the paper.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from statrecon.census.households.files import write_households_csv
from statrecon.census.households.priors import tract_and_state_priors
from statrecon.census.households.synthetic import generate_blocks
from statrecon.engines.claims import ClaimsOptions
from statrecon.outputs import write_atomically
from statrecon.report.figures import agg_figure
from statrecon.runs.claims import Shared, run_all_blocks, tasks_from_households
from statrecon.runs.progress import Progress
from statrecon.runs.records import BlockRecord
from statrecon.runs.stores import BlockStore

KS = tuple(range(1, 11))
PAPER_TABLE_2 = {5: 166, 6: 148, 7: 109, 8: 61, 9: 19, 10: 2}  # 486 households, 50 blocks
PAPER_TABLE_3 = {5: 431, 6: 379, 7: 274, 8: 179, 9: 30, 10: 2}
Level = Literal["tract", "state"]  # the population a baseline is measured against
LEVELS: tuple[Level, ...] = ("tract", "state")


@dataclass(frozen=True)
class ExperimentSummary:
    blocks: int
    households: int
    statistics_per_block: float
    unknown_blocks: int
    reconstructed_blocks: int
    sound: bool | None
    blocks_with_singleton: dict[int, int]  # Figure 2(a)
    blocks_with_claim: dict[int, int]  # Figure 3(a)
    covered_singleton: dict[int, int]  # Table 2
    covered_all: dict[int, int]  # Table 3
    claims_singleton: dict[int, int]
    claims_all: dict[int, int]
    trivial_claims: int
    negative_claims: int
    negative_undecided: int  # "at least one" questions the per-block budget left open
    negative_undecided_blocks: int
    median_block_s: float
    total_block_s: float

    def to_json(self) -> dict[str, Any]:
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()}


def summarise(records: Sequence[BlockRecord]) -> ExperimentSummary:
    def per_k(fn: Callable[[BlockRecord, int], int]) -> dict[int, int]:
        return {k: sum(fn(r, k) for r in records) for k in KS}

    def covered(r: BlockRecord, k: int, singleton: bool) -> int:
        if r.truth is None:
            return 0
        return (r.truth.covered_singleton if singleton else r.truth.covered_all).get(k, 0)

    sound_flags = [r.truth.sound for r in records if r.truth is not None]
    times = [r.elapsed_s for r in records]
    return ExperimentSummary(
        blocks=len(records),
        households=sum(r.households for r in records),
        statistics_per_block=(statistics.mean(r.statistics for r in records)
                              if records else 0.0),
        unknown_blocks=sum(r.status != "ok" for r in records),
        reconstructed_blocks=sum(r.reconstructed for r in records),
        sound=all(sound_flags) if sound_flags else None,
        blocks_with_singleton=per_k(lambda r, k: any(c.columns == k
                                                      for c in r.nontrivial(True))),
        blocks_with_claim=per_k(lambda r, k: any(c.columns == k
                                                  for c in r.nontrivial(False))),
        covered_singleton=per_k(lambda r, k: covered(r, k, singleton=True)),
        covered_all=per_k(lambda r, k: covered(r, k, singleton=False)),
        claims_singleton=per_k(lambda r, k: sum(c.columns == k for c in r.nontrivial(True))),
        claims_all=per_k(lambda r, k: sum(c.columns == k for c in r.nontrivial(False))),
        trivial_claims=sum(c.trivial for r in records for c in r.claims),
        negative_claims=sum(not c.trivial for r in records for c in r.negative_claims),
        negative_undecided=sum(r.negative_undecided for r in records),
        negative_undecided_blocks=sum(r.negative_undecided > 0 for r in records),
        median_block_s=statistics.median(times) if times else 0.0,
        total_block_s=sum(times),
    )


def baselines(records: Sequence[BlockRecord], level: Level, singleton: bool
              ) -> dict[int, list[float]]:
    """Baseline probabilities of the verified non-trivial claims, per number of columns."""
    out: dict[int, list[float]] = {k: [] for k in KS}
    for r in records:
        for c in r.nontrivial(singleton):
            p = c.baseline_tract if level == "tract" else c.baseline_state
            if p is not None:
                out[c.columns].append(p)
    return out


def plot_figure(records: Sequence[BlockRecord], path: Path, singleton: bool) -> None:
    """Figure 2 (singleton claims) or Figure 3 (all claims): counts and two box plots."""
    s = summarise(records)
    counts = s.blocks_with_singleton if singleton else s.blocks_with_claim
    what = "singleton claims" if singleton else "claims"
    fig, axes = agg_figure(3, 5, 4.2, layout=None)
    axes[0].bar(list(counts), list(counts.values()), color="tab:blue")
    axes[0].axhline(s.blocks, color="grey", lw=0.8, ls="--")
    axes[0].set(xlabel="k (columns in the claim)", ylabel=f"blocks (of {s.blocks})",
                title=f"(a) blocks with >= 1 verified {what}", xticks=list(KS))
    for ax, level, letter in zip((axes[1], axes[2]), LEVELS, "bc", strict=True):
        data = baselines(records, level, singleton)
        ks = [k for k in KS if data[k]]
        if ks:
            ax.boxplot([data[k] for k in ks], positions=ks, widths=0.6,
                       medianprops={"color": "tab:orange"})
        ax.set(xlabel="k (columns in the claim)", ylabel="probability under the prior",
               title=f"({letter}) {level}-level baseline", xticks=list(KS), ylim=(-0.02, 1.02),
               xlim=(0.4, 10.6))
    fig.suptitle(f"Generate-then-Verify on {s.blocks} blocks ({s.households} housing units): "
                 f"verified {what}, trivial claims excluded", fontsize=11)
    fig.tight_layout()
    write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))


def markdown(records: Sequence[BlockRecord], command: str = "") -> str:
    """Tables 2 and 3 with the paper's figures beside ours, and the headline numbers."""
    s = summarise(records)
    ks = range(5, 11)
    head = "| | n | " + " | ".join(f"k={k}" for k in ks) + " |"
    rule = "|---|---:|" + "---:|" * len(ks)

    def row(label: str, n: float, vals: dict[int, int] | dict[int, float], fmt: str) -> str:
        return f"| {label} | {n:{fmt}} | " + " | ".join(f"{vals[k]:{fmt}}" for k in ks) + " |"

    def avg(d: dict[int, int]) -> dict[int, float]:
        return {k: v / s.blocks if s.blocks else 0.0 for k, v in d.items()}

    def table(title: str, covered: dict[int, int], paper: dict[int, int]) -> list[str]:
        return [title, "", head, rule,
                row("Total", s.households, covered, "d"),
                row("Avg. per block", s.households / max(s.blocks, 1), avg(covered), ".2f"),
                row("Paper (total of 486, 50 blocks)", 486, paper, "d"), ""]

    lines = [f"# Generate-then-Verify: {s.blocks} blocks", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [
        f"- Housing units: {s.households} ({s.households / max(s.blocks, 1):.2f} per block); "
        f"published statistics per block: {s.statistics_per_block:.0f}",
        f"- Blocks reconstructed as a whole with certainty: {s.reconstructed_blocks} of "
        f"{s.blocks} (paper: 1 of 50)",
        f"- Blocks left unknown by a time limit: {s.unknown_blocks}",
        f"- Verified non-trivial claims: {sum(s.claims_all.values())} "
        f"({sum(s.claims_singleton.values())} singleton); trivial claims set aside: "
        f"{s.trivial_claims}; non-trivial negative claims (at least one unit matches): "
        f"{s.negative_claims}; left undecided by the negative-claim time budget: "
        f"{s.negative_undecided} (in {s.negative_undecided_blocks} blocks)",
        "- Soundness against the true blocks: "
        + ("every verified claim holds" if s.sound else
           "NOT SOUND" if s.sound is False else "no truth given"),
        f"- Time per block: median {s.median_block_s:.2f} s, total {s.total_block_s:.1f} s",
        "",
        *table("## Table 2: households in verified singleton claims with k columns",
               s.covered_singleton, PAPER_TABLE_2),
        *table("## Table 3: households in all verified claims with k columns",
               s.covered_all, PAPER_TABLE_3),
        "## Figure 2(a) and 3(a): blocks with at least one verified claim", "",
        "| k | " + " | ".join(str(k) for k in KS) + " |",
        "|---|" + "---:|" * len(KS),
        "| singleton | " + " | ".join(str(s.blocks_with_singleton[k]) for k in KS) + " |",
        "| any multiplicity | " + " | ".join(str(s.blocks_with_claim[k]) for k in KS) + " |",
        "",
        "## Baseline probabilities of verified singleton claims (median per k)", "",
        "| level | " + " | ".join(str(k) for k in KS) + " |",
        "|---|" + "---:|" * len(KS),
    ]
    for level in LEVELS:
        data = baselines(records, level, singleton=True)
        lines.append(f"| {level} | " + " | ".join(
            f"{statistics.median(data[k]):.3f}" if data[k] else "-" for k in KS) + " |")
    lines.append("")
    return "\n".join(lines)


def write_outputs(records: Sequence[BlockRecord], out: Path, command: str = "") -> list[Path]:
    """figure2.png, figure3.png and results.md in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "figure2.png", out / "figure3.png", out / "results.md"]
    plot_figure(records, paths[0], singleton=True)
    plot_figure(records, paths[1], singleton=False)
    text = markdown(records, command)
    write_atomically(paths[2], lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return paths


@dataclass(frozen=True)
class ExperimentRun:
    """What ``run_experiment`` made and wrote."""

    records: list[BlockRecord]  # one per block, in block order
    summary: ExperimentSummary
    wall_s: float
    workers: int
    paths: list[Path]  # figure2.png, figure3.png, results.md
    store: Path  # blocks.jsonl, every block's record

    def to_json(self) -> dict[str, Any]:
        """summary.json: ExperimentSummary's keys, wall_s, workers and the files written."""
        return self.summary.to_json() | {"wall_s": self.wall_s, "workers": self.workers,
                                         "files": [str(p) for p in self.paths]}


def run_experiment(out: Path, *, blocks: int, seed: int, options: ClaimsOptions, workers: int,
                   executor: str | None = None, command: str = "",
                   progress: Callable[[], AbstractContextManager[Progress]] | None = None
                   ) -> ExperimentRun:
    """Generate ``blocks`` synthetic blocks (``seed``), verify their claims and write
    blocks.csv, population.csv, blocks.jsonl, figures, results.md and summary.json in ``out``.

    Resumable: blocks finished in OUT/blocks.jsonl are not solved again; a folder of a run
    with other parameters is refused (``runs.stores``). ``progress`` opens the progress
    callback around the block solving (a bar), ``command`` is quoted in results.md.
    """
    params = {"blocks": blocks, "seed": seed, "formulation": options.formulation,
              "k": options.k_solutions, "time_limit": options.time_limit}
    store = BlockStore(out / "blocks.jsonl", params)
    store.check()  # before anything is written to a folder of another run
    t0 = time.perf_counter()
    gen = generate_blocks(blocks, seed)
    write_atomically(out / "blocks.csv", lambda tmp: write_households_csv(gen.targets, tmp))
    write_atomically(out / "population.csv",
                     lambda tmp: write_households_csv(gen.population, tmp))
    tasks = tasks_from_households(gen.targets, None, "generated blocks")
    shared = Shared(options, *tract_and_state_priors(gen.population))
    bar = progress() if progress is not None else nullcontext(None)
    with bar as report:
        records = run_all_blocks(tasks, shared, workers=workers, executor=executor,
                                 store=store, progress=report)
    paths = write_outputs(records, out, command)
    run = ExperimentRun(records, summarise(records), round(time.perf_counter() - t0, 2),
                        workers, paths, store.path)
    text = json.dumps(run.to_json(), indent=1)
    write_atomically(out / "summary.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return run
