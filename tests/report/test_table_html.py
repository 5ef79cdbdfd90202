"""The audit's HTML page draws each table as a table: rows x columns of codes nested by
hierarchy, suppressed cells marked by status and coloured by verdict, one grid per layer of a
3-way table, a cap on big tables; and it renders in a real browser (Debian's Chromium,
headless: a screenshot of the expected size, not blank, with a disclosed cell's colour).

The page is the data steward's working report: the cell list gives true values, the grids
never give a suppressed cell's value (only the attacker's interval).
"""

from __future__ import annotations

import functools
import itertools
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import EXAMPLES, CliRunner

from statrecon.engines.intervals import AuditOptions
from statrecon.report.table_grid import COLOURS, grids_html
from statrecon.report.tables import html_page
from statrecon.runs.tables import TableAudit, audit_tables
from statrecon.tables import Cell, CellStatus, Hierarchy, Table, TableSet

REGION = Hierarchy.from_children("region", {"Total": ("North", "South"),
                                            "North": ("N1", "N2"),
                                            "South": ("S1", "S2", "S3")})
SIZE = Hierarchy.flat("size", ("small", "large"))
YEAR = Hierarchy.flat("year", ("2020", "2021"))
LEAVES = {"N1": (10, 20), "N2": (7, 30), "S1": (41, 141), "S2": (59, 263), "S3": (8, 50)}
# N1/small alone in its row and column: disclosed. The South rectangle: protected, and these
# values are in no grid (values chosen to occur nowhere else on the grids)
DISCLOSED = ("N1", "small")
RECTANGLE = {("S1", "small"): CellStatus.PRIMARY, ("S2", "small"): CellStatus.SECONDARY,
             ("S1", "large"): CellStatus.SECONDARY, ("S2", "large"): CellStatus.SECONDARY}
HIDDEN_VALUES = {(r, s): str(LEAVES[r][("small", "large").index(s)]) for r, s in RECTANGLE}
ARB = EXAMPLES / "tables" / "tauargus" / "TestTable.arb"


@functools.cache
def _below(h: Hierarchy, code: str) -> list[str]:
    """The leaves under ``code`` (itself when a leaf)."""
    return [c for c in h.leaves() if c == code or code in h.ancestors(c)]


def build(hierarchies: Sequence[Hierarchy], leaf: Mapping[tuple[str, ...], int],
          statuses: Mapping[tuple[str, ...], CellStatus], name: str = "t") -> TableSet:
    """A table whose every cell is the sum of the leaf cells under it."""
    cells = []
    for codes in itertools.product(*(h.codes() for h in hierarchies)):
        value = sum(leaf[combo] for combo in itertools.product(
            *(_below(h, c) for h, c in zip(hierarchies, codes, strict=True))))
        status = statuses.get(codes, CellStatus.SAFE)
        level = (Fraction(1), Fraction(1)) if status is CellStatus.PRIMARY else (0, 0)
        cells.append(Cell(tuple((h.variable, c) for h, c in zip(hierarchies, codes,
                                                                 strict=True)),
                          Fraction(value), value, status, tuple(map(Fraction, level))))
    table = Table(name, tuple(h.variable for h in hierarchies),
                  {h.variable: h for h in hierarchies}, "freq", "frequency", 0, tuple(cells))
    return TableSet((table,))


def two_way() -> TableSet:
    leaf = {(r, s): LEAVES[r][i] for r in LEAVES for i, s in enumerate(("small", "large"))}
    statuses = {DISCLOSED: CellStatus.PRIMARY, **RECTANGLE}
    return build((REGION, SIZE), leaf, statuses)


def three_way() -> TableSet:
    """region x size x year; suppressed cells only in year 2020."""
    leaf = {(r, s, y): LEAVES[r][i] + (3 if y == "2021" else 0) for r in LEAVES
            for i, s in enumerate(("small", "large")) for y in ("2020", "2021")}
    statuses = {(*DISCLOSED, "2020"): CellStatus.PRIMARY,
                **{(*k, "2020"): v for k, v in RECTANGLE.items()}}
    return build((REGION, SIZE, YEAR), leaf, statuses, name="t3")


def audited(tables: TableSet) -> TableAudit:
    return audit_tables(tables, AuditOptions(time_limit=30))


# ------------------------------------------------------------------------- the page parsed


@dataclass
class Td:
    tag: str
    attrs: dict[str, str]
    text: str = ""


@dataclass
class Grid:
    table: str
    caption: str = ""
    rows: list[list[Td]] = field(default_factory=list)  # the header row first


