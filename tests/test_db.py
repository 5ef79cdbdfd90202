"""statrecon.db: hardened connections share one locked in-memory database per process (a
database costs about 20 ms to open, a connection to it microseconds), and still share nothing
else: each connection's registered and temporary tables are its own. What a hardened
connection refuses (files, network, extensions, unlocking) is in
tests/hostile/test_injection.py."""

from __future__ import annotations

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
