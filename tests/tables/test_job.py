"""tau-Argus batch jobs (tables/job.py, runs/job.py): checkTauArgus's batch examples run as
written and give its expected output; tau-Argus's TestRecode.arb on the synthetic
tau_testW.asc; the job's grammar, its refusals, and bad input as one line with nothing
written."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from conftest import CliRunner

from statrecon.errors import StatreconError
from statrecon.tables.job import Recode, Suppress, WriteTable, job_tables, read_job

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "data" / "checktauargus"
TESTW = ROOT / "examples" / "tables" / "tauargus" / "testw"
# checkTauArgus's expected statuses (sdcTable's recode of tau-Argus's status numbers)
EXPECTED = list("ssssxussssxxsss")


def _letter(status: str) -> str:
    number = int(status)
    return "u" if 3 <= number <= 9 else "x" if number in (11, 12) else \
        "z" if number == 14 else "s"


def _copy(source: Path, tmp_path: Path) -> Path:
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    return folder


@pytest.mark.parametrize(("example", "response", "first"), [("ex1", "freq", "5146"),
                                                            ("ex2", "num1", "10484.95")])
def test_check_tau_argus_batch_examples_give_the_expected_output(
        run_cli: CliRunner, tmp_path: Path, example: str, response: str, first: str) -> None:
    """ex1 (table input) and ex2 (free-format microdata, FREQ(5,20)|P(20,5)|, OPT) run as
    written: the file <WRITETABLE> asks for has checkTauArgus's 15 rows, columns, first
    value and statuses. AS+ shows true values: that file is the working file; the name the
    job gives holds the publication, the same rows with every suppressed value x."""
    folder = _copy(CHECK / example, tmp_path)
    code, out, err = run_cli("tables", "protect", folder / f"batch_{example}.arb", "--quiet")
    assert code == 0, err
    assert f"wrote {folder / f'tabout_{example}.working.txt'}" in out.replace("\n", " ")
    working = list(csv.DictReader((folder / f"tabout_{example}.working.txt").open()))
    published = list(csv.DictReader((folder / f"tabout_{example}.txt").open()))
    assert list(working[0]) == ["region", "gender", response, "Status"]
    assert len(working) == len(published) == 15
    assert working[0][response] == first
    assert [_letter(r["Status"]) for r in working] == EXPECTED
    assert [r["Status"] for r in published] == [r["Status"] for r in working]
    for shown, true in zip(published, working, strict=True):
        hidden = _letter(true["Status"]) in "ux"
        assert shown[response] == ("x" if hidden else true[response])


def test_test_recode_runs_as_written_on_the_synthetic_microdata(run_cli: CliRunner,
                                                               tmp_path: Path) -> None:
    """tau-Argus's TestRecode.arb: two tables from tau_testW.asc (fixed width, NK(2,75)),
    Size recoded by GK.GRC (1-5 into 1), Region cut at level 2 (nothing below it),
    IndustryCode by a <TREERECODE> file; then <GOINTERACTIVE>. It writes nothing itself and
    has no <SUPPRESS>: --out gets both tables, protected as linked tables."""
    job = read_job(TESTW / "TestRecode.arb")
    assert [type(s) for s in job.steps] == [Recode, Recode, Recode]
    assert job.set_aside[-1].endswith("<GOINTERACTIVE>: the job ends here, as in tau-Argus")
    first, second = job_tables(job)
    assert first.table.hierarchies["Size"].children == {
        "Total": (" 1", " 6", " 7", " 8", " 9", "99")}
    industry = second.table.hierarchies["IndustryCode"]
    assert "142" in industry and industry.is_leaf("142") and industry.is_leaf("1500")
    assert industry.children["151"] == ("1512", "1513")
    assert any(c.status.value == "primary" for c in first.table.cells)
    code, out, err = run_cli("tables", "protect", TESTW / "TestRecode.arb", "--out",
                             tmp_path / "testw.csv", "--quiet")
    assert code == 0, err
    assert "tables 1 (Size x Region), 2 (Region x IndustryCode), fast:" in out
    assert "no <SUPPRESS>: every table is protected" in out
    rows = list(csv.DictReader((tmp_path / "testw.csv").open()))
    assert {r["table"] for r in rows} == {"table1", "table2"}
    assert "x" in {r["value"] for r in rows}


JOB = """<OPENMICRODATA> "microdata_ex2.asc"
<OPENMETADATA> "metadata_ex2.rda"
<SPECIFYTABLE> "region""gender"|"num1"||
<SAFETYRULE> FREQ(5,20)
<SPECIFYTABLE> "region"|<FREQ>|||
<SAFETYRULE> FREQ(3,10)
<READMICRODATA>
<SUPPRESS> MOD(0)
<WRITETABLE> (1, 1, , "sub/../t1.csv")
<WRITETABLE> (2, 3, AS-FL+QU-, "t2.csv")
"""


def test_the_grammar_of_a_job(tmp_path: Path) -> None:
    folder = _copy(CHECK / "ex2", tmp_path)
    (folder / "job.arb").write_text(JOB)
    job = read_job(folder / "job.arb")
    assert job.tables[1].response is None and job.tables[1].explanatory == ("region",)
    assert job.steps[0] == Suppress(8, "MOD", 0)
    write = job.steps[1]
    assert isinstance(write, WriteTable) and write.kind == 1
    assert write.path == folder / "t1.csv"  # by its file name, in the job's folder
    options = job.steps[2].options  # type: ignore[union-attr]
    assert (options["AS"], options["FL"], options["QU"]) == (False, True, False)
    assert read_job(folder / "job.arb", tmp_path / "out").writes[0].path == \
        tmp_path / "out" / "t1.csv"


@pytest.mark.parametrize(("change", "message"), [
    (("<SUPPRESS> MOD(0)", "<SUPPRESS> RND(1, 5)"), "job.arb:8: <SUPPRESS> RND is rounding, "
     "not cell suppression"),
    (("<SUPPRESS> MOD(0)", "<SUPPRESS> OPT(0)"), "job.arb:8: <SUPPRESS>: no table 0"),
    (('(1, 1, , "sub', '(1, 6, , "sub'), "job.arb:9: <WRITETABLE> output type 6 (JJ) is not "
     "written"),
    (("AS-FL+QU-", "AS-XX+"), "job.arb:10: <WRITETABLE> option 'XX'"),
    (("(2, 3,", "(3, 3,"), "job.arb:10: <WRITETABLE>: no table 3"),
    (("<READMICRODATA>\n", "<READMICRODATA>\n<CLEAR>\n"), "job.arb:8: <CLEAR> is not run by "
     "statrecon (one job per batch file"),
    (("<SAFETYRULE> FREQ(3,10)", "<SAFETYRULE> P(120, 1)"), "job.arb:6: <SAFETYRULE>"),
    (('"metadata_ex2.rda"', '"nothere.rda"'), "job.arb:2: metadata file 'nothere.rda': no "
     "such file"),
    (("<READMICRODATA>\n", "<READMICRODATA>\n<RECODE> 1, weight, 2\n"),
     "job.arb:8: <RECODE>: table 1 has no variable 'weight'"),
    (("<SPECIFYTABLE> \"region\"|<FREQ>|||\n", ""), "job.arb:5: <SAFETYRULE> is not allowed "
     "here"),
])
def test_a_bad_job_is_one_line_naming_its_line(tmp_path: Path, change: tuple[str, str],
                                               message: str) -> None:
    folder = _copy(CHECK / "ex2", tmp_path)
    (folder / "job.arb").write_text(JOB.replace(*change))
    with pytest.raises(StatreconError) as e:
        read_job(folder / "job.arb")
    assert str(e.value).startswith(f"{folder}/{message}")


@pytest.mark.parametrize(("target", "old", "new", "message"), [
    ("metadata_ex2.rda", "hier_region_ex2.hrc", "gone.hrc", "metadata_ex2.rda:4: hierarchy "
     "file 'gone.hrc': no such file"),
    ("metadata_ex2.rda", "val 3 999", "val 3 9999", "metadata_ex2.rda:15: variable val: "
     "missing code '9999' is longer than its length 3"),
    ("hier_region_ex2.hrc", "D", "D\n@A", "hier_region_ex2.hrc:8: code A appears twice"),
    ("microdata_ex2.asc", "A,female, 66", "E,female, 66", "microdata_ex2.asc:1: region E is "
     "not a code of hier_region_ex2.hrc"),
    ("batch_ex2.arb", '"num1"|""', '"num1"|"num2"', "batch_ex2.arb:4: a shadow variable "
     "(num2) other than the response is not applied"),
])
def test_bad_input_exits_1_with_one_line_and_writes_nothing(
        run_cli: CliRunner, tmp_path: Path, target: str, old: str, new: str,
        message: str) -> None:
    folder = _copy(CHECK / "ex2", tmp_path)
    path = folder / target
    path.write_bytes(path.read_bytes().replace(old.encode(), new.encode(), 1))
    before = sorted(p.name for p in folder.iterdir())
    code, _out, err = run_cli("tables", "protect", folder / "batch_ex2.arb", "--quiet")
    assert code == 1
    assert err.strip().count("\n") == 0 and f"{folder}/{message}" in err, err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_audit_of_a_microdata_job_audits_its_primary_pattern(run_cli: CliRunner) -> None:
    """`tables audit job.arb`: the tables as the job specifies them, before <SUPPRESS>: the
    one primary cell of ex2 is disclosed by the margins (exit 4)."""
    code, out, _err = run_cli("tables", "audit", CHECK / "ex2" / "batch_ex2.arb")
    assert code == 4
    assert "1 suppressed cells audited" in out and "region=A, gender=female" in out


def test_the_example_job_writes_publications_and_working_files(run_cli: CliRunner,
                                                               tmp_path: Path) -> None:
    """examples/tables/tauargus/testw/protect.arb: CSV (a publication), SBS (its publication
    without the true values, the working file with them), the intermediate file with the
    audit (a working file only, with its .rda and .hrc files)."""
    folder = _copy(TESTW, tmp_path)
    code, _out, err = run_cli("tables", "protect", folder / "protect.arb", "--quiet")
    assert code == 0, err
    written = sorted(p.name for p in folder.iterdir() if p.name.startswith("size_region"))
    assert written == ["size_region.csv", "size_region.working.rda",
                       "size_region.working.tab", "size_region.working_Region.hrc",
                       "size_region.working_Size.hrc", "size_region_sbs.csv",
                       "size_region_sbs.working.csv"]
    public = (folder / "size_region_sbs.csv").read_text()
    working = (folder / "size_region_sbs.working.csv").read_text()
    assert ",x," in public and ",x," not in working
    audited = [line.split(";") for line in
               (folder / "size_region.working.tab").read_text().splitlines()]
    suppressed = [f for f in audited if f[8] in ("U", "M")]
    assert suppressed and all(len(f) == 19 and f[11] and f[12] for f in suppressed)
    assert all(float(f[11]) <= float(f[2]) <= float(f[12]) for f in suppressed)


@pytest.mark.parametrize(("publish", "header"), [("values", "Size,Region,value"),
                                                 ("masked", "Size,Region,value,flag"),
                                                 ("pivot", ',"Total","Nr"')])
def test_the_forms_of_a_publication(run_cli: CliRunner, tmp_path: Path, publish: str,
                                    header: str) -> None:
    arb = ROOT / "examples" / "tables" / "tauargus" / "TestTable.arb"
    code, _out, err = run_cli("tables", "protect", arb, "--out", tmp_path / "p.csv",
                              "--publish", publish, "--quiet")
    assert code == 0, err
    text = (tmp_path / "p.csv").read_text()
    assert text.startswith(header)
    working = list(csv.DictReader((tmp_path / "p.working.csv").open()))
    hidden = [r["status"] in ("primary", "secondary") for r in working]
    if publish == "pivot":  # the layout: a value or x per cell, a row per Size code
        cells = [v for line in text.splitlines()[1:] if line for v in line.split(",")[1:]]
        assert [v == "x" for v in cells] == hidden
        return
    rows = list(csv.DictReader((tmp_path / "p.csv").open()))
    assert len(rows) == len(working)
    for row, true, secret in zip(rows, working, hidden, strict=True):
        assert (row["Size"], row["Region"]) == (true["Size"], true["Region"])
        if publish == "values":
            assert row["value"] == ("x" if secret else true["value"])
        else:
            assert (row["value"], row["flag"]) == (
                ("", "x") if secret else ("", "-") if true["status"] == "empty" else
                (true["value"], ""))


def test_an_apriori_file_in_a_microdata_job(run_cli: CliRunner, tmp_path: Path) -> None:
    """<APRIORI> after <READMICRODATA>: the a-priori file changes statuses before the
    suppression (B, female made unsafe by hand: tau-Argus's status 9), and a table already
    protected cannot take one."""
    folder = _copy(CHECK / "ex2", tmp_path)
    (folder / "a.hst").write_text("B;female;U\nD;  male;P\n")
    job = (folder / "batch_ex2.arb").read_text().replace(
        "<SOLVER>", '<APRIORI> "a.hst", 1, ";", 0, 0\n<SOLVER>')
    (folder / "job.arb").write_text(job)
    code, _out, err = run_cli("tables", "protect", folder / "job.arb", "--quiet")
    assert code == 0, err
    rows = {(r["region"], r["gender"]): r for r in
            csv.DictReader((folder / "tabout_ex2.working.txt").open())}
    assert rows[("B", "female")]["Status"] == "9" and rows[("D", "  male")]["Status"] == "10"
    assert rows[("A", "female")]["Status"] == "3"
    (folder / "late.arb").write_text(job.replace('<APRIORI> "a.hst", 1, ";", 0, 0\n', "")
                                     .replace("<WRITETABLE>", '<APRIORI> "a.hst", 1, ";"\n'
                                              "<WRITETABLE>"))
    code, _out, err = run_cli("tables", "protect", folder / "late.arb", "--quiet")
    assert code == 1 and "<APRIORI> for table 1 after it was protected" in err
