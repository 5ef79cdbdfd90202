"""Every reader of files from strangers, as a user reaches it: the registry the shared
hostile-input harness (``test_every_reader``) runs each class of danger against.

A reader is registered with the modules of ``src/statrecon`` whose file reads it covers, a
builder of a small valid input, the command that reads it, and hooks that put a hostile piece
where it belongs (a number, a file name, a code, a duplicate). A case whose hook a reader does
not have does not apply to it. ``test_every_reader_module_is_registered`` fails when a module
reads files (through the gate of ``statrecon.inputs`` or around it) and no reader covers it:
a new format registers here, and so meets every case at once.
"""

from __future__ import annotations

import functools
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from conftest import EXAMPLES, TRACT_A, households, write_persons

Edit = Callable[[Path, str], None]


@dataclass(frozen=True)
class Reader:
    """``build(folder)`` writes a valid input and returns its main file; ``argv(main, out)``
    is the command that reads it (``out``: a path the command may write). Hooks, each given
    the folder and a text: ``number`` puts the text where a number is read, ``names`` makes
    the input name the file of that name, ``code`` puts it where a code or name is read;
    ``duplicate(folder)`` repeats a key, a column or a cell."""

    name: str
    modules: tuple[str, ...]
    build: Callable[[Path], Path]
    argv: Callable[[Path, Path], list[str]]
    number: Edit | None = None
    names: Edit | None = None
    code: Edit | None = None
    duplicate: Callable[[Path], None] | None = None
    text: bool = True  # the main file is text (a byte-order mark, control characters apply)
    empty_ok: bool = False  # an empty main file is a valid input (a stream of no statistics)
    writes: bool = False  # argv writes ``out``: an output that is an input is refused

    def __str__(self) -> str:
        return self.name


