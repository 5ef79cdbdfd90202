"""easySdcTable's comparison as a peer: its published counts, and how its tables are built.

``examples/tables/easysdctable/comparison.csv`` transcribes the easySdcTable 0.8.0 comparison
(number of suppressed and revealed cells, seconds, per table x linked x protectZeros x maxN x
method). This module reads it, and ports the few SSBtools functions that decide which table(s)
``ProtectTable`` builds from a data frame and ``dimVar``: ``FactorLevCorr``,
``HierarchicalGroups``, ``FindTableGroup`` and ``FindDimLists``/``DimFromHier1``
(statisticsnorway/ssb-ssbtools ``R/forEasySdcTable.R``, ``R/HierarchicalGroups.R``,
``R/FindTableGroup.R``). It is a reference to check statrecon's own builder against, not part
of statrecon; see ``examples/tables/easysdctable/README.md`` for the rules in words.

``table_set(name, linked, protect_zeros, max_n)`` gives one configuration of the comparison as
statrecon tables: the table(s) ``build`` finds, each a :class:`statrecon.tables.Table` whose
dimension ``region`` carries the fylke -> region (or kostragr -> region) hierarchy; linked
tables as one :class:`statrecon.tables.TableSet` (a cell published in both tables is one
cell); primary cells as ProtectTable's Gauss route marks them (count <= maxN; a zero only with
protectZeros), protection levels 0.

    .venv/bin/python benchmarks/peers/easysdctable.py   # cells and primary cells per row
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from statrecon.tables import CellStatus, Hierarchy, Table, TableSet
from statrecon.tables.frames import table_from_frame
from statrecon.tables.model import Key
from statrecon.tables.rules import MinFrequency, mark_primary

ROOT = Path(__file__).resolve().parents[2]
COMPARISON = ROOT / "examples" / "tables" / "easysdctable" / "comparison.csv"
DATA = ROOT / "examples" / "tables" / "ssbtools"  # Parquet copies of the SSBtools data
TOTAL = "Total"
# dimVar of the comparison (R indices 1-based in the doc), by data set and linked
DIM_VARS = {
    ("z2", False): ("region", "fylke", "hovedint"),
    ("z2", True): ("region", "fylke", "kostragr", "hovedint"),
    ("z3", False): ("region", "fylke", "hovedint", "mnd"),
    ("z3", True): ("region", "fylke", "kostragr", "hovedint", "mnd"),
    ("sosialFiktiv", False): ("region", "fylke", "hovedint", "mnd"),
    ("sosialFiktiv", True): ("region", "fylke", "kostragr", "hovedint", "mnd"),
}
FREQ_VAR = "ant"


def load_comparison(path: Path = COMPARISON) -> pd.DataFrame:
    """The transcribed rows (120: 24 configurations x 5 methods)."""
    return pd.read_csv(path, dtype={"settings": str}, keep_default_na=True)


def _code(value: object) -> str:
    """R's as.character for the codes in these data: whole doubles print without ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def load_data(name: str, directory: Path = DATA) -> pd.DataFrame:
    """An SSBtools data set, codes as strings, counts as ints: from the repository's Parquet
    copy (``examples/tables/ssbtools/``), or from an ``.RData`` original (needs pyreadr)."""
    parquet = directory / f"{name}.parquet"
    if parquet.exists():
        frame = pd.read_parquet(parquet)
    else:
        import pyreadr  # lazy: an optional reader, only for the R originals

        frame = pyreadr.read_r(str(directory / f"{name}.RData"))[name]
    out = frame.copy()
    for col in out.columns:
        if col == FREQ_VAR:
            out[col] = out[col].astype("int64")
        else:
            out[col] = out[col].map(_code)
    return out


def factor_lev_corr(x: pd.DataFrame) -> list[list[float]]:
    """SSBtools ``FactorLevCorr``: diagonal = levels; +-1 = hierarchically related (the sign
    says which has fewer levels: negative in row i when variable i has more levels)."""
    x = x.drop_duplicates()
    cols = list(x.columns)
    n_levels = [x[c].nunique() for c in cols]
    z = [[0.0] * len(cols) for _ in cols]
    for i in range(len(cols)):
        z[i][i] = float(n_levels[i])
        for j in range(i + 1, len(cols)):
            ni, nj = n_levels[i], n_levels[j]
            nij = len(x[[cols[i], cols[j]]].drop_duplicates())
            one = 1.0 if ni <= nj else -1.0
            mult, most = ni * nj, max(ni, nj)
            z[i][j] = one if nij == most else one * (mult - nij) / (mult - most)
            z[j][i] = -z[i][j]
    return z


