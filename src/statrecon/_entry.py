"""The console script: Ctrl-C or SIGTERM while the CLI is still starting ends quietly too.

``statrecon.cli`` takes a tenth of a second or more to import (typer, rich, numpy; the
solvers, DuckDB and sqlglot load only in the command that uses them); until ``cli.main``
installs its handlers (``statrecon.interrupt``), a signal would print Python's
traceback (SIGINT) or kill the process without a word (SIGTERM). This module imports nothing
heavy, so the window before its own handlers is a few milliseconds.

When the command is done, the objects then alive are frozen (``gc.freeze``): the interpreter's
last collection, which otherwise walks every object of pandas, sqlglot and OR-Tools once more
only to free memory the process is about to return, skips them (0.2 s of CPU after a
``reconstruct``). Exit handlers, flushes and module teardown run as before.
"""

from __future__ import annotations

import gc
import signal
import sys

from statrecon.exitcodes import EXIT_INTERRUPTED


def main() -> None:
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # like Ctrl-C until main() runs
    try:
        from statrecon.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    try:
        cli_main()
    finally:
        gc.freeze()
