"""Issue 14 (2): no search runs unbounded by default, and the answer says which engine gave it
and why (the human view's last line; ``route`` in the JSON, pinned in test_json_contracts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, CliRunner

from statrecon.engines import exact
from statrecon.engines.exact import ExactOptions
from statrecon.exitcodes import EXIT_OK, EXIT_UNKNOWN


def test_the_exact_engine_has_a_default_time_limit() -> None:
    assert ExactOptions().time_limit == exact.DEFAULT_TIME_LIMIT == 300.0


def test_the_cli_applies_the_default_without_a_flag(run_cli: CliRunner,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default shrunk to a millisecond, the Figure 1 block (0.1 s of search) stops
    at the default and says unknown, exit 3; --time-limit inf lifts it."""
    monkeypatch.setattr(exact, "DEFAULT_TIME_LIMIT", 0.001)
    code, out, _ = run_cli("reconstruct", EXAMPLES / "block.yaml")
    assert code == EXIT_UNKNOWN and "UNIQUE" not in out
    code, out, _ = run_cli("reconstruct", EXAMPLES / "block.yaml", "--time-limit", "inf")
    assert code == EXIT_OK and "UNIQUE" in out


@pytest.mark.parametrize(("args", "line"), [
    ((EXAMPLES / "block.yaml",), "Engine: exact (exact), chosen by auto: not linear"),
    ((EXAMPLES / "hospital.yaml",), "Engine: linear (determine), chosen by auto: every"),
    ((EXAMPLES / "hospital.yaml", "--method", "lp-l1"), "Engine: linear (lp-l1), chosen by "
                                                         "--method lp-l1"),
])
def test_the_human_view_ends_with_the_route(run_cli: CliRunner, args: tuple[Path | str, ...],
                                            line: str) -> None:
    code, out, err = run_cli("reconstruct", *args)
    assert code == EXIT_OK, err
    assert out.rstrip().splitlines()[-1].startswith(line)
