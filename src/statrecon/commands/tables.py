"""``statrecon tables``: statistical tables with suppressed cells.

``tables audit`` reads a table (a tau-Argus ``.arb`` batch file or ``.tab`` + ``.rda``, a
CSV/Parquet file of one row per cell, or microdata with primary suppression rules) and proves,
for every suppressed cell, the interval an attacker can derive: by LP (as tau-Argus and
sdcTable audit) and over whole units (what an attacker really can prove). The work is the
library's (``runs/tables.py``, ``report/tables.py``); this module reads the options, wires
them and picks the exit code: 0 when every suppressed cell is protected, 4 when some are
disclosed or under-protected, 3 when a time limit left some unknown.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from statrecon.errors import StatreconError
from statrecon.exitcodes import EXIT_UNKNOWN, EXIT_UNPROTECTED

tables_app = typer.Typer(no_args_is_help=True, help="Statistical tables with suppressed "
                         "cells: audit them exactly (LP and integer), with proofs.")

# ------------------------------------------------------------------ options both commands read

Source = Annotated[Path, typer.Argument(
    help="tau-Argus batch file (.arb) or table (.tab with its .rda), or a CSV/Parquet table of "
         "one row per cell (--dimensions, --value, --status), or microdata (--microdata).")]
Rda = Annotated[Path | None, typer.Option(help="tau-Argus metadata of a .tab (default: the "
                                          ".rda beside it).")]
ManualMargin = Annotated[float | None, typer.Option(
    "--manual-margin", min=0.0, max=99.999,
    help="tau-Argus input: the manual safety margin in percent (tau-Argus's MAN(x)): the "
         "protection level of a primary cell whose file gives none (default: the batch "
         "file's <SAFETYRULE> MAN, else 20).")]
Recompute = Annotated[bool | None, typer.Option(
    "--recompute-totals/--check-totals",
    help="tau-Argus input: recompute totals from the cells below them, as tau-Argus's "
         "<READTABLE> 1 does (default: as the .arb says; a .tab is checked).")]
Dimensions = Annotated[str | None, typer.Option(
    help="CSV/Parquet input: the explanatory variables, comma-separated.")]
Value = Annotated[str | None, typer.Option(
    help="CSV/Parquet input: the column of cell values (with --microdata: the response to "
         "sum; none counts records).")]
Status = Annotated[str | None, typer.Option(
    help="CSV/Parquet input: the column of cell statuses (S safe, U primary, M secondary, P "
         "protected, E empty).")]
Frequency = Annotated[str | None, typer.Option(
    help="CSV/Parquet input: the column of contributor counts.")]
Microdata = Annotated[bool, typer.Option(
    "--microdata", help="The CSV/Parquet file holds records: tabulate them and mark primary "
                        "cells by the rules below.")]
MaxN = Annotated[int | None, typer.Option(min=1, help="--microdata: primary when 1 <= "
                                          "frequency <= N.")]
PPercent = Annotated[float | None, typer.Option(min=0.0, help="--microdata: the p%-rule "
                                                "with this p.")]
NK = Annotated[str | None, typer.Option(help="--microdata: the (n,k)-dominance rule, "
                                       "'N,K'.")]
ProtectZeros = Annotated[bool, typer.Option(help="--microdata: zero cells are primary "
                                            "too.")]
ProtectionLevel = Annotated[float, typer.Option(
    min=0.0, help="--microdata: protection levels of primary cells, as a fraction of their "
                  "value (both sides).")]
SlidingLevel = Annotated[float, typer.Option(
    "--sliding-protection", min=0.0,
    help="--microdata: sliding protection level of primary cells, as a fraction of their "
         "value: the attacker's interval must be at least this wide, wherever it lies.")]
AprioriOption = Annotated[str, typer.Option(
    "--apriori", help="What the attacker knows of every cell beforehand: nonnegative (at "
                      "least 0: what a stranger knows), tau-argus (tau-Argus 4.1's box: 0 to "
                      "1.5 x the largest cell of the true table), or pytauargus (the smallest "
                      "to the largest cell); the last two read the true table, for comparing "
                      "with those tools.")]
SpecOption = Annotated[Path | None, typer.Option(
    "--spec", help="A table spec file (YAML): explanatory variables with their hierarchies "
                   "(.hrc files, parent -> children, or nested columns), response, weight, "
                   "contributor, primary suppression rules and protection levels, for the "
                   "microdata in SOURCE (docs/tables-spec.md).")]
Singletons = Annotated[bool, typer.Option(
    "--singletons", help="Also the singleton attack: a respondent alone in a suppressed cell "
    "(one contributor, magnitude tables) knows its value and uses it against the other "
    "primary cells (tau-Argus's and GaussSuppression's singleton problem).")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress on stderr.")]
AsJson = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _inputs(source: Path, rda: Path | None, recompute: bool | None, dimensions: str | None,
            value: str | None, status: str | None, frequency: str | None, microdata: bool,
            max_n: int | None, p_percent: float | None, nk: str | None, protect_zeros: bool,
            protection: float, spec: Path | None = None, sliding: float = 0.0,
            manual_margin: float | None = None) -> Any:
    """The options that name the tables, as the library's :class:`tables.TableSource`."""
    from fractions import Fraction

    from statrecon.tables import MicrodataRules, TableSource, parse_nk

    margin = None if manual_margin is None else Fraction(str(manual_margin)) / 100
    return TableSource(source, rda=rda, recompute=recompute, manual_margin=margin,
                       dimensions=tuple(d.strip() for d in (dimensions or "").split(",")
                                        if d.strip()),
                       value=value, status=status, frequency=frequency, microdata=microdata,
                       spec=spec, rules=MicrodataRules(max_n, p_percent, parse_nk(nk),
                                                       protect_zeros, protection, sliding))


