"""The console script: Ctrl-C or SIGTERM while the CLI is still starting ends quietly too.

``statrecon.cli`` takes about half a second to import (solvers, DuckDB, sqlglot); until
``cli.main`` installs its handlers (``statrecon.interrupt``), a signal would print Python's
traceback (SIGINT) or kill the process without a word (SIGTERM). This module imports nothing
heavy, so the window before its own handlers is a few milliseconds.
"""

from __future__ import annotations

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
    cli_main()
