"""tau-Argus batch jobs (tables/job.py, runs/job.py): two small jobs of our own (a table as
input, free-format microdata; tests/data/jobs, their expected outputs worked out by hand in
its README) give their expected output; a job of recodes on the synthetic enterprises.asc;
the job's grammar, its refusals, and bad input as one line with nothing written. tau-Argus's
own batch examples run in benchmarks/check_tauargus_examples.py, from a snapshot."""

from __future__ import annotations

import csv
import shutil
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import CliRunner

from statrecon.errors import StatreconError
from statrecon.tables.job import Recode, Suppress, WriteTable, job_tables, read_job

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "tests" / "data" / "jobs"
MICRO = JOBS / "micro"
ENTERPRISES = ROOT / "examples" / "tables" / "tauargus" / "enterprises"
# the expected statuses (tests/data/jobs/README.md): u primary, x secondary, p protected
EXPECTED = {"tabular": "ssss susx sxsx sssp ssss", "micro": "ssss susx sxsu ssss"}
CODES = {"tabular": [("D1", "Total"), ("D1", "agri"), ("D1", "ind"), ("D1", "serv")],
         "micro": [("N", "Total"), ("N", " agri"), ("N", "  ind"), ("N", " serv")]}


def _letter(status: str) -> str:
    number = int(status)
    return "u" if 3 <= number <= 9 else "x" if number in (11, 12) else \
        "p" if number == 10 else "z" if number == 14 else "s"


def _copy(source: Path, tmp_path: Path) -> Path:
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    return folder


@pytest.mark.parametrize(("example", "job", "response", "values"), [
    ("tabular", "counts", "count", "1805 147 763 895 417 12 310 95 425 40 125 260 293 75 88 130 "
     "670 20 240 410"),
    ("micro", "income", "income", "9000.05 1000.00 5300.05 2700.00 2450.05 150.00 2000.05 "
     "300.00 3050.00 250.00 1800.00 1000.00 3500.00 600.00 1500.00 1400.00"),
])
def test_small_jobs_give_their_expected_output(run_cli: CliRunner, tmp_path: Path,
                                               example: str, job: str, response: str,
                                               values: str) -> None:
    """A table as input (MAN(15), a protected cell, OPT) and free-format microdata
    (FREQ(4,20)|P(15,1)|, OPT) run as written: the file <WRITETABLE> asks for has the
    expected rows, columns, values and statuses (the optimal patterns, tests/data/jobs's
    README). AS+ shows true values: that file is the working file; the name the job gives
    holds the publication, the same rows with every suppressed value x."""
    folder = _copy(JOBS / example, tmp_path)
    code, out, err = run_cli("tables", "protect", folder / f"{job}.arb", "--quiet")
    assert code == 0, err
    assert "(working file: true values, never to publish)" in " ".join(out.split())
    working = list(csv.DictReader((folder / f"{job}_out.working.txt").open()))
    published = list(csv.DictReader((folder / f"{job}_out.txt").open()))
    assert list(working[0]) == ["district", "sector", response, "Status"]
    assert [r[response] for r in working] == values.split()
    # the codes as the hierarchies write them (microdata: padded to the variable's length)
    assert [(r["district"], r["sector"]) for r in working[4:8]] == CODES[example]
    assert len(published) == len(working)
    letters = "".join(_letter(r["Status"]) for r in working)
    assert " ".join(letters[i:i + 4] for i in range(0, len(letters), 4)) == EXPECTED[example]
    assert [r["Status"] for r in published] == [r["Status"] for r in working]
    for shown, true in zip(published, working, strict=True):
        hidden = _letter(true["Status"]) in "ux"
        assert shown[response] == ("x" if hidden else true[response])


