"""User-facing errors: anything the user can fix gets one of these, never a traceback."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real


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


class OptionError(StatreconError, ValueError):
    """An ``*Options`` dataclass given a value outside its range (a negative time limit, no
    datasets to generate, a method its registry lacks), raised by its ``__post_init__``.
    ``option`` names the field as data, ``"ClaimsOptions.k_solutions"``; the message is one
    line that names it too. A ValueError as well, as Python's own bad arguments are."""

    def __init__(self, message: str, *, option: str) -> None:
        super().__init__(message)
        self.option = option


def _bad(options: object, name: str, rule: str) -> OptionError:
    option = f"{type(options).__name__}.{name}"
    return OptionError(f"{option} = {getattr(options, name)!r}: {rule}", option=option)


def check_option(options: object, name: str, ok: bool, rule: str) -> None:
    """The one shape of an ``*Options`` check: ``OptionError`` naming the field and ``rule``
    (what it must be) unless ``ok``."""
    if not ok:
        raise _bad(options, name, rule)


def check_time_limit(options: object, name: str = "time_limit") -> None:
    """Seconds: None (no limit) or a number >= 0 (0 gives up at once: everything unknown);
    never NaN or negative. Every ``*Options`` reads its time limits through this."""
    value = getattr(options, name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, Real) or not float(value) >= 0:
        raise _bad(options, name, "must be None (no limit) or seconds >= 0")


def check_count(options: object, name: str, least: int = 1, *, optional: bool = False
                ) -> None:
    """A whole number >= ``least`` (``optional``: None allowed too)."""
    value = getattr(options, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < least:
        raise _bad(options, name, f"must be a whole number >= {least}"
                                  + (" or None" if optional else ""))


def check_positive(options: object, name: str, *, optional: bool = False) -> None:
    """A finite number > 0 (``optional``: None allowed too)."""
    value = getattr(options, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, Real) \
            or not 0 < float(value) < float("inf"):
        raise _bad(options, name, "must be a finite number > 0" + (" or None" if optional
                                                                   else ""))


def check_choice(options: object, name: str, allowed: Iterable[str]) -> None:
    """One of ``allowed`` (a registry's names)."""
    names = list(allowed)
    if getattr(options, name) not in names:
        raise _bad(options, name, f"choose from {', '.join(names)}")
