"""How a command turns its options into the library's ``*Options``: the one rule of
``--time-limit``, and the one of ``--workers 0``.

Every ``*Options`` of the library takes ``time_limit`` in seconds, with None for no limit,
and its field's default is the engine's default (``ExactOptions.time_limit`` reads it); each
checks its own values when made (``errors.OptionError``). A command's ``--time-limit`` is
None when not given and ``inf`` when the user lifts the limit: :func:`time_limit_option`
maps both, so no command restates an engine's number or tests ``math.isinf`` itself.
"""

from __future__ import annotations

import math
import os


def time_limit_option(value: float | None, default: float | None) -> float | None:
    """``--time-limit`` as the library takes it: not given (None) → ``default``, the
    library's own (pass the options' field, ``ExactOptions.time_limit``, or the run's
    constant, never a number); ``inf`` → None, no limit; anything else, the seconds given.

    >>> time_limit_option(None, 300.0), time_limit_option(math.inf, 300.0)
    (300.0, None)
    >>> time_limit_option(2.5, 300.0)
    2.5
    """
    if value is None:
        return default
    return None if math.isinf(value) else value


def workers_option(value: int) -> int:
    """``--workers`` as the library takes it: a number given stays; 0 (the default of most
    commands) means every core this process may run on (its CPU affinity, which a container
    or ``taskset`` narrows; ``os.cpu_count`` counts the machine's)."""
    if value:
        return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
