"""Issue 12, "no silent change, no misleading result": an input that would be changed without a
word (rounded, truncated, dropped, overwritten) or a result that would mislead is refused with one
line, or reported as it is.

Reproductions held here:
- public tables: a bad cell is named on its own line, not the column's first cell;
- census: a fractional age is refused, not rounded; ``census compare`` scores the common tracts
  and counts the rest (``--strict`` refuses a wider truth);
- claims: a cell given twice is refused (the last value won); ``generate-blocks`` writes both
  files or neither; the negative-claim budget is deterministic and what it left open is reported;
- audit-stream: answers the secret column's domain cannot produce are inconsistent (exit 2), not
  a disclosure; a byte order mark is stripped; terminal escapes in ids never reach the terminal
  (audit-stream and the reconstruct report);
- command line: ``experiment diffix`` with a composite prime is one line; ``tabulate`` never
  overwrites its inputs.

Non-positive or non-finite noise scales are refused too (``noise`` cases of
test_bad_numbers_and_names_in_a_release in test_tracebacks.py, a traceback as well as a silent
change).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    BLOCK_A,
    EXAMPLES,
    SUM_ALL,
    TRACT_A,
    TRACT_B,
    CliRunner,
    assert_one_line_error,
    assert_user_error,
    audit_cli,
    households,
    json_of,
    read_claims_rows,
    statrecon,
    write_claims_rows,
    write_persons,
    write_public_release,
    write_schema,
)
from typer.testing import CliRunner as TyperRunner

from statrecon.census.households.files import read_tables
from statrecon.census.households.synthetic import generate_blocks
from statrecon.census.households.tabulate import tabulate_sql
from statrecon.engines.claims import BlockRelease, ClaimsOptions, verify_block
from statrecon.engines.stream import Domain, StreamAuditor
from statrecon.errors import StatreconError
from statrecon.experiments.census_match import compare

F = Fraction


def json_lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]

# --------------------------------------------------------------------------- public tables


def test_a_non_number_is_reported_on_its_own_line(tmp_path: Path, run_cli: CliRunner) -> None:
    """pandas reads a column with one bad cell as text; the message must still name the bad
    cell (line 4, 'x'), not the first cell of the column (line 2, '1')."""
    path = write_public_release(tmp_path, "id\n1\n2\nx\n")
    line = assert_one_line_error(run_cli("reconstruct", path), "public.csv:4", "'x'",
                                 "not a number")
    assert "'1'" not in line


# --------------------------------------------------------------------------- census


def test_fractional_age_is_refused_not_rounded(tmp_path: Path) -> None:
    """TRY_CAST turned age 12.5 into 13 without a word."""
    persons = write_persons(tmp_path / "p.csv", [TRACT_A + "1000"])
    text = persons.read_text().splitlines()
    text[2] = text[2].replace(",27,", ",12.5,")
    persons.write_text("\n".join(text) + "\n")
    assert_user_error(statrecon("census", "tabulate", "--persons", persons, "--out",
                                tmp_path / "r.parquet"), str(persons), "line 3", "age",
                      "'12.5'")
    assert not (tmp_path / "r.parquet").exists()


@pytest.fixture(scope="module")
def one_tract(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Truth over two tracts (3 blocks); a reconstruction of tract A only."""
    d = tmp_path_factory.mktemp("compare")
    truth = write_persons(d / "truth.csv", [TRACT_A + "1000", TRACT_B + "1000", TRACT_B + "1001"])
    only_a = write_persons(d / "a.csv", [TRACT_A + "1000"])
    rel, recon = d / "a.parquet", d / "recon.parquet"
    assert statrecon("census", "tabulate", "--persons", only_a, "--out", rel).returncode == 0
    proc = statrecon("census", "reconstruct", rel, "--out", recon, "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    return {"truth": truth, "recon": recon}


def test_compare_scores_the_common_tracts_and_counts_the_rest(one_tract: dict[str, Path]
                                                              ) -> None:
    """Was: tract B's persons counted as unmatched (a match rate of a third, not 1)."""
    result = compare(one_tract["truth"], one_tract["recon"])
    assert result["persons"] == 2 and result["tracts"] == 1 and result["blocks"] == 1
    assert result["exact_match_rate"] == 1.0
    assert (result["truth_blocks_left_out"], result["truth_tracts_left_out"],
            result["truth_persons_left_out"]) == (2, 1, 4)
    human = statrecon("census", "compare", "--truth", one_tract["truth"], "--recon",
                      one_tract["recon"])
    assert human.returncode == 0, human.stderr
    assert "Left out: 2 blocks (4 persons) in 1 tracts" in " ".join(human.stdout.split())


def test_compare_strict_refuses_a_wider_truth(one_tract: dict[str, Path]) -> None:
    proc = statrecon("census", "compare", "--truth", one_tract["truth"], "--recon",
                     one_tract["recon"], "--strict", "--json")
    assert_user_error(proc, str(one_tract["truth"]), "2 blocks in 1 tracts", TRACT_B, "--strict")
    assert proc.stdout == ""


# --------------------------------------------------------------------------- claims


def test_a_cell_given_twice_is_refused(claims_tables: Path, tmp_path: Path) -> None:
    """Was: the last value won without a word."""
    rows = read_claims_rows(claims_tables)
    again = dict(rows[1], value=str(int(rows[1]["value"]) + 1))
    bad = write_claims_rows([*rows[:5], again, *rows[5:]], tmp_path / "twice.csv")
    assert_user_error(statrecon("claims", "verify", "--tables", bad), str(bad), "line 7",
                      rows[1]["cell"], "first at line 3")
    same = write_claims_rows([*rows[:5], rows[1], *rows[5:]], tmp_path / "same.csv")
    with pytest.raises(StatreconError, match="appears again"):
        read_tables(same)  # even with the same value: one cell, one line


def test_generate_blocks_writes_both_files_or_neither(tmp_path: Path) -> None:
    """Was: the targets file written, then a traceback on the population file."""
    out, population = tmp_path / "blocks.csv", tmp_path / "population"
    population.mkdir()  # cannot be replaced by a file
    assert_user_error(statrecon("claims", "generate-blocks", "--blocks", "2", "--out", out,
                                "--population-out", population), str(population))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["population"]  # no partial output
    ok = statrecon("claims", "generate-blocks", "--blocks", "2", "--out", out)
    assert ok.returncode == 0, ok.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "blocks.csv", "blocks_population.csv", "population"]


