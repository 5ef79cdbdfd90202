"""Ctrl-C and SIGTERM: the real CLI stops within seconds, exits 130 with one line and no
traceback, leaves no temporary files or worker processes, and keeps finished units so a rerun
resumes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from conftest import COMMAND, ROOT, CensusSlice, json_of, statrecon

from statrecon.engines.claims import ClaimsOptions
from statrecon.runs.claims import Shared, run_blocks
from statrecon.runs.stores import BlockStore, read_records

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(),
                                reason="watches processes through /proc (Linux)")

STOP_WITHIN_S = 3.0

# Six rows, two sums: astronomically many datasets, so --all enumerates until stopped.
MANY = """\
version: 1
table: t
records: 6
columns:
  x: {type: integer, min: 0, max: 1000}
  y: {type: integer, min: 0, max: 1000}
statistics:
  - {id: sx, sql: "SELECT SUM(x) FROM t", value: 3000}
  - {id: sy, sql: "SELECT SUM(y) FROM t", value: 3000}
"""


class Run:
    """The real CLI in a process of its own, tagged so its workers can be found."""

    def __init__(self, tmp: Path, *args: str | Path, env: dict[str, str] | None = None) -> None:
        self.tag = uuid.uuid4().hex
        self.out, self.err = tmp / f"{self.tag}.out", tmp / f"{self.tag}.err"
        environ = {**os.environ, "NO_COLOR": "1", "STATRECON_TEST_TAG": self.tag, **(env or {})}
        with self.out.open("w") as out, self.err.open("w") as err:
            self.proc = subprocess.Popen([*COMMAND, *map(str, args)], cwd=ROOT, env=environ,
                                         stdout=out, stderr=err)

    def wait_until_ready(self, timeout: float = 60.0) -> None:
        """Until the CLI has installed its signal handling (its wake-up socket pair)."""
        fd = Path(f"/proc/{self.proc.pid}/fd")
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            try:
                sockets = sum(1 for p in fd.iterdir() if os.readlink(p).startswith("socket:"))
            except OSError:
                sockets = 0
            if sockets >= 2:
                return
            time.sleep(0.02)
        raise AssertionError(f"not ready: {self.err.read_text()}")

    def stop(self, sig: int) -> tuple[int, float]:
        """Send ``sig``; the exit status and how long the process took to go."""
        assert self.proc.poll() is None, self.err.read_text()
        sent = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return code, time.monotonic() - sent

    def stderr(self) -> str:
        return self.err.read_text()

    def leftovers(self) -> list[int]:
        """Processes (the CLI's pool workers) still carrying this run's tag."""
        pids = []
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                if self.tag.encode() in environ.read_bytes():
                    pids.append(int(environ.parent.name))
            except OSError:
                continue
        return pids


def assert_interrupted(run: Run, code: int, took: float) -> None:
    err = run.stderr()
    assert code == 130, (code, err)
    assert took < STOP_WITHIN_S, f"took {took:.1f} s to stop"
    assert "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.strip()][-1] == "interrupted", err
    end = time.monotonic() + 5
    while run.leftovers() and time.monotonic() < end:
        time.sleep(0.05)
    assert run.leftovers() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_exact_enumeration_stops_at_once(tmp_path: Path, sig: int) -> None:
    release = tmp_path / "many.yaml"
    release.write_text(MANY)
    run = Run(tmp_path, "reconstruct", release, "--all", "--limit", "100000000", "--json")
    run.wait_until_ready()
    time.sleep(1.0)  # into the enumeration (CP-SAT, GIL released)
    code, took = run.stop(sig)
    assert_interrupted(run, code, took)


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler for SIGTERM (the SigCgt mask in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_start_up_is_quiet_too(tmp_path: Path, sig: int) -> None:
    """Before ``cli.main`` has installed its handlers (the CLI imports for half a second), the
    console script's own handlers give the same exit: 130, 'interrupted', no traceback."""
    if COMMAND[0].endswith(".py") or len(COMMAND) > 1:
        pytest.skip("needs the installed console script")
    release = tmp_path / "many.yaml"
    release.write_text(MANY)
    run = Run(tmp_path, "reconstruct", release, "--all", "--limit", "100000000", "--json")
    end = time.monotonic() + 30
    while not _catches_sigterm(run.proc.pid) and time.monotonic() < end:
        time.sleep(0.002)
    code, took = run.stop(sig)
    assert_interrupted(run, code, took)


@pytest.fixture
def census_release(census_slice: CensusSlice) -> Path:
    """The slice's exact release (tabulated once per session)."""
    return census_slice.release


def test_census_interrupt_keeps_finished_tracts_and_resumes(census_release: Path,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "recon.parquet"
    parts = tmp_path / "recon.parquet.parts"
    run = Run(tmp_path, "census", "reconstruct", census_release, "--out", out, "--workers", "2",
              "--no-certify", env={"STATRECON_TRACT_DELAY_S": "1"})
    end = time.monotonic() + 90
    while not list(parts.glob("*.parquet")) and time.monotonic() < end:
        assert run.proc.poll() is None, run.stderr()
        time.sleep(0.02)
    code, took = run.stop(signal.SIGINT)
    assert_interrupted(run, code, took)
    kept = sorted(p.name for p in parts.glob("*.parquet"))
    assert 1 <= len(kept) < 3 and not out.exists()
    assert list(tmp_path.rglob("*.tmp")) == []
    (parts / ".stale.parquet.tmp").write_bytes(b"PAR1")  # as left by kill -9 mid-write
    rerun = statrecon("census", "reconstruct", census_release, "--out", out, "--workers", "1",
                      "--no-certify", "--json")
    assert rerun.returncode == 0, rerun.stderr
    summary = json_of(rerun)
    assert (summary["skipped"], summary["ran"]) == (len(kept), 3 - len(kept))
    assert out.exists() and not parts.exists()


def test_claims_experiment_sigterm_keeps_finished_blocks(tmp_path: Path) -> None:
    out = tmp_path / "experiment"
    store = out / "blocks.jsonl"
    # one worker: the solves run in the CLI's own process (the pool is the census test's)
    run = Run(tmp_path, "claims", "experiment", "--out", out, "--blocks", "40", "--workers", "1",
              "--k", "5", "--time-limit", "2")
    end = time.monotonic() + 90
    while not (store.exists() and store.read_text().count("\n") >= 1) \
            and time.monotonic() < end:
        assert run.proc.poll() is None, run.stderr()
        time.sleep(0.02)
    code, took = run.stop(signal.SIGTERM)
    assert_interrupted(run, code, took)
    lines = store.read_text().splitlines()
    assert 1 <= len(lines) < 40
    assert all(json.loads(line)["status"] for line in lines)
    assert len(read_records(store)) == len(lines)


def test_torn_last_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    """A write cut short leaves a line without its end; the next run starts a fresh line."""
    store = tmp_path / "blocks.jsonl"
    store.write_text(json.dumps({"block": "a", "status": "ok"}) + "\n" + '{"block": "b", "st')
    assert list(run_blocks([], Shared(ClaimsOptions()), store=BlockStore(store, {}))) == []
    assert store.read_text().endswith("\n")
    with store.open("a") as f:
        f.write(json.dumps({"block": "c", "status": "ok"}) + "\n")
    assert sorted(read_records(store)) == ["a", "c"]
