"""statrecon.db: hardened connections share one locked in-memory database per process (a
database costs about 20 ms to open, a connection to it microseconds), and still share nothing
else: each connection's registered and temporary tables are its own. What a hardened
connection refuses (files, network, extensions, unlocking) is in
tests/hostile/test_injection.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from statrecon import db


def test_connections_see_only_their_own_tables() -> None:
    a = db.hardened({"t": pd.DataFrame({"x": [1, 2]})})
    b = db.hardened({"t": pd.DataFrame({"x": [5]})})
    c = db.hardened()
    try:
        assert a.execute("SELECT SUM(x) FROM t").fetchone() == (3,)
        assert b.execute("SELECT SUM(x) FROM t").fetchone() == (5,)
        with pytest.raises(duckdb.CatalogException):
            c.execute("SELECT * FROM t")
        a.execute("CREATE TEMP TABLE u AS SELECT 7 AS y")
        with pytest.raises(duckdb.CatalogException):
            b.execute("SELECT * FROM u")
    finally:
        a.close()
    # a's tables went with it; b still works; a new connection can use the same names
    assert b.execute("SELECT SUM(x) FROM t").fetchone() == (5,)
    d = db.hardened({"t": pd.DataFrame({"x": [9]})})
    d.execute("CREATE TEMP TABLE u AS SELECT 8 AS y")
    assert d.execute("SELECT SUM(x) + MIN(y) FROM t, u").fetchone() == (17,)
    for con in (b, c, d):
        con.close()


def test_one_locked_database_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    first = db._locked_database()
    assert db._locked_database() is first
    con = db.hardened()
    try:
        with pytest.raises(duckdb.Error):
            con.execute("SET lock_configuration = false")
        settings = ("SELECT current_setting('lock_configuration'), "
                    "current_setting('enable_external_access'), "
                    "current_setting('enable_progress_bar')")
        assert db.hardened().execute(settings).fetchone() == (True, False, False)
    finally:
        con.close()
    # a forked child (another process id) opens its own, leaving the parent's alone
    monkeypatch.setattr(db.os, "getpid", lambda: -1)
    other = db._locked_database()
    try:
        assert other is not first
        assert db.hardened().execute(settings).fetchone() == (True, False, False)
    finally:
        db._LOCKED.pop(-1).close()



def test_a_new_connection_takes_a_table_at_once(tmp_path: Path) -> None:
    """open_connection reads a setting to its end, so the connection takes other work (a
    registered frame) at once: DuckDB refuses it while a result is half read. Run as a script
    of its own: the setting read differs there from an interactive interpreter (pytest's)."""
    script = tmp_path / "use.py"
    script.write_text(
        "import pandas as pd\n"
        "from statrecon.db import open_connection\n"
        "con = open_connection()\n"
        "con.register('t', pd.DataFrame({'x': [4]}))\n"
        "assert con.execute('SELECT SUM(x) FROM t').fetchone() == (4,)\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
