"""What the fuzz tests share: hostile fragments, random mutations of a file's bytes, and an
in-process run of the command line that checks how it ended (exit code, one line, no
traceback, a time bound)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from pathlib import Path

import pytest
from hypothesis import strategies as st

from statrecon import cli

SECONDS_PER_RUN = 30.0  # --time-limit 1 plus model building; generous for a loaded CI machine

# Fragments a hostile or careless author would type: numbers at the edges, YAML structure,
# SQL punctuation, encodings.
TOKENS = [
    b".nan", b".inf", b"-.inf", b"1e99999", b"-1", b"0", b"99999999999999999999", b"1e30",
    b"0.5", b"'", b'"', b";", b"--", b"/*", b"(", b")", b"*a", b"&a ", b"{", b"}", b"[", b"]",
    b": ", b"\n", b"\n  - ", b"\t", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", b"\x1b[2J", b"NULL",
    b"OR ", b"AND ", b"NOT ", b" IN (", b"SELECT ", b"COUNT(*)", b"SUM(age)", b"WHERE ",
    b"yes", b"no", b"~", b"!!python/object:os.system", b"true", b"records: ", b"value: ",
    b"error: ", b"suppressed: true", b"noise: {gaussian: 0}", b"known: true", b"min: ",
    b"max: ", b"..", b"/", b"\\", b"\xc3\xa9",
]

mutation = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.integers(1, 40)),
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.sampled_from(TOKENS)),
    st.tuples(st.just("bytes"), st.integers(0, 10_000), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("replace"), st.integers(0, 10_000), st.sampled_from(TOKENS)),
    st.tuples(st.just("duplicate"), st.integers(0, 10_000), st.integers(1, 3)),
)


def mutate(data: bytes, ops: list[tuple[str, int, object]]) -> bytes:
    for kind, at, arg in ops:
        pos = at % (len(data) + 1)
        if kind == "delete":
            data = data[:pos] + data[pos + int(arg):]  # type: ignore[call-overload]
        elif kind in ("insert", "bytes"):
            data = data[:pos] + bytes(arg) + data[pos:]  # type: ignore[call-overload]
        elif kind == "replace":
            data = data[:pos] + bytes(arg) + data[pos + len(bytes(arg)):]  # type: ignore
        else:  # repeat the line around pos
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end + 1
            data = data[:end] + data[start:end] * int(arg) + data[end:]  # type: ignore
    return data


def run(*args: str | Path, cwd: Path, codes: tuple[int, ...] = (0, 1, 2, 3)) -> tuple[int, str]:
    """``statrecon ARGS`` in-process; returns (exit code, stderr). Exceptions propagate."""
    out, err = io.StringIO(), io.StringIO()
    old_argv, old_cwd = sys.argv, os.getcwd()
    sys.argv = ["statrecon", *map(str, args)]
    os.chdir(cwd)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                pytest.raises(SystemExit) as exited:
            cli.main()
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    elapsed = time.perf_counter() - start
    code = exited.value.code
    code = code if isinstance(code, int) else 0
    text = err.getvalue()
    assert code in codes, (code, text[-2000:])
    assert "Traceback" not in text + out.getvalue(), text[-3000:]
    assert elapsed < SECONDS_PER_RUN, (args, elapsed)
    if code == 1:
        lines = [line for line in text.splitlines() if line.strip()]
        assert len(lines) == 1, text[-2000:]
    return code, text
