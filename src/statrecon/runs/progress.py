"""One progress report for every run (census tracts, claims blocks): a ``Step``.

A run calls its progress callback once when it knows how much there is to do (``done`` 0) and
once per finished unit, so a bar (``commands.progress``) needs no knowledge of the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """Where a run stands after a unit finished (or, with ``unit`` empty, as it starts)."""

    done: int  # units finished
    total: int  # units in all
    count: int  # running count of what they produced (persons, claims)
    unit: str = ""  # the unit that just finished


Progress = Callable[[Step], None]
