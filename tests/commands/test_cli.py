"""The real console script, run as a subprocess: output contract, exit codes, user errors.

Exit codes: 0 ok, 1 user error (one line on stderr, never a traceback), 2 infeasible release,
3 unknown (time limit).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import (
    BLOCK_COLUMNS,
    BLOCK_PEOPLE,
    EXAMPLES,
    EXIT_FOR_STATUS,
    assert_user_error,
    json_of,
    rows_of,
    statrecon,
)

# ---------------------------------------------------------------- reconstruct


def test_reconstruct_block_human_view() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "block.yaml")
    assert proc.returncode == 0, proc.stderr
    assert "UNIQUE" in proc.stdout
    table = proc.stdout[proc.stdout.index("reconstructed table"):]
    body = [line.replace("│", " ").split() for line in table.splitlines() if "│" in line]
    ages = [int(cells[0]) for cells in body]
    assert ages == [8, 18, 24, 30, 36, 66, 84]
    assert sorted((int(c[0]), c[1], c[2], c[3]) for c in body) == sorted(BLOCK_PEOPLE)


def test_reconstruct_json_contract() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "block.yaml", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    contract = {"status", "method", "solution_count", "complete", "solutions", "certain_rows",
                "column_values", "conflict", "elapsed_s"}
    assert contract <= set(data)
    assert data["status"] == "unique"
    assert isinstance(data["method"], str) and data["method"]
    assert type(data["solution_count"]) is int and data["solution_count"] == 1
    assert data["complete"] is True
    assert isinstance(data["elapsed_s"], int | float) and not isinstance(data["elapsed_s"], bool)
    assert data["elapsed_s"] >= 0
    assert data["conflict"] == []

    [dataset] = data["solutions"]
    for row in dataset:
        assert list(row) == list(BLOCK_COLUMNS)
        assert type(row["age"]) is int  # a JSON number, not "8"
        assert all(isinstance(row[c], str) for c in ("sex", "race", "married"))
    assert rows_of(dataset) == sorted(BLOCK_PEOPLE)

    certain = data["certain_rows"]
    assert all(set(c) >= {"row", "multiplicity"} and type(c["multiplicity"]) is int
               for c in certain)
    assert rows_of([c["row"] for c in certain]) == sorted(BLOCK_PEOPLE)
    values = data["column_values"]
    assert values["age"] == [8, 18, 24, 30, 36, 66, 84]
    assert all(type(v) is int for v in values["age"])
    assert sorted(values["sex"]) == ["F", "M"]


def test_block_2b_all_thirty_solutions() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "block_2b.yaml", "--all", "--limit", "1000",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["status"] == "multiple"
    assert data["solution_count"] == 30
    assert data["complete"] is True
    assert len(data["solutions"]) == 30
    triples = {tuple(sorted(r["age"] for r in d)) for d in data["solutions"]}
    assert len(triples) == 30
    for ages in triples:  # three men, median 30, mean 44, ages 1..125
        assert ages[1] == 30 and sum(ages) == 132 and ages[0] >= 1 and ages[2] <= 125
    assert triples == {(a, 30, 102 - a) for a in range(1, 31)}
    assert {(c["row"]["age"], c["multiplicity"]) for c in data["certain_rows"]} == {(30, 1)}
    assert max(data["column_values"]["age"]) == 101


def test_block_2b_limit_cuts_enumeration_short() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "block_2b.yaml", "--limit", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json_of(proc)
    assert data["status"] == "multiple"
    assert data["complete"] is False
    assert data["solution_count"] == 5


def test_contradiction_exits_2_and_names_a_conflict_set() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "contradiction.yaml", "--json")
    assert proc.returncode == 2, proc.stderr
    data = json_of(proc)
    assert data["status"] == "infeasible"
    assert data["solution_count"] == 0 and data["solutions"] == []
    # the male count (4) clashes with the total (7) and the female count (4); dropping any
    # of the three makes the release feasible
    assert sorted(data["conflict"]) == ["1A-count", "2A-count", "2B-count"]

    human = statrecon("reconstruct", EXAMPLES / "contradiction.yaml")
    assert human.returncode == 2
    assert "INFEASIBLE" in human.stdout
    for sid in data["conflict"]:
        assert sid in human.stdout


def test_tiny_time_limit_exit_code_matches_status() -> None:
    proc = statrecon("reconstruct", EXAMPLES / "block.yaml", "--time-limit", "0.001", "--json")
    data = json_of(proc)
    assert data["status"] in EXIT_FOR_STATUS
    assert proc.returncode == EXIT_FOR_STATUS[data["status"]], (data["status"], proc.returncode)
    if data["status"] == "unknown":
        assert data["complete"] is False
        assert data["certain_rows"] == [] or data.get("certain_complete") is False


# ---------------------------------------------------------------- user errors


def test_missing_release_file(tmp_path: Path) -> None:
    assert_user_error(statrecon("reconstruct", tmp_path / "nope.yaml"), "nope.yaml",
                      "no such file")


def test_malformed_yaml(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("version: 1\ncolumns: {a: {type: integer, min: 0, max: 3}\n")
    assert_user_error(statrecon("reconstruct", f), f"{f}:3:", "malformed YAML")


def test_unknown_column_in_sql(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("version: 1\ncolumns: {a: {type: integer, min: 0, max: 3}}\nstatistics:\n"
                 '  - {id: q1, sql: "SELECT COUNT(*) FROM t WHERE b = 1", value: 1}\n')
    assert_user_error(statrecon("reconstruct", f), f"{f}:4:", "'q1'", "unknown column 'b'")


def test_unsupported_sql(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("version: 1\ncolumns: {a: {type: integer, min: 0, max: 3}}\nstatistics:\n"
                 '  - {id: by-a, sql: "SELECT COUNT(*) FROM t GROUP BY a", value: 1}\n')
    assert_user_error(statrecon("reconstruct", f), f"{f}:4:", "'by-a'", "GROUP BY")


def test_markup_like_text_in_a_message_is_printed_literally(tmp_path: Path) -> None:
    f = tmp_path / "r.yaml"
    f.write_text("version: 1\ncolumns: {a: {type: integer, min: 0, max: 3}}\nstatistics:\n"
                 '  - {id: "q[/b]", sql: "SELECT COUNT(*) FROM t WHERE b = 1", value: 1}\n')
    assert_user_error(statrecon("reconstruct", f), "'q[/b]'", "unknown column 'b'")


def test_value_outside_domain_in_public_csv(tmp_path: Path) -> None:
    (tmp_path / "clinic.yaml").write_text((EXAMPLES / "clinic.yaml").read_text())
    rows = (EXAMPLES / "clinic_public.csv").read_text().splitlines()
    assert rows[2] == "2,02446,M"
    rows[2] = "2,02447,M"
    (tmp_path / "clinic_public.csv").write_text("\n".join(rows) + "\n")
    assert_user_error(statrecon("reconstruct", tmp_path / "clinic.yaml"),
                      "clinic_public.csv:3:", "zip", "02447", "domain")


def test_missing_public_table(tmp_path: Path) -> None:
    assert_user_error(statrecon("reconstruct", EXAMPLES / "clinic.yaml", "--public",
                                tmp_path / "none.csv"), "none.csv", "no such file")


@pytest.mark.parametrize(("args", "named"), [
    (["reconstruct", "examples/block.yaml", "--limit", "0"], "--limit"),
    (["reconstruct", "examples/block.yaml", "--bogus"], "--bogus"),
    (["frobnicate"], "frobnicate"),
    (["tabulate", "--release", "examples/block.yaml"], "--microdata"),
])
def test_bad_options(args: list[str], named: str) -> None:
    assert_user_error(statrecon(*args), named)


def test_no_arguments_shows_help_without_an_empty_error_line() -> None:
    proc = statrecon()
    assert proc.returncode in (0, 1)
    assert "Traceback" not in proc.stderr
    assert "error:" not in proc.stderr
    assert "Usage" in proc.stdout + proc.stderr
    assert "reconstruct" in proc.stdout + proc.stderr


# ---------------------------------------------------------------- tabulate


def test_tabulate_end_to_end_then_reconstruct(tmp_path: Path) -> None:
    data = yaml.safe_load((EXAMPLES / "block.yaml").read_text())
    data.pop("suppression")
    for entry in data["statistics"]:
        for key in ("value", "error", "suppressed"):
            entry.pop(key, None)
    stats = tmp_path / "stats.yaml"
    stats.write_text(yaml.safe_dump(data, sort_keys=False))
    micro = tmp_path / "people.csv"
    micro.write_text(",".join(BLOCK_COLUMNS) + "\n"
                     + "".join(",".join(map(str, p)) + "\n" for p in BLOCK_PEOPLE))
    out = tmp_path / "filled.yaml"

    proc = statrecon("tabulate", "--microdata", micro, "--release", stats, "--out", out,
                     "--suppress-below", "3")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert out.exists()
    filled = yaml.safe_load(out.read_text())
    assert filled["suppression"] == {"max_count": 2}
    by_id = {s["id"]: s for s in filled["statistics"]}
    assert by_id["1A-count"]["value"] == 7
    assert by_id["2B-mean"]["value"] == 44
    assert by_id["4A-mean"] == {**by_id["4A-mean"], "value": 36.7, "decimals": 1}
    assert by_id["4B-count"]["suppressed"] is True  # one Black man
    assert by_id["3B-count"]["value"] == 4

    rec = statrecon("reconstruct", out, "--json")
    assert rec.returncode == 0, rec.stderr
    result = json_of(rec)
    assert result["status"] == "unique"
    assert rows_of(result["solutions"][0]) == sorted(BLOCK_PEOPLE)


def test_tabulate_rejects_microdata_outside_a_domain(tmp_path: Path) -> None:
    micro = tmp_path / "people.csv"
    micro.write_text("age,sex,race,married\n8,F,Black,no\n18,M,Purple,no\n")
    proc = statrecon("tabulate", "--microdata", micro, "--release", EXAMPLES / "block.yaml",
                     "--out", tmp_path / "out.yaml")
    assert_user_error(proc, "people.csv:3:", "race", "Purple")
    assert not (tmp_path / "out.yaml").exists()
