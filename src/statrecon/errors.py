"""User-facing errors: anything the user can fix gets one of these, never a traceback."""

from __future__ import annotations


class StatreconError(Exception):
    """A mistake in the user's input (release file, SQL, microdata, options).

    The message is one line that names the place (file, line, statistic) and what is wrong.
    The CLI prints it and exits with code 1.

    ``where`` (``FILE:LINE`` or a file) and ``statistic`` (its id), when the raiser knows them,
    say the same as data, so a caller finds the failing input without parsing the message.
    They are keyword-only and optional: ``str(error)`` is the message alone.
    """

    def __init__(self, *args: object, where: str | None = None,
                 statistic: str | None = None) -> None:
        super().__init__(*args)
        self.where = where
        self.statistic = statistic


class ReleaseError(StatreconError):
    """A release file or a statistic in it is malformed."""


class InconsistentReleaseError(StatreconError):
    """Published statistics that no dataset can satisfy; the message names the cells.

    The CLI exits with code 2 (an infeasible release), not 1.
    """


class TimeLimitReached(Exception):
    """The whole command ran past its ``--time-limit`` (plus a short grace) in work that does
    not watch a deadline itself (reading, building, sorting): the answer is unknown, never a
    proof. The CLI exits with code 3. Raised asynchronously by ``interrupt.hard_limit``."""
