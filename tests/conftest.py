"""Shared fixtures.

``run_cli`` runs the real command line in-process through ``statrecon.cli.main`` (exit code,
stdout, stderr), which is what a user gets, at a fraction of a subprocess's start-up cost; tests
that need a real process (signals, memory) start one themselves.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CliResult = tuple[int, str, str]
CliRunner = Callable[..., CliResult]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """``run_cli(*args, cwd=None)`` -> (exit code, stdout, stderr) of ``statrecon ARGS``."""
    from statrecon import cli

    def run(*args: str | Path, cwd: Path | None = None) -> CliResult:
        with monkeypatch.context() as m:
            if cwd is not None:
                m.chdir(cwd)
            m.setattr(sys, "argv", ["statrecon", *map(str, args)])
            capsys.readouterr()
            with pytest.raises(SystemExit) as exited:
                cli.main()
            out = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 0), out.out, out.err

    return run


def assert_one_line_error(result: CliResult, *parts: str, code: int = 1) -> str:
    """The exit code, one line on stderr starting with 'error:' naming every part; no
    traceback."""
    exit_code, out, err = result
    assert exit_code == code, (exit_code, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(("error: ", "inconsistent release: ")), lines[0]
    for part in parts:
        assert part in lines[0], (part, lines[0])
    return lines[0]
