"""The streaming auditor (both arithmetics) against two exact oracles, and ``audit-stream``.

Auditor: reference 004's hospital (q1 - q2 - q3 pins patient 2), deny mode, contradictions,
and random small integer streams where, after every statistic, the incremental auditor must
agree with ``linear.determine`` recomputed from scratch and with a plain Fraction Gauss-Jordan
written here. Both arithmetics (exact rationals; two random primes with exact certificates)
and the re-draw of unlucky primes are covered.

CLI: the real command line in process (conftest's ``statrecon``: exit code, stdout, stderr,
and standard input through a real pipe).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLES, assert_user_error, statrecon
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statrecon.engines.linear import determine
from statrecon.engines.stream import AuditStep, StreamAuditor
from statrecon.engines.stream import auditor as audit

ARITHMETICS = ("rational", "modular")
F = Fraction

# reference 004: x = (4.3, 5.2, 6.1, 3.2, 7.1, 6.2); q3 covers records 1 and 5 (1-based)
HOSPITAL = [
    ("q1", {j: 1 for j in range(6)}, F("32.1")),
    ("q2", {2: 1, 3: 1, 5: 1}, F("15.5")),
    ("q3", {0: 1, 4: 1}, F("11.4")),
]


def run_hospital(arithmetic: str, deny: bool = False) -> tuple[StreamAuditor, list[AuditStep]]:
    aud = StreamAuditor(6, arithmetic=arithmetic, seed=7)  # type: ignore[arg-type]
    return aud, [aud.add(row, ans, sid, deny=deny) for sid, row, ans in HOSPITAL]


# --------------------------------------------------------------------------- auditor


@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_hospital_difference_attack_pins_record_2(arithmetic: str) -> None:
    aud, steps = run_hospital(arithmetic)
    assert [s.status for s in steps] == ["accepted"] * 3
    assert [s.rank for s in steps] == [1, 2, 3]
    assert steps[0].newly_determined == steps[1].newly_determined == ()
    (d,) = steps[2].newly_determined
    assert d.index == 1 and d.value == F("5.2") and d.proven
    assert d.certificate == (("q1", F(1)), ("q2", F(-1)), ("q3", F(-1)))
    assert aud.verify(d)
    assert aud.determined == (d,)


@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_hospital_deny_refuses_q3(arithmetic: str) -> None:
    aud, steps = run_hospital(arithmetic, deny=True)
    assert [s.status for s in steps] == ["accepted", "accepted", "denied"]
    assert steps[2].newly_determined == ()
    (d,) = steps[2].would_disclose
    assert (d.index, d.value) == (1, F("5.2"))
    assert d.certificate == (("q1", F(1)), ("q2", F(-1)), ("q3", F(-1)))
    assert aud.rank == 2 and aud.determined == () and aud.accepted == ("q1", "q2")
    # the gate still answers what pins nobody: a combination of answered statistics ...
    males = aud.add({0: 1, 1: 1, 4: 1}, F("16.6"), "males", deny=True)  # = q1 - q2
    assert (males.status, males.independent, males.newly_determined) == ("accepted", False, ())
    # ... and a new, harmless direction (x1 + x3 adds no unit vector to the row space)
    step = aud.add({0: 1, 2: 1}, F("10.4"), "x1+x3", deny=True)
    assert (step.status, step.independent, step.rank) == ("accepted", True, 3)
    assert aud.determined == ()


@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_inconsistent_statistic_names_the_contradiction(arithmetic: str) -> None:
    aud, _ = run_hospital(arithmetic)
    males = {0: 1, 1: 1, 4: 1}
    step = aud.add(males, F("16.0"), "q4")  # q1 - q2 = 16.6
    assert step.status == "inconsistent" and not step.independent
    assert step.conflict == (("q4", F(1)), ("q1", F(-1)), ("q2", F(1)))
    assert step.discrepancy == F("-0.6")
    assert aud.rank == 3 and "q4" not in aud.accepted
    assert aud.add(males, F("16.6"), "q5").status == "accepted"  # redundant and consistent


def test_would_disclose_does_not_change_the_auditor() -> None:
    aud = StreamAuditor(6)
    for sid, row, ans in HOSPITAL[:2]:
        aud.add(row, ans, sid)
    (d,) = aud.would_disclose({0: 1, 4: 1}, F("11.4"), "probe")
    assert d.certificate == (("q1", F(1)), ("q2", F(-1)), ("probe", F(-1)))
    assert aud.rank == 2 and aud.determined == ()
    assert aud.add({0: 1, 4: 1}, F("11.4"), "q3").newly_determined[0].value == F("5.2")


def test_bad_calls() -> None:
    aud = StreamAuditor(3)
    aud.add({0: 1}, 1, "a")
    with pytest.raises(ValueError, match="used twice"):
        aud.add({1: 1}, 1, "a")
    with pytest.raises(ValueError, match="outside"):
        aud.add({3: 1}, 1, "b")
    with pytest.raises(ValueError, match="unknown arithmetic"):
        StreamAuditor(3, arithmetic="float")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- oracles


def gauss_jordan(rows: list[dict[int, Any]], answers: list[Fraction], n: int
                 ) -> tuple[bool, int, dict[int, Fraction]]:
    """(consistent, rank, {record: value}) by Gauss-Jordan on [A | b] with Fractions."""
    M = [[F(r.get(j, 0)) for j in range(n)] + [F(b)] for r, b in zip(rows, answers, strict=True)]
    rank, pivots = 0, []
    for col in range(n):
        p = next((i for i in range(rank, len(M)) if M[i][col] != 0), None)
        if p is None:
            continue
        M[rank], M[p] = M[p], M[rank]
        M[rank] = [v / M[rank][col] for v in M[rank]]
        for i in range(len(M)):
            if i != rank and M[i][col] != 0:
                f = M[i][col]
                M[i] = [a - f * b for a, b in zip(M[i], M[rank], strict=True)]
        pivots.append(col)
        rank += 1
    consistent = all(M[i][n] == 0 for i in range(rank, len(M)))
    det = {c: M[i][n] for i, c in enumerate(pivots)
           if all(M[i][j] == 0 for j in range(n) if j != c)}
    return consistent, rank, det


def holds(certificate: tuple[tuple[str, Fraction], ...], index: int, value: Fraction,
          stats: dict[str, tuple[dict[int, int], Fraction]]) -> bool:
    """sum(c * row) == e_index and sum(c * answer) == value, exactly."""
    acc: dict[int, Fraction] = {}
    total = F(0)
    for sid, c in certificate:
        row, ans = stats[sid]
        for j, v in row.items():
            acc[j] = acc.get(j, F(0)) + c * v
        total += c * ans
    return {j: v for j, v in acc.items() if v} == {index: F(1)} and total == value


def check_stream(arithmetic: str, n: int, rows: list[dict[int, int]], answers: list[Fraction],
                 deny: bool, seed: int = 0) -> None:
    """Feed a stream; after every statistic compare with both oracles."""
    aud = StreamAuditor(n, arithmetic=arithmetic, seed=seed)  # type: ignore[arg-type]
    acc_rows: list[dict[int, int]] = []
    acc_answers: list[Fraction] = []
    stats: dict[str, tuple[dict[int, int], Fraction]] = {}
    for i, (row, ans) in enumerate(zip(rows, answers, strict=True)):
        sid = f"s{i}"
        stats[sid] = (row, ans)
        ok, _, before = gauss_jordan(acc_rows, acc_answers, n)
        assert ok
        ok_new, rank_new, after = gauss_jordan([*acc_rows, row], [*acc_answers, ans], n)
        newly = {j: v for j, v in after.items() if j not in before}
        step = aud.add(row, ans, sid, deny=deny)
        if not ok_new:
            assert step.status == "inconsistent", (i, step)
            assert step.conflict[0] == (sid, F(1))
            total: dict[int, Fraction] = {}
            for s, c in step.conflict:
                for j, v in stats[s][0].items():
                    total[j] = total.get(j, F(0)) + c * v
            assert not any(total.values())
            assert step.discrepancy == sum((c * stats[s][1] for s, c in step.conflict), F(0))
            assert step.discrepancy != 0
        elif deny and newly:
            assert step.status == "denied", (i, step)
            assert {d.index: d.value for d in step.would_disclose} == newly
            for d in step.would_disclose:
                assert d.value is not None and holds(d.certificate, d.index, d.value, stats)
        else:
            assert step.status == "accepted", (i, step)
            assert {d.index: d.value for d in step.newly_determined} == newly
            acc_rows.append(row)
            acc_answers.append(ans)
            assert step.rank == rank_new
        # the running state equals a from-scratch computation (both oracles)
        _, rank, det = gauss_jordan(acc_rows, acc_answers, n)
        assert aud.rank == rank
        assert {d.index: d.value for d in aud.determined} == det
        for d in aud.determined:
            assert aud.verify(d) and d.proven
        if acc_rows:
            dense = np.array([[r.get(j, 0) for j in range(n)] for r in acc_rows])
            ref = determine(dense, acc_answers)
            assert ref.consistent and ref.rank == rank
            assert {c.index: c.value for c in ref.determined} == det


@st.composite
def streams(draw: Any) -> tuple[int, list[dict[int, int]], list[Fraction]]:
    n = draw(st.integers(1, 6))
    k = draw(st.integers(1, 10))
    x = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    rows, answers = [], []
    for _ in range(k):
        cells = draw(st.lists(st.sampled_from([0, 0, 0, 1, 1, -1, 2, -2]), min_size=n,
                              max_size=n))
        row = {j: v for j, v in enumerate(cells) if v}
        value = F(sum(v * x[j] for j, v in row.items()))
        if draw(st.integers(0, 5)) == 0:  # a wrong answer now and then
            value += F(draw(st.sampled_from([1, -1, 1, 2])), draw(st.sampled_from([1, 2])))
        rows.append(row)
        answers.append(value)
    return n, rows, answers


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from(ARITHMETICS), st.booleans(), st.integers(0, 2**16))
def test_random_streams_agree_with_both_oracles(stream: Any, arithmetic: str, deny: bool,
                                                seed: int) -> None:
    n, rows, answers = stream
    check_stream(arithmetic, n, rows, answers, deny, seed)


def test_unlucky_primes_are_redrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prime that divides numbers of the elimination (3, with coefficients 3 and 6) must be
    caught by the second prime and replaced; the results stay exact."""
    real = audit._random_prime
    draws = iter([3, 2_147_483_629])
    drawn: list[int] = []

    def first_tiny(rng: Any) -> int:
        drawn.append(next(draws, None) or real(rng))
        return drawn[-1]

    monkeypatch.setattr(audit, "_random_prime", first_tiny)
    rng = np.random.default_rng(5)
    n = 6
    x = rng.integers(-5, 6, n)
    rows, answers = [], []
    for _ in range(12):
        cells = rng.choice([0, 0, 1, 3, 6, -3], n)
        row = {int(j): int(v) for j, v in enumerate(cells) if v}
        rows.append(row)
        answers.append(F(int(sum(v * x[j] for j, v in row.items()))))
    check_stream("modular", n, rows, answers, deny=False)
    assert drawn[0] == 3 and len(drawn) > 2  # the tiny prime was caught and replaced


