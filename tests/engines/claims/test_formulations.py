"""The claim-formulation registry: verify_block looks the formulation up there, the CLI help
lists it, and an answer a formulation leaves open stays open (never verified)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest
from test_claims import tiny_block

from statrecon.census.households.tabulate import tabulate_types
from statrecon.commands.claims import claims_app
from statrecon.engines.claims import (
    FORMULATIONS,
    BlockRelease,
    ClaimsOptions,
    formulation,
    formulations_help,
    verify_block,
)


def test_the_registry_holds_the_fast_and_paper_formulations() -> None:
    assert list(FORMULATIONS) == ["fast", "paper"]
    assert formulation("paper") is FORMULATIONS["paper"]
    with pytest.raises(ValueError, match="fast, paper"):
        formulation("magic")
    help_text = formulations_help()
    assert all(f"{name}: {f.summary}" in help_text for name, f in FORMULATIONS.items())


def test_the_cli_help_comes_from_the_registry() -> None:
    from typer.testing import CliRunner

    out = CliRunner().invoke(claims_app, ["verify", "--help"],
                             env={"COLUMNS": "300"}).output
    assert all(f"{name}: {f.summary}" in " ".join(out.split())
               for name, f in FORMULATIONS.items())


@dataclass(frozen=True)
class Undecided:
    """A formulation that decides nothing, as one cut short by its time limit would."""

    name: ClassVar[str] = "undecided"
    summary: ClassVar[str] = "decides nothing"

    def verify(self, release: Any, model: Any, candidates: np.ndarray, members: np.ndarray,
               solutions: list[np.ndarray], *, end: float | None, options: Any) -> np.ndarray:
        return np.full(len(candidates), -1, dtype=np.int8)


def test_verify_block_uses_the_registry_and_keeps_open_claims_open(
        monkeypatch: pytest.MonkeyPatch) -> None:
    release = BlockRelease("b", tabulate_types(tiny_block(3, 3)))
    decided = verify_block(release, ClaimsOptions(k_solutions=10, seed=3))
    assert decided.status == "ok" and decided.verified  # the real formulation proves claims
    monkeypatch.setitem(FORMULATIONS, "undecided", Undecided())
    open_ = verify_block(release, ClaimsOptions(k_solutions=10, seed=3,
                                                formulation="undecided"))
    assert open_.status == "unknown" and open_.verified == []
    assert open_.unknown == open_.candidates == decided.candidates > 0