def _recursive(f: list[list[float]], ind: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    drop: list[int] = []
    groups: list[list[int]] = []
    for i in ind:
        if i in drop:
            continue
        sub_drop, sub = _recursive(f, [j for j in range(len(f)) if f[i][j] == -1])
        drop += [i, *sub_drop]
        groups += [[i, *g] for g in sub] or [[i]]
    return drop, groups


def _sort_key(group: Sequence[int], width: int) -> tuple[int, ...]:
    return tuple(group) + (0,) * (width - len(group))


def hierarchical_groups(x: pd.DataFrame) -> list[tuple[str, ...]]:
    """SSBtools ``HierarchicalGroups``: chains of nested variables, finest first, sorted as
    ``SortNrList`` sorts them (by column positions, 1-based, zero-padded)."""
    f = factor_lev_corr(x)
    n_levels = [f[i][i] for i in range(len(f))]
    if min(n_levels) <= 1:
        raise ValueError("Number of levels < 2 in a variable")
    order = sorted(range(len(f)), key=lambda i: -n_levels[i])  # stable, like R's order
    permuted = [[f[a][b] for b in order] for a in order]
    _drop, groups = _recursive(permuted, range(len(f)))
    mapped = [[order[i] + 1 for i in g] for g in groups]
    width = max(len(g) for g in mapped)
    mapped.sort(key=lambda g: _sort_key(g, width))
    cols = list(x.columns)
    return [tuple(cols[i - 1] for i in g) for g in mapped]


def _unique_nr_list(groups: Sequence[Sequence[str]], order: Sequence[int]) -> list[int]:
    taken: set[str] = set()
    chosen = []
    for i in order:
        if not taken.intersection(groups[i]):
            chosen.append(i)
            taken.update(groups[i])
    return sorted(chosen)


def find_table_group(x: pd.DataFrame) -> tuple[list[tuple[str, ...]], list[int], list[int]]:
    """SSBtools ``FindTableGroup(findLinked=TRUE)``: the groups and the group indices
    (0-based) of table 1 and of table 2 (empty when there is a single table)."""
    groups = hierarchical_groups(x)
    k = len(groups)
    table1 = _unique_nr_list(groups, range(k))
    table2 = _unique_nr_list(groups, range(k - 1, -1, -1))
    if table1 == table2:
        table2 = []
    if not table2 and len(table1) != k:
        outside = [i for i in range(k) if i not in table1]
        table2 = [outside[i] for i in _unique_nr_list([groups[i] for i in outside],
                                                      range(len(outside)))]
    if len(set(table1) | set(table2)) != k:
        raise ValueError("All variables could not be used")
    return groups, table1, table2


@dataclass(frozen=True)
class Dimension:
    """One dimension of a ProtectTable table: named after its finest variable, codes from
    every variable of its group, ``children`` parent -> children (``Total`` at the root)."""

    name: str
    variables: tuple[str, ...]
    children: dict[str, tuple[str, ...]]

    def codes(self) -> tuple[str, ...]:
        out = [TOTAL]
        for parent in out:
            out.extend(self.children.get(parent, ()))
        return tuple(out)

    def single_children(self) -> tuple[str, ...]:
        """Codes that are the only child of their parent (sdcTable's "bogus" codes)."""
        return tuple(c[0] for c in self.children.values() if len(c) == 1)


def dimension(x: pd.DataFrame, group: Sequence[str]) -> Dimension:
    """``DimFromHier1``: Total, then the coarsest variable's codes, each followed by its
    children in the next finer variable, down to the finest (sorted rows of the crossing)."""
    coarse_first = list(reversed(group))
    crossed = x[coarse_first].drop_duplicates().sort_values(coarse_first)
    children: dict[str, list[str]] = {}
    for row in crossed.itertuples(index=False):
        parent = TOTAL
        for code in row:
            kids = children.setdefault(parent, [])
            if code not in kids:
                kids.append(code)
            parent = code
    return Dimension(name=group[0], variables=tuple(group),
                     children={p: tuple(c) for p, c in children.items()})


@dataclass(frozen=True)
class Built:
    """The table(s) ProtectTable forms: one list of dimensions per table."""

    tables: tuple[tuple[Dimension, ...], ...]

    def cells(self) -> set[tuple[tuple[str, str], ...]]:
        """Distinct cells of the (linked) tables, a cell being its (dimension, code) pairs."""
        out = set()
        for dims in self.tables:
            for combo in itertools.product(*[d.codes() for d in dims]):
                out.add(tuple(sorted(zip([d.name for d in dims], combo, strict=True))))
        return out


def build(x: pd.DataFrame, dim_vars: Sequence[str]) -> Built:
    """What ProtectTable(data, dimVar, freqVar, findLinked=TRUE) protects."""
    frame = x[list(dim_vars)]
    groups, table1, table2 = find_table_group(frame)
    for group in groups:
        levels = [frame[v].nunique() for v in group]
        if levels != sorted(levels, reverse=True):
            raise ValueError("Number of levels not decreasing")
    dims = [dimension(frame, g) for g in groups]
    tables = [tuple(dims[i] for i in table1)]
    if table2:
        tables.append(tuple(dims[i] for i in table2))
    return Built(tables=tuple(tables))


def cell_counts(x: pd.DataFrame, built: Built) -> dict[tuple[tuple[str, str], ...], int]:
    """Each cell's count: the sum of ``ant`` over the input rows under it (per table, the
    leaf grid multiplied by each dimension's code-by-leaf 0/1 matrix)."""
    out: dict[tuple[tuple[str, str], ...], int] = {}
    for dims in built.tables:
        names = [d.name for d in dims]
        leaves = [sorted(x[n].unique()) for n in names]
        grid = np.zeros([len(lv) for lv in leaves], dtype=np.int64)
        pos = [{c: i for i, c in enumerate(lv)} for lv in leaves]
        index = tuple(x[n].map(p).to_numpy() for n, p in zip(names, pos, strict=True))
        np.add.at(grid, index, x[FREQ_VAR].to_numpy())
        for d, p in zip(dims, pos, strict=True):
            member = np.zeros((len(d.codes()), len(p)), dtype=np.int64)
            for row, code in enumerate(d.codes()):
                for leaf in _leaves(d, code):
                    member[row, p[leaf]] = 1
            grid = np.tensordot(member, grid, axes=([1], [0]))
            grid = np.moveaxis(grid, 0, -1)
        for combo in itertools.product(*[enumerate(d.codes()) for d in dims]):
            key = tuple(sorted(zip(names, [c for _i, c in combo], strict=True)))
            out[key] = int(grid[tuple(i for i, _c in combo)])
    return out


def _leaves(d: Dimension, code: str) -> list[str]:
    kids = d.children.get(code, ())
    return [leaf for k in kids for leaf in _leaves(d, k)] if kids else [code]


def primary_count(counts: dict[tuple[tuple[str, str], ...], int], max_n: int,
                  protect_zeros: bool) -> int:
    """Cells primary by ProtectTable's frequency rule: count <= maxN (zeros only when
    protectZeros)."""
    return sum(1 for v in counts.values() if v <= max_n and (protect_zeros or v > 0))


# ----------------------------------------------------------------------------------------
# the comparison's configurations as statrecon tables


def hierarchy(dim: Dimension) -> Hierarchy:
    """A ProtectTable dimension as a statrecon hierarchy: the same codes, the same sums."""
    return Hierarchy(dim.name, TOTAL, dim.children)


def _label(name: str, dims: Sequence[Dimension], n_tables: int) -> str:
    """A table's name: the data set's, with the coarse variables of its hierarchies when
    there are two tables (``sosialFiktiv[fylke]``, ``sosialFiktiv[kostragr]``)."""
    if n_tables == 1:
        return name
    return f"{name}[{'+'.join(d.variables[-1] for d in dims if len(d.variables) > 1)}]"


def _check_linkable(built: Built) -> None:
    """A statrecon key is a cell's non-total codes, so a code that two linked tables both
    use must cover the same leaves in both (else two different sums would be one cell). In
    the comparison's data the fylke and kostragr codes differ, so only Total and the leaves
    are common, as in SSBtools' ``FindCommonCells``."""
    by_name: dict[str, list[Dimension]] = {}
    for dims in built.tables:
        for d in dims:
            by_name.setdefault(d.name, []).append(d)
    for name, found in by_name.items():
        for a, b in itertools.combinations(found, 2):
            for code in set(a.codes()) & set(b.codes()):
                if sorted(_leaves(a, code)) != sorted(_leaves(b, code)):
                    raise ValueError(f"dimension {name}: code {code} covers different "
                                     f"{name} codes in the linked tables")


def tables_of(x: pd.DataFrame, dim_vars: Sequence[str], name: str) -> tuple[Table, ...]:
    """The table(s) ProtectTable builds from ``x`` and ``dimVar`` as statrecon tables, every
    cell safe (no rule applied yet): rows summed to the leaves of each table's dimensions,
    totals computed from them (``margins="compute"``). The SSBtools data hold a row per leaf
    combination, zeros included, so no cell is EMPTY: a zero is a published zero."""
    built = build(x, dim_vars)
    _check_linkable(built)
    out = []
    for dims in built.tables:
        names = [d.name for d in dims]
        rows = x.groupby(names, sort=False)[FREQ_VAR].sum().reset_index()
        out.append(table_from_frame(rows, names, FREQ_VAR,
                                    hierarchies={d.name: hierarchy(d) for d in dims},
                                    name=_label(name, dims, len(built.tables))))
    return tuple(out)


@functools.cache
def _safe_tables(name: str, linked: bool, directory: Path) -> tuple[Table, ...]:
    return tables_of(load_data(name, directory), DIM_VARS[(name, linked)], name)


def mark(tables: Sequence[Table], protect_zeros: bool, max_n: int) -> TableSet:
    """Linked ``tables`` with ProtectTable's primary cells (GaussSuppression route:
    ``primary <- zzz <= maxN``, then ``primary[zzz == 0] <- FALSE`` unless protectZeros),
    protection levels 0 (a primary cell must only not be disclosed exactly)."""
    rules = [MinFrequency(max_n)]
    return TableSet(tuple(mark_primary(t, rules, protect_zeros=protect_zeros) for t in tables))


def table_set(name: str, linked: bool, protect_zeros: bool, max_n: int,
              directory: Path = DATA) -> TableSet:
    """One configuration of the comparison (data set ``z2``, ``z3`` or ``sosialFiktiv``;
    ``dimVar`` of the doc for ``linked``) as a statrecon TableSet with its primary cells."""
    return mark(_safe_tables(name, linked, directory), protect_zeros, max_n)


def primary_keys(tables: TableSet) -> tuple[Key, ...]:
    """The keys of the primary cells, in ``keys()`` order."""
    return tuple(k for k, c in zip(tables.keys(), tables.cells(), strict=True)
                 if c.status is CellStatus.PRIMARY)


def configurations(rows: pd.DataFrame | None = None) -> list[tuple[str, bool, bool, int]]:
    """The comparison's 24 configurations (table, linked, protectZeros, maxN), in its order."""
    rows = load_comparison() if rows is None else rows
    keys = rows[["table", "linked", "protectZeros", "maxN"]].drop_duplicates()
    return [(str(t), bool(linked), bool(zeros), int(n))
            for t, linked, zeros, n in keys.itertuples(index=False)]


def single_child_cells(tables: TableSet) -> dict[Key, Key]:
    """Cells that repeat another cell because their code is the only child of its parent
    (z2: region B, the only region of fylke 4): each such cell's key -> the key of the same
    cell with the parent's code. sdcTable drops such codes internally ("bogus codes"), so a
    count that treats each pair as one cell is ``len(keys()) - len(this)``."""
    out: dict[Key, Key] = {}
    for table in tables.tables:
        for v in table.variables:
            for parent, kids in table.hierarchies[v].children.items():
                if len(kids) != 1:
                    continue
                for cell in table.cells:
                    if cell.code(v) == kids[0]:
                        codes = {w: parent if w == v else c for w, c in cell.codes}
                        out[table.key(cell)] = table.key(table.cell(codes))
    return out


def main() -> None:
    data_dir = DATA
    for (name, linked), dim_vars in DIM_VARS.items():
        x = load_data(name, data_dir)
        built = build(x, dim_vars)
        counts = cell_counts(x, built)
        shape = " | ".join(" x ".join(f"{d.name}({'>'.join(reversed(d.variables))}:"
                                      f"{len(d.codes())})" for d in dims)
                           for dims in built.tables)
        prim = {f"{pz[0]}{m}": primary_count(counts, m, pz == "TRUE")
                for pz in ("FALSE", "TRUE") for m in (2, 10)}
        single = {d.name: d.single_children() for dims in built.tables for d in dims
                  if d.single_children()}
        print(f"{name:13s} linked={linked!s:5s} cells={len(counts):5d} primary={prim} "
              f"single-child codes={single}\n    {shape}")
        print(f"    statrecon: {_statrecon_line(name, linked)}")


def _statrecon_line(name: str, linked: bool) -> str:
    """The same configuration as a statrecon TableSet: distinct cells, primary cells per
    (protectZeros, maxN), cells shared by the linked tables, and the additivity check."""
    found: dict[str, int] = {}
    for zeros, n in itertools.product((False, True), (2, 10)):
        tables = table_set(name, linked, zeros, n)
        found[f"{'FT'[zeros]}{n}"] = len(primary_keys(tables))
    tables = table_set(name, linked, False, 2)
    tables.equations().check(tables.values())
    published = sum(len(t.cells) for t in tables.tables)
    return (f"keys={len(tables.keys())} primary={found} shared={published - len(tables.keys())}"
            f" equations={tables.equations().matrix.shape[0]} (hold) "
            f"single-child pairs={len(single_child_cells(tables))}")


if __name__ == "__main__":
    main()