def test_a_job_of_recodes_runs_as_written(run_cli: CliRunner, tmp_path: Path) -> None:
    """examples/tables/tauargus/enterprises/recode.arb: two tables from the fixed-width
    enterprises.asc, Size recoded by size.grc (1-4 into 1, 5 and 6 into 5), Region cut at
    level 1 (its four parts), Activity by a <TREERECODE> file (division 10, group 451 and
    division 62 closed); then <GOINTERACTIVE>. It writes nothing itself and has no
    <SUPPRESS>: --out gets both tables, protected as linked tables."""
    job = read_job(ENTERPRISES / "recode.arb")
    assert [type(s) for s in job.steps] == [Recode, Recode, Recode]
    assert job.set_aside[-1].endswith("<GOINTERACTIVE>: the job ends here, as in tau-Argus")
    first, second = job_tables(job)
    assert first.table.hierarchies["Size"].children == {
        "Total": (" 1", " 5", " 7", " 8", " 9", "99")}
    assert first.table.hierarchies["Region"].children == {
        "Total": ("Nr", "Os", "Ws", "Zd", "99")}
    activity = second.table.hierarchies["Activity"]
    assert all(activity.is_leaf(code) for code in ("10", "451", "62"))
    assert activity.children["45"] == ("451", "452")
    assert activity.children["474"] == ("47410", "47420")
    assert any(c.status.value == "primary" for c in first.table.cells)
    code, out, err = run_cli("tables", "protect", ENTERPRISES / "recode.arb", "--out",
                             tmp_path / "recoded.csv", "--quiet")
    assert code == 0, err
    said = " ".join(out.split())  # the terminal may wrap a line at any blank
    assert "tables 1 (Size x Region), 2 (Region x Activity), fast:" in said
    assert "no <SUPPRESS>: every table is protected" in said
    rows = list(csv.DictReader((tmp_path / "recoded.csv").open()))
    assert {r["table"] for r in rows} == {"table1", "table2"}
    assert "x" in {r["value"] for r in rows}


JOB = """<OPENMICRODATA> "income.asc"
<OPENMETADATA> "income.rda"
<SPECIFYTABLE> "district""sector"|"income"||
<SAFETYRULE> FREQ(5,20)
<SPECIFYTABLE> "district"|<FREQ>|||
<SAFETYRULE> FREQ(3,10)
<READMICRODATA>
<SUPPRESS> MOD(0)
<WRITETABLE> (1, 1, , "sub/../t1.csv")
<WRITETABLE> (2, 3, AS-FL+QU-, "t2.csv")
"""


def test_the_grammar_of_a_job(tmp_path: Path) -> None:
    folder = _copy(MICRO, tmp_path)
    (folder / "job.arb").write_text(JOB)
    job = read_job(folder / "job.arb")
    assert job.tables[1].response is None and job.tables[1].explanatory == ("district",)
    assert job.steps[0] == Suppress(8, "MOD", 0)
    write = job.steps[1]
    assert isinstance(write, WriteTable) and write.kind == 1
    assert write.path == folder / "t1.csv"  # by its file name, in the job's folder
    options = job.steps[2].options  # type: ignore[union-attr]
    assert (options["AS"], options["FL"], options["QU"]) == (False, True, False)
    assert read_job(folder / "job.arb", tmp_path / "out").writes[0].path == \
        tmp_path / "out" / "t1.csv"


@pytest.mark.parametrize(("change", "message"), [
    (("<SUPPRESS> MOD(0)", "<SUPPRESS> CTA(1)"), "job.arb:8: <SUPPRESS> CTA is controlled "
     "tabular adjustment, not cell suppression"),
    (("<SUPPRESS> MOD(0)", "<SUPPRESS> OPT(0)"), "job.arb:8: <SUPPRESS>: no table 0"),
    (('(1, 1, , "sub', '(1, 6, , "sub'), "job.arb:9: <WRITETABLE> output type 6 (JJ) is not "
     "written"),
    (("AS-FL+QU-", "AS-XX+"), "job.arb:10: <WRITETABLE> option 'XX'"),
    (("(2, 3,", "(3, 3,"), "job.arb:10: <WRITETABLE>: no table 3"),
    (("<READMICRODATA>\n", "<READMICRODATA>\n<CLEAR>\n"), "job.arb:8: <CLEAR> is not run by "
     "statrecon (one job per batch file"),
    (("<SAFETYRULE> FREQ(3,10)", "<SAFETYRULE> P(120, 1)"), "job.arb:6: <SAFETYRULE>"),
    (('"income.rda"', '"nothere.rda"'), "job.arb:2: metadata file 'nothere.rda': no "
     "such file"),
    (("<READMICRODATA>\n", "<READMICRODATA>\n<RECODE> 1, weight, 2\n"),
     "job.arb:8: <RECODE>: table 1 has no variable 'weight'"),
    (("<SPECIFYTABLE> \"district\"|<FREQ>|||\n", ""), "job.arb:5: <SAFETYRULE> is not allowed "
     "here"),
])
def test_a_bad_job_is_one_line_naming_its_line(tmp_path: Path, change: tuple[str, str],
                                               message: str) -> None:
    folder = _copy(MICRO, tmp_path)
    (folder / "job.arb").write_text(JOB.replace(*change))
    with pytest.raises(StatreconError) as e:
        read_job(folder / "job.arb")
    assert str(e.value).startswith(f"{folder}/{message}")


