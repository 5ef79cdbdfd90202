"""tau-Argus microdata (tables/asc.py): the .rda of a microdata file and its .asc records,
fixed width and free format, read as tau-Argus reads them; hierarchies from an .hrc, by
digits and flat; every bad input one line naming the file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from statrecon.errors import StatreconError
from statrecon.tables.asc import hierarchy, read_asc, read_micro_rda

ROOT = Path(__file__).resolve().parents[2]
ENTERPRISES = ROOT / "examples" / "tables" / "tauargus" / "enterprises"
MAGNITUDE = ROOT / "examples" / "tables" / "tauargus" / "magnitude"

RDA = """Year 1 2 99
  <RECODEABLE>
  <DISTANCE> 1 2 3 4 5
Ind 4 5 99999
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERLEVELS> 3 1 1 0 0
Region 10 2 99
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERCODELIST> "r.hrc"
  <HIERLEADSTRING> "@"
Wgt 13 4
  <WEIGHT>
  <DECIMALS> 1
Var 17 8
  <NUMERIC>
  <DECIMALS> 2
"""
HRC = "N\n@ 1\n@ 2\nS\n@ 3\n"


def rec(year: str, ind: str, region: str, wgt: str, var: str) -> str:
    """A record of RDA's layout: Year 1-2, Ind 4-8, Region 10-11, Wgt 13-16, Var 17-24."""
    return f"{year:>2} {ind:>5} {region:>2} {wgt:>4}{var:>8}"


RECORDS = [rec("15", "14211", "1", "1.5", "10.25"), rec("16", "14212", "2", "12.0", "1000.00"),
           rec("15", "15001", "3", "2.0", ""), rec("16", "99999", "3", "1.0", "7.10"),
           rec("99", "14211", "99", "1.0", "1.5")]


def write(folder: Path, rda: str = RDA, records: list[str] | None = None,
          hrc: str = HRC) -> tuple[Path, Path]:
    (folder / "m.rda").write_text(rda)
    (folder / "r.hrc").write_text(hrc)
    (folder / "m.asc").write_text("".join(r + "\n" for r in (records or RECORDS)))
    return folder / "m.rda", folder / "m.asc"


def test_fixed_width_records_and_their_hierarchies(tmp_path: Path) -> None:
    rda, data = write(tmp_path)
    meta = read_micro_rda(rda)
    assert [v.name for v in meta.variables] == ["Year", "Ind", "Region", "Wgt", "Var"]
    ind = meta.variables[1]
    assert (ind.position, ind.length, ind.missing, ind.levels) == (4, 5, ("99999",), (3, 1, 1))
    assert meta.weight is meta.variables[3] and meta.variables[4].numeric
    records = read_asc(data, meta)
    assert list(records.frame["Region"]) == [" 1", " 2", " 3", " 3", "99"]
    # numbers checked and kept as written (read exactly where summed); blank is 0, as
    # tau-Argus's strtod reads it
    assert list(records.frame["Var"]) == ["10.25", "1000.00", "0", "7.10", "1.5"]
    assert hierarchy(records, meta.variables[0]).children == {"Total": ("15", "16", "99")}
    by_digits = hierarchy(records, ind)
    assert by_digits.children["Total"] == ("142", "150", "99999")
    assert by_digits.children["142"] == ("1421",)
    assert by_digits.children["1421"] == ("14211", "14212")
    region = hierarchy(records, meta.variables[2])
    assert region.children == {"Total": ("N", "S", "99"), "N": (" 1", " 2"), "S": (" 3",)}


def test_free_format_pads_each_code_to_its_length_as_the_hrc_writes_it() -> None:
    """The synthetic households.csv: `;`-separated, Area and Tenure with .hrc files; a
    Tenure code shorter than its 6 characters is padded on the left, as tenure.hrc writes
    it."""
    meta = read_micro_rda(MAGNITUDE / "households.rda")
    assert meta.separator == ";"
    assert meta.variables[4].weight and meta.variables[5].record_key
    assert (meta.variables[3].decimals, meta.variables[4].decimals) == (2, 1)
    records = read_asc(MAGNITUDE / "households.csv", meta)
    assert len(records.frame) == 1500
    assert list(records.frame["Tenure"][:3]) == [" other", "renter", " owner"]
    assert list(records.frame["Savings"][:3]) == ["0.00", "5404.85", "10886.27"]
    area = hierarchy(records, meta.variables[0])
    assert area.children == {"Total": ("North", "South"), "North": ("1", "2", "3"),
                             "South": ("4", "5", "6")}
    tenure = hierarchy(records, meta.variables[1])
    assert tenure.children == {"Total": (" owner", "rented", " other"),
                               "rented": ("renter", "social")}


