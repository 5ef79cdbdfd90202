"""Ctrl-C and SIGTERM stop a run within a second, whatever it is doing; and a command's
``--time-limit`` stops it too, even in work that watches no deadline (``hard_limit``).

CP-SAT solves with the GIL released, so Python's own signal handler only runs once a solve
returns, and CP-SAT by default catches SIGINT itself and just ends the search early (the
caller then carries on as if a time limit had passed). ``install`` (called by the CLI) makes
SIGTERM raise ``KeyboardInterrupt`` like SIGINT, and starts a thread woken by either signal
(``signal.set_wakeup_fd``) that stops every solve in progress. The CpSolver the engines use
(``statrecon.engines.solvers.cpsat.Solver``) leaves SIGINT to Python, registers itself here while it
solves (``stoppable``), and raises ``KeyboardInterrupt`` when a signal stopped it, so no engine
mistakes an interrupt for a time-out. Without ``install`` (library use) it behaves exactly
like ``CpSolver``. This module imports no solver: the CLI loads it before anything heavy.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol


class Stoppable(Protocol):
    """A solve in progress that another thread can ask to stop (CP-SAT's ``stop_search``)."""

    def stop_search(self) -> None: ...


_requested = threading.Event()
_deferring = False  # main thread inside ``deferred()``
_installed = False
_active: set[Stoppable] = set()
_lock = threading.Lock()
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_KEEP_STOPPING_S = 10.0  # a solve may register just after the watcher looked
_wakeup: tuple[socket.socket, socket.socket] | None = None  # kept open for the process


def install() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt and stop running solves (main thread only)."""
    global _installed, _wakeup
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    for sig in _SIGNALS:
        signal.signal(sig, _raise)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    _wakeup = (reader, writer)
    threading.Thread(target=_watch, args=(reader,), daemon=True,
                     name="statrecon-interrupt").start()
    _installed = True


def worker() -> None:
    """In a pool worker: ignore SIGINT, which Ctrl-C sends to the whole process group (the
    parent stops the pool), and keep CP-SAT from catching it (it would end a solve early and
    reset SIGINT to the default). SIGTERM, the parent's way to stop a worker, still ends it."""
    global _installed
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _installed = True


def installed() -> bool:
    """True once ``install`` (or ``worker``) ran: the process leaves SIGINT to Python."""
    return _installed


@contextmanager
def stoppable(solve: Stoppable) -> Iterator[None]:
    """Register a solve for the block, so a signal stops it at once; raises KeyboardInterrupt
    before and after it when a signal asked to stop."""
    with _lock:
        _active.add(solve)
    try:
        check()
        yield
    finally:
        with _lock:
            _active.discard(solve)
    check()


def requested() -> bool:
    """True once SIGINT or SIGTERM arrived (only after ``install``)."""
    return _requested.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if a signal asked to stop (for long loops without solves)."""
    if _requested.is_set():
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """Let a short critical step finish (starting a worker: a pickle half-sent to it makes it
    die with a traceback); a signal that arrives meanwhile raises at the end."""
    global _deferring
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outer, _deferring = _deferring, True
    try:
        yield
    finally:
        _deferring = outer
    if not outer:
        check()


def _raise(signum: int, frame: FrameType | None) -> None:
    _requested.set()
    if not _deferring:
        raise KeyboardInterrupt


def _watch(reader: socket.socket) -> None:
    """Stop the solves in progress as soon as a signal arrives, and keep stopping new ones."""
    while True:
        try:
            data = reader.recv(64)
        except OSError:
            return
        if not data:
            return
        if not any(b in _SIGNALS for b in data):
            continue
        _requested.set()
        end = time.monotonic() + _KEEP_STOPPING_S
        while time.monotonic() < end:
            with _lock:
                active = list(_active)
            for solver in active:
                solver.stop_search()
            time.sleep(0.02)


@contextmanager
def hard_limit(seconds: float | None, what: str = "the command") -> Iterator[None]:
    """Raise :class:`statrecon.errors.TimeLimitReached` in the main thread once ``seconds``
    have passed, wherever Python code is running (reading a table, building a model, a sort):
    the backstop that makes a command's ``--time-limit`` hold in work that watches no
    deadline of its own. Engines keep their own deadlines, set a little earlier, so that they
    end cleanly with ``unknown`` or their best checked result; this fires only when they
    could not. No limit (None), another thread or no SIGALRM: nothing happens."""
    # lazy: this module imports nothing of statrecon at start-up (the CLI loads it first)
    from statrecon.errors import TimeLimitReached

    if seconds is None or threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        # again in a second: an exception raised inside a garbage-collector callback or a
        # __del__ is printed and dropped by Python, and the command must still stop
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        raise TimeLimitReached(f"the time limit ran out during {what}")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