@pytest.mark.parametrize(("target", "old", "new", "message"), [
    ("income.rda", "district.hrc", "gone.hrc", "income.rda:4: hierarchy file 'gone.hrc': no "
     "such file"),
    ("income.rda", "staff 3 999", "staff 3 9999", "income.rda:15: variable staff: missing "
     "code '9999' is longer than its length 3"),
    ("district.hrc", "W", "W\r\n@N", "district.hrc:4: code N appears twice"),
    ("income.asc", "S,agri, 40", "E,agri, 40", "income.asc:1: district E is not a code of "
     "district.hrc"),
    ("income.arb", '"income"|""', '"income"|"costs"', "income.arb:4: a shadow variable "
     "(costs) other than the response is not applied"),
])
def test_bad_input_exits_1_with_one_line_and_writes_nothing(
        run_cli: CliRunner, tmp_path: Path, target: str, old: str, new: str,
        message: str) -> None:
    folder = _copy(MICRO, tmp_path)
    path = folder / target
    path.write_bytes(path.read_bytes().replace(old.encode(), new.encode(), 1))
    before = sorted(p.name for p in folder.iterdir())
    code, _out, err = run_cli("tables", "protect", folder / "income.arb", "--quiet")
    assert code == 1
    assert err.strip().count("\n") == 0 and f"{folder}/{message}" in err, err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_audit_of_a_microdata_job_audits_its_primary_pattern(run_cli: CliRunner) -> None:
    """`tables audit job.arb`: the tables as the job specifies them, before <SUPPRESS>: the
    two primary cells of the microdata job are disclosed by the margins (exit 4)."""
    code, out, _err = run_cli("tables", "audit", MICRO / "income.arb")
    assert code == 4
    assert "2 suppressed cells audited" in out and "district=N, sector=agri" in out