def _check_apriori(apriori: str) -> None:
    from statrecon.engines.intervals import APRIORI

    if apriori not in APRIORI:
        raise StatreconError(f"--apriori {apriori!r}: choose from {', '.join(APRIORI)}")


@tables_app.command("audit")
def audit(
    source: Source,
    rda: Rda = None,
    recompute_totals: Recompute = None,
    dimensions: Dimensions = None,
    value: Value = None,
    status: Status = None,
    frequency: Frequency = None,
    microdata: Microdata = False,
    max_n: MaxN = None,
    p_percent: PPercent = None,
    nk: NK = None,
    protect_zeros: ProtectZeros = False,
    protection: ProtectionLevel = 0.0,
    sliding_protection: SlidingLevel = 0.0,
    manual_margin: ManualMargin = None,
    spec: SpecOption = None,
    integer: Annotated[bool, typer.Option(help="Also the integer interval (CP-SAT), "
                                          "proven.")] = True,
    apriori: AprioriOption = "nonnegative",
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds per cell for all its solves; a bound not proven in time is "
                        "'unknown'. Default 10; 'inf' for none.")] = None,
    workers: Annotated[int, typer.Option(min=0, help="Local worker processes; 0 = all "
                                         "cores.")] = 1,
    executor: Annotated[str | None, typer.Option(help="dask://HOST:PORT to audit on a Dask "
                                                 "cluster instead.")] = None,
    html: Annotated[Path | None, typer.Option(help="Also write an HTML report here.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Show every suppressed cell, not only "
                                       "those not protected.")] = False,
    singletons: Singletons = False,
    ptable: Annotated[Path | None, typer.Option(
        help="SOURCE is a publication perturbed with this ptable (CSV/Parquet: ONS's pcv, "
             "ckey, pvalue or ABS's i, j, p, v, p_int_lb, p_int_ub), one row per cell "
             "(--dimensions, --value; a 'table' column for linked tables; x: withheld): "
             "audit every true count behind it (--time-limit per cell; the one table that "
             "fits, its start, gets at least 120 s). Exit 2: a published value the ptable "
             "cannot produce.")] = None,
    attacker_knows: Annotated[str, typer.Option(
        "--attacker-knows", help="--ptable: what the attacker is assumed to know, stated in "
        "the output: ptable (the worst case), d (only D) or nothing.")] = "ptable",
    threshold: Annotated[int | None, typer.Option(
        min=0, help="--ptable: the threshold below which the publication withheld a count "
                    "(x). Default: 10 with an ONS ptable, 0 with an ABS one.")] = None,
    hierarchy: Annotated[list[str] | None, typer.Option(
        help="--ptable: VAR=FILE.hrc, a variable's tau-Argus hierarchy (repeat for several; "
             "the others are flat).")] = None,
    posterior: Annotated[bool, typer.Option(
        help="--ptable: also each true count's posterior, the attacker knowing the ptable "
             "(a flat prior over the tables that add up, each cell's perturbation "
             "independent; exact, by enumeration, where the cells linked to it have at most "
             "20,000 such tables, else estimated by a Markov chain over them), and the "
             "cells most surely recovered; they get --time-limit, at least 120 s, in all.")
    ] = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Prove, for every suppressed cell, the interval an attacker can derive (LP and over
    whole units) and whether it protects the cell. Exit 0: all protected; 4: some disclosed or
    under-protected; 3: some unknown within the time limit. With --ptable: every true count
    behind a perturbed publication (exit 4: some pinned; 2: inconsistent with the ptable)."""
    if ptable is not None:
        given = [name for name, v in (
            ("--rda", rda), ("--status", status), ("--frequency", frequency),
            ("--microdata", microdata), ("--max-n", max_n), ("--p-percent", p_percent),
            ("--nk", nk), ("--protect-zeros", protect_zeros), ("--protection", protection),
            ("--sliding-protection", sliding_protection), ("--spec", spec), ("--html", html),
            ("--executor", executor), ("--singletons", singletons),
            ("--recompute-totals", recompute_totals), ("--manual-margin", manual_margin))
            if v]
        if given or apriori != "nonnegative":
            given += ["--apriori"] if apriori != "nonnegative" else []
            raise StatreconError(f"--ptable audits a perturbed publication: leave out "
                                 f"{', '.join(given)}")
        _audit_perturbed(source, ptable, dimensions, value or "value", attacker_knows,
                         threshold, hierarchy or [], time_limit, integer, as_json, all_,
                         quiet, posterior)
        return
    if posterior:
        raise StatreconError("--posterior is for a perturbed publication: give its --ptable")
    from statrecon.commands.options import time_limit_option, workers_option
    from statrecon.commands.progress import run_bar
    from statrecon.engines.intervals import AuditOptions
    from statrecon.interrupt import hard_limit
    from statrecon.outputs import check_writable, write_atomically
    from statrecon.report import output_console
    from statrecon.report import tables as report
    from statrecon.runs.tables import audit_tables
    from statrecon.tables import load

    _check_apriori(apriori)
    limit = time_limit_option(time_limit, AuditOptions.time_limit)
    with hard_limit(backstop(limit), "reading and auditing the tables"):
        named = _inputs(source, rda, recompute_totals, dimensions, value, status, frequency,
                        microdata, max_n, p_percent, nk, protect_zeros, protection, spec,
                        sliding_protection, manual_margin)
        tables = load(named)
        if html is not None:  # once the inputs are read: never one of them, nor one they name
            check_writable(html, "--html", inputs_given=named.files())
        options = AuditOptions(time_limit=limit, integer=integer)
        with run_bar("suppressed cells", "not protected", quiet=quiet) as progress:
            result = audit_tables(tables, options, apriori=cast(Any, apriori),
                                  workers=workers_option(workers), executor=executor,
                                  on_progress=progress, singletons=singletons)
        if html is not None:
            page = report.html_page(result)
            write_atomically(html, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(result)) + "\n")
    else:
        report.render(result, output_console(), show_all=all_)
    verdicts = result.verdicts
    if verdicts & {"disclosed", "under-protected"}:
        raise typer.Exit(EXIT_UNPROTECTED)
    if "unknown" in verdicts:
        raise typer.Exit(EXIT_UNKNOWN)


def _audit_perturbed(source: Path, ptable: Path, dimensions: str | None, value: str,
                     attacker_knows: str, threshold: int | None, hierarchy: list[str],
                     time_limit: float | None, integer: bool, as_json: bool,
                     all_: bool, quiet: bool, posterior: bool) -> None:
    """``tables audit --ptable``: parse, audit the publication, print, exit 4 / 3 / 0."""
    from statrecon.commands.options import time_limit_option
    from statrecon.commands.progress import step_bar
    from statrecon.engines.intervals import AuditOptions
    from statrecon.report import ckm as report
    from statrecon.report import output_console
    from statrecon.runs.ckm import PublicationOptions, audit_publication
    from statrecon.tables.ckm import KNOWLEDGE

    if attacker_knows not in KNOWLEDGE:
        raise StatreconError(f"--attacker-knows {attacker_knows!r}: choose from "
                             f"{', '.join(KNOWLEDGE)}")
    dims = tuple(d.strip() for d in (dimensions or "").split(",") if d.strip())
    if not dims:
        raise StatreconError(f"{source}: give the explanatory variables with --dimensions "
                             "a,b,...")
    files = []
    for text in hierarchy:
        variable, sep, path = text.partition("=")
        if not sep or not variable.strip() or not path.strip():
            raise StatreconError(f"--hierarchy {text!r}: expected VAR=FILE.hrc")
        files.append((variable.strip(), Path(path.strip())))
    limit = time_limit_option(time_limit, AuditOptions.time_limit)
    if posterior and attacker_knows != "ptable":
        raise StatreconError(f"--posterior with --attacker-knows {attacker_knows}: the "
                             "posterior needs the ptable's probabilities (--attacker-knows "
                             "ptable)")
    options = PublicationOptions(dims, value, tuple(files), threshold,
                                 cast(Any, attacker_knows), posterior)
    with step_bar("Auditing the publication", quiet=quiet) as tell:
        checked = audit_publication(source, ptable, options,
                                    AuditOptions(time_limit=limit, integer=integer), tell)
    if as_json:
        sys.stdout.write(json.dumps(report.publication_json(checked, source)) + "\n")
    else:
        report.render_publication(checked, source, output_console())
    if checked.pinned:
        raise typer.Exit(EXIT_UNPROTECTED)
    if checked.unknown:
        raise typer.Exit(EXIT_UNKNOWN)


def backstop(limit: float | None) -> float | None:
    """When the whole command is stopped if it overruns ``--time-limit`` in work that watches
    no deadline (reading, building): a little after the engines' own deadline."""
    return None if limit is None else limit * 1.1 + 2.0