class Grids(HTMLParser):
    """The grids (``table.tg``) of a page, each row's header and data cells with their text;
    and the text of everything outside the grids."""

    def __init__(self) -> None:
        super().__init__()
        self.grids: list[Grid] = []
        self.outside: list[str] = []
        self.notes: list[str] = []
        self.scripts = 0
        self._grid: Grid | None = None
        self._cell: Td | None = None
        self._caption = False
        self._note: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "script":
            self.scripts += 1
        if tag == "table" and "tg" in a.get("class", "").split():
            self._grid = Grid(a["data-table"])
        elif self._grid is not None and tag == "tr":
            self._grid.rows.append([])
        elif self._grid is not None and tag in ("td", "th"):
            self._cell = Td(tag, a)
            self._grid.rows[-1].append(self._cell)
        elif self._grid is not None and tag == "caption":
            self._caption = True
        elif tag == "p" and "note" in a.get("class", "").split():
            self._note = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._grid is not None:
            self.grids.append(self._grid)
            self._grid = None
        elif tag in ("td", "th"):
            self._cell = None
        elif tag == "caption":
            self._caption = False
        elif tag == "p" and self._note is not None:
            self.notes.append("".join(self._note))
            self._note = None

    def handle_data(self, data: str) -> None:
        if self._note is not None:
            self._note.append(data)
        if self._caption and self._grid is not None:
            self._grid.caption += data
        elif self._cell is not None:
            self._cell.text += data + " "
        elif self._grid is None:
            self.outside.append(data)


def parse(page: str) -> Grids:
    parser = Grids()
    parser.feed(page)
    parser.close()
    return parser


def cell_at(grid: Grid, row: str, column: str) -> Td:
    header = [c.text.strip() for c in grid.rows[0]]
    for cells in grid.rows[1:]:
        if cells[0].text.strip() == row:
            return cells[header.index(column)]
    raise KeyError(row)


@pytest.fixture(scope="module")
def page() -> str:
    return html_page(audited(two_way()))


def test_the_grid_has_a_row_per_code_and_a_column_per_code(page: str) -> None:
    parsed = parse(page)
    assert parsed.scripts == 0
    (grid,) = parsed.grids
    assert grid.table == "t" and grid.caption == ""
    header = [c.text.strip() for c in grid.rows[0]]
    assert header == ["region", "Total", "small", "large"]  # rows: the longer hierarchy
    assert [r[0].text.strip() for r in grid.rows[1:]] == list(REGION.codes())
    assert all(len(r) == 1 + len(SIZE) for r in grid.rows)
    # nested by hierarchy: indented by depth, totals bold
    indents = {r[0].text.strip(): r[0].attrs["style"] for r in grid.rows[1:]}
    assert indents["Total"] < indents["North"] < indents["N1"]
    assert indents["South"] == indents["North"] and indents["S3"] == indents["N1"]
    bold = {r[0].text.strip() for r in grid.rows[1:] if "tot" in r[0].attrs["class"].split()}
    assert bold == {"Total", "North", "South"}
    assert "tot" in grid.rows[0][1].attrs.get("class", "")  # the Total column
    # published values where they belong
    assert cell_at(grid, "Total", "Total").text.strip() == str(sum(map(sum, LEAVES.values())))
    assert cell_at(grid, "N2", "large").text.strip() == "30"


def test_suppressed_cells_show_status_verdict_and_interval_never_their_value(page: str) -> None:
    (grid,) = parse(page).grids
    disclosed = cell_at(grid, *DISCLOSED)
    assert "v-disclosed" in disclosed.attrs["class"].split()
    # the attacker knows it: its interval is its value
    assert disclosed.text.split() == ["×", "primary", "disclosed", "[10,", "10]"]
    for (row, column), status in RECTANGLE.items():
        td = cell_at(grid, row, column)
        assert "v-protected" in td.attrs["class"].split()
        words = td.text.split()
        assert words[:3] == ["×", status.value, "protected"], words
        value = HIDDEN_VALUES[(row, column)]
        shown = td.text + td.attrs["title"]
        assert value not in shown.replace(",", " ").replace("[", " ").split(), (value, shown)
    # no suppressed cell's value anywhere on a grid, but the working list gives it
    texts = [c.text.strip() for g in parse(page).grids for r in g.rows for c in r]
    published = {str(c.value) for c in two_way().tables[0].cells if not c.status.suppressed}
    assert not published & set(HIDDEN_VALUES.values())  # else this test proves nothing
    for value in HIDDEN_VALUES.values():
        assert value not in texts
        assert f"<td class=n>{value}</td>" in page
    assert "Working report for the data steward, not a publication" in page


def test_the_legend_says_each_colour_in_words(page: str) -> None:
    for verdict, colour in COLOURS.items():
        assert colour in page and f"<b>{verdict}</b>:" in page


