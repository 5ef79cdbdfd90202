"""The killable worker process that holds a solve to its time limit: ``bounded_call(fn,
args, limit)`` runs ``fn(*args)`` in a Python process of its own and kills it once the limit
(plus a grace) has passed. HiGHS alone does not keep its limit (its interior point takes a
limit used up by presolve as none; crossover and the MIP driver check the clock only now and
then), so :func:`statrecon.engines.solvers.highs.solve` runs time-limited solves here; the
linear engine's box least squares (scipy's trust region, which takes no limit) too.

Only the standard library is imported here: the errors below are the linear engine's too
(:mod:`statrecon.engines.linear.problem`), which the CLI loads at start-up without scipy (the
worker loads scipy itself).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

# A solve in a worker process gets the limit plus this share of it plus the caller's grace
# period to stop by itself and hand back what it found; past that the worker is killed.
GRACE_SHARE = 0.1
WORKER_START_S = 60.0  # a worker that has not imported scipy by then is given up on
T = TypeVar("T")


class SolverIncomplete(RuntimeError):
    """HiGHS stopped without an optimal point (time limit, numerical trouble)."""


class WorkerUnavailable(SolverIncomplete):
    """The process that runs a time-limited solve could not start or died (not a time-out)."""


class _Worker:
    """A Python process that runs solves sent to it, started with ``python -c`` (not
    multiprocessing: spawn and forkserver re-run the caller's main script in the child, and
    fork copies the parent's solver threads' locks). It imports scipy once; an idle worker is
    kept for the next solve, one that overran is killed."""

    def __init__(self) -> None:
        req_r, req_w = os.pipe()
        res_r, res_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # what the parent sees
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from {__name__} import _serve; _serve({req_r}, {res_w})"],
            pass_fds=(req_r, res_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            env=env)  # stdout is the caller's (--json): the worker prints nothing there
        os.close(req_r)
        os.close(res_w)
        self.send = Connection(req_w, readable=False)
        self.recv = Connection(res_r, writable=False)

    def ready(self) -> bool:
        """The worker has started and said so (False: it died or took too long)."""
        try:
            return bool(self.recv.poll(WORKER_START_S)) and self.recv.recv() == "ready"
        except (EOFError, OSError):
            return False

    def stop(self) -> None:
        self.send.close()
        self.recv.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


_IDLE: list[_Worker] = []  # started workers waiting for a solve; stopped at exit
_STARTING: list[_Worker] = []  # started ahead of a solve (prestart_worker), maybe not ready


def _stop_idle() -> None:
    while _IDLE:
        _IDLE.pop().stop()
    while _STARTING:
        _STARTING.pop().stop()


def prestart_worker() -> None:
    """Start a worker now without waiting for it, so that its imports (~0.6 s) overlap the
    caller's loading and compiling; the next ``bounded_call`` takes it (and still does not
    count its start against the limit). Nothing when a worker is idle or starting already."""
    if sys.platform != "win32" and not _IDLE and not _STARTING:
        _STARTING.append(_Worker())


atexit.register(_stop_idle)


def _take_worker() -> _Worker | None:
    while _IDLE:
        worker = _IDLE.pop()
        if worker.proc.poll() is None:
            return worker
        worker.stop()
    worker = _STARTING.pop() if _STARTING else _Worker()
    if worker.ready():
        return worker
    worker.stop()
    return None


def bounded_call(fn: Callable[..., T], args: tuple[Any, ...], time_limit: float,
                 grace: float = 0.0) -> T | None:
    """``fn(*args)`` in a worker process, or None when it has not answered within the limit
    (plus ``grace`` seconds and GRACE_SHARE of the limit): the worker is then killed, so the
    limit holds whatever the solver inside does. Starting a worker (once, ~0.7 s of imports)
    is not counted. An exception in the worker is raised here; a worker that cannot start or
    dies raises WorkerUnavailable (not a time-out). ``fn`` must be a module-level function (it
    is pickled)."""
    if sys.platform == "win32":  # no pass_fds: solve here, with HiGHS's own limit
        return fn(*args)
    worker = _take_worker()
    if worker is None:
        raise WorkerUnavailable("the solver's worker process did not start (see stderr)")
    answered = False
    try:
        end = time.monotonic() + time_limit * (1 + GRACE_SHARE) + grace
        worker.send.send((fn, args))
        if not worker.recv.poll(max(0.0, end - time.monotonic())):
            return None
        kind, value = worker.recv.recv()
        answered = True
    except (EOFError, OSError):  # the worker died (killed, out of memory): no answer
        raise WorkerUnavailable("the solver's worker process died before answering (out of "
                                "memory?)") from None
    finally:
        if answered:
            _IDLE.append(worker)
        else:
            worker.stop()
    if kind == "error":
        raise value
    return value


def _serve(req_fd: int, res_fd: int) -> None:
    """The worker's loop: (function, arguments) in, ("ok", result) or ("error", exception)
    out, until the parent closes the pipe. Ctrl-C reaches the whole process group: the parent
    decides, so the worker ignores it."""
    # lazy: the worker loads scipy before it says "ready", so no solve is charged for it
    import scipy.optimize  # noqa: F401

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    recv = Connection(req_fd, writable=False)
    send = Connection(res_fd, readable=False)
    send.send("ready")
    while True:
        try:
            fn, args = recv.recv()
        except (EOFError, OSError):
            return
        try:
            out: tuple[str, Any] = ("ok", fn(*args))
        except Exception as e:  # handed to the parent, which raises it
            out = ("error", e)
        try:
            send.send(out)
        except Exception as e:  # an exception that does not pickle
            send.send(("error", RuntimeError(repr(e))))
