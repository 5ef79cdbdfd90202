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

import re
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
    if con.execute("SELECT current_setting('enable_progress_bar')").fetchone() != (False,):
        con.execute("SET enable_progress_bar = false")
    return con


def lock(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Switch off file-system and network access and lock the configuration (irreversible)."""
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def hardened(frames: Mapping[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """A locked connection with the given in-memory tables (pandas/Arrow) registered.

    This is the connection for evaluating anything derived from a release file: it cannot
    touch a file, the network or an extension, whatever SQL it is given.
    """
    con = open_connection()
    for name, frame in (frames or {}).items():
        con.register(name, frame)
    return lock(con)
