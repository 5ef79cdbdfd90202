"""The command line: a thin layer over the library API.

Exit codes: 0 ok, 1 user error, 2 infeasible release, 3 unknown (time limit).
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.exceptions import Abort, Exit, TyperException

from statrecon.engines.linear.estimators import estimators_help
from statrecon.errors import InconsistentReleaseError, StatreconError, TimeLimitReached
from statrecon.exitcodes import (
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNKNOWN,
    EXIT_USER,
)


def _plain_flags() -> None:
    """Help lists a flag as ``--all``, not ``--all <bool>``: typer gives every option, flags
    included (``--help`` too), a type column; a flag takes no value, so it gets none."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_plain_flags", False):  # another typer, or done
        return

    def display(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display._plain_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display  # type: ignore[method-assign]


def _no_adapter_for_none() -> None:
    """typer builds a parameter's pydantic TypeAdapter before coercing its value, even a value
    that is None, which its coercion returns unchanged without the adapter: every ``statrecon
    <group> <command> --help`` imported pydantic for the group's unset ``--help`` (0.1 s and
    more). A None value is coerced by typer's own pass-through; nothing else changes."""
    from typer import _coercion
    from typer.core import _TyperParameter

    original = getattr(_TyperParameter, "process_value", None)
    passthrough = getattr(_coercion, "PassThroughRuntimeParam", None)
    if original is None or passthrough is None or getattr(original, "_lazy", False):
        return  # another typer, or done

    def process_value(self: _TyperParameter, ctx: Any, value: Any) -> Any:
        if value is not None or getattr(self, "_runtime_param", True) is not None:
            return original(self, ctx, value)
        descriptor = self.type_descriptor
        self._runtime_param = passthrough(parameter_info=descriptor.parameter_info,
                                          annotation=descriptor.annotation)
        try:
            return original(self, ctx, value)
        finally:
            self._runtime_param = None  # a later value gets typer's adapter

    process_value._lazy = True  # type: ignore[attr-defined]
    _TyperParameter.process_value = process_value  # type: ignore[method-assign]


_plain_flags()
_no_adapter_for_none()
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="What do these published statistics reveal about individuals?",
)


def _version(shown: bool) -> None:
    if shown:
        from statrecon import __version__

        print(f"statrecon {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _command_session(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_version,
        help="Print statrecon's version and exit.")] = False,
) -> None:
    # every command records the files it reads, so that no output replaces one of them
    from statrecon.inputs import begin_session

    ctx.call_on_close(begin_session())


