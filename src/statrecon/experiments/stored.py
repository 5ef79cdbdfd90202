"""An experiment's finished steps on disk: written atomically as JSON, and read back on a
rerun (which resumes) through the JSON gate and checked by use, so a file changed by hand
is one line naming it, never a traceback in a plot or a table later."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from statrecon import inputs
from statrecon.errors import StatreconError
from statrecon.outputs import write_atomically


def write_step(path: Path, data: Any) -> None:
    text = json.dumps(data, indent=2) + "\n"
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_step(path: Path, what: str, check: Callable[[dict[str, Any]], object]
              ) -> dict[str, Any]:
    """A step's stored result, resumed: a JSON object that ``check`` (what the experiment
    does with it next: a summary row, a table line) takes without an error."""
    data = inputs.read_json(path, what)
    try:
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        check(data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise StatreconError(f"{path}: not the {what} this experiment writes ({type(e).__name__}"
                             f": {str(e)[:80]}); remove it to run that step again",
                             where=str(path)) from None
    return data
