"""The process exit codes of every command, in one place (the CLI's output contract).

0 ok, 1 user error (one line on stderr), 2 infeasible or inconsistent release, 3 unknown
(time limit), 4 an audit found unprotected cells (``tables audit``), 70 internal error (a bug:
traceback and "please report"), 130 interrupted (Ctrl-C
or SIGTERM). Imports nothing: ``_entry`` needs it
before anything heavy is loaded.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USER = 1
EXIT_INFEASIBLE = 2  # also an inconsistent release
EXIT_UNKNOWN = 3  # a time limit cut the answer short
EXIT_UNPROTECTED = 4  # tables audit: a suppressed cell is disclosed or under-protected
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug in statrecon, never the user's input
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM; finished units of a run are kept
