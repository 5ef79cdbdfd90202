"""Progress of long runs, on stderr, for every command: one mechanism, two faces.

On a terminal: a Rich bar (work items done, a running count, elapsed, ETA) or a spinner.
Anywhere else (a log file, a pipe, ``--json`` piped into a program): plain lines, the first
after a few seconds and then one every few seconds, e.g. ``12/50 blocks, 3,456 claims, 00:42
elapsed``, so a run of minutes is never silent and a short one prints nothing. ``--quiet``
turns both off. ``STATRECON_PROGRESS_INTERVAL`` (seconds) sets the plain lines' pace.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from statrecon.report import safe_text
from statrecon.runs.progress import Progress as RunProgress
from statrecon.runs.progress import Step

ProgressFn = Callable[[int, int, str], None]  # (units done, units in all, what just finished)
PLAIN_DELAY_S = 5.0  # no line for runs shorter than this
PLAIN_INTERVAL_S = 15.0  # then one line per interval
_ENV = "STATRECON_PROGRESS_INTERVAL"


def plain_pace() -> tuple[float, float]:
    """(delay, interval) of plain lines; the environment variable sets both (tests, logs)."""
    text = os.environ.get(_ENV)
    if text:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value, value
    return PLAIN_DELAY_S, PLAIN_INTERVAL_S


def elapsed_text(seconds: float) -> str:
    """00:42, 12:05, 1:02:03."""
    s = int(seconds)
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m:02d}:{s % 60:02d}"


class PlainProgress:
    """The subset of ``rich.progress.Progress`` the commands use, printed as plain lines.

    A daemon thread writes the current state every interval, so one long unit (a tract, a
    solve) still shows the run is alive; callers only record what is done.
    """

    def __init__(self, stream: IO[str], items: str, counted: str = "", *, title: str = "",
                 pace: tuple[float, float] | None = None) -> None:
        self.stream = stream
        self.title = title
        self.items = items
        self.counted = counted
        self.delay, self.interval = pace or plain_pace()
        self.total: float | None = None
        self.completed = 0.0
        self.count = 0
        self.label = ""
        self.deadline: float | None = None  # on time.monotonic(): shown as time left
        self.start = time.monotonic()
        self.printed = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="statrecon-progress",
                                        daemon=True)

    def add_task(self, description: str, total: float | None = None, **fields: Any) -> TaskID:
        with self._lock:
            self.total = total
            self.count = int(fields.get("count", 0))
        return TaskID(0)

    def update(self, task: TaskID, *, completed: float | None = None, total: float | None = None,
               advance: float | None = None, description: str | None = None,
               **fields: Any) -> None:
        with self._lock:
            if total is not None:
                self.total = total
            if completed is not None:
                self.completed = completed
            if advance is not None:
                self.completed += advance
            if "count" in fields:
                self.count = int(fields["count"])
            if "label" in fields:
                self.label = str(fields["label"])
            if "deadline" in fields:
                self.deadline = fields["deadline"]

    def line(self) -> str:
        """``12/50 blocks, 3,456 claims, 00:42 elapsed``."""
        with self._lock:
            done = int(self.completed)
            parts = []
            if self.total is not None:
                parts.append(f"{done:,}/{int(self.total):,} {self.items}".rstrip())
            elif self.items:
                parts.append(f"{done:,} {self.items}")
            if self.counted:
                parts.append(f"{self.count:,} {self.counted}")
            label = safe_text(self.label)
            if self.deadline is not None:
                left = f"{elapsed_text(max(0.0, self.deadline - time.monotonic()))} left"
                label = f"{label}, {left}" if label else left
        parts.append(f"{elapsed_text(time.monotonic() - self.start)} elapsed")
        head = f"{safe_text(self.title)}: " if self.title else ""
        return head + ", ".join(parts) + (f" ({label})" if label else "")

    def _write(self) -> None:
        try:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is not worth a failure
            self._stop.set()
        self.printed += 1

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        self._write()
        while not self._stop.wait(max(self.interval, 0.01)):
            self._write()

    def __enter__(self) -> PlainProgress:
        self.start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self.printed and kind is None:
            self._write()  # the final state, after the lines that said it was running


class _Off(PlainProgress):
    """--quiet: the same calls, nothing printed."""

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


def work_bar(err: Console, items: str, counted: str, *, quiet: bool) -> Progress | PlainProgress:
    """Items done of the total and a running count of what they produced (task field
    ``count``), elapsed time and ETA: a bar on a terminal, plain lines elsewhere (also with
    --json: stdout is the data, stderr the progress), nothing with --quiet."""
    if quiet:
        return _Off(err.file, items, counted)
    if not err.is_terminal:
        return PlainProgress(err.file, items, counted)
    return Progress(TextColumn(f"[bold]{items}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn(f"{{task.fields[count]:,}} {counted}"), TimeElapsedColumn(),
                    TextColumn("ETA"), TimeRemainingColumn(), console=err)


@contextmanager
def run_bar(items: str, counted: str, *, quiet: bool) -> Iterator[RunProgress]:
    """``work_bar`` driven by a run's ``Step`` reports (census tracts, claims blocks): the
    callback to hand to ``reconstruct_release`` or ``run_blocks``."""
    with work_bar(Console(stderr=True), items, counted, quiet=quiet) as bar:
        task = bar.add_task(items, total=None, count=0)

        def update(step: Step) -> None:
            bar.update(task, completed=step.done, total=step.total, count=step.count)

        yield update


@contextmanager
def step_bar(description: str, *, quiet: bool) -> Iterator[ProgressFn]:
    """A bar for runs that report ``(done, total, label)`` (the experiments)."""
    err = Console(stderr=True)
    if quiet or not err.is_terminal:
        plain = (_Off if quiet else PlainProgress)(err.file, "steps", title=description)
        with plain:
            plain.add_task(description)
            yield lambda done, total, label: plain.update(TaskID(0), completed=done,
                                                          total=total, label=label)
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=err,
                  transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total,
                       description=f"{description} [dim]({escape(safe_text(label))})[/]")

        yield update


@contextmanager
def activity(description: str, *, quiet: bool) -> Iterator[None]:
    """One long step without units (a solve): a spinner on a terminal, plain lines saying it
    is still running elsewhere."""
    err = Console(stderr=True)
    if quiet:
        yield
        return
    if not err.is_terminal:
        with PlainProgress(err.file, "", title=description.rstrip("…")):
            yield
        return
    with Progress(SpinnerColumn(), TextColumn(escape(description)), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        bar.add_task(description, total=None)
        yield


def exact_phase(progress: Any) -> str:
    """An exact engine's ``ExactProgress`` in words: 'enumerating: 12 datasets found'."""
    phase = progress.phase
    if phase == "building":
        return "building the model"
    if phase == "enumerating":
        return f"enumerating: {progress.found:,} datasets found"
    if phase.startswith("proving"):
        what = {"proving rows": "certain rows", "proving values": "possible values",
                "proving cells": "certain cells"}.get(phase, phase)
        total = "" if progress.total is None else f" of {progress.total:,}"
        return f"proving {what}: {progress.done:,}{total}"
    if phase == "optimising":
        return f"maximising the likelihood: {progress.found:,} improving datasets"
    if phase == "explaining":
        return "explaining the conflict"
    return str(phase)