def _check_protect_out(out: Path, tables: Any, named: Any) -> None:
    """``--out`` once the inputs are read: never one of them, nor a file they name (a .tab
    also writes its .rda; an .arb a .tab and .rda per table), and a format that can hold
    the tables."""
    from statrecon.outputs import check_writable
    from statrecon.report import tables as report

    suffix = out.suffix.lower()
    paths = [out]
    if suffix == ".tab":
        paths.append(out.with_suffix(".rda"))
    elif suffix == ".arb":
        for table in tables.tables:
            tab = out.with_name(f"{out.stem}_{table.name}.tab")
            paths += [tab, tab.with_suffix(".rda")]
    else:  # a publication and its working file
        paths.append(report.working_path(out))
    for path in paths:
        check_writable(path, "--out", inputs_given=named.files())
    if suffix == ".tab" and len(tables.tables) != 1:
        raise StatreconError(f"--out {out}: linked tables go back to tau-Argus as a batch file "
                             "with a .tab per table: write .arb (or .csv, .parquet)")
    if suffix in (".tab", ".arb") and any(c.sliding for c in tables.cells()):
        raise StatreconError(f"--out {out}: a tau-Argus .tab has no sliding protection "
                             "levels; write .csv or .parquet")


@tables_app.command("protect")
def protect(
    source: Source,
    out: Annotated[Path | None, typer.Option(
        help="The protected table: .tab (tau-Argus, with its .rda and .hrc beside it), .arb "
             "(linked tables: a tau-Argus batch file and a .tab per table), .csv or .parquet "
             "(the publication, and its working file beside it). A tau-Argus job writes what "
             "its <WRITETABLE> commands ask for; --out then also writes its tables.")] = None,
    publish: Annotated[str, typer.Option(
        "--publish", help="The form of a .csv/.parquet --out publication (a suppressed "
        "value is never in it): values (the codes and each value, x where suppressed), "
        "masked (the value blank where suppressed, a flag column: x suppressed, - empty) or "
        "pivot (CSV: the table's layout, tau-Argus's CSV). The working file beside it has "
        "every true value.")] = "values",
    out_dir: Annotated[Path | None, typer.Option(
        "--out-dir", help="A tau-Argus job: the folder its <WRITETABLE> files go to "
                          "(default: the batch file's folder).")] = None,
    rda: Rda = None,
    recompute_totals: Recompute = None,
    dimensions: Dimensions = None,
    value: Value = None,
    status: Status = None,
    frequency: Frequency = None,
    microdata: Microdata = False,
    max_n: MaxN = None,
    p_percent: PPercent = None,
    nk: NK = None,
    protect_zeros: ProtectZeros = False,
    protection: ProtectionLevel = 0.0,
    sliding_protection: SlidingLevel = 0.0,
    manual_margin: ManualMargin = None,
    spec: SpecOption = None,
    method: Annotated[str | None, typer.Option(
        help="fast (Gaussian elimination, then an audit-driven repair: large and linked "
             "tables) or exact (a master MIP on HiGHS, or CP-SAT, with cuts from failed "
             "audits: proves the fewest cells, small tables), both suppressing cells; or round "
             "(every cell to a multiple of --base: statrecon tables round). Default fast; a "
             "tau-Argus job: its <SUPPRESS> (OPT exact, GH/MOD/NET fast).")] = None,
    cost: Annotated[str | None, typer.Option(
        help="What to minimise (tau-Argus's cost functions): count (cells: unity), value "
             "(their total), cost (the table's cost column, e.g. tau-Argus's COSTVAR or an "
             "a-priori file's C), frequency (their contributors) or distance (steps to the "
             "nearest primary cell, 1 to 5 a variable). Default count; a tau-Argus job: its "
             "<SPECIFYTABLE>'s (the response's value unless it says).")] = None,
    cost_lambda: Annotated[float | None, typer.Option(
        "--cost-lambda", min=0.0, max=10.0,
        help="tau-Argus's lambda transformation of each cost: cost ** lambda (0.5: square "
             "root), log(cost + 1) for 0. Default 1 (a job: its own).")] = None,
    suppress_empty: Annotated[bool, typer.Option(
        "--suppress-empty", help="Offer empty cells (no contributors: value 0, frequency 0) "
        "for secondary suppression too; by default they are published, as tau-Argus does. "
        "Zeros with contributors are always offered.")] = False,
    apriori: AprioriOption = "nonnegative",
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="Seconds for the whole run; past it the best audited pattern is "
                        "returned as feasible, or none. Default 60; 'inf' for none.")] = None,
    singletons: Singletons = False,
    base: Annotated[int | None, typer.Option(
        help="--method round: the rounding base b (a whole number, at least 2).")] = None,
    rounding: Annotated[str | None, typer.Option(
        "--rounding", help="--method round: nearest (default), random (needs --seed) or "
                           "controlled (the tables still add up), as tables round "
                           "--method.")] = None,
    seed: Annotated[int | None, typer.Option(
        min=0, help="--method round --rounding random: the seed of the draws.")] = None,
    attacker_knows: Annotated[str | None, typer.Option(
        "--attacker-knows", help="--method round: method (default) or base, as tables "
                                 "round.")] = None,
    audit: Annotated[bool, typer.Option(
        "--audit", help="--method round: also audit the rounded release (exit 4 when a "
                        "true value is pinned), as tables round --audit.")] = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Choose secondary cells so that every primary cell is protected under the integer
    audit; every pattern is re-audited before it is written. A tau-Argus batch file with
    microdata, <SUPPRESS> or <WRITETABLE> is carried out as a job and writes what it asks
    for. Exit 0: written; 2: no pattern protects a primary cell; 3: none found within the
    time limit (nothing written)."""
    from statrecon.commands.options import time_limit_option
    from statrecon.commands.progress import step_bar
    from statrecon.engines.suppression import ProtectOptions
    from statrecon.exitcodes import EXIT_INFEASIBLE
    from statrecon.interrupt import hard_limit
    from statrecon.report import output_console
    from statrecon.report import tables as report
    from statrecon.runs.tables import protect_tables
    from statrecon.tables import load

    if method == "round":
        _refuse_with("--method round", {
            "--publish": publish != "values", "--out-dir": out_dir is not None,
            "--microdata": microdata, "--max-n": max_n is not None,
            "--p-percent": p_percent is not None, "--nk": nk is not None,
            "--protect-zeros": protect_zeros, "--protection": protection != 0.0,
            "--sliding-protection": sliding_protection != 0.0,
            "--manual-margin": manual_margin is not None, "--cost": cost is not None,
            "--cost-lambda": cost_lambda is not None, "--suppress-empty": suppress_empty,
            "--apriori": apriori != "nonnegative", "--singletons": singletons})
        _round_from_protect(source, out, base, rounding, seed, attacker_knows, audit,
                            time_limit, as_json,
                            (rda, recompute_totals, dimensions, value, status, frequency, spec))
        return
    _check_suppression_options(method, cost, apriori, out, publish)
    _refuse_with(f"--method {method or 'fast'}", {
        "--base": base is not None, "--rounding": rounding is not None,
        "--seed": seed is not None, "--attacker-knows": attacker_knows is not None,
        "--audit": audit})
    limit = time_limit_option(time_limit, ProtectOptions.time_limit)
    lam = None if cost_lambda is None else Fraction(str(cost_lambda))
    if source.suffix.lower() == ".arb" and (out_dir is not None or _is_job(source)):
        how = _JobHow(method, cost, lam, apriori, suppress_empty, singletons, limit, publish)
        _protect_job(source, out, out_dir, how, as_json, quiet)
        return
    if out is None:
        raise StatreconError("give --out: where the protected table goes")
    if out_dir is not None:
        raise StatreconError("--out-dir is for a tau-Argus job's <WRITETABLE> files")
    start = time.monotonic()
    with hard_limit(backstop(limit), "reading and protecting the tables"):
        named = _inputs(source, rda, recompute_totals, dimensions, value, status, frequency,
                        microdata, max_n, p_percent, nk, protect_zeros, protection, spec,
                        sliding_protection, manual_margin)
        tables = load(named)
        _check_protect_out(out, tables, named)
        with step_bar(f"Protecting ({method or 'fast'})", quiet=quiet) as tell:
            left = None if limit is None else max(0.001, limit - (time.monotonic() - start))
            options = ProtectOptions(method=cast(Any, method or "fast"), time_limit=left,
                                     on_progress=lambda stage, done, total: tell(done, total,
                                                                                 stage))
            done = protect_tables(tables, options, cost=cast(Any, cost or "count"),
                                  apriori=cast(Any, apriori), suppress_empty=suppress_empty,
                                  singletons=singletons, cost_lambda=lam or Fraction(1))
        if done.protected:
            report.write_protected(done.tables, out, publish)
    if as_json:
        sys.stdout.write(json.dumps(report.protection_json(done, out)) + "\n")
    else:
        report.render_protection(done, out, output_console())
    if done.result.status == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)
    if not done.protected:
        raise typer.Exit(EXIT_UNKNOWN)


def _check_suppression_options(method: str | None, cost: str | None, apriori: str,
                               out: Path | None, publish: str) -> None:
    """``tables protect``'s choices by name, before anything is read."""
    from statrecon.engines.suppression import METHODS
    from statrecon.runs.tables import COSTS

    _check_apriori(apriori)
    if method is not None and method not in METHODS:
        raise StatreconError(f"--method {method!r}: choose from {', '.join(METHODS)}, round")
    if cost is not None and cost not in COSTS:
        raise StatreconError(f"--cost {cost!r}: choose from {', '.join(COSTS)}")
    if out is not None and out.suffix.lower() not in (".tab", ".arb", ".csv", ".parquet"):
        raise StatreconError(f"--out {out}: write a .tab, .arb, .csv or .parquet file")
    if publish not in ("values", "masked", "pivot") or (
            publish == "pivot" and out is not None and out.suffix.lower() != ".csv"):
        raise StatreconError(f"--publish {publish!r}: values, masked, or pivot (a .csv --out)")


