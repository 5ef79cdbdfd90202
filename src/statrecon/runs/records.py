"""The typed records of a claims run: one per block, in the shape of ``claims verify --json``.

One record is printed by ``claims verify --json``, stored as a line of ``blocks.jsonl``, read
back when a run resumes and summarised by the experiment; naming its fields once, here, lets
every one of them read attributes instead of string keys. ``to_json`` writes the keys in the
order the JSON contract has always had (tests/commands/test_json_contracts.py pins the keys)
and ``from_json`` reads a stored line back, so a record survives the round trip unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from statrecon.engines.claims.model import BlockStatus


@dataclass(frozen=True)
class ClaimRecord:
    """A verified claim R(a, m): exactly ``multiplicity`` units of the block have
    ``assignment``; the baselines are its chance under the tract and state priors (None
    without a prior)."""

    assignment: dict[str, str]  # column -> value
    multiplicity: int
    columns: int  # k, the columns in the assignment
    singleton: bool  # multiplicity == 1
    trivial: bool  # read straight off one published cell
    baseline_tract: float | None
    baseline_state: float | None

    def to_json(self) -> dict[str, Any]:
        return {"assignment": dict(self.assignment), "multiplicity": self.multiplicity,
                "columns": self.columns, "singleton": self.singleton, "trivial": self.trivial,
                "baseline_tract": self.baseline_tract, "baseline_state": self.baseline_state}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClaimRecord:
        return cls(dict(data["assignment"]), data["multiplicity"], data["columns"],
                   data["singleton"], data["trivial"], data["baseline_tract"],
                   data["baseline_state"])


@dataclass(frozen=True)
class NegativeClaimRecord:
    """A proven negative claim: at least one unit of the block has ``assignment`` (so a
    multiplicity of 0 is impossible)."""

    assignment: dict[str, str]
    columns: int
    trivial: bool
    impossible_multiplicities: tuple[int, ...] = (0,)
    at_least: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"assignment": dict(self.assignment), "columns": self.columns,
                "impossible_multiplicities": list(self.impossible_multiplicities),
                "at_least": self.at_least, "trivial": self.trivial}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NegativeClaimRecord:
        return cls(dict(data["assignment"]), data["columns"], data["trivial"],
                   tuple(data["impossible_multiplicities"]), data["at_least"])


@dataclass(frozen=True)
class TruthCheck:
    """What the true units of a block (when known) say of its claims: all of them hold
    (``sound``), and the distinct true units matched by a non-trivial claim per number of
    columns k (singleton claims only, and all claims)."""

    sound: bool
    covered_singleton: dict[int, int]  # k -> units; JSON keys are strings
    covered_all: dict[int, int]

    def to_json(self) -> dict[str, Any]:
        return {"sound": self.sound,
                "covered_singleton": {str(k): v for k, v in self.covered_singleton.items()},
                "covered_all": {str(k): v for k, v in self.covered_all.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TruthCheck:
        return cls(data["sound"], {int(k): v for k, v in data["covered_singleton"].items()},
                   {int(k): v for k, v in data["covered_all"].items()})


@dataclass(frozen=True)
class BlockRecord:
    """Everything a claims run says about one block: the JSON of ``claims verify --json``
    (``blocks[]``) and of a line of ``blocks.jsonl``."""

    block: str
    tract: str
    state: str
    households: int
    statistics: int  # published cells
    status: BlockStatus
    claims: tuple[ClaimRecord, ...]
    negative_claims: tuple[NegativeClaimRecord, ...]
    negative_undecided: int  # "at least one" questions the negative budget left open
    reconstructed: bool  # the whole block is determined
    candidates: int
    unknown_candidates: int  # neither verified nor refuted (time limit)
    solutions: int  # distinct consistent blocks generated
    allowed_types: int
    elapsed_s: float
    timings_s: dict[str, float] = field(default_factory=dict)
    truth: TruthCheck | None = None  # only when the true units were given

    def nontrivial(self, singleton: bool = False) -> list[ClaimRecord]:
        """The verified claims not read off one cell (only the singleton ones, if asked)."""
        return [c for c in self.claims if not c.trivial and (c.singleton or not singleton)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "block": self.block, "tract": self.tract, "state": self.state,
            "households": self.households, "statistics": self.statistics,
            "status": self.status,
            "claims": [c.to_json() for c in self.claims],
            "negative_claims": [c.to_json() for c in self.negative_claims],
            "negative_undecided": self.negative_undecided,
            "reconstructed": self.reconstructed,
            "candidates": self.candidates, "unknown_candidates": self.unknown_candidates,
            "solutions": self.solutions, "allowed_types": self.allowed_types,
            "elapsed_s": self.elapsed_s, "timings_s": dict(self.timings_s),
        }
        if self.truth is not None:
            out.update(self.truth.to_json())
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BlockRecord:
        """A record as ``to_json`` wrote it. Stores written before the negative budget was
        counted lack ``negative_undecided``: 0, as the summaries always read it."""
        return cls(
            block=data["block"], tract=data["tract"], state=data["state"],
            households=data["households"], statistics=data["statistics"],
            status=cast(BlockStatus, data["status"]),
            claims=tuple(ClaimRecord.from_json(c) for c in data["claims"]),
            negative_claims=tuple(NegativeClaimRecord.from_json(c)
                                  for c in data["negative_claims"]),
            negative_undecided=data.get("negative_undecided", 0),
            reconstructed=data["reconstructed"], candidates=data["candidates"],
            unknown_candidates=data["unknown_candidates"], solutions=data["solutions"],
            allowed_types=data["allowed_types"], elapsed_s=data["elapsed_s"],
            timings_s=dict(data["timings_s"]),
            truth=TruthCheck.from_json(data) if "sound" in data else None,
        )