def test_negative_budget_is_deterministic() -> None:
    """The budget for 'at least one' questions counts solver work, not wall seconds: a block
    where it binds (some questions left open) gives the same claims on every run, so the
    output cannot depend on how loaded the machine is."""
    assert "negative_time_limit" not in {f.name for f in dataclasses.fields(ClaimsOptions)}
    block = "010039270001018"  # 11 units: the budget below settles some questions, not all
    values = tabulate_sql(generate_blocks(6, 0).targets)[block]
    options = ClaimsOptions(negative_work_limit=0.1)
    runs = [verify_block(BlockRelease(block, values), options) for _ in range(2)]
    first, second = runs
    assert first.status == "ok"
    assert first.negative_undecided > 0  # the budget binds
    assert [str(c) for c in first.negative] == [str(c) for c in second.negative]
    assert first.negative_undecided == second.negative_undecided
    assert [str(c) for c in first.verified] == [str(c) for c in second.verified]
    unlimited = verify_block(BlockRelease(block, values),
                             dataclasses.replace(options, negative_work_limit=None))
    assert unlimited.negative_undecided == 0
    assert {str(c) for c in first.negative} < {str(c) for c in unlimited.negative}


def test_open_negative_questions_are_reported(tmp_path: Path) -> None:
    """How many 'at least one' questions the budget left open: in the JSON and the table."""
    path = households(tmp_path)
    data = json_of(statrecon("claims", "verify", "--households", path, "--k", "20", "--json"))
    assert all(b["negative_undecided"] == 0 for b in data["blocks"])
    proc = statrecon("claims", "verify", "--households", path, "--k", "20")
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout[:proc.stdout.index("┡")].splitlines()[-2:]  # two-line column titles
    titles = [" ".join(parts) for parts in zip(*(line.split("┃")[1:-1] for line in header),
                                               strict=True)]
    assert "negative open" in [" ".join(t.split()) for t in titles]
    assert BLOCK_A in proc.stdout  # block ids printed whole


# --------------------------------------------------------------------------- audit-stream domain


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
    aud = StreamAuditor(3, arithmetic=engine, seed=1,  # type: ignore[arg-type]
                        domain=Domain(F(0), F(40)))
    step = aud.add({0: 1, 1: 1}, F(81), "big")
    assert step.status == "inconsistent" and step.conflict == (("big", F(1)),)
    assert step.attainable == (F(0), F(80)) and step.outside is None
    assert aud.rank == 0 and aud.accepted == ()  # like any contradiction: not added
    assert aud.add({0: 1, 1: 1}, F(80), "ok").status == "accepted"