def _round_from_protect(source: Path, out: Path | None, base: int | None,
                        rounding: str | None, seed: int | None, attacker_knows: str | None,
                        audit: bool, time_limit: float | None, as_json: bool,
                        inputs: tuple[Any, ...]) -> None:
    """``tables protect --method round``: ``tables round`` with its defaults (the method
    checked here first, so a mistake names this command's flag, ``--rounding``)."""
    from statrecon.runs.rounding import DEFAULT_WORKERS
    from statrecon.tables.rounding import METHODS

    if base is None:
        raise StatreconError("--method round needs --base b (a whole number, at least 2)")
    if out is None:
        raise StatreconError("give --out: where the rounded table goes")
    if rounding is not None and rounding not in METHODS:
        raise StatreconError(f"--rounding {rounding!r}: choose from {', '.join(METHODS)}")
    if (rounding == "random") != (seed is not None):
        raise StatreconError("--rounding random needs --seed N (and only it takes one)")

    _round(source, out, base, rounding or "nearest", seed, attacker_knows or "method", audit,
           time_limit, None, DEFAULT_WORKERS, as_json, inputs)


def _refuse_with(method: str, given: dict[str, bool]) -> None:
    """One line naming the options given that ``method`` does not take (never dropped
    without a word)."""
    wrong = [name for name, was_given in given.items() if was_given]
    if wrong:
        raise StatreconError(f"{method} takes no {', '.join(wrong)}")


