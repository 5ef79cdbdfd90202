"""Issue 12: random byte strings and random mutations of the bundled release files, public
tables and audit streams, fed to the command line. Whatever the input, the CLI ends with an
exit code in {0, 1, 2, 3}, never a traceback (an exception escaping ``main`` fails the test),
and within a time bound.

The CLI runs in-process (``statrecon.cli.main``) so hundreds of inputs fit in the suite's time;
solver work is capped by ``--time-limit``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
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


def run(*args: str | Path, cwd: Path) -> tuple[int, str]:
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
    assert code in (0, 1, 2, 3), (code, text[-2000:])
    assert "Traceback" not in text + out.getvalue(), text[-3000:]
    assert elapsed < SECONDS_PER_RUN, (args, elapsed)
    if code == 1:
        lines = [line for line in text.splitlines() if line.strip()]
        assert len(lines) == 1, text[-2000:]
    return code, text


# STATRECON_FUZZ_EXAMPLES=2000 runs a longer, randomised soak (outside the suite).
_SOAK = int(os.environ.get("STATRECON_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_SOAK or 40, deadline=None, derandomize=not _SOAK,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

RELEASES = ["block.yaml", "block_2b.yaml", "contradiction.yaml", "clinic.yaml", "hospital.yaml"]


def _workdir() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="statrecon-fuzz-"))
    for name in ("clinic_public.csv", "hospital_public.csv"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


@FUZZ
@given(name=st.sampled_from(RELEASES), ops=st.lists(mutation, min_size=1, max_size=6),
       method=st.sampled_from(["auto", "exact", "ls"]))
def test_mutated_release_files(name: str, ops: list[tuple[str, int, object]],
                               method: str) -> None:
    folder = _workdir()
    try:
        path = folder / name
        path.write_bytes(mutate((EXAMPLES / name).read_bytes(), ops))
        run("reconstruct", path, "--method", method, "--time-limit", "1", "--limit", "20",
            "--json", cwd=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@FUZZ
@given(data=st.binary(max_size=400))
def test_random_bytes_as_release_public_table_and_stream(data: bytes) -> None:
    folder = _workdir()
    try:
        (folder / "r.yaml").write_bytes(data)
        run("reconstruct", folder / "r.yaml", "--time-limit", "1", cwd=folder)
        (folder / "p.csv").write_bytes(data)
        run("reconstruct", EXAMPLES / "hospital.yaml", "--public", folder / "p.csv",
            "--time-limit", "1", cwd=folder)
        (folder / "s.txt").write_bytes(data)
        run("audit-stream", EXAMPLES / "audit" / "hospital_schema.yaml", "--input",
            folder / "s.txt", "--json", cwd=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@FUZZ
@given(ops=st.lists(mutation, min_size=1, max_size=6),
       target=st.sampled_from(["public", "stream"]))
def test_mutated_public_tables_and_streams(ops: list[tuple[str, int, object]],
                                           target: str) -> None:
    folder = _workdir()
    try:
        if target == "public":
            (folder / "p.csv").write_bytes(mutate((EXAMPLES / "hospital_public.csv")
                                                  .read_bytes(), ops))
            run("reconstruct", EXAMPLES / "hospital.yaml", "--public", folder / "p.csv",
                "--time-limit", "1", "--json", cwd=folder)
            run("reconstruct", EXAMPLES / "clinic.yaml", "--public", folder / "p.csv",
                "--time-limit", "1", "--json", cwd=folder)
        else:
            audit = EXAMPLES / "audit"
            (folder / "s.txt").write_bytes(mutate((audit / "hospital_stream.txt").read_bytes(),
                                                  ops))
            run("audit-stream", audit / "hospital_schema.yaml", "--input", folder / "s.txt",
                "--json", cwd=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_unmutated_inputs_succeed() -> None:
    """The fuzz targets are live: the originals run and succeed (or are the documented
    contradiction)."""
    folder = _workdir()
    try:
        for name in RELEASES:
            code, err = run("reconstruct", EXAMPLES / name, "--time-limit", "30", "--json",
                            cwd=folder)
            assert code == (2 if name == "contradiction.yaml" else 0), err
        code, err = run("audit-stream", EXAMPLES / "audit" / "hospital_schema.yaml", "--input",
                        EXAMPLES / "audit" / "hospital_stream.txt", "--json", cwd=folder)
        assert code == 0, err
    finally:
        shutil.rmtree(folder, ignore_errors=True)
