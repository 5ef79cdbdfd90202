"""Run independent units of work (tracts, blocks) in-process, on a local pool or on Dask.

``run_units`` yields results as units finish, in completion order, so the caller can store
each one at once (a crash loses only the units in flight). The same function runs everywhere:
the pool and Dask only change where it runs, never what it computes.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from statrecon import interrupt
from statrecon.errors import StatreconError

T = TypeVar("T")
R = TypeVar("R")

DASK_PREFIX = "dask://"


def parse_executor(executor: str | None) -> str | None:
    """None (local) or the scheduler address ``tcp://HOST:PORT`` of ``dask://HOST:PORT``."""
    if executor is None or executor in ("local", ""):
        return None
    if not executor.startswith(DASK_PREFIX) or ":" not in executor[len(DASK_PREFIX):]:
        raise StatreconError(f"--executor {executor!r}: expected local or dask://HOST:PORT")
    return "tcp://" + executor[len(DASK_PREFIX):]


def run_units(fn: Callable[[Any, T], R], shared: Any, units: Iterable[T], *, workers: int = 1,
              executor: str | None = None, max_pending: int | None = None
              ) -> Generator[tuple[T, R], None, None]:
    """Yield ``(unit, fn(shared, unit))`` as each unit finishes.

    ``shared`` is sent once per worker (pool initializer, or a Dask broadcast), not per unit.
    ``workers == 1`` with no executor runs in this process. Close the generator when stopping
    early (``contextlib.closing``): a local pool then ends its workers at once.
    """
    address = parse_executor(executor)
    if address is not None:
        yield from _run_dask(fn, shared, units, address)
    elif workers <= 1:
        for unit in units:
            yield unit, fn(shared, unit)
    else:
        yield from _run_pool(fn, shared, units, workers, max_pending or 2 * workers)


_SHARED: Any = None
WAIT_SLICE_S = 0.2  # the longest a signal waits to be raised while the pool works


def _init_worker(shared: Any) -> None:
    global _SHARED
    _SHARED = shared
    interrupt.worker()  # Ctrl-C reaches the whole group: the parent stops the workers


def _call(fn: Callable[[Any, T], R], unit: T) -> R:
    return fn(_SHARED, unit)


def _run_pool(fn: Callable[[Any, T], R], shared: Any, units: Iterable[T], workers: int,
              max_pending: int) -> Iterator[tuple[T, R]]:
    ctx = _context(fn)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                               initargs=(shared,))
    finished = False
    try:
        yield from _drive(pool, fn, units, max_pending)
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:  # interrupted, an error, or the caller stopped early: units in flight are lost
            _kill(pool)


def _context(fn: Callable[..., Any]) -> multiprocessing.context.BaseContext:
    """Where pool workers come from. Not a fork of this process: it holds solver and DuckDB
    threads, which fork does not copy safely. A fork server (a fresh interpreter that
    imported ``fn``'s module once, with no such threads) forks each worker with the solvers
    already imported; a spawned worker imported them itself, a second of CPU each (the test
    suite started 22). Spawn where there is no fork server (not POSIX)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([fn.__module__])  # read when the server first starts
    return ctx


def _kill(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now: cancel what has not started, terminate the workers, reap them."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=2)
        if process.is_alive():
            process.kill()
            process.join(timeout=1)


def _drive(pool: ProcessPoolExecutor, fn: Callable[[Any, T], R], units: Iterable[T],
           max_pending: int) -> Iterator[tuple[T, R]]:
    """Submit at most ``max_pending`` units at a time; yield each as it finishes."""
    pending: dict[Future[R], T] = {}
    source = iter(units)
    exhausted = False
    while True:
        while not exhausted and len(pending) < max_pending:
            try:
                unit = next(source)
            except StopIteration:
                exhausted = True
                break
            with interrupt.deferred():  # may start a worker process: let it start whole
                pending[pool.submit(_call, fn, unit)] = unit
        if not pending:
            return
        # Ctrl-C raises only where no lock of concurrent.futures is held: a KeyboardInterrupt
        # inside ``wait`` or ``result`` can leave a future's lock taken, and stopping the pool
        # then waits on it for ever (a census run ignored SIGINT for 30 s in CI). The waits
        # are short slices, so a signal still stops the run within WAIT_SLICE_S.
        with interrupt.deferred():
            done, _ = wait(list(pending), timeout=WAIT_SLICE_S, return_when=FIRST_COMPLETED)
        for future in done:
            unit = pending.pop(future)
            with interrupt.deferred():
                result = future.result()
            yield unit, result


def _run_dask(fn: Callable[[Any, T], R], shared: Any, units: Iterable[T], address: str
              ) -> Iterator[tuple[T, R]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise StatreconError("--executor dask://... needs Dask: pip install "
                             "'statrecon[dask]'") from None
    try:
        client = Client(address, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise StatreconError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    try:
        shared_future = client.scatter(shared, broadcast=True)
        futures = {}
        for unit in units:
            futures[client.submit(fn, shared_future, unit, pure=False)] = unit
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        client.close()