@app.command()
def reconstruct(
    release: Annotated[Path, typer.Argument(help="Release file (YAML, version 1).")],
    public: Annotated[Path | None, typer.Option(
        help="Public table (CSV/Parquet) with the release's known columns.")] = None,
    method: Annotated[str, typer.Option(
        help="auto (linear releases -> determine, else exact), exact, determine, or one of "
             f"the estimators ({estimators_help()}).")] = "auto",
    bounds: Annotated[str | None, typer.Option(
        help="Linear engine: per-record bounds 'lower,upper', numbers or public-table "
             "columns.")] = None,
    truth: Annotated[Path | None, typer.Option(
        help="Linear engine: the true table (public order) to score the estimate.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Show every dataset found.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="Stop enumerating after this many "
                                       "datasets.")] = 10_000,
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds for the whole run; past it the answer is 'unknown'. Default: "
                        "300 for the exact engine, 60 for an LP or IP; 'inf' for none.")
                          ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of randomized methods.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    symmetry_breaking: Annotated[bool, typer.Option(
        help="Order interchangeable rows so each dataset is found once.")] = True,
    max_model_size: Annotated[int, typer.Option(
        min=1, help="Exact engine: refuse, before building it, a model estimated over this "
                    "many terms (rows x per-row variables and literals).")] = 3_000_000,
    max_matrix_cells: Annotated[int, typer.Option(
        min=1, help="Linear engine: refuse a query matrix of more statistics x public rows "
                    "than this.")] = 400_000_000,
    noise_mode: Annotated[str, typer.Option(
        help="Exact engine, noisy answers: ignore them; bounds (value ± K standard deviations, "
             "needs --noise-as-bounds K; claims hold for the event that every noise is that "
             "small); ml (a most likely dataset: an estimate, never a proof).")] = "ignore",
    noise_as_bounds: Annotated[float | None, typer.Option(
        min=0.001, metavar="K",
        help="Exact engine: read each noisy answer as value ± K standard deviations (sets "
             "--noise-mode bounds).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
) -> None:
    """Find every dataset consistent with a release; say what is certain."""
    from dataclasses import replace

    from statrecon.api import prepare_solver
    from statrecon.api import reconstruct as run
    from statrecon.commands.options import time_limit_option
    from statrecon.engines.exact import ExactOptions
    from statrecon.engines.linear import LinearOptions, LinearResult
    from statrecon.release.files import load_release

    mode = _noise_mode(noise_mode, noise_as_bounds, method)
    linear = LinearOptions(time_limit=time_limit_option(time_limit, LinearOptions.time_limit),
                           seed=seed, max_cells=max_matrix_cells)
    prepare_solver(method, linear)  # the solver's worker starts while the release is read
    rel = load_release(release)
    pair = None
    if bounds is not None:
        parts = bounds.split(",")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise StatreconError(f"--bounds {bounds!r}: expected 'lower,upper'")
        pair = (parts[0], parts[1])
    options = ExactOptions(limit=limit,
                           time_limit=time_limit_option(time_limit, ExactOptions.time_limit),
                           keep_solutions=None if all_ else (1 if as_json else 10),
                           symmetry_breaking=symmetry_breaking, max_model_size=max_model_size,
                           noise_mode=mode, noise_k=noise_as_bounds)
    from statrecon.commands.progress import exact_progress
    from statrecon.report import output_console

    console = output_console()  # not wrapped at 80 columns into a file or a pipe

    with exact_progress("Reconstructing…", quiet=quiet) as tell:  # stderr, also with --json
        result = run(rel, public=public, method=method,
                     options=replace(options, on_progress=tell), linear=linear, bounds=pair)
    if isinstance(result, LinearResult):
        from statrecon.report import linear as linear_report

        data = linear_report.to_json(result)
        if truth is not None:
            linear_report.add_truth(data, result, truth)
        if as_json:
            sys.stdout.write(json.dumps(data) + "\n")
        else:
            linear_report.render(result, console, data)
            if all_:
                linear_report.render_estimate(data, console)
    else:
        if truth is not None:
            raise StatreconError("--truth applies to the linear engine only")
        if as_json:
            sys.stdout.write(json.dumps(result.to_json()) + "\n")
        else:
            from statrecon.report.text import render

            render(result, console, n_stats=len(rel.statistics), show_all=all_)
    if not as_json and result.route is not None:
        _print_route(console, result.route)
    code = {"infeasible": EXIT_INFEASIBLE, "unknown": EXIT_UNKNOWN}.get(result.status, EXIT_OK)
    raise typer.Exit(code)


@app.command()
def tabulate(
    microdata: Annotated[Path, typer.Option(help="Microdata, CSV or Parquet.")],
    release: Annotated[Path, typer.Option(help="Release file whose statistics to compute.")],
    out: Annotated[Path, typer.Option(help="Where to write the filled release.")],
    suppress_below: Annotated[int | None, typer.Option(
        min=1, help="Suppress statistics over fewer than K rows.")] = None,
    decimals: Annotated[int, typer.Option(
        min=0, max=100, help="Publish means/medians rounded to this many decimals.")] = 1,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON on "
                                          "stdout (keys: out, statistics, suppressed).")
                       ] = False,
) -> None:
    """Compute a release's true answers from microdata (what a publisher would print)."""
    from statrecon.outputs import check_writable
    from statrecon.release.files import load_release, write_filled_release
    from statrecon.release.model import SuppressionRule
    from statrecon.release.statistic import Suppressed
    from statrecon.release.tabulate import load_microdata
    from statrecon.release.tabulate import tabulate as run

    check_writable(out, "--out", inputs_given=(("--release", release),
                                                  ("--microdata", microdata)))
    from statrecon.commands.progress import activity

    rel = load_release(release)
    with activity("Tabulating…", quiet=quiet):
        frame = load_microdata(microdata, rel)
        answers = run(rel, frame, decimals=decimals, suppress_below=suppress_below)
    rule = SuppressionRule(suppress_below - 1) if suppress_below is not None else None
    try:
        write_filled_release(release, out, answers, rule)
    except OSError as e:
        raise StatreconError(f"{out}: cannot write: {e.strerror}") from None
    suppressed = sum(1 for a in answers.values() if isinstance(a, Suppressed))
    if as_json:
        print(json.dumps({"out": str(out), "statistics": len(answers),
                          "suppressed": suppressed}))
        return
    Console(stderr=True).print(
        f"wrote {out}: {len(answers)} statistics" + (f", {suppressed} suppressed"
                                                     if suppressed else ""))


