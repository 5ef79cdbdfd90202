"""``statrecon examples [DIR]``: write the bundled examples to ``DIR/examples``, so that the
README's commands run as written from ``DIR`` after a plain ``pip install`` (the work is
``statrecon.bundled.write_examples``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def examples(
    folder: Annotated[Path, typer.Argument(
        help="Where to write them: DIR/examples is created. Default: the current folder.")
                      ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Replace bundled files already there "
                                        "(other files are left alone).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was written as JSON on "
                                          "stdout (keys: folder, files).")] = False,
) -> None:
    """Write the bundled examples (releases, tables, the census extract) to DIR/examples.

    The README's commands then run from DIR as written."""
    from rich.console import Console

    from statrecon.bundled import FOLDER, write_examples

    written = write_examples(folder, force=force)
    target = folder / FOLDER
    if as_json:
        print(json.dumps({"folder": str(target), "files": len(written)}))
        return
    Console(stderr=True).print(f"wrote {len(written)} files to {target}/; run the README's "
                               f"commands from {folder}", markup=False, highlight=False,
                               soft_wrap=True)