class _TimeLeft(ProgressColumn):
    """Seconds before the time limit, from the task's ``deadline`` field (monotonic)."""

    def render(self, task: Any) -> Text:
        end = task.fields.get("deadline")
        if end is None:
            return Text("")
        return Text(f"{elapsed_text(max(0.0, end - time.monotonic()))} left", style="cyan")


@contextmanager
def exact_progress(description: str, *, quiet: bool) -> Iterator[Callable[[Any], None]]:
    """A long reconstruction: the phase of an exact search (building, enumerating with the
    datasets found so far, proving k of m, ...) and the time left before its limit; a spinner
    on a terminal, plain lines elsewhere (``--json`` into a pipe too), nothing with --quiet.
    Yields the callback for ``ExactOptions.on_progress`` (called from solver threads)."""
    err = Console(stderr=True)
    if quiet:
        yield lambda progress: None
        return

    def fields(progress: Any) -> dict[str, Any]:
        left = progress.left
        return {"label": exact_phase(progress),
                "deadline": None if left is None else time.monotonic() + left}

    if not err.is_terminal:
        plain = PlainProgress(err.file, "", title=description.rstrip("…"))
        with plain:
            yield lambda progress: plain.update(TaskID(0), **fields(progress))
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  _TimeLeft(), console=err, transient=True) as bar:
        task = bar.add_task(escape(description), total=None, deadline=None)

        def update(progress: Any) -> None:
            f = fields(progress)
            bar.update(task, description=f"{escape(description)} [dim]"
                       f"({escape(safe_text(f['label']))})[/]", deadline=f["deadline"])

        yield update