def test_auto_switches_to_modular_on_random_dense_streams() -> None:
    """Random 0/1 statistics make exact numbers grow; auto leaves rationals, and the answer
    (rank, no record pinned below full rank) is the same as an exact recomputation."""
    rng = np.random.default_rng(3)
    n, k = 150, 100
    A = (rng.random((k, n)) < 0.5).astype(int)
    x = rng.integers(0, 50, n)
    aud = StreamAuditor(n, seed=1)
    for i in range(k):
        aud.add({int(j): 1 for j in np.flatnonzero(A[i])}, int(A[i] @ x), f"s{i}")
    assert aud.arithmetic == "modular"
    ref = determine(A, [F(int(v)) for v in A @ x])
    assert aud.rank == ref.rank == k
    assert aud.determined == () and ref.determined == ()


@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_full_rank_random_stream_pins_everyone_with_exact_certificates(arithmetic: str) -> None:
    rng = np.random.default_rng(11)
    n = 12
    A = (rng.random((2 * n, n)) < 0.5).astype(int)
    x = rng.integers(0, 9, n)
    aud = StreamAuditor(n, arithmetic=arithmetic, seed=2)  # type: ignore[arg-type]
    for i in range(2 * n):
        aud.add({int(j): 1 for j in np.flatnonzero(A[i])}, int(A[i] @ x), f"s{i}")
    ref = determine(A, [F(int(v)) for v in A @ x])
    assert {d.index: d.value for d in aud.determined} == {c.index: c.value
                                                           for c in ref.determined}
    assert all(aud.verify(d) for d in aud.determined)
    if aud.rank == n:
        assert [d.value for d in aud.determined] == [F(int(v)) for v in x]


