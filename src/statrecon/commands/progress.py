"""The progress bar of long runs over work items (census tracts, household blocks)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def work_bar(err: Console, items: str, counted: str, *, quiet: bool) -> Progress:
    """Items done of the total, a running count of what they produced (task field ``count``),
    elapsed time and ETA, on stderr; off for --json output and when stderr is not a terminal.
    """
    return Progress(TextColumn(f"[bold]{items}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn(f"{{task.fields[count]:,}} {counted}"), TimeElapsedColumn(),
                    TextColumn("ETA"), TimeRemainingColumn(), console=err,
                    disable=quiet or not err.is_terminal)