@pytest.mark.parametrize(("folder", "script", "written"), [
    (ENTERPRISES, "make_enterprises.py",
     ("enterprises.asc", "enterprises.rda", "size.grc", "size.cdl", "activity.grc")),
    (MAGNITUDE, "make_households.py",
     ("households.csv", "households.rda", "area.hrc", "tenure.hrc")),
])
def test_the_synthetic_examples_are_what_their_scripts_write(
        tmp_path: Path, folder: Path, script: str, written: tuple[str, ...]) -> None:
    """The example microdata and their metadata are generated (statrecon's own, seeded):
    each script gives the same bytes as the files in the repository."""
    import runpy

    shutil.copy(folder / script, tmp_path / script)
    runpy.run_path(str(tmp_path / script))["main"]()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([script, *written])
    for name in written:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), name


def test_the_synthetic_enterprises_in_the_layout_of_their_rda() -> None:
    """enterprises.asc, fixed width: a hierarchy by digits 2 1 2, Region by region2.hrc,
    a weight and Turnover with decimals, a request variable; no missing code of Activity
    (tau-Argus's engine crashes on one in a hierarchy by digits)."""
    meta = read_micro_rda(ENTERPRISES / "enterprises.rda")
    records = read_asc(ENTERPRISES / "enterprises.asc", meta)
    assert len(records.frame) == 1500
    assert set(records.frame["Request"]) == {"1", "2", " "}
    assert "99999" not in set(records.frame["Activity"])
    assert {" 1", "12", "99"} <= set(records.frame["Region"])
    activity = hierarchy(records, meta.find("Activity", "test"))
    assert activity.children["47"] == ("471", "474")
    assert activity.children["474"] == ("47410", "47420")


@pytest.mark.parametrize(("rda", "records", "message"), [
    (RDA.replace("Var 17 8", "Var 16 8"), None, "m.rda:16: variable Var (positions 16-23) "
     "overlaps Wgt (positions 13-16, line 13)"),
    (RDA.replace("Var 17 8", "Var 17 9"), None, "m.asc:1: the record has 24 characters, but "
     "m.rda line 16 puts Var at positions 17-25: the positions run past the line"),
    (RDA, [*RECORDS[:2], RECORDS[2] + " "], "m.asc:3: a record of 25 characters, but the "
     "first has 24"),
    (RDA, [RECORDS[0].replace("10.25", "10,25")], "m.asc:1: Var: '10,25' is not a number"),
    (RDA, [RECORDS[0].replace(" 1 ", " 7 ")], "m.asc:1: Region 7 is not a code of r.hrc"),
    (RDA.replace("<HIERLEVELS> 3 1 1 0 0", "<HIERLEVELS> 3 1"), None,
     "m.rda:7: <HIERLEVELS> 3 1 of Ind: the digits per level must add up to its length 5"),
    (RDA.replace('"r.hrc"', '"gone.hrc"'), None, "m.rda:11: hierarchy file 'gone.hrc': no "
     "such file"),
    (RDA.replace("Var 17 8", "Var 17 8 123456789"), None, "m.rda:16: variable Var: missing "
     "code '123456789' is longer than its length 8"),
    (RDA.replace("  <WEIGHT>", "  <WEIGHTS>"), None, "m.rda:14: unknown keyword <WEIGHTS>"),
    ("Ind 1 5\n <RECODEABLE>\n<SEPARATOR> \";\"\n", None, "m.rda:3: <SEPARATOR> belongs on "
     "the first line"),
])
def test_bad_input_is_one_line_naming_the_file_and_line(tmp_path: Path, rda: str,
                                                        records: list[str] | None,
                                                        message: str) -> None:
    rda_path, data = write(tmp_path, rda, records)
    with pytest.raises(StatreconError) as e:
        meta = read_micro_rda(rda_path)
        read_asc(data, meta)
    assert str(e.value).startswith(f"{tmp_path}/{message}")
    assert "\n" not in str(e.value)


def test_a_code_under_two_parents_and_a_hierarchy_too_deep(tmp_path: Path) -> None:
    rda, data = write(tmp_path, hrc="N\n@ 1\n@ 2\nS\n@ 3\n@ 1\n")
    with pytest.raises(StatreconError, match=r"r\.hrc:6: code 1 appears twice"):
        read_asc(data, read_micro_rda(rda))
    deep = "".join("@" * i + f"c{i}\n" for i in range(10_000))
    rda, data = write(tmp_path, hrc=deep)
    with pytest.raises(StatreconError, match=r"r\.hrc:52: a code more than 50 levels below"):
        read_asc(data, read_micro_rda(rda))


def test_free_format_codes_longer_than_their_length_are_refused(tmp_path: Path) -> None:
    (tmp_path / "m.rda").write_text('<SEPARATOR> ","\nA 2\n <RECODEABLE>\nX 3\n <NUMERIC>\n')
    (tmp_path / "m.asc").write_text("ab,1\nabc,2\n")
    with pytest.raises(StatreconError, match=r"m\.asc:2: A 'abc' is longer than its length 2"):
        read_asc(tmp_path / "m.asc", read_micro_rda(tmp_path / "m.rda"))
    (tmp_path / "m.asc").write_text("ab\n")
    with pytest.raises(StatreconError, match=r"m\.asc:1: 1 fields, but m\.rda declares 2"):
        read_asc(tmp_path / "m.asc", read_micro_rda(tmp_path / "m.rda"))