def _is_job(source: Path) -> bool:
    from statrecon.tables.job import is_job

    return is_job(source)


@dataclass(frozen=True)
class _JobHow:
    """The options of ``tables protect`` that a tau-Argus job's run takes."""

    method: str | None
    cost: str | None
    cost_lambda: Any
    apriori: str
    suppress_empty: bool
    singletons: bool
    time_limit: float | None
    publish: str = "values"


def _protect_job(source: Path, out: Path | None, out_dir: Path | None, how: _JobHow,
                 as_json: bool, quiet: bool) -> None:
    """``tables protect job.arb``: the job carried out (``runs/job.py``), what its
    <WRITETABLE> commands ask for written, and ``--out`` too when given."""
    from statrecon.commands.progress import step_bar
    from statrecon.engines.suppression import ProtectOptions
    from statrecon.exitcodes import EXIT_INFEASIBLE
    from statrecon.interrupt import hard_limit
    from statrecon.outputs import check_writable, check_writable_folder
    from statrecon.report import job as job_report
    from statrecon.report import output_console
    from statrecon.report import tables as report
    from statrecon.runs.job import JobOptions, check_outputs, run_job
    from statrecon.tables import TableSource
    from statrecon.tables.job import read_job

    given = (("source", source),)
    if out_dir is not None:
        check_writable_folder(out_dir, "--out-dir")
    with hard_limit(backstop(how.time_limit), "carrying out the job"):
        job = read_job(source, out_dir)
        check_outputs(job, given)
        if out is not None and any(s.method == "RND" for s in job.suppresses):
            raise StatreconError(f"{source}: --out writes the job's tables suppressed; this "
                                 "job rounds a table (<SUPPRESS> RND): its <WRITETABLE> "
                                 "writes it rounded; leave out --out")
        if out is not None:
            check_writable(out, "--out", inputs_given=given)
        elif not job.writes:
            raise StatreconError(f"{source}: the job writes no table (no <WRITETABLE>); give "
                                 "--out")
        with step_bar("Protecting (job)", quiet=quiet) as tell:
            options = ProtectOptions(time_limit=how.time_limit,
                                     on_progress=lambda stage, done, total: tell(done, total,
                                                                                 stage))
            run = run_job(job, JobOptions(options, how.method, cast(Any, how.cost),
                                          how.cost_lambda, cast(Any, how.apriori),
                                          how.suppress_empty, how.singletons))
        if out is not None and run.status == "written":
            tables = run.linked()
            _check_protect_out(out, tables, TableSource(source))
            written = report.write_protected(tables, out, how.publish)
    if as_json:
        sys.stdout.write(json.dumps(job_report.job_json(run)) + "\n")
    else:
        job_report.render_job(run, output_console())
        if out is not None and run.status == "written":
            output_console().print(f"--out: wrote {', '.join(map(str, written))} (the job's "
                                   "tables, linked)", highlight=False)
    if run.status == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)
    if run.status != "written":
        raise typer.Exit(EXIT_UNKNOWN)


