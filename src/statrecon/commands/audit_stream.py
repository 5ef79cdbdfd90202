"""``statrecon audit-stream``: a query gate over a stream of SUM/COUNT/AVG statistics.

Each statistic is compiled to one linear equation in the secret column and handed to the
incremental auditor; after every statistic the command says whether it was accepted, which
records it newly pins (with the certificate: the difference of earlier answers that reveals the
value), or, with ``--deny``, that it was refused because it would pin one. Contradicting
answers are reported with the statistics that contradict and exit code 2.

The work is the library's (``runs/audit_stream.py``: parse, compile, audit;
``report/audit_stream.py``: the human view); this module reads the options, wires them and
picks the exit code.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from statrecon.errors import StatreconError
from statrecon.exitcodes import EXIT_INFEASIBLE


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed stream
        return False


def _stdin_with_hint() -> Iterator[list[tuple[int, str]]]:
    """Stdin's batches; on a terminal, first a hint of what to type (once the release's own
    statistics have been audited, when the first line is asked for)."""
    from rich.console import Console

    from statrecon.release.stream import stdin_batches

    if _is_terminal(sys.stdin):
        Console(stderr=True, highlight=False).print(
            "reading statistics from stdin, one per line ('\\[id:] SELECT ... ; answer'); "
            "end with Ctrl-D", style="dim", soft_wrap=True)
    yield from stdin_batches()


# --------------------------------------------------------------------------- the command


def audit_stream(
    release: Annotated[Path, typer.Argument(
        help="Release file giving the schema; its statistics, if any, start the stream.")],
    public: Annotated[Path | None, typer.Option(
        help="Public table (CSV/Parquet) with the known columns, one row per record "
             "(default: the release's 'public:').")] = None,
    input_: Annotated[str, typer.Option(
        "--input", help="Statistics, one per line: '\\[id:] SELECT ... ; answer' or JSON "
                        "{\"id\", \"sql\", \"value\"}; '-' reads stdin.")] = "-",
    deny: Annotated[bool, typer.Option(
        "--deny", help="Refuse (do not add) statistics that would pin a record.")] = False,
    show_values: Annotated[bool, typer.Option(
        "--show-values", help="Print disclosed secret values in the human view.")] = False,
    engine: Annotated[str, typer.Option(
        help="auto (exact rationals, modular once they grow), rational, or modular.")
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines, one per statistic, "
                                                         "then a summary.")] = False,
) -> None:
    """Audit statistics one at a time: what each answer newly reveals, with proofs."""
    from statrecon.api import resolve_public
    from statrecon.engines.stream import ARITHMETICS
    from statrecon.release.files import load_release
    from statrecon.release.stream import StreamSource
    from statrecon.report import output_console
    from statrecon.report.audit_stream import AuditText
    from statrecon.runs.audit_stream import StreamAudit

    if engine not in ARITHMETICS:
        raise StatreconError(f"--engine {engine!r}: choose from {', '.join(ARITHMETICS)}")
    start = time.perf_counter()
    rel = load_release(release)
    table = resolve_public(rel, public)
    if table is None:
        raise StatreconError(f"{release}: audit-stream needs the public table (--public FILE, "
                             "or 'public:' in the release)")
    audit = StreamAudit(rel, table, deny=deny, arithmetic=engine,  # type: ignore[arg-type]
                        started=start)
    text = AuditText(output_console(highlight=False), show_values=show_values, public=table,
                     secret_name=audit.secret_name, domain=audit.domain)
    source = (StreamSource("<stdin>", _stdin_with_hint()) if input_ == "-"
              else StreamSource.file(Path(input_), name=input_))
    for event in audit.events(source):
        if as_json:
            sys.stdout.write(json.dumps(event.to_json()) + "\n")
            sys.stdout.flush()
        else:
            text.step(event)
    summary = audit.summary()
    if as_json:
        sys.stdout.write(json.dumps(summary.to_json()) + "\n")
    else:
        text.summary(summary)
    if summary.inconsistent:
        raise typer.Exit(EXIT_INFEASIBLE)