def _sub(path: Path, pattern: str, repl: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(pattern, lambda _: repl, text, count=count)
    assert n, (path, pattern)
    path.write_text(new, encoding="utf-8")


def _copy(folder: Path, source: Path, *names: str) -> None:
    for name in names:
        shutil.copy(source / name, folder / name)


def _dup_header(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    first = lines[0].split(",")[0]
    lines[0] = f"{lines[0]},{first}"
    lines[1:] = [f"{line},{line.split(',')[0]}" for line in lines[1:]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------- release files

RELEASE = """version: 1
table: t
columns:
  age: {type: integer, min: 0, max: 10}
statistics:
  - {id: q, sql: "SELECT COUNT(*) FROM t", value: 2}
  - {id: r, sql: "SELECT SUM(age) FROM t", value: 7}
"""


def _release(folder: Path) -> Path:
    (folder / "release.yaml").write_text(RELEASE, encoding="utf-8")
    return folder / "release.yaml"


def _public(folder: Path) -> Path:
    _copy(folder, EXAMPLES, "hospital.yaml", "hospital_public.csv")
    return folder / "hospital.yaml"


def _statistics_file(folder: Path) -> Path:
    (folder / "stats.csv").write_text('id,sql,value\nq,SELECT COUNT(*) FROM t,2\n'
                                      'r,SELECT SUM(age) FROM t,7\n', encoding="utf-8")
    (folder / "release.yaml").write_text(
        "version: 1\ntable: t\ncolumns:\n  age: {type: integer, min: 0, max: 10}\n"
        "statistics_file: stats.csv\n", encoding="utf-8")
    return folder / "release.yaml"


def _tabulate(folder: Path) -> Path:
    _copy(folder, EXAMPLES / "tabulate", "stats.yaml", "people.csv")
    return folder / "people.csv"


def _audit_stream(folder: Path) -> Path:
    _copy(folder, EXAMPLES / "audit", "hospital_schema.yaml", "hospital_public.csv",
          "hospital_stream.txt")
    return folder / "hospital_stream.txt"


# ------------------------------------------------------------------------ statistical tables

TAUARGUS = EXAMPLES / "tables" / "tauargus"


def _tau_argus(folder: Path) -> Path:
    _copy(folder, TAUARGUS, "TestTable.arb", "pp.tab", "pp.rda", "region2.hrc", "region.cdl")
    return folder / "pp.tab"


def _apriori(folder: Path) -> Path:
    _tau_argus(folder)
    arb = folder / "TestTable.arb"
    arb.write_text(arb.read_text(encoding="utf-8") + '<APRIORI> "pp.hst", 1, ";", 0, 0\n',
                   encoding="utf-8")
    (folder / "pp.hst").write_text("5;1;C;3\n5;Nr;P\n2;2;U\n", encoding="utf-8")
    return folder / "pp.hst"


def _tab_number(folder: Path, text: str) -> None:
    lines = (folder / "pp.tab").read_text(encoding="utf-8").splitlines()
    fields = lines[0].split(";")
    fields[2] = text
    lines[0] = ";".join(fields)
    (folder / "pp.tab").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tab_duplicate(folder: Path) -> None:
    lines = (folder / "pp.tab").read_text(encoding="utf-8").splitlines()
    (folder / "pp.tab").write_text("\n".join([*lines, lines[3]]) + "\n", encoding="utf-8")


def _spec(folder: Path) -> Path:
    _copy(folder, EXAMPLES / "tables" / "firms", "firms.csv", "spec.yaml", "industry.hrc")
    return folder / "spec.yaml"


def _cells(folder: Path) -> Path:
    _copy(folder, EXAMPLES / "tables" / "threeway", "threeway.csv")
    return folder / "threeway.csv"


CELL_ARGS = ["--dimensions", "a,b,c", "--value", "value", "--status", "status", "--frequency",
             "frequency"]

MICRO_JOB = """<OPENMICRODATA> "m.asc"
<OPENMETADATA> "m.rda"
<SPECIFYTABLE> "Size""Region"|"Turnover"||
<SAFETYRULE> FREQ(3,20)
<READMICRODATA>
<RECODE> 1, Size, "size.grc"
<SUPPRESS> MOD(1)
<WRITETABLE> (1, 2, AS+, "t.csv")
"""
MICRO_RDA = """<SEPARATOR> ";"
Size 2 99
  <RECODEABLE>
Region 1
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERCODELIST> "region.hrc"
  <HIERLEADSTRING> "@"
Turnover 8
  <NUMERIC>
  <DECIMALS> 2
"""


def _micro_job(folder: Path) -> Path:
    """A tau-Argus microdata job: free-format records, a hierarchy file, a recode file."""
    (folder / "job.arb").write_text(MICRO_JOB, encoding="utf-8")
    (folder / "m.rda").write_text(MICRO_RDA, encoding="utf-8")
    (folder / "region.hrc").write_text("N\n@1\n@2\nS\n@3\n@4\n", encoding="utf-8")
    (folder / "size.grc").write_text("1: 1-2\n", encoding="utf-8")
    records = [f"{1 + i % 4};{1 + (i * 7) % 4};{(i * 37) % 500 + 10}.25" for i in range(40)]
    (folder / "m.asc").write_text("".join(r + "\n" for r in records), encoding="utf-8")
    return folder / "job.arb"


CKM_PTABLE = """i,j,p,v,p_int_lb,p_int_ub
1,0,0.51333333,-1,0,0.51333333
1,2,0.46,1,0.51333333,0.97333333
1,3,0.02666667,2,0.97333333,1
2,0,0.16560835,-2,0,0.16560835
2,2,0.54634992,0,0.16560835,0.71195827
2,3,0.24486677,1,0.71195827,0.95682504
2,4,0.04317496,2,0.95682504,1
"""


def _ckm(folder: Path) -> Path:
    """Microdata with record keys and an ABS/Destatis ptable (D = 2, V = 1.08, js = 1, cut
    to two rows: the last serves every larger count)."""
    (folder / "p.csv").write_text(CKM_PTABLE, encoding="utf-8")
    rows = [f"{'xy'[i % 2]},{'uvw'[i % 3]},0.{(i * 7919) % 10**8:08d}" for i in range(30)]
    (folder / "m.csv").write_text("a,b,rk\n" + "".join(r + "\n" for r in rows),
                                  encoding="utf-8")
    return folder / "m.csv"


@functools.cache
def _ons_ptable() -> str:
    """ONS's 10-5 rule as a ptable file: every count 1..750 by every cell key 0..255 (192,000
    rows, written once per test process)."""
    rule = {0: 0, 1: -1, 2: -2, 3: 2, 4: 1}
    return "pcv,ckey,pvalue\n" + "".join(
        f"{n},{k},{-n if n < 10 else rule[n % 5]}\n" for n in range(1, 751) for k in range(256))


def _ons_ids(folder: Path) -> Path:
    """Microdata with a column of ids (record keys: each id modulo 4096, ``--ons-id``) and an
    ONS ptable (ONS's 10-5 rule: every count 1..750 by every cell key 0..255)."""
    (folder / "p.csv").write_text(_ons_ptable(), encoding="utf-8")
    rows = [f"{'xy'[i % 2]},{'uvw'[i % 3]},{100_003 * i + 17}" for i in range(30)]
    (folder / "m.csv").write_text("a,b,id\n" + "".join(r + "\n" for r in rows),
                                  encoding="utf-8")
    return folder / "m.csv"


def _perturbed(folder: Path) -> Path:
    """A perturbed publication of two linked tables (a ``table`` column) and its ptable:
    what ``tables audit --ptable`` reads."""
    (folder / "p.csv").write_text(CKM_PTABLE, encoding="utf-8")
    rows = ["t1,x,,2", "t1,y,,2", "t1,Total,,4", "t2,x,u,2", "t2,y,u,2", "t2,Total,u,4",
            "t2,x,Total,2", "t2,y,Total,2", "t2,Total,Total,4"]
    (folder / "pub.csv").write_text("table,a,b,value\n" + "".join(r + "\n" for r in rows),
                                    encoding="utf-8")
    return folder / "pub.csv"


def _perturb_reader(name: str, build: Callable[[Path], Path], keys: tuple[str, str],
                    number: Edit) -> Reader:
    """``tables perturb`` of microdata ``m.csv`` (columns a, b) with ``p.csv``, its record
    keys given by ``keys``."""
    return Reader(name, ("tables/ckm.py",), build,
                  lambda main, out: ["tables", "perturb", str(main), "--ptable",
                                     str(main.parent / "p.csv"), "--dimensions", "a,b",
                                     *keys, "--out", str(out)],
                  number=number, code=lambda f, t: _sub(f / "m.csv", "\nx,", f"\n{t},"),
                  duplicate=lambda f: _dup_header(f / "m.csv"), writes=True)


# ------------------------------------------------------------------------------ census

BLOCKS = [TRACT_A + "1000", TRACT_A + "1001"]


def _persons(folder: Path) -> Path:
    return write_persons(folder / "p.csv", BLOCKS)


def _census_release(folder: Path) -> Path:
    """A P1 + P12 release of the two blocks, tabulated in process (no subprocess)."""
    from statrecon.census.persons.cells import select_cells
    from statrecon.census.persons.microdata import load_persons
    from statrecon.census.persons.release import write_release
    from statrecon.census.persons.tabulate import tabulate_cells
    from statrecon.db import open_connection

    con = open_connection()
    load_persons(_persons(folder), con)
    cells = select_cells("P1,P12")
    write_release(tabulate_cells(con, cells), cells, "P1,P12", folder / "r.parquet", None)
    return folder / "r.parquet"


def _release_value(folder: Path, text: str) -> None:
    """The value column rewritten as text holding ``text`` in its first row."""
    path = folder / "r.parquet"
    table = pq.read_table(path)
    values = [str(v) for v in table.column("value").to_pylist()]
    values[0] = text
    i = table.schema.get_field_index("value")
    table = table.set_column(i, "value", pa.array(values, pa.string()))
    pq.write_table(table, path)


def _swap_statement(folder: Path) -> Path:
    """The statement census swap writes (its own writer: swap.statement), beside persons."""
    import json

    from statrecon.census.persons.swap import PersonsSwap, preserved
    from statrecon.census.persons.swap_statement import METHOD

    _persons(folder)
    plan = PersonsSwap(rate=0.05)
    statement = {"method": METHOD, "units": "persons", "swap_rate": 0.05, "k_anonymity": 3,
                 "levels": list(plan.levels), "within": plan.within,
                 "risk_variables": list(plan.risk),
                 "similarity_profiles": [list(p) for p in plan.similar],
                 "preserved": preserved(plan)}
    (folder / "s.swap.json").write_text(json.dumps(statement, indent=2), encoding="utf-8")
    return folder / "s.swap.json"


def _allocation(folder: Path) -> Path:
    _persons(folder)
    (folder / "a.yaml").write_text("P1: 0.5\nP12: 0.5\n", encoding="utf-8")
    return folder / "a.yaml"


def _households(folder: Path) -> Path:
    return households(folder)


# ----------------------------------------------------------------------------- the registry

READERS: tuple[Reader, ...] = (
    Reader("release YAML", ("release/files.py",), _release,
           lambda main, out: ["reconstruct", str(main), "--json", "--time-limit", "20"],
           number=lambda f, t: _sub(f / "release.yaml", "value: 2", f"value: '{t}'"),
           code=lambda f, t: _sub(f / "release.yaml", "id: q", f"id: {t!r}"),
           duplicate=lambda f: _sub(f / "release.yaml", "table: t", "table: t\ntable: t")),
    Reader("public table", ("release/known.py",), _public,
           lambda main, out: ["reconstruct", str(main), "--json", "--time-limit", "20"],
           number=lambda f, t: _sub(f / "hospital_public.csv", "32453", t),
           names=lambda f, t: _sub(f / "hospital.yaml", "public: hospital_public.csv",
                                   f"public: {t!r}"),
           code=lambda f, t: _sub(f / "hospital_public.csv", "Male", t),
           duplicate=lambda f: _dup_header(f / "hospital_public.csv")),
    Reader("statistics file", ("release/columnar.py",), _statistics_file,
           lambda main, out: ["reconstruct", str(main), "--json", "--time-limit", "20"],
           number=lambda f, t: _sub(f / "stats.csv", ",2\n", f",{t}\n"),
           names=lambda f, t: _sub(f / "release.yaml", "statistics_file: stats.csv",
                                   f"statistics_file: {t!r}"),
           code=lambda f, t: _sub(f / "stats.csv", "\nq,", f"\n{t},"),
           duplicate=lambda f: _dup_header(f / "stats.csv")),
    Reader("tabulate microdata", ("release/tabulate.py",), _tabulate,
           lambda main, out: ["tabulate", "--release", str(main.parent / "stats.yaml"),
                              "--microdata", str(main), "--out", str(out)],
           number=lambda f, t: _sub(f / "people.csv", "\n8,", f"\n{t},"),
           code=lambda f, t: _sub(f / "people.csv", ",Black,", f",{t},"),
           duplicate=lambda f: _dup_header(f / "people.csv"), writes=True),
    Reader("audit stream", ("release/stream.py",), _audit_stream,
           lambda main, out: ["audit-stream", str(main.parent / "hospital_schema.yaml"),
                              "--input", str(main)],
           number=lambda f, t: _sub(f / "hospital_stream.txt", "; 32.1", f"; {t}"),
           code=lambda f, t: _sub(f / "hospital_stream.txt", "q1:", f"{t}:"),
           duplicate=lambda f: _sub(f / "hospital_stream.txt", "q2:", "q1:"), empty_ok=True),
    Reader("tau-Argus files", ("tables/_rda.py", "tables/tauargus.py"), _tau_argus,
           lambda main, out: ["tables", "protect", str(main.parent / "TestTable.arb"),
                              "--out", str(out), "--quiet"],
           number=_tab_number,
           names=lambda f, t: _sub(f / "pp.rda", '"region2.hrc"', f'"{t}"'),
           code=lambda f, t: _sub(f / "pp.tab", '"Ws"', f'"{t}"', count=0),
           duplicate=_tab_duplicate, writes=True),
    Reader("a-priori file", ("tables/apriori.py",), _apriori,
           lambda main, out: ["tables", "protect", str(main.parent / "TestTable.arb"),
                              "--out", str(out), "--quiet"],
           number=lambda f, t: _sub(f / "pp.hst", ";C;3", f";C;{t}"),
           names=lambda f, t: _sub(f / "TestTable.arb", '"pp.hst"', f'"{t}"'),
           code=lambda f, t: _sub(f / "pp.hst", "5;Nr;", f"5;{t};"), writes=True),
    Reader("table spec and microdata", ("tables/spec.py", "tables/rules.py"), _spec,
           lambda main, out: ["tables", "protect", str(main.parent / "firms.csv"), "--spec",
                              str(main), "--out", str(out), "--quiet"],
           number=lambda f, t: _sub(f / "firms.csv", ",41\n", f",{t}\n"),
           names=lambda f, t: _sub(f / "spec.yaml", "hierarchy: industry.hrc",
                                   f"hierarchy: {t!r}"),
           code=lambda f, t: _sub(f / "firms.csv", ",S1,", f",{t},"),
           duplicate=lambda f: _sub(f / "spec.yaml", "response: turnover",
                                    "response: turnover\nresponse: turnover"), writes=True),
    Reader("tau-Argus microdata job", ("tables/asc.py", "tables/job.py", "tables/recode.py"),
           _micro_job,
           lambda main, out: ["tables", "protect", str(main), "--out", str(out), "--out-dir",
                              str(out.parent), "--quiet"],
           number=lambda f, t: _sub(f / "m.asc", ";47.25", f";{t}"),
           names=lambda f, t: _sub(f / "m.rda", '"region.hrc"', f'"{t}"'),
           code=lambda f, t: _sub(f / "m.asc", "\n3;", f"\n{t};"),
           duplicate=lambda f: _sub(f / "m.rda", "Region 1", "Region 1\nRegion 1"),
           writes=True),
    Reader("table cells", ("tables/frames.py",), _cells,
           lambda main, out: ["tables", "protect", str(main), *CELL_ARGS, "--out", str(out),
                              "--quiet"],
           number=lambda f, t: _sub(f / "threeway.csv", ",60,60,", f",{t},60,"),
           code=lambda f, t: _sub(f / "threeway.csv", "\nTotal,Total,u,", f"\nTotal,Total,{t},"),
           duplicate=lambda f: _dup_header(f / "threeway.csv"), writes=True),
    _perturb_reader("cell key perturbation", _ckm, ("--record-key", "rk"),
                    lambda f, t: _sub(f / "p.csv", ",0.46,", f",{t},")),
    _perturb_reader("record keys from ids", _ons_ids, ("--ons-id", "id"),
                    lambda f, t: _sub(f / "m.csv", ",17\n", f",{t}\n")),
    Reader("perturbed publication", ("tables/published.py",), _perturbed,
           lambda main, out: ["tables", "audit", str(main), "--ptable",
                              str(main.parent / "p.csv"), "--dimensions", "a,b"],
           number=lambda f, t: _sub(f / "pub.csv", ",u,2\n", f",u,{t}\n"),
           code=lambda f, t: _sub(f / "pub.csv", "t1,y,", f"t1,{t},"),
           duplicate=lambda f: _dup_header(f / "pub.csv")),
    Reader("census persons", ("census/persons/microdata.py",), _persons,
           lambda main, out: ["census", "tabulate", "--persons", str(main), "--out", str(out),
                              "--tables", "P1,P12", "--quiet"],
           number=lambda f, t: _sub(f / "p.csv", ",20,", f",{t},"),
           code=lambda f, t: _sub(f / "p.csv", ",female,", f",{t},"),
           duplicate=lambda f: _dup_header(f / "p.csv"), writes=True),
    Reader("census release", ("census/persons/release.py",), _census_release,
           lambda main, out: ["census", "block-release", str(main), "--block", BLOCKS[0],
                              "--out", str(out)],
           number=_release_value, text=False, writes=True),
    Reader("swap statement", ("census/persons/swap_statement.py",), _swap_statement,
           lambda main, out: ["census", "tabulate", "--persons", str(main.parent / "p.csv"),
                              "--tables", "P1,P12", "--swap-statement", str(main), "--out",
                              str(out), "--quiet"],
           number=lambda f, t: _sub(f / "s.swap.json", '"swap_rate": 0.05',
                                    f'"swap_rate": {t}'),
           code=lambda f, t: _sub(f / "s.swap.json", '"voting_age"', f'"{t}"'),
           duplicate=lambda f: _sub(f / "s.swap.json", '"k_anonymity": 3',
                                    '"k_anonymity": 3, "k_anonymity": 3'), writes=True),
    Reader("noise allocation", ("census/persons/noise.py",), _allocation,
           lambda main, out: ["census", "tabulate", "--persons", str(main.parent / "p.csv"),
                              "--tables", "P1,P12", "--dp-rho", "1", "--seed", "0",
                              "--allocation", str(main), "--out", str(out), "--quiet"],
           number=lambda f, t: _sub(f / "a.yaml", "P1: 0.5", f"P1: {t}"),
           code=lambda f, t: _sub(f / "a.yaml", "P1:", f"{t!r}:"),
           duplicate=lambda f: _sub(f / "a.yaml", "P1: 0.5", "P1: 0.5\nP1: 0.5")),
    Reader("households", ("census/households/files.py",), _households,
           lambda main, out: ["claims", "tabulate", "--households", str(main), "--out",
                              str(out)],
           number=lambda f, t: _sub(f / "blocks.csv", ",1,", f",{t},"),
           code=lambda f, t: _sub(f / "blocks.csv", ",owned_free,", f",{t},"),
           duplicate=lambda f: _dup_header(f / "blocks.csv"), writes=True),
)

# Modules that read only files statrecon wrote itself and keeps beside its own output (a
# resumed run's parts and metadata) or files of the package: not a stranger's file. A
# user's reconstruction and claims file (read_recon, read_certain) go through the gate and
# are covered by the census readers' cases in test_census_noise_inputs.
OWN_FILES = {
    "runs/stores.py": "the parts and metadata of a resumable run, beside its --out",
    "runs/census_certain.py": "its own resumable parts",
    "experiments/dp_census.py": "the experiment's own step files, resumed",
    "experiments/protections.py": "the experiment's own rows, resumed (the truth through "
                                  "census/persons/swap.read_persons)",
    "experiments/stored.py": "an experiment's own step files, resumed through inputs.read_json "
                             "and checked by use (tests/experiments: a changed one is one line)",
    "experiments/census_scores.py": "claims files, checked as evidence (test_census_noise_inputs)",
    "commands/claims.py": "the experiment's own results.md, printed",
    "census/descriptors.py": "package data",
    "census/persons/cells.py": "package data",
    "bundled.py": "package data (the bundled examples, copied out by `statrecon examples`)",
    "report/linear.py": "the --truth table, through release/known.read_table",
    "api.py": "the public table, through release/known.read_table",
    "inputs.py": "the gate itself",
    "outputs.py": "its own umask, from /proc",
}
