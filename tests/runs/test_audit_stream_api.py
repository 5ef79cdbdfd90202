"""``statrecon.runs.audit_stream``: auditing a stream from Python, without the CLI.

Reference 004's hospital (q1 - q2 - q3 pins patient 2): the typed events (pinned with its
certificate, denied, a contradiction naming the smallest set of statistics that contradict),
errors as data (``where`` and ``statistic`` on a bad line, no message parsing), and the JSON
the events and the summary give is what ``audit-stream --json`` prints.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, CliRunner

from statrecon.engines.stream import StreamCompiler
from statrecon.errors import ReleaseError, StatreconError
from statrecon.release.files import load_release, parse_release
from statrecon.release.known import PublicTable, load_public
from statrecon.release.model import Release
from statrecon.release.stream import StreamEntry, StreamSource, parse_line
from statrecon.runs.audit_stream import (
    Accepted,
    AuditEvent,
    AuditSummary,
    Contradiction,
    Denied,
    Pinned,
    Skipped,
    StreamAudit,
    audit_stream,
)

F = Fraction
AUDIT = EXAMPLES / "audit"
Q1 = "q1: SELECT SUM(sugar) FROM patients ; 32.1"
Q2 = "q2: SELECT SUM(sugar) FROM patients WHERE gender = 'Female' ; 15.5"
Q3 = ("q3: SELECT SUM(sugar) FROM patients WHERE zip > 32000 AND zip < 35000 "
      "AND gender = 'Male' ; 11.4")
Q4_WRONG = "q4: SELECT SUM(sugar) FROM patients WHERE gender = 'Male' ; 16.0"  # q1 - q2 = 16.6
CERTIFICATE = (("q1", F(1)), ("q2", F(-1)), ("q3", F(-1)))


@pytest.fixture(scope="module")
def hospital() -> tuple[Release, PublicTable]:
    release = load_release(AUDIT / "hospital_schema.yaml")
    assert release.public is not None
    return release, load_public(release.public, release.schema)


def run(hospital: tuple[Release, PublicTable], lines: Any, **options: Any
        ) -> tuple[list[AuditEvent], AuditSummary]:
    *events, summary = audit_stream(*hospital, lines, **options)
    assert isinstance(summary, AuditSummary)
    assert all(isinstance(e, AuditEvent) for e in events)
    return events, summary  # type: ignore[return-value]


def test_difference_attack_pins_record_2_with_its_certificate(hospital: Any) -> None:
    events, summary = run(hospital, [Q1, "", "# a comment", Q2, Q3])
    assert [type(e) for e in events] == [Accepted, Accepted, Pinned]
    assert [(e.statistic, e.entry.line, e.entry.where, e.rank) for e in events] == [
        ("q1", 1, "<stream>:1", 1), ("q2", 4, "<stream>:4", 2), ("q3", 5, "<stream>:5", 3)]
    pinned = events[2]
    assert isinstance(pinned, Pinned) and pinned.independent
    (d,) = pinned.disclosures
    assert (d.index, d.value, d.proven, d.certificate) == (1, F("5.2"), True, CERTIFICATE)
    assert (summary.accepted, summary.statistics, summary.rank, summary.records) == (3, 3, 3, 6)
    assert summary.determined == (d,) and summary.secret == "sugar"
    assert summary.inconsistent == 0 and summary.switched_at is None


def test_deny_refuses_the_statistic_that_would_pin(hospital: Any) -> None:
    events, summary = run(hospital, [Q1, Q2, Q3], deny=True)
    assert [type(e) for e in events] == [Accepted, Accepted, Denied]
    denied = events[2]
    assert isinstance(denied, Denied) and denied.status == "denied"
    (d,) = denied.would_disclose
    assert (d.index, d.value, d.certificate) == (1, F("5.2"), CERTIFICATE)
    assert summary.determined == () and summary.rank == 2 and summary.denied == 1


@pytest.mark.parametrize("arithmetic", ["rational", "modular"])
def test_contradiction_names_the_smallest_conflicting_statistics(hospital: Any,
                                                                  arithmetic: str) -> None:
    events, summary = run(hospital, [Q1, Q2, Q3, Q4_WRONG], arithmetic=arithmetic)
    bad = events[3]
    assert isinstance(bad, Contradiction) and bad.status == "inconsistent"
    assert bad.statistics == ("q4", "q1", "q2")  # q3 plays no part
    assert bad.conflict == (("q4", F(1)), ("q1", F(-1)), ("q2", F(1)))
    assert bad.discrepancy == F("-0.6") and bad.outside is None and bad.attainable is None
    assert summary.inconsistent == 1 and summary.rank == 3
    assert summary.arithmetic == arithmetic


def test_answer_outside_the_domain_is_a_contradiction(hospital: Any) -> None:
    (event,), _ = run(hospital, ["big: SELECT SUM(sugar) FROM patients WHERE id = 1 ; 50"])
    assert isinstance(event, Contradiction) and event.statistics == ("big",)
    assert event.attainable == (F(0), F(40)) and event.answer == 50


def test_bad_sql_line_raises_with_where_and_statistic(hospital: Any) -> None:
    audit = StreamAudit(*hospital)
    seen = []
    with pytest.raises(StatreconError) as err:
        for event in audit.events([Q1, "bad: SELECT SUM(weight) FROM patients ; 3"]):
            seen.append(event.statistic)
    assert seen == ["q1"]  # what came before the bad line was audited
    assert (err.value.where, err.value.statistic) == ("<stream>:2", "bad")
    assert str(err.value).startswith("<stream>:2: statistic 'bad': ")
    assert "unknown column 'weight'" in str(err.value)


def test_statistic_the_linear_compiler_refuses_raises_with_its_fields(hospital: Any) -> None:
    """MEDIAN parses, but has no linear equation: the compiler's error names the statistic,
    the statistics before it in the same batch are audited, the ones after it are not."""
    audit = StreamAudit(*hospital)
    seen = []
    with pytest.raises(StatreconError) as err:
        for event in audit.events([Q1, Q2, "m: SELECT MEDIAN(sugar) FROM patients ; 3", Q3]):
            seen.append(event.statistic)
    assert seen == ["q1", "q2"]
    assert (err.value.where, err.value.statistic) == ("<stream>:3", "m")
    assert str(err.value) == ("<stream>:3: statistic 'm': MEDIAN is not linear "
                              "(use the exact engine)")


def test_duplicate_id_and_bad_answer_carry_the_fields(hospital: Any, tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text(f"{Q1}\n{Q1}\n", encoding="utf-8")
    with pytest.raises(StatreconError) as err:
        run(hospital, path)
    assert (err.value.where, err.value.statistic) == (f"{path}:2", "q1")
    assert str(err.value) == f"{path}:2: statistic id 'q1' already used at {path}:1"
    release, _ = hospital
    with pytest.raises(StatreconError) as bad:
        parse_line("q9: SELECT SUM(sugar) FROM patients ; lots", 7, "s.txt:7", release.schema)
    assert (bad.value.where, bad.value.statistic) == ("s.txt:7", "q9")
    with pytest.raises(StatreconError) as json_bad:  # no id can be read: statistic stays None
        parse_line("{oops", 2, "s.txt:2", release.schema)
    assert (json_bad.value.where, json_bad.value.statistic) == ("s.txt:2", None)


def test_error_fields_are_optional_and_leave_the_message_alone() -> None:
    plain = ReleaseError("r.yaml:3: bad")
    assert (str(plain), plain.where, plain.statistic) == ("r.yaml:3: bad", None, None)
    tagged = StatreconError("s:1: x", where="s:1", statistic="q")
    assert str(tagged) == "s:1: x" and tagged.args == ("s:1: x",)


def test_a_path_and_a_source_read_the_same_stream(hospital: Any) -> None:
    stream = AUDIT / "hospital_stream.txt"
    from_path, _ = run(hospital, stream)
    from_str, _ = run(hospital, str(stream))
    lines = stream.read_text(encoding="utf-8").splitlines()
    from_source, _ = run(hospital, StreamSource.lines(lines, name=str(stream)))
    assert [e.to_json() for e in from_path] == [e.to_json() for e in from_str] == [
        e.to_json() for e in from_source]
    assert from_path[0].entry.where == f"{stream}:2"


def test_categorical_secret_labels_and_skips(tmp_path: Path) -> None:
    (tmp_path / "roster.csv").write_text("id\n1\n2\n3\n", encoding="utf-8")
    release = parse_release(
        "version: 1\ntable: t\npublic: roster.csv\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  dx: {type: categorical, values: ['no', 'yes']}\n", source=tmp_path / "r.yaml")
    assert release.public is not None
    public = load_public(release.public, release.schema)
    *events, summary = audit_stream(release, public, [
        "a: SELECT COUNT(*) FROM t WHERE dx = 'yes' AND id <= 2 ; 1",
        "b: SELECT COUNT(*) FROM t WHERE id > 1 ; 2",
        "c: SELECT COUNT(*) FROM t WHERE dx = 'no' AND id = 1 ; 1"])
    assert [type(e) for e in events] == [Accepted, Skipped, Pinned]
    assert events[1].note == "public rows only: no information on the secret"
    pinned = events[2].to_json()["newly_determined"]
    assert [(r["record"], r["label"]) for r in pinned] == [(1, "no"), (2, "yes")]
    assert isinstance(summary, AuditSummary)
    assert [r["label"] for r in summary.to_json()["summary"]["determined"]] == ["no", "yes"]


def test_compiler_error_without_a_statistic_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "roster.csv").write_text("id\n1\n2\n", encoding="utf-8")
    release = parse_release(
        "version: 1\ntable: t\npublic: roster.csv\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  dx: {type: categorical, values: ['no', 'yes']}\n", source=tmp_path / "r.yaml")
    assert release.public is not None
    compiler = StreamCompiler(release, load_public(release.public, release.schema))
    entry = parse_line("c: SELECT COUNT(*) FROM t WHERE id > 1 ; 1", 1, "s.txt:1",
                       release.schema)
    assert isinstance(entry, StreamEntry)
    done, err = compiler.compile([entry], "s.txt")
    assert done == [] and err is not None
    assert (err.where, err.statistic) == ("s.txt", None)
    assert str(err).startswith("s.txt: ") and "no statistic counts a value of dx" in str(err)


@pytest.mark.parametrize("options", [[], ["--deny"], ["--engine", "modular"]])
def test_events_and_summary_are_the_cli_json(hospital: Any, run_cli: CliRunner,
                                             options: list[str]) -> None:
    stream = AUDIT / "hospital_stream.txt"
    code, out, err = run_cli("audit-stream", AUDIT / "hospital_schema.yaml", "--input", stream,
                             "--json", *options)
    assert code == 0, err
    printed = [json.loads(line) for line in out.splitlines() if line.strip()]
    deny = "--deny" in options
    arithmetic = options[1] if "--engine" in options else "auto"
    events, summary = run(hospital, StreamSource.file(stream), deny=deny, arithmetic=arithmetic)
    assert [e.to_json() for e in events] == printed[:-1]
    mine, cli = summary.to_json(), printed[-1]
    assert list(mine) == list(cli) == ["summary"]
    assert list(mine["summary"]) == list(cli["summary"])  # same keys, same order
    mine["summary"]["elapsed_s"] = cli["summary"]["elapsed_s"] = 0
    assert mine == cli