def _noise_mode(mode: str, k: float | None, method: str) -> Any:
    """--noise-mode and --noise-as-bounds K, checked together (one line on a mistake)."""
    modes = ("ignore", "bounds", "ml")
    if mode not in modes:
        raise StatreconError(f"--noise-mode {mode!r}: choose from {', '.join(modes)}")
    if k is not None:
        if mode not in ("ignore", "bounds"):
            raise StatreconError(f"--noise-as-bounds reads noise as bounds; it cannot go with "
                                 f"--noise-mode {mode}")
        mode = "bounds"
    elif mode == "bounds":
        raise StatreconError("--noise-mode bounds needs --noise-as-bounds K (standard "
                             "deviations either side of each noisy answer)")
    if mode != "ignore" and method not in ("auto", "exact"):
        raise StatreconError(f"--noise-mode {mode} applies to the exact engine, not to "
                             f"--method {method} (which weighs noisy answers by their scale)")
    return mode


def _print_route(console: Console, route: Any) -> None:
    """Which engine answered and why, last, under the answer (``route`` in the JSON)."""
    from statrecon.report import safe_text

    console.print(f"Engine: {route.engine} ({route.method}), chosen by "
                  f"{escape(safe_text(route.reason))}", highlight=False, soft_wrap=True)


def _register_subcommands() -> None:
    """Commands that live in their own modules (statrecon.commands)."""
    from statrecon.commands.audit_stream import audit_stream
    from statrecon.commands.census import census_app
    from statrecon.commands.claims import claims_app
    from statrecon.commands.examples import examples
    from statrecon.commands.experiment import experiment_app
    from statrecon.commands.tables import tables_app

    app.command("audit-stream")(audit_stream)
    app.command("examples")(examples)
    app.add_typer(tables_app, name="tables")
    app.add_typer(experiment_app, name="experiment")
    app.add_typer(census_app, name="census")
    app.add_typer(claims_app, name="claims")


_register_subcommands()


def _internal_error(err: Console) -> NoReturn:
    """Anything but a user's mistake is a bug in statrecon: show the traceback, ask for a
    report, and exit 70, never the user-error code 1 (a script must not read a bug as bad
    input)."""
    import traceback

    traceback.print_exc(file=sys.stderr)
    err.print("[bold red]internal error:[/] this is a bug in statrecon, not in your input. "
              "Please report it to the statrecon maintainers with the command you ran and the "
              "traceback above.",
              highlight=False, soft_wrap=True)
    sys.exit(EXIT_INTERNAL)


@functools.cache
def _command() -> Any:
    """The click command typer makes of ``app``, made once per process: ``app()`` makes it
    anew on every call (every command's signature and annotations read again), which was a
    third of the time of each command the test suite runs in its own process."""
    return typer.main.get_command(app)


def main() -> None:
    """Console entry point: user mistakes print one line and exit 1, never a traceback."""
    from statrecon.report import safe_text  # user text in messages: no terminal escapes

    err = Console(stderr=True)
    # No arguments: show the help (typer's no-args error has an empty message).
    args = sys.argv[1:] or ["--help"]
    try:
        from statrecon.interrupt import install

        install()  # SIGTERM behaves like Ctrl-C; both stop running solves at once
        code = _command()(args=args, standalone_mode=False)
    except InconsistentReleaseError as e:
        err.print(f"[bold red]inconsistent release:[/] {escape(safe_text(e))}", highlight=False,
                  soft_wrap=True)
        sys.exit(EXIT_INFEASIBLE)
    except StatreconError as e:
        # Messages quote user text (ids, SQL, paths): print it literally, not as Rich markup.
        err.print(f"[bold red]error:[/] {escape(safe_text(e))}", highlight=False, soft_wrap=True)
        sys.exit(EXIT_USER)
    except TimeLimitReached as e:  # work that watches no deadline ran past --time-limit
        err.print(f"unknown: {escape(safe_text(e))} (--time-limit); nothing is proven and "
                  "nothing was written", highlight=False, soft_wrap=True)
        sys.exit(EXIT_UNKNOWN)
    except Exit as e:
        sys.exit(e.exit_code)
    except TyperException as e:
        err.print(f"[bold red]error:[/] {escape(safe_text(e.format_message()))}", highlight=False,
                  soft_wrap=True)
        sys.exit(EXIT_USER)
    except (Abort, KeyboardInterrupt):  # Ctrl-C or SIGTERM
        code = EXIT_INTERRUPTED
    except Exception:  # a signal inside an extension's import surfaces as an ImportError
        from statrecon.interrupt import requested

        if not requested():
            _internal_error(err)
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:  # typer returns it for a KeyboardInterrupt in a command
        err.print("interrupted", highlight=False)
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":
    main()