# ------------------------------------------------------------- cell key perturbation (CKM)


@tables_app.command("perturb")
def perturb(
    source: Annotated[Path, typer.Argument(help="Microdata (CSV/Parquet): one row per "
                                           "record.")],
    ptable: Annotated[Path, typer.Option(
        help="The ptable (CSV/Parquet): ONS's columns pcv, ckey, pvalue (whole cell keys "
             "0..255) or ABS/Destatis's i, j, p, v, p_int_lb, p_int_ub (cell keys in [0, 1)); "
             "'tables ptable' builds one.")],
    dimensions: Annotated[list[str], typer.Option(
        help="A table's variables, comma-separated; repeat for several tables of the same "
             "records (a cell in two tables is perturbed once, the same in both).")],
    out: Annotated[Path, typer.Option(
        help="The publication (.csv or .parquet): codes and perturbed counts. Beside it "
             "<stem>.working<suffix>: true counts, cell keys, noise (never to publish).")],
    record_key: Annotated[str | None, typer.Option(
        help="The microdata's column of record keys (ONS: whole numbers 0..255; ABS: numbers "
             "in [0, 1)).")] = None,
    seed: Annotated[int | None, typer.Option(
        min=0, help="Draw the record keys with this seed instead; they are kept with the "
                    "records in <stem>.records.working<suffix>.")] = None,
    ons_id: Annotated[str | None, typer.Option(
        "--ons-id", help="Or the microdata's column of whole-number ids: each record's key "
        "is its id modulo 4096, as ONS's package makes them from ons_id (ONS ptables "
        "only).")] = None,
    threshold: Annotated[int | None, typer.Option(
        min=0, help="Withhold (x) a perturbed count below this. Default: 10 with an ONS "
                    "ptable (ONS's package), 0 with an ABS one.")] = None,
    margins: Annotated[bool, typer.Option(
        help="Publish the totals too, each perturbed by its own cell key (--no-margins: the "
             "cells below them only, as ONS's package tabulates).")] = True,
    attacker_knows: Annotated[str, typer.Option(
        "--attacker-knows", help="What the attacker is assumed to know, stated in the "
        "output: ptable (the ptable itself: the worst case), d (only D, the largest noise) "
        "or nothing (the guidance: publish neither).")] = "ptable",
    audit: Annotated[bool, typer.Option(
        "--audit", help="Also audit the release: what each published count allows (under "
        "--attacker-knows) and the true tables' equations prove about every true count, "
        "LP and integer intervals, each proven (exit 4 when one is pinned).")] = False,
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="--audit: seconds per cell for its solves. Default 10; 'inf' for "
                        "none.")] = None,
    as_json: AsJson = False,
) -> None:
    """Cell key perturbation: tabulate microdata, sum each cell's record keys into its cell
    key, and add the noise the ptable gives that key; a zero stays zero, and the same cell is
    perturbed the same way in every table. Exit 0: written; 4: --audit pins a true count."""
    from statrecon.commands.options import time_limit_option
    from statrecon.engines.intervals import AuditOptions
    from statrecon.outputs import check_writable
    from statrecon.report import ckm as report
    from statrecon.report import output_console
    from statrecon.runs.ckm import PerturbOptions, audit_perturbed, perturb_microdata
    from statrecon.tables.ckm import KNOWLEDGE

    if attacker_knows not in KNOWLEDGE:
        raise StatreconError(f"--attacker-knows {attacker_knows!r}: choose from "
                             f"{', '.join(KNOWLEDGE)}")
    if out.suffix.lower() not in report.PUBLICATIONS:
        raise StatreconError(f"--out {out}: write a .csv or .parquet file")
    if sum(g is not None for g in (record_key, seed, ons_id)) != 1:
        raise StatreconError("give --record-key COLUMN (the microdata's record keys), "
                             "--ons-id COLUMN (keys from ids, as ONS's package) or --seed N "
                             "(draw them): exactly one of the three")
    tables = tuple(tuple(v.strip() for v in d.split(",") if v.strip()) for d in dimensions)
    if not all(tables):
        raise StatreconError("--dimensions: give each table's variables, comma-separated")
    given = (("source", source), ("--ptable", ptable))
    for path in report.output_paths(out, seed is not None):
        check_writable(path, "--out", inputs_given=given)
    options = PerturbOptions(tables, record_key, seed, threshold, margins,
                             cast(Any, attacker_knows), ons_id)
    limit = time_limit_option(time_limit, AuditOptions.time_limit)
    run = perturb_microdata(source, ptable, options)
    written = report.write_perturbed(run, out)
    checked = audit_perturbed(run, AuditOptions(time_limit=limit)) if audit else None
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(run, out, written, checked)) + "\n")
    else:
        report.render(run, written, output_console())
        if checked is not None:
            report.render_audit(run, checked, output_console())
    if checked is not None and checked.pinned:
        raise typer.Exit(EXIT_UNPROTECTED)


