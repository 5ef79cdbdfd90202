"""Results -> text, JSON, plots."""

from __future__ import annotations

import re

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