def test_the_example_job_writes_publications_and_working_files(run_cli: CliRunner,
                                                               tmp_path: Path) -> None:
    """examples/tables/tauargus/enterprises/protect.arb: CSV (a publication), SBS (its publication
    without the true values, the working file with them), the intermediate file with the
    audit (a working file only, with its .rda and .hrc files)."""
    folder = _copy(ENTERPRISES, tmp_path)
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
    suppression (W, serv made unsafe by hand: tau-Argus's status 9; N, ind protected: 10),
    and a table already protected cannot take one."""
    folder = _copy(MICRO, tmp_path)
    (folder / "a.hst").write_text("W; serv;U\nN;  ind;P\n")
    job = (folder / "income.arb").read_text().replace(
        "<SOLVER>", '<APRIORI> "a.hst", 1, ";", 0, 0\n<SOLVER>')
    (folder / "job.arb").write_text(job)
    code, _out, err = run_cli("tables", "protect", folder / "job.arb", "--quiet")
    assert code == 0, err
    rows = {(r["district"], r["sector"]): r for r in
            csv.DictReader((folder / "income_out.working.txt").open())}
    assert rows[("W", " serv")]["Status"] == "9" and rows[("N", "  ind")]["Status"] == "10"
    assert (rows[("S", " serv")]["Status"], rows[("N", " agri")]["Status"]) == ("3", "5")
    (folder / "late.arb").write_text(job.replace('<APRIORI> "a.hst", 1, ";", 0, 0\n', "")
                                     .replace("<WRITETABLE>", '<APRIORI> "a.hst", 1, ";"\n'
                                              "<WRITETABLE>"))
    code, _out, err = run_cli("tables", "protect", folder / "late.arb", "--quiet")
    assert code == 1 and "<APRIORI> for table 1 after it was protected" in err


# ------------------------------------------------------------------ <SUPPRESS> RND and arguments

ROUNDED = """<OPENMICRODATA> "income.asc"
<OPENMETADATA> "income.rda"
<SPECIFYTABLE> "district""sector"|"income"||
<SAFETYRULE> FREQ(4,20)|P(15,1)|
<READMICRODATA>
<SUPPRESS> RND(1, 200)
<WRITETABLE> (1, 3, AS+FL+, "rounded.txt")
<WRITETABLE> (1, 1, , "rounded.csv")
"""


def _rounded_job(tmp_path: Path, text: str = ROUNDED) -> Path:
    folder = _copy(MICRO, tmp_path)
    (folder / "job.arb").write_text(text)
    return folder


@pytest.mark.parametrize("rule", ["", ", 0, 1, 0, 1", ", 0, 1, 0, 2"])
def test_rnd_in_a_job_writes_the_table_rounded(run_cli: CliRunner, tmp_path: Path,
                                               rule: str) -> None:
    """<SUPPRESS> RND(1, 200): the income table (tests/data/jobs/micro) rounded to base 200
    by controlled rounding, and <WRITETABLE> writes it: every published value a multiple of
    200 next to the true value (a multiple kept), the rows and columns still adding up,
    nothing shown as x; the working file has the true values. The least total change of this
    table is 700.10 (stopping rule 2, the default; rule 1 stops at the first rounding)."""
    folder = _rounded_job(tmp_path, ROUNDED.replace("RND(1, 200)", f"RND(1, 200{rule})"))
    code, out, err = run_cli("tables", "protect", folder / "job.arb")
    assert code == 0, err
    said = " ".join(out.split())
    assert "table 1 (district x sector), controlled rounding to base 200:" in said
    if not rule.endswith("1"):
        assert "optimal, total change 700.1 (the least)" in said
    assert "wrote" in said and "(publication: rounded to base 200)" in said
    true = {(r["district"], r["sector"]): Fraction(r["income"]) for r in
            csv.DictReader((folder / "rounded.working.txt").open())}
    rows = list(csv.DictReader((folder / "rounded.txt").open()))
    shown = {(r["district"], r["sector"]): Fraction(r["income"]) for r in rows}
    assert shown.keys() == true.keys()
    for key, value in shown.items():
        assert value % 200 == 0 and abs(value - true[key]) < 200
        if true[key] % 200 == 0:
            assert value == true[key]
    sectors = [" agri", "  ind", " serv"]
    for d in ("Total", "N", "S", "W"):
        assert shown[(d, "Total")] == sum(shown[(d, s)] for s in sectors)
    for s in ("Total", *sectors):
        assert shown[("Total", s)] == sum(shown[(d, s)] for d in ("N", "S", "W"))
    assert [r["Status"] for r in rows][5] == "5"  # N/agri: the FREQ rule's status kept
    layout = (folder / "rounded.csv").read_text()
    assert "x" not in layout and f"{float(shown[('N', '  ind')]):.2f}" in layout


@pytest.mark.parametrize(("change", "message"), [
    ("RND(1)", "job.arb:6: <SUPPRESS> RND needs a rounding base"),
    ("RND(0, 5)", "job.arb:6: <SUPPRESS>: no table 0"),
    ("RND(1, 1)", "job.arb:6: <SUPPRESS> RND's rounding base is 1"),
    ("RND(1, five)", "job.arb:6: <SUPPRESS> RND's rounding base 'five' is not a whole number"),
    ("RND(1, 200, -1)", "job.arb:6: <SUPPRESS> RND's steps is -1; tau-Argus takes at least 0"),
    ("RND(1, 200, 0, 0)", "job.arb:6: <SUPPRESS> RND's time (minutes) is 0; tau-Argus takes "
     "at least 1"),
    ("RND(1, 200, 0, 10, 2)", "job.arb:6: <SUPPRESS> RND's partitions is 2; tau-Argus takes "
     "0..1"),
    ("RND(1, 200, 0, 10, 0, 3)", "job.arb:6: <SUPPRESS> RND's stopping rule 3: tau-Argus's "
     "batch reader takes 1"),
    ("RND(1, 200, 0, 10, 0, 0)", "job.arb:6: <SUPPRESS> RND's stopping rule is 0"),
    ("RND(1, 200, 0, 10, 0, 2, 5)", "job.arb:6: <SUPPRESS> RND's unit cost '5' is a switch"),
    ("RND(1, 200, 0, 10, 0, 2, 0, 1)", "job.arb:6: <SUPPRESS> RND takes at most 6 arguments"),
    ("RND(1, 200,, 10)", "job.arb:6: <SUPPRESS> RND: argument 3 is empty"),
    ("RND(1, 200)\n<SUPPRESS> MOD(0)", "job.arb:7: <SUPPRESS> of table 1, which line 6 "
     "already protected"),
    ("RND(1, 200)\n<WRITETABLE> (1, 5, AR+, \"i.tab\")", "job.arb:7: <WRITETABLE> output type "
     "5 (intermediate) of table 1, rounded on line 6: tau-Argus refuses it"),
    ("RND(1, 200)\n<WRITETABLE> (1, 4, , \"s.csv\")", "job.arb:7: <WRITETABLE> output type 4 "
     "(SBS) of table 1, rounded on line 6: it carries each cell's true frequency"),
])
def test_bad_rnd_arguments_are_one_line_naming_their_line(tmp_path: Path, change: str,
                                                          message: str) -> None:
    folder = _rounded_job(tmp_path, ROUNDED.replace("RND(1, 200)", change))
    with pytest.raises(StatreconError) as e:
        read_job(folder / "job.arb")
    assert str(e.value).startswith(f"{folder}/{message}"), str(e.value)


def test_a_rounding_base_below_tau_argus_minimum_exits_1_and_writes_nothing(
        run_cli: CliRunner, tmp_path: Path) -> None:
    """tau-Argus's least base (computeMinRoundBase): the largest lower + upper protection
    level of a primary cell, here S/serv's 75 + 75 (p% rule): base 100 is one line naming
    the RND, exit 1, nothing written; --out beside an RND is refused the same way."""
    folder = _rounded_job(tmp_path, ROUNDED.replace("RND(1, 200)", "RND(1, 100)"))
    before = sorted(p.name for p in folder.iterdir())
    code, _out, err = run_cli("tables", "protect", folder / "job.arb", "--quiet")
    assert code == 1 and err.strip().count("\n") == 0, err
    assert (f"{folder}/job.arb:6: <SUPPRESS> RND: the rounding base 100 is too small for "
            "table 1: tau-Argus requires at least 150") in err
    assert sorted(p.name for p in folder.iterdir()) == before
    code, _out, err = run_cli("tables", "protect", folder / "job.arb", "--out",
                              tmp_path / "o.csv", "--quiet")
    assert code == 1 and "this job rounds a table (<SUPPRESS> RND)" in err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_rnd_arguments_statrecon_does_not_honour_are_named(tmp_path: Path) -> None:
    """Steps, partitions and unit cost are read and checked, then named in a note (never
    silently dropped); the time (minutes) and the stopping rule are honoured."""
    folder = _rounded_job(tmp_path, ROUNDED.replace("RND(1, 200)", "RND(1, 200, 2, 3, 1, 1, 1)"))
    step = read_job(folder / "job.arb").suppresses[0]
    assert step.rounding is not None
    assert (step.rounding.base, step.rounding.steps, step.rounding.minutes,
            step.rounding.partitions, step.rounding.stopping_rule,
            step.rounding.unit_cost) == (200, 2, 3, 1, 1, True)
    notes = " ".join(step.notes)
    assert "steps (2) are not applied" in notes and "partitions (1)" in notes
    assert "unit cost is not applied" in notes
    plain = read_job(_rounded_job(tmp_path / "b") / "job.arb").suppresses[0]
    assert plain.rounding is not None and plain.notes == ()
    assert (plain.rounding.minutes, plain.rounding.stopping_rule) == (10, 2)


@pytest.mark.parametrize(("change", "message"), [
    ("GH(1, 120)", "<SUPPRESS> GH's a-priori bounds percentage is 120; tau-Argus takes "
     "0..100"),
    ("GH(1, 75, 2)", "<SUPPRESS> GH's model size is 2; tau-Argus takes 0..1"),
    ("GH(1, 75, 0, 2)", "<SUPPRESS> GH's apply singleton '2' is a switch: 0 or 1"),
    ("GH(1, 75, 0, 1, 1)", "<SUPPRESS> GH takes at most 3 arguments"),
    ("MOD(1, -1)", "<SUPPRESS> MOD's time per subtable (minutes) is -1"),
    ("MOD(1, 5, 1, 2)", "<SUPPRESS> MOD's single-multiple check '2' is a switch"),
    ("MOD(1, 5, 1, 1, 1, 0)", "<SUPPRESS> MOD's max scaling cost is 0; it must be above 0"),
    ("MOD(1, 5, 1, 1, 1, 2, 1)", "<SUPPRESS> MOD takes at most 5 arguments"),
    ("MOD(1, 5,, 1)", "<SUPPRESS> MOD: argument 3 is empty"),
    ("OPT(1, soon)", "<SUPPRESS> OPT's computing time (minutes) 'soon' is not a whole number"),
    ("OPT(1, 1, 1)", "<SUPPRESS> OPT takes at most 1 argument"),
    ("NET(1, 1)", "<SUPPRESS> NET takes at most 0 arguments"),
])
def test_bad_suppress_arguments_are_one_line_naming_their_line(tmp_path: Path, change: str,
                                                               message: str) -> None:
    """GH, MOD, OPT and NET take the arguments tau-Argus documents, in its ranges."""
    folder = _rounded_job(tmp_path, ROUNDED.replace("RND(1, 200)", change))
    with pytest.raises(StatreconError) as e:
        read_job(folder / "job.arb")
    assert str(e.value).startswith(f"{folder}/job.arb:6: {message}"), str(e.value)


def test_suppress_arguments_statrecon_does_not_honour_are_named(tmp_path: Path) -> None:
    """MOD(1, 5, 1, 1, 0) and GH(1, 75, 1, 1): each argument given and not applied is a
    note (the time limit is --time-limit, the singleton checks are the integer audit's)."""
    folder = _rounded_job(tmp_path, ROUNDED.replace("RND(1, 200)", "MOD(1, 5, 1, 1, 0)"))
    notes = " ".join(read_job(folder / "job.arb").suppresses[0].notes)
    assert "job.arb:6: <SUPPRESS> MOD's time per subtable (5 min) is not applied" in notes
    assert "single-single, single-multiple checks not applied" in notes
    assert "min-freq" not in notes
    (folder / "gh.arb").write_text(ROUNDED.replace("RND(1, 200)", "GH(1, 75, 1, 1)"))
    notes = " ".join(read_job(folder / "gh.arb").suppresses[0].notes)
    assert "a-priori bounds percentage (75)" in notes and "model size (1)" in notes
    assert "apply singleton is not applied" in notes


@pytest.mark.parametrize(("example", "target", "text", "message"), [
    ("micro", "district.hrc", "N\r\nS\r\nW\r\n S\r\n", "district.hrc:4: code ' S' is 'S' of "
     "line 2 but for its leading blanks"),
    ("tabular", "district.hrc", "D1\nD2\nD3\nD4\n D4\n", "district.hrc:5: code ' D4' is 'D4' "
     "of line 4 but for its leading blanks"),
    ("tabular", "district.hrc", "D1\nD2\nD3\nD4\nD2\n", "district.hrc:5: code D2 appears "
     "twice (also on line 2)"),
    ("tabular", "sector.hrc", "agri\nind\n@agri\nserv\n", "sector.hrc:3: code agri appears "
     "twice (also on line 1)"),
])
def test_a_code_twice_in_an_hrc_exits_1_naming_its_line(
        run_cli: CliRunner, tmp_path: Path, example: str, target: str, text: str,
        message: str) -> None:
    """A code twice in an .hrc, under one parent or two, or twice but for its leading
    blanks (which the .tab reader pads away): one line naming the file and line, exit 1,
    nothing written (tau-Argus does not check; tables/_rda.py's docstring)."""
    folder = _copy(JOBS / example, tmp_path)
    (folder / target).write_text(text, newline="")
    before = sorted(p.name for p in folder.iterdir())
    job = next(folder.glob("*.arb"))
    code, _out, err = run_cli("tables", "protect", job, "--quiet")
    assert code == 1 and err.strip().count("\n") == 0, err
    assert f"{folder}/{message}" in err
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_linked_job_run_gives_its_tables_linked_as_linking_them_again(
        tmp_path: Path) -> None:
    """``JobRun.linked()`` hands back the last protection's own tables when it protected
    every table together (not linking them again): the same tables, cell for cell, as
    linking the job's tables at the end."""
    from statrecon.runs.job import run_job
    from statrecon.tables import CellStatus
    from statrecon.tables.job import link

    folder = _copy(MICRO, tmp_path)
    (folder / "linked.arb").write_text(
        '<OPENMICRODATA> "income.asc"\n<OPENMETADATA> "income.rda"\n'
        '<SPECIFYTABLE> "district""sector"|"income"|""|""\n<SAFETYRULE> FREQ(4,20)\n'
        '<SPECIFYTABLE> "district"|"income"|""|""\n<SAFETYRULE> FREQ(4,20)\n'
        "<READMICRODATA>\n<SUPPRESS> MOD(0)\n")
    run = run_job(read_job(folder / "linked.arb"))
    assert run.status == "written" and len(run.protected) == 1
    assert run.protected[0].tables == (1, 2)
    got, again = run.linked(), link(run.tables)
    assert got is run.protected[0].protection.tables
    assert got == again
    assert any(c.status is CellStatus.SECONDARY for c in got.cells())