@tables_app.command("ptable")
def ptable_command(
    d: Annotated[int, typer.Option("--d", min=1, max=50, help="D: the largest noise.")],
    v: Annotated[str, typer.Option("--v", help="V: the noise variance (exact, e.g. "
                                   "1.08).")],
    out: Annotated[Path, typer.Option(help="The ptable (.csv or .parquet).")],
    js: Annotated[int, typer.Option(min=0, max=50, help="js: counts 1..js are never "
                                    "published.")] = 0,
    mono: Annotated[bool, typer.Option(help="Probabilities not decreasing from the largest "
                                       "negative noise up to 0 (sdcTools' default).")] = True,
    ptable_format: Annotated[str, typer.Option(
        "--format", help="abs (ABS/Destatis: i, j, p, v, p_int_lb, p_int_ub) or ons (pcv, "
                         "ckey, pvalue; the key k perturbs as the ABS key k/256).")] = "abs",
) -> None:
    """Build a ptable for counts by maximum entropy, as sdcTools' ptable does
    (create_cnt_ptable(D, V, js)): no bias, variance at most V, noise within +-D, no count
    published as 1..js."""
    from statrecon.engines.ckm import PTableParams, build_ptable
    from statrecon.number_reader import NumberError, parse_number
    from statrecon.outputs import check_writable
    from statrecon.report import ckm as report
    from statrecon.report import output_console
    from statrecon.tables.ckm import keyed

    if ptable_format not in ("abs", "ons"):
        raise StatreconError(f"--format {ptable_format!r}: choose abs or ons")
    if out.suffix.lower() not in report.PUBLICATIONS:
        raise StatreconError(f"--out {out}: write a .csv or .parquet file")
    try:
        variance = parse_number(v)
    except NumberError as e:
        raise StatreconError(f"--v: {e}") from None
    if variance <= 0:
        raise StatreconError(f"--v {v}: the variance must be above 0")
    check_writable(out, "--out")
    built = build_ptable(PTableParams(d, variance, js, mono))
    report.write_ptable(keyed(built) if ptable_format == "ons" else built, out)
    rows = (f"rows 1..{max(built.rows)}, the last for every larger count" if
            ptable_format == "abs" else "pcv 1..750 by cell keys 0..255, the key k as the "
            "ABS key k/256")
    output_console().print(f"wrote {out}: an {ptable_format.upper()} ptable for counts, D = "
                           f"{d}, V = {v}, js = {js} ({rows})", highlight=False)


# ------------------------------------------------------------------------------- rounding


