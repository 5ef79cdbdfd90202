"""How the command line behaves (issue 12): options that make no sense are refused with one
line, progress reaches stderr on long runs, flags look like flags, ``--workers`` means the same
everywhere, output to a pipe is not wrapped, and ``tabulate`` never overwrites its input.

Options are checked in process (typer's runner); what a user sees runs the real console script.
"""

from __future__ import annotations

import pytest
import typer
from test_cli import assert_user_error, statrecon
from typer.testing import CliRunner

from statrecon.commands.experiment import experiment_app
from statrecon.errors import StatreconError


def experiment_cli() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(experiment_app, name="experiment")
    return app


# --------------------------------------------------------------------------- experiments


@pytest.mark.parametrize(("args", "part"), [
    (["diffix", "--primes", "4"], "got 4"),
    (["diffix", "--primes", "2,3,1"], "got 1"),
    (["diffix", "--primes", "-3"], "got -3"),
    (["diffix", "--primes", "3,3"], "named twice"),
    (["diffix", "--primes", "1" + "0" * 30], "prime numbers"),
    (["diffix", "--offsets", "nan"], "--offsets"),
    (["diffix", "--offsets", "-1"], "--offsets"),
    (["diffix", "--exponents", "inf"], "--exponents"),
    (["diffix", "--exponents", "0"], "--exponents"),
    (["diffix", "--base-sigma", "nan"], "base_sigma"),
    (["diffix", "--time-limit", "nan"], "--time-limit"),
    (["diffix", "--ids", "100000000"], "--ids 100000000"),
    (["dinur-nissim", "--sigmas", "nan"], "sigmas"),
    (["dinur-nissim", "--c", "nan"], "c must be"),
    (["dinur-nissim", "--c", "-2"], "c must be"),
    (["dinur-nissim", "--n", "-5"], "n must be"),
    (["dinur-nissim", "--n", "1000000"], "matrix entries"),
    (["dinur-nissim", "--n", "30", "--c", "1e9"], "matrix entries"),
    (["dinur-nissim", "--runtime", "--runtime-ns", "100,100000"], "matrix entries"),
    (["dinur-nissim", "--exhaustive-alpha", "nan"], "--exhaustive-alpha"),
    (["dinur-nissim", "--time-limit", "-1"], "--time-limit"),
])
def test_experiment_options_that_make_no_sense(args: list[str], part: str) -> None:
    result = CliRunner().invoke(experiment_cli(), ["experiment", *args])
    assert isinstance(result.exception, StatreconError), result.output
    message = str(result.exception)
    assert part in message and "\n" not in message


@pytest.mark.parametrize("command", ["diffix", "dinur-nissim"])
def test_negative_seed_is_refused_by_the_option(command: str) -> None:
    result = CliRunner().invoke(experiment_cli(), ["experiment", command, "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output  # typer's usage error


def test_cli_diffix_with_a_composite_prime_is_one_line() -> None:
    assert_user_error(statrecon("experiment", "diffix", "--primes", "4"), "--primes", "got 4")
    assert_user_error(statrecon("experiment", "dinur-nissim", "--seed", "-1"), "--seed")