@pytest.mark.parametrize("engine", ["rational", "modular"])
def test_auditor_record_pinned_outside_the_domain(engine: str) -> None:
    aud = StreamAuditor(3, arithmetic=engine, seed=1,  # type: ignore[arg-type]
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


def test_cli_sum_outside_the_domain_is_inconsistent(audit_schema: Path) -> None:
    proc = audit_cli(audit_schema, "--json", stdin=f"{SUM_ALL} WHERE id = 1 ; 50\n")
    assert proc.returncode == 2, proc.stderr
    step, last = json_lines(proc)
    assert (step["statistic"], step["status"]) == ("s1", "inconsistent")
    assert step["attainable"] == [0, 40] and step["newly_determined"] == []
    assert last["summary"]["determined"] == []
    human = audit_cli(audit_schema, stdin=f"{SUM_ALL} WHERE id = 1 ; 50\n")
    assert human.returncode == 2 and "discloses" not in human.stdout
    assert "inconsistent s1" in human.stdout and "sugar (0..40)" in human.stdout


def test_cli_difference_pinning_outside_the_domain_names_the_statistics(audit_schema: Path) -> None:
    stream = (f"a: {SUM_ALL} WHERE id < 3 ; 50\n"  # possible: two records, up to 80
              f"b: {SUM_ALL} WHERE id = 2 ; 5\n")  # then record 1 is 45 > 40
    proc = audit_cli(audit_schema, "--json", stdin=stream)
    assert proc.returncode == 2, proc.stderr
    first, second, _ = json_lines(proc)
    assert first["status"] == "accepted" and second["status"] == "inconsistent"
    assert second["outside"]["record"] == 1 and second["outside"]["value"] == 45
    assert [t["statistic"] for t in second["conflict"]] == ["a", "b"]
    human = audit_cli(audit_schema, stdin=stream)
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


# --------------------------------------------------------------------------- audit-stream text


def test_byte_order_mark_is_stripped_from_file_and_stdin(audit_schema: Path,
                                                         tmp_path: Path) -> None:
    text = f"q1: {SUM_ALL} ; 32.1\n".encode()
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text)
    for proc in (audit_cli(audit_schema, "--json", "--input", path),
                 audit_cli(audit_schema, "--json", stdin=b"\xef\xbb\xbf" + text)):
        assert proc.returncode == 0, proc.stderr
        assert json_lines(proc)[0]["statistic"] == "q1"


def test_terminal_escapes_in_ids_never_reach_the_terminal(audit_schema: Path) -> None:
    ids = ["x\x1b[2J", "t\x1b]0;title\x07", "r\u202eevil"]
    lines = [json.dumps({"id": sid, "sql": f"{SUM_ALL} WHERE id = {k + 1}", "value": 1})
             for k, sid in enumerate(ids)]
    proc = audit_cli(audit_schema, "--show-values", stdin="\n".join([*lines, lines[0]]) + "\n")
    assert proc.returncode == 1
    for stream in (proc.stdout, proc.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert "accepted     x\\x1b[2J" in proc.stdout and "t\\x1b]0;title\\x07" in proc.stdout
    assert_user_error(proc, "'x\\x1b[2J' already used")
    # JSON output keeps the ids exactly (JSON escapes them itself)
    data = json_lines(audit_cli(audit_schema, "--json", stdin="\n".join(lines) + "\n"))
    assert [d["statistic"] for d in data[:3]] == ids


def test_reconstruct_report_escapes_ids(tmp_path: Path) -> None:
    text = (EXAMPLES / "contradiction.yaml").read_text(encoding="utf-8")
    path = tmp_path / "escapes.yaml"
    path.write_text(text.replace("id: 2B-count,", 'id: "2B\\e[2J\\a",'), encoding="utf-8")
    proc = statrecon("reconstruct", path, columns=200)
    assert proc.returncode == 2, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "2B\\x1b[2J\\x07" in proc.stdout


# --------------------------------------------------------------------------- command line


def test_cli_diffix_with_a_composite_prime_is_one_line() -> None:
    assert_user_error(statrecon("experiment", "diffix", "--primes", "4"), "--primes", "got 4")
    assert_user_error(statrecon("experiment", "dinur-nissim", "--seed", "-1"), "--seed")


def test_tabulate_refuses_to_overwrite_its_inputs(tmp_path: Path) -> None:
    release = tmp_path / "hospital.yaml"
    release.write_bytes((EXAMPLES / "hospital.yaml").read_bytes())
    truth = tmp_path / "truth.csv"
    truth.write_bytes((EXAMPLES / "hospital_truth.csv").read_bytes())
    before = release.read_bytes(), truth.read_bytes()
    from statrecon.cli import app

    for out, named in ((tmp_path / "." / "hospital.yaml", "--release"), (truth, "--microdata")):
        result = TyperRunner().invoke(app, ["tabulate", "--microdata", str(truth), "--release",
                                            str(release), "--out", str(out)])
        assert isinstance(result.exception, StatreconError), result.output
        assert f"--out {out}" in str(result.exception) and named in str(result.exception)
    assert (release.read_bytes(), truth.read_bytes()) == before