@tables_app.command("round")
def round_command(
    source: Source,
    base: Annotated[int, typer.Option(help="The rounding base b (a whole number, at least "
                                      "2): every cell becomes a multiple of b next to it.")],
    out: Annotated[Path, typer.Option(
        help="The publication (.csv or .parquet): codes and rounded values. Beside it "
             "<stem>.working<suffix>: true values, rounded values, changes (never to "
             "publish).")],
    method: Annotated[str, typer.Option(
        help="nearest (deterministic: the nearest multiple, a tie up), random (unbiased: up "
             "with probability (x mod b)/b; needs --seed) or controlled (the tables still add "
             "up, least total change, as tau-Argus's RND; may not exist for three-way "
             "tables: exit 2).")] = "nearest",
    seed: Annotated[int | None, typer.Option(
        min=0, help="--method random: the seed of the draws (keep it: with it anyone can "
                    "redo them).")] = None,
    rda: Rda = None,
    recompute_totals: Recompute = None,
    dimensions: Dimensions = None,
    value: Value = None,
    status: Status = None,
    frequency: Frequency = None,
    spec: SpecOption = None,
    attacker_knows: Annotated[str, typer.Option(
        "--attacker-knows", help="What the attacker is assumed to know, stated in the "
        "output: method (the method and base: nearest gives r - b/2 <= x < r + b/2, the "
        "others |x - r| < b; the worst case) or base (only the base: |x - r| < b).")
    ] = "method",
    audit: Annotated[bool, typer.Option(
        "--audit", help="Also audit the release: what each rounded value allows (under "
        "--attacker-knows) and the true tables' equations prove about every true value, "
        "LP and integer intervals, each proven (exit 4 when one is pinned).")] = False,
    time_limit: Annotated[float | None, typer.Option(
        min=0.001, help="--method controlled: seconds for its integer programme; past it "
                        "the best rounding found is written as feasible, or none (exit 3). "
                        "Default 60; 'inf' for none.")] = None,
    audit_time_limit: Annotated[float | None, typer.Option(
        "--audit-time-limit", min=0.001, help="--audit: seconds per cell for its solves. "
        "Default 10; 'inf' for none.")] = None,
    workers: Annotated[int, typer.Option(
        min=0, help="--method controlled: CP-SAT's search workers; 0 = all cores (8, its "
                    "portfolio, finds roundings of large three-way tables that one worker "
                    "does not; 1 gives the same rounding on every run).")] = 8,
    as_json: AsJson = False,
) -> None:
    """Round every cell of the tables to a multiple of the base: nearest, random (unbiased)
    or controlled (additivity kept). Exit 0: written; 2: no controlled rounding exists (a
    CP-SAT proof; nothing written); 3: none found within the time limit (nothing written);
    4: --audit pins some true value or leaves a primary cell under-protected."""
    _round(source, out, base, method, seed, attacker_knows, audit, time_limit,
           audit_time_limit, workers, as_json,
           (rda, recompute_totals, dimensions, value, status, frequency, spec))


def _round(source: Path, out: Path, base: int, method: str, seed: int | None,
           attacker_knows: str, audit: bool, time_limit: float | None,
           audit_time_limit: float | None, workers: int, as_json: bool,
           inputs: tuple[Any, ...]) -> None:
    """``tables round``, and ``tables protect --method round`` with the same defaults."""
    from statrecon.commands.options import time_limit_option, workers_option
    from statrecon.engines.intervals import AuditOptions
    from statrecon.exitcodes import EXIT_INFEASIBLE
    from statrecon.interrupt import hard_limit
    from statrecon.outputs import check_writable
    from statrecon.report import output_console
    from statrecon.report import rounding as report
    from statrecon.runs.rounding import (
        DEFAULT_TIME_LIMIT,
        RoundOptions,
        audit_rounded,
        round_tables,
    )
    from statrecon.tables import load
    from statrecon.tables.rounding import KNOWLEDGE, METHODS, check_base

    check_base(base)
    if method not in METHODS:
        raise StatreconError(f"--method {method!r}: choose from {', '.join(METHODS)}")
    if attacker_knows not in KNOWLEDGE:
        raise StatreconError(f"--attacker-knows {attacker_knows!r}: choose from "
                             f"{', '.join(KNOWLEDGE)}")
    if (method == "random") != (seed is not None):
        raise StatreconError("--method random needs --seed N (and only it takes one)")
    if out.suffix.lower() not in report.PUBLICATIONS:
        raise StatreconError(f"--out {out}: write a .csv or .parquet file")
    limit = time_limit_option(time_limit, DEFAULT_TIME_LIMIT)
    options = RoundOptions(base, cast(Any, method), seed, limit, cast(Any, attacker_knows),
                           workers_option(workers))
    with hard_limit(backstop(limit), "reading and rounding the tables"):
        rda, recompute_totals, dimensions, value, status, frequency, spec = inputs
        named = _inputs(source, rda, recompute_totals, dimensions, value, status, frequency,
                        False, None, None, None, False, 0.0, spec)
        tables = load(named)
        for path in report.output_paths(out):
            check_writable(path, "--out", inputs_given=named.files())
        run = round_tables(tables, options)
    written = report.write_rounded(run, out) if run.written else ()
    checked = None
    if audit and run.written:
        per_cell = time_limit_option(audit_time_limit, AuditOptions.time_limit)
        checked = audit_rounded(run, AuditOptions(time_limit=per_cell))
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(run, written, checked)) + "\n")
    else:
        report.render(run, written, output_console(), limit)
        if checked is not None:
            report.render_audit(run, checked, output_console())
    if run.status == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)
    if not run.written:
        raise typer.Exit(EXIT_UNKNOWN)
    if checked is not None and (checked.pinned or checked.under_protected):
        raise typer.Exit(EXIT_UNPROTECTED)
