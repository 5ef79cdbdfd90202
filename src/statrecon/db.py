"""The one place that opens DuckDB connections, and the one place that quotes identifiers.

Release files, public tables and streams come from strangers, and DuckDB can read and write
files, attach databases and download extensions from plain SQL. So every connection the
package opens is hardened: no extension is installed or loaded behind our back, and once the
package has loaded its own inputs, file-system and network access are switched off and the
configuration is locked, so no SQL text can switch them on again. User text reaches DuckDB only
as re-generated single-statement SQL (sqlglot) or as bound parameters; names go through
:func:`quote_identifier`, never through an f-string.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from statrecon.errors import StatreconError

if TYPE_CHECKING:
    import duckdb

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_IDENTIFIER_LENGTH = 63  # PostgreSQL's limit; no real table or column name is longer

_OPEN_CONFIG = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


def check_identifier(name: str, what: str = "name") -> str:
    """``name`` if it is a plain SQL identifier (letters, digits, underscore), else an error.

    Plain identifiers need no escaping anywhere and read the same in every engine, so a table
    or column name can never smuggle SQL.
    """
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        shown = repr(name)[:60]
        raise StatreconError(f"{what} {shown} is not a plain SQL identifier (letters, digits "
                             "and _, not starting with a digit)")
    if len(name) > MAX_IDENTIFIER_LENGTH:
        raise StatreconError(f"{what} '{name[:20]}...' is longer than "
                             f"{MAX_IDENTIFIER_LENGTH} characters")
    return name


def quote_identifier(name: str, what: str = "name") -> str:
    """A checked identifier, quoted for DuckDB by sqlglot."""
    from sqlglot import exp

    return exp.to_identifier(check_identifier(name, what), quoted=True).sql(dialect="duckdb")


def open_connection() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection that never installs or auto-loads extensions.

    File access is still on, for the package to read its own inputs (by bound parameters);
    call :func:`lock` before any SQL that came from a user's file runs on it.
    """
    import duckdb

    con = duckdb.connect(config=dict(_OPEN_CONFIG))
    # DuckDB's own progress bar would write to the terminal during long queries, over ours.
    # In Jupyter it is off already, and DuckDB refuses to set it without ipywidgets.
    # fetchall: a result left unfinished makes DuckDB refuse the connection's next statement
    if con.execute("SELECT current_setting('enable_progress_bar')").fetchall() != [(False,)]:
        con.execute("SET enable_progress_bar = false")
    return con


def lock(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Switch off file-system and network access and lock the configuration (irreversible)."""
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


_LOCKED: dict[int, duckdb.DuckDBPyConnection] = {}  # process id -> its locked database
_LOCKED_GUARD = threading.Lock()


def _locked_database() -> duckdb.DuckDBPyConnection:
    """This process's locked in-memory database, opened once (a forked child opens its own:
    the parent's database threads are not copied, and its object is kept, never closed)."""
    pid = os.getpid()
    with _LOCKED_GUARD:
        if pid not in _LOCKED:
            _LOCKED[pid] = lock(open_connection())
        return _LOCKED[pid]


def _new_connection() -> duckdb.DuckDBPyConnection:
    base = _locked_database()
    with _LOCKED_GUARD:  # one thread at a time asks the shared object for a connection
        return base.cursor()


def hardened(frames: Mapping[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """A locked connection with the given in-memory tables (pandas/Arrow) registered.

    This is the connection for evaluating anything derived from a release file: it cannot
    touch a file, the network or an extension, whatever SQL it is given. It is a new
    connection to one locked in-memory database per process: opening a database costs about
    20 ms (its catalog), a connection to an open one microseconds, and evaluations come by
    the hundred (one per release tabulated, per shape of public predicate). Its registered
    and temporary tables are its own, seen by no other connection and gone when it is
    closed; the database was locked before any connection to it existed, so none can unlock
    it for another. Create tables here as TEMP tables only.
    """
    con = _new_connection()
    for name, frame in (frames or {}).items():
        con.register(name, frame)
    return con