def test_a_three_way_table_is_one_grid_per_code_of_the_third(tmp_path: Path) -> None:
    parsed = parse(html_page(audited(three_way())))
    assert [g.caption for g in parsed.grids] == [f"year = {c}" for c in YEAR.codes()]
    for grid in parsed.grids:
        assert len(grid.rows) == 1 + len(REGION) and len(grid.rows[0]) == 1 + len(SIZE)
    by_year = {g.caption: g for g in parsed.grids}
    assert "disclosed" in cell_at(by_year["year = 2020"], *DISCLOSED).text
    assert cell_at(by_year["year = 2021"], *DISCLOSED).text.strip() == "13"


def test_big_tables_are_capped_with_a_note_and_the_list_keeps_every_cell() -> None:
    tables = three_way()
    # the whole table (3 layers of 8 x 3) does not fit in 30 cells: only the layer holding
    # suppressed cells is drawn
    parsed = parse(grids_html(tables, {}, max_cells=30))
    assert [g.caption for g in parsed.grids] == ["year = 2020"]
    assert any("2 of 3 layers hold no suppressed cell" in n and "at most 30 cells" in n
               for n in parsed.notes), parsed.notes
    # not audited: drawn grey, said in words
    assert "not audited" in cell_at(parsed.grids[0], *DISCLOSED).text
    # 12 cells: the first 4 rows
    parsed = parse(grids_html(tables, {}, max_cells=12))
    assert len(parsed.grids[0].rows) == 1 + 4
    assert any("first 4 of 8 rows" in n for n in parsed.notes)
    # a 2-D grid too wide: the first 60 columns, and the page stays small
    wide = Hierarchy.flat("wide", [f"c{i}" for i in range(150)])
    long = Hierarchy.flat("long", [f"r{i}" for i in range(250)])
    leaf = {(r, c): 1 for r in long.leaves() for c in wide.leaves()}
    big = build((long, wide), leaf, {("r3", "c5"): CellStatus.PRIMARY})
    drawn = grids_html(big, {})
    parsed = parse(drawn)
    assert len(parsed.grids[0].rows[0]) == 1 + 60
    assert sum(len(r) - 1 for r in parsed.grids[0].rows[1:]) <= 10_000
    assert len(drawn) < 2_000_000
    assert any("first 60 of 151 columns" in n for n in parsed.notes)


def test_tau_argus_test_table_drawn_from_the_command(run_cli: CliRunner, tmp_path: Path) -> None:
    """``tables audit TestTable.arb --html``: Region (hierarchical, 18 codes) down, Size (9)
    across; its 9 primary cells disclosed, each interval its own value."""
    out = tmp_path / "audit.html"
    code, _, err = run_cli("tables", "audit", ARB, "--html", out, "--quiet")
    assert code == 4, err
    (grid,) = parse(out.read_text(encoding="utf-8")).grids
    assert len(grid.rows) == 1 + 18 and all(len(r) == 1 + 9 for r in grid.rows)
    assert grid.rows[0][0].text.strip() == "Region"
    suppressed = [c for r in grid.rows[1:] for c in r if "s" in c.attrs.get("class", "").split()]
    assert len(suppressed) == 9
    assert all("v-disclosed" in c.attrs["class"] and "× primary disclosed" in " ".join(
        c.text.split()) for c in suppressed)


# ------------------------------------------------------------------------- a real browser

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--force-color-profile=srgb", "--hide-scrollbars")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on PATH: install Debian's chromium package (.ci/run does when "
                "it runs as root)")


def screenshot(page: Path, png: Path, size: tuple[int, int], profile: Path) -> None:
    proc = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                           f"--screenshot={png}", f"--window-size={size[0]},{size[1]}",
                           page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]


def test_the_page_renders_in_chromium(page: str, tmp_path: Path) -> None:
    from PIL import Image  # lazy: Pillow (matplotlib's) only for this test

    html_file, png = tmp_path / "audit.html", tmp_path / "audit.png"
    html_file.write_text(page, encoding="utf-8")
    screenshot(html_file, png, (1100, 1300), tmp_path / "profile")
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size == (1100, 1300)
        pixels = image.convert("RGB")
    counts = {colour: n for n, colour in pixels.getcolors(maxcolors=1 << 20) or []}
    assert len(counts) > 50, "a blank page"  # text, borders, fills
    white = counts.get((255, 255, 255), 0)
    assert white < 0.97 * 1100 * 1300

    def rgb(hex_colour: str) -> tuple[int, int, int]:
        return int(hex_colour[1:3], 16), int(hex_colour[3:5], 16), int(hex_colour[5:7], 16)

    # a legend swatch is about 18 x 18 pixels; a grid cell several times that: the disclosed
    # cell and the four protected ones are drawn in their colours
    assert counts.get(rgb(COLOURS["disclosed"]), 0) > 1_000
    assert counts.get(rgb(COLOURS["protected"]), 0) > 4_000
    assert counts.get(rgb(COLOURS["unknown"]), 0) < 600  # its swatch only
