"""Results -> text, JSON, plots."""

from __future__ import annotations

import os
import re
from typing import Any

from rich.console import Console

PIPE_WIDTH = 1 << 14  # columns when printing into a file or a pipe: no line of ours is wider

# C0/C1 control characters (ESC starts terminal escape sequences, BEL ends OSC titles, CR and
# backspace overwrite what was printed) and the bidirectional overrides that reorder text.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe_text(text: object) -> str:
    """User text (ids, SQL, values, file names) made safe to print on a terminal: control
    characters are shown as escapes (``\\x1b``, ``\\n``) instead of reaching the terminal."""
    s = str(text)
    if not _UNSAFE.search(s):
        return s
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)


def fixed(x: float | None, digits: int = 3) -> str:
    """A measure with ``digits`` decimals, or a dash when there is none."""
    return "–" if x is None else f"{x:.{digits}f}"


def output_console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A Rich console for what a command prints: as wide as the terminal on a terminal, and
    never wrapped at 80 columns into a file or a pipe (an explicit COLUMNS still wins), so a
    long id or SQL text stays one line that grep and diff can read."""
    console = Console(stderr=stderr, **kwargs)
    if not console.is_terminal and "width" not in kwargs and not os.environ.get("COLUMNS"):
        console.width = PIPE_WIDTH
    return console
