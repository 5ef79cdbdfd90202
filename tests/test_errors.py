"""Errors are data, and a bug is not a user error: the user's wrong choice of method is one
line and exit 1; anything else raised inside the library is a traceback, a "please report"
line and exit 70 (never 1, which a script would read as bad input)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CliRunner, assert_one_line_error

from statrecon import api
from statrecon.errors import StatreconError
from statrecon.exitcodes import EXIT_INTERNAL

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_ip_on_a_real_secret_is_the_users_choice(run_cli: CliRunner) -> None:
    assert_one_line_error(run_cli("reconstruct", EXAMPLES / "hospital.yaml", "--method", "ip"),
                          "--method ip", "integer or categorical")


@pytest.mark.parametrize("bug", [ZeroDivisionError("division by zero"),
                                 ValueError("operands could not be broadcast"),
                                 KeyError("x")])
def test_an_exception_inside_the_engine_is_a_bug_report(run_cli: CliRunner,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        bug: Exception) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise bug

    monkeypatch.setattr(api, "reconstruct_linear", broken)
    code, _, err = run_cli("reconstruct", EXAMPLES / "hospital.yaml", "--method", "ls")
    assert code == EXIT_INTERNAL == 70
    assert "Traceback" in err and type(bug).__name__ in err
    assert "internal error" in err and "Please report" in err
    assert "error: " not in err.replace("internal error:", "")  # not dressed as a user error


def test_a_statrecon_error_carries_where_and_statistic_as_data() -> None:
    e = StatreconError("release.yaml:4: q7: unknown column 'x'", where="release.yaml:4",
                       statistic="q7")
    assert (e.where, e.statistic) == ("release.yaml:4", "q7")
    assert str(e) == "release.yaml:4: q7: unknown column 'x'"