# --------------------------------------------------------------------------- CLI


def _registered() -> bool:
    from statrecon.cli import app

    return any(c.name == "audit-stream" for c in app.registered_commands)


cli = pytest.mark.skipif(
    not _registered(),
    reason="audit-stream is not registered in statrecon.cli yet "
           "(app.command('audit-stream')(audit_stream) from statrecon.commands.audit_stream)")

HOSPITAL_STREAM = """\
# reference 004, one statistic per line
q1: SELECT SUM(sugar) FROM patients ; 32.1

q2: SELECT SUM(sugar) FROM patients WHERE gender = 'Female' ; 15.5
q3: SELECT SUM(sugar) FROM patients WHERE zip > 32000 AND zip < 35000 AND gender = 'Male' ; 11.4
"""


def audit_cli(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return statrecon("audit-stream", *args, stdin=stdin if stdin is not None else "",
                     columns=200)


def json_lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    """The hospital release without its statistics (the stream brings them)."""
    text = (EXAMPLES / "hospital.yaml").read_text(encoding="utf-8")
    head = text[:text.index("statistics:")]
    # the public table must lie in the release file's folder (issue 12)
    shutil.copy(EXAMPLES / "hospital_public.csv", tmp_path / "hospital_public.csv")
    path = tmp_path / "hospital_schema.yaml"
    path.write_text(head + "statistics: []\n", encoding="utf-8")
    return path


@pytest.fixture
def stream(tmp_path: Path) -> Path:
    path = tmp_path / "stream.txt"
    path.write_text(HOSPITAL_STREAM, encoding="utf-8")
    return path


@cli
def test_cli_hospital_json(schema: Path, stream: Path) -> None:
    proc = audit_cli(schema, "--input", stream, "--json")
    assert proc.returncode == 0, proc.stderr
    *steps, last = json_lines(proc)
    assert [(s["statistic"], s["line"], s["status"], s["rank"]) for s in steps] == [
        ("q1", 2, "accepted", 1), ("q2", 4, "accepted", 2), ("q3", 5, "accepted", 3)]
    assert steps[0]["newly_determined"] == steps[1]["newly_determined"] == []
    (rec,) = steps[2]["newly_determined"]
    assert rec["index"] == 1 and rec["record"] == 2 and rec["value"] == 5.2
    assert rec["public"] == {"id": 2, "zip": 43813, "gender": "Male"}
    assert rec["certificate"] == [{"statistic": "q1", "coefficient": 1},
                                  {"statistic": "q2", "coefficient": -1},
                                  {"statistic": "q3", "coefficient": -1}]
    summary = last["summary"]
    assert summary["accepted"] == 3 and summary["rank"] == 3 and summary["records"] == 6
    assert [d["record"] for d in summary["determined"]] == [2]


@cli
def test_cli_human_view_hides_values_unless_asked(schema: Path, stream: Path) -> None:
    proc = audit_cli(schema, "--input", stream)
    assert proc.returncode == 0, proc.stderr
    assert "discloses record 2 (id=2, zip=43813, gender=Male) via q1 - q2 - q3" in proc.stdout
    assert "5.2" not in proc.stdout
    shown = audit_cli(schema, "--input", stream, "--show-values")
    assert "record 2 (id=2, zip=43813, gender=Male) = 5.2 via q1 - q2 - q3" in shown.stdout


@cli
def test_cli_deny_from_stdin(schema: Path) -> None:
    proc = audit_cli(schema, "--deny", "--json", stdin=HOSPITAL_STREAM)
    assert proc.returncode == 0, proc.stderr
    *steps, last = json_lines(proc)
    assert [s["status"] for s in steps] == ["accepted", "accepted", "denied"]
    assert all(s["newly_determined"] == [] for s in steps)
    (rec,) = steps[2]["would_disclose"]
    assert rec["record"] == 2 and [t["statistic"] for t in rec["certificate"]] == [
        "q1", "q2", "q3"]
    assert last["summary"]["determined"] == [] and last["summary"]["rank"] == 2
    human = audit_cli(schema, "--deny", stdin=HOSPITAL_STREAM)
    assert "denied" in human.stdout and "would disclose record 2" in human.stdout


@cli
def test_cli_release_statistics_come_first_and_json_lines_are_read(tmp_path: Path) -> None:
    lines = tmp_path / "more.jsonl"
    lines.write_text('{"id": "pair", "sql": "SELECT AVG(sugar) FROM patients WHERE zip > 32000 '
                     'AND zip < 35000 AND gender = \'Male\'", "value": 5.7}\n', encoding="utf-8")
    proc = audit_cli(EXAMPLES / "hospital.yaml", "--input", lines, "--json")
    assert proc.returncode == 0, proc.stderr
    *steps, _ = json_lines(proc)
    text = (EXAMPLES / "hospital.yaml").read_text(encoding="utf-8").splitlines()
    line = {sid: k for k, t in enumerate(text, 1) for sid in ("q1", "q2", "q3")
            if f"id: {sid}," in t}
    assert [(s["statistic"], s["source"], s["line"]) for s in steps] == [
        ("q1", "release", line["q1"]), ("q2", "release", line["q2"]),
        ("q3", "release", line["q3"]), ("pair", "stream", 1)]
    assert steps[2]["newly_determined"][0]["record"] == 2
    # AVG 5.7 over records 1 and 5 is q3 again: consistent, adds nothing
    assert (steps[3]["status"], steps[3]["independent"]) == ("accepted", False)


@cli
def test_cli_inconsistent_stream_exits_2(schema: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(HOSPITAL_STREAM + "q4: SELECT SUM(sugar) FROM patients WHERE gender = "
                    "'Male' ; 16.0\n", encoding="utf-8")
    proc = audit_cli(schema, "--input", path, "--json")
    assert proc.returncode == 2, proc.stderr
    step = json_lines(proc)[3]
    assert step["status"] == "inconsistent"
    assert step["conflict"] == [{"statistic": "q4", "coefficient": 1},
                                {"statistic": "q1", "coefficient": -1},
                                {"statistic": "q2", "coefficient": 1}]
    assert step["discrepancy"] == -0.6
    human = audit_cli(schema, "--input", path)
    assert human.returncode == 2 and "q4 - q1 + q2" in human.stdout


@cli
@pytest.mark.parametrize("arithmetic", ARITHMETICS)
def test_cli_arithmetics_agree(schema: Path, stream: Path, arithmetic: str) -> None:
    proc = audit_cli(schema, "--input", stream, "--json", "--engine", arithmetic)
    assert proc.returncode == 0, proc.stderr
    assert json_lines(proc)[-1]["summary"]["determined"][0]["value"] == 5.2


@cli
@pytest.mark.parametrize(("line", "named"), [
    ("SELECT SUM(sugar) FROM patients 32.1", "no ';'"),
    ("SELECT SUM(sugar) FROM patients ; lots", "'lots' is not a number"),
    ("SELECT SUM(weight) FROM patients ; 3", "unknown column 'weight'"),
    ("SELECT SUM(sugar) FROM patients WHERE floor(sugar) > 3 ; 3", "FLOOR(sugar)"),
    ("SELECT SUM(sugar) FROM patients WHERE abs(zip - sugar) < 9 ; 3", "unknown column(s) sugar"),
    ("SELECT MEDIAN(sugar) FROM patients ; 3", "not linear"),
    ('{"sql": "SELECT SUM(sugar) FROM patients", "value": "3"}', "'value' must be a number"),
    ("{oops", "malformed JSON"),
])
def test_cli_bad_line_names_file_and_line(schema: Path, tmp_path: Path, line: str,
                                          named: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(f"q1: SELECT SUM(sugar) FROM patients ; 32.1\n# comment\n{line}\n",
                    encoding="utf-8")
    proc = audit_cli(schema, "--input", path)
    assert_user_error(proc, f"{path}:3", named)
    assert "accepted" in proc.stdout  # the statistics before the bad line were audited


@cli
def test_cli_duplicate_id_and_missing_files(schema: Path, tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("a: SELECT SUM(sugar) FROM patients ; 1\na: SELECT SUM(sugar) FROM "
                    "patients WHERE id = 1 ; 1\n", encoding="utf-8")
    assert_user_error(audit_cli(schema, "--input", path), f"{path}:2", "'a' already used")
    assert_user_error(audit_cli(schema, "--input", tmp_path / "nope.txt"), "no such file")
    assert_user_error(audit_cli(schema, "--engine", "float"), "--engine")


# --------------------------------------------------------------------------- categorical


def test_compiler_keeps_one_indicator_across_batches(tmp_path: Path) -> None:
    """A COUNT of the complement in a later batch becomes group size - answer, exactly as in
    one release: the auditor's unknown stays the indicator of the first counted category."""
    from statrecon.engines.stream import StreamCompiler
    from statrecon.release.files import parse_release
    from statrecon.release.known import load_public
    from statrecon.release.stream import parse_line

    (tmp_path / "roster.csv").write_text("id\n1\n2\n3\n4\n", encoding="utf-8")
    rel = parse_release(
        "version: 1\ntable: t\npublic: roster.csv\ncolumns:\n"
        "  id: {type: integer, known: true}\n"
        "  dx: {type: categorical, values: ['no', 'yes']}\n",
        source=tmp_path / "r.yaml")
    assert rel.public is not None
    comp = StreamCompiler(rel, load_public(rel.public, rel.schema))
    first = parse_line("a: SELECT COUNT(*) FROM t WHERE dx = 'yes' AND id <= 2 ; 1", 1, "s:1",
                       rel.schema)
    later = parse_line("b: SELECT COUNT(*) FROM t WHERE dx = 'no' AND id <= 1 ; 0", 2, "s:2",
                       rel.schema)
    public_only = parse_line("c: SELECT COUNT(*) FROM t WHERE id > 1 ; 3", 3, "s:3", rel.schema)
    assert first and later and public_only
    (a,), err = comp.compile([first], "s")
    assert err is None and a.row == {0: 1, 1: 1} and a.answer == 1
    (b, c), err = comp.compile([later, public_only], "s")
    assert err is None and b.row == {0: 1} and b.answer == 1  # 1 - count(no) = count(yes)
    assert c.row is None and "public rows only" in c.note
    aud = StreamAuditor(4)
    assert a.row is not None and a.answer is not None and b.row is not None
    assert b.answer is not None
    aud.add(a.row, a.answer, "a")
    pinned = aud.add(b.row, b.answer, "b").newly_determined
    assert [(d.index, d.value) for d in pinned] == [(0, 1), (1, 0)]  # x1 = 1, so x2 = 0
    assert comp.secret is not None
    assert [comp.secret.label(float(d.value or 0)) for d in pinned] == ["yes", "no"]
