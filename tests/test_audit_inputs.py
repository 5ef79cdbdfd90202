"""Hostile inputs to ``statrecon audit-stream`` (issue 12): absurd answers, answers the secret
column's domain cannot produce, byte order marks, terminal escapes in ids, a terminal on stdin.

The auditor's domain rules are checked in process; the reproductions of the issue run the real
console script (helpers from test_cli.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from test_cli import COMMAND, EXAMPLES, ROOT, assert_user_error

from statrecon.commands.audit_stream import parse_line
from statrecon.engines.audit import Domain, StreamAuditor
from statrecon.errors import StatreconError
from statrecon.release.files import load_release

F = Fraction
SUM_ALL = "SELECT SUM(sugar) FROM patients"


def audit_cli(*args: str | Path, stdin: str | bytes = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([*COMMAND, "audit-stream", *map(str, args)], cwd=ROOT, env=env,
                          input=data, capture_output=True, timeout=120, check=False)
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))


def json_lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def write_schema(tmp_path: Path, sugar: str = "{type: real, min: 0, max: 40}") -> Path:
    """The hospital schema (six known patients, secret sugar) with the public table beside it."""
    (tmp_path / "hospital_public.csv").write_bytes(
        (EXAMPLES / "hospital_public.csv").read_bytes())
    path = tmp_path / "schema.yaml"
    path.write_text(
        "version: 1\ntable: patients\npublic: hospital_public.csv\ncolumns:\n"
        "  id: {type: integer, known: true}\n  zip: {type: integer, known: true}\n"
        "  gender: {type: categorical, values: [Male, Female], known: true}\n"
        f"  sugar: {sugar}\nstatistics: []\n", encoding="utf-8")
    return path


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    return write_schema(tmp_path)


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(("answer", "named"), [
    ("1e999999", "out of range"),
    ("1e-999999999", "out of range"),
    ("0e99999999999999999999", "out of range"),
    ("1" + "0" * 400, "out of range"),
    ("1" * 5000, "not a number"),
    ("nan", "not a number"),
    ("inf", "not a number"),
])
def test_absurd_answers_are_one_line_errors(schema: Path, answer: str, named: str) -> None:
    rel = load_release(schema)
    start = time.perf_counter()
    with pytest.raises(StatreconError, match=named) as err:
        parse_line(f"q: {SUM_ALL} ; {answer}", 4, "s.txt:4", rel.schema)
    assert time.perf_counter() - start < 0.5  # no 10**999999999 computed on the way
    assert str(err.value).startswith("s.txt:4: ") and len(str(err.value)) < 200


@pytest.mark.parametrize(("line", "named"), [
    ('{"sql": "' + SUM_ALL + '", "value": 1e999}', "'value' must be a number"),
    ('{"sql": "' + SUM_ALL + '", "value": 1' + "0" * 400 + "}", "out of range"),
    ('{"sql": "' + SUM_ALL + '", "value": 1' + "0" * 5000 + "}", "malformed JSON"),
    ('{"sql": ' + "[" * 100_000, "malformed JSON"),
])
def test_absurd_json_lines_are_one_line_errors(schema: Path, line: str, named: str) -> None:
    rel = load_release(schema)
    with pytest.raises(StatreconError, match=named) as err:
        parse_line(line, 2, "s.txt:2", rel.schema)
    assert str(err.value).startswith("s.txt:2: ") and len(str(err.value)) < 200


def test_cli_huge_answer_names_the_line(schema: Path, tmp_path: Path) -> None:
    path = tmp_path / "stream.txt"
    path.write_text(f"q1: {SUM_ALL} ; 32.1\nq2: {SUM_ALL} WHERE id = 1 ; 1e999999\n",
                    encoding="utf-8")
    proc = audit_cli(schema, "--input", path)
    assert_user_error(proc, f"{path}:2", "'1e999999'", "out of range")
    assert "accepted     q1" in proc.stdout


def test_cli_line_without_end_is_bounded(schema: Path, tmp_path: Path) -> None:
    path = tmp_path / "stream.txt"
    path.write_bytes(b"q1: " + SUM_ALL.encode() + b" WHERE id IN (" + b"1," * 600_000)
    assert_user_error(audit_cli(schema, "--input", path), f"{path}:1", "longer than")


# --------------------------------------------------------------------------- domain


def test_domain_span_and_membership() -> None:
    d = Domain(F(0), F(40))
    assert d.span({0: 1, 3: 1}) == (0, 80) and d.span({0: 1, 1: -1}) == (-40, 40)
    assert Domain(None, F(1)).span({0: 1, 1: -1}) == (None, None)
    assert d.contains(F(40)) and not d.contains(F(-1, 10**9)) and not d.contains(F(41))
    whole = Domain(F(0), None, integral=True)
    assert whole.contains(F(7)) and not whole.contains(F(7, 2)) and not whole.contains(F(-1))
    assert not whole.attains({0: 1, 1: 1}, F(5, 2)) and whole.attains({0: 1}, F(10**30))
    with pytest.raises(ValueError, match="empty domain"):
        Domain(F(2), F(1))


@pytest.mark.parametrize("engine", ["rational", "modular"])
def test_auditor_answer_the_domain_cannot_produce(engine: str) -> None:
    aud = StreamAuditor(3, engine=engine, seed=1,  # type: ignore[arg-type]
                        domain=Domain(F(0), F(40)))
    step = aud.add({0: 1, 1: 1}, F(81), "big")
    assert step.status == "inconsistent" and step.conflict == (("big", F(1)),)
    assert step.attainable == (F(0), F(80)) and step.outside is None
    assert aud.rank == 0 and aud.accepted == ()  # like any contradiction: not added
    assert aud.add({0: 1, 1: 1}, F(80), "ok").status == "accepted"


@pytest.mark.parametrize("engine", ["rational", "modular"])
def test_auditor_record_pinned_outside_the_domain(engine: str) -> None:
    aud = StreamAuditor(3, engine=engine, seed=1,  # type: ignore[arg-type]
                        domain=Domain(F(0), F(40)))
    assert aud.add({0: 1, 1: 1}, F(50), "a").status == "accepted"  # 50 <= 80: possible
    step = aud.add({1: 1}, F(5), "b")  # then record 0 is 45
    assert step.status == "inconsistent" and step.outside is not None
    assert (step.outside.index, step.outside.value) == (0, F(45))
    assert dict(step.conflict) == {"a": F(1), "b": F(-1)}
    assert aud.determined == () and aud.accepted == ("a",)
    # deny mode does not hide a contradiction behind "would disclose"
    assert aud.add({1: 1}, F(5), "b2", deny=True).status == "inconsistent"
    assert aud.add({1: 1}, F(15), "c").newly_determined[0].value == F(35)


def test_auditor_fraction_pinned_for_a_whole_number_column() -> None:
    aud = StreamAuditor(2, domain=Domain(F(0), None, integral=True))
    assert aud.add({0: 1, 1: 1}, F(5), "a").status == "accepted"
    step = aud.add({0: 1, 1: -1}, F(0), "b")  # 2 x0 = 5
    assert step.status == "inconsistent" and step.outside is not None
    assert step.outside.value == F(5, 2)
    without = StreamAuditor(2)  # no domain: plain linear algebra, as before
    without.add({0: 1, 1: 1}, F(5), "a")
    assert without.add({0: 1, 1: -1}, F(0), "b").status == "accepted"


def test_cli_sum_outside_the_domain_is_inconsistent(schema: Path) -> None:
    proc = audit_cli(schema, "--json", stdin=f"{SUM_ALL} WHERE id = 1 ; 50\n")
    assert proc.returncode == 2, proc.stderr
    step, last = json_lines(proc)
    assert (step["statistic"], step["status"]) == ("s1", "inconsistent")
    assert step["attainable"] == [0, 40] and step["newly_determined"] == []
    assert last["summary"]["determined"] == []
    human = audit_cli(schema, stdin=f"{SUM_ALL} WHERE id = 1 ; 50\n")
    assert human.returncode == 2 and "discloses" not in human.stdout
    assert "inconsistent s1" in human.stdout and "sugar (0..40)" in human.stdout


def test_cli_difference_pinning_outside_the_domain_names_the_statistics(schema: Path) -> None:
    stream = (f"a: {SUM_ALL} WHERE id < 3 ; 50\n"  # possible: two records, up to 80
              f"b: {SUM_ALL} WHERE id = 2 ; 5\n")  # then record 1 is 45 > 40
    proc = audit_cli(schema, "--json", stdin=stream)
    assert proc.returncode == 2, proc.stderr
    first, second, _ = json_lines(proc)
    assert first["status"] == "accepted" and second["status"] == "inconsistent"
    assert second["outside"]["record"] == 1 and second["outside"]["value"] == 45
    assert [t["statistic"] for t in second["conflict"]] == ["a", "b"]
    human = audit_cli(schema, stdin=stream)
    assert "a - b pins record 1 to 45, outside the domain of sugar (0..40)" in human.stdout


def test_cli_integer_and_categorical_secrets(tmp_path: Path) -> None:
    whole = write_schema(tmp_path, "{type: integer, min: 0, max: 40}")
    proc = audit_cli(whole, "--json", stdin=f"{SUM_ALL} WHERE id = 3 ; 2.5\n")
    assert proc.returncode == 2 and json_lines(proc)[0]["status"] == "inconsistent"
    label = write_schema(tmp_path, "{type: categorical, values: [low, high]}")
    count = "SELECT COUNT(*) FROM patients WHERE sugar = 'high'"
    proc = audit_cli(label, "--json", stdin=f"{count} ; 4\n{count} AND id < 3 ; 3\n")
    assert proc.returncode == 2, proc.stderr
    assert [s.get("status") for s in json_lines(proc)[:2]] == ["accepted", "inconsistent"]


# --------------------------------------------------------------------------- text


def test_byte_order_mark_is_stripped_from_file_and_stdin(schema: Path, tmp_path: Path) -> None:
    text = f"q1: {SUM_ALL} ; 32.1\n".encode()
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text)
    for proc in (audit_cli(schema, "--json", "--input", path),
                 audit_cli(schema, "--json", stdin=b"\xef\xbb\xbf" + text)):
        assert proc.returncode == 0, proc.stderr
        assert json_lines(proc)[0]["statistic"] == "q1"


def test_terminal_escapes_in_ids_never_reach_the_terminal(schema: Path) -> None:
    ids = ["x\x1b[2J", "t\x1b]0;title\x07", "r\u202eevil"]
    lines = [json.dumps({"id": sid, "sql": f"{SUM_ALL} WHERE id = {k + 1}", "value": 1})
             for k, sid in enumerate(ids)]
    proc = audit_cli(schema, "--show-values", stdin="\n".join([*lines, lines[0]]) + "\n")
    assert proc.returncode == 1
    for stream in (proc.stdout, proc.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert "accepted     x\\x1b[2J" in proc.stdout and "t\\x1b]0;title\\x07" in proc.stdout
    assert_user_error(proc, "'x\\x1b[2J' already used")
    # JSON output keeps the ids exactly (JSON escapes them itself)
    data = json_lines(audit_cli(schema, "--json", stdin="\n".join(lines) + "\n"))
    assert [d["statistic"] for d in data[:3]] == ids


def test_reconstruct_report_escapes_ids(tmp_path: Path) -> None:
    text = (EXAMPLES / "contradiction.yaml").read_text(encoding="utf-8")
    path = tmp_path / "escapes.yaml"
    path.write_text(text.replace("id: 2B-count,", 'id: "2B\\e[2J\\a",'), encoding="utf-8")
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    proc = subprocess.run([*COMMAND, "reconstruct", str(path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "2B\\x1b[2J\\x07" in proc.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_stdin_on_a_terminal_says_how_to_end(schema: Path) -> None:
    main, other = os.openpty()
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    try:
        proc = subprocess.Popen([*COMMAND, "audit-stream", str(schema), "--json"], cwd=ROOT,
                                env=env, stdin=other, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        os.close(other)
        os.write(main, f"q1: {SUM_ALL} ; 32.1\n".encode() + b"\x04")
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(main)
    assert proc.returncode == 0, err
    assert "reading statistics from stdin" in err and "Ctrl-D" in err
    assert json.loads(out.splitlines()[0])["statistic"] == "q1"
    piped = audit_cli(schema, "--json", stdin=f"q1: {SUM_ALL} ; 32.1\n")
    assert piped.returncode == 0 and "stdin" not in piped.stderr
