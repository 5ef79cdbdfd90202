"""The one gate for input files: every file statrecon reads passes here before any reader
opens it, so a new format is safe by construction.

- :func:`admit` checks a file before a reader (ours, pandas', Arrow's, DuckDB's) opens it: a
  regular file (not a folder, a FIFO or a device that never ends), within a size limit; and
  records it, so that no output of the same command replaces it (``outputs`` asks
  :func:`was_read`).
- :func:`named_file` resolves a file that another file names (an ``.arb``'s ``.tab``, an
  ``.rda``'s ``.hrc``, a spec's hierarchy, a release's ``public:`` table): never an absolute
  path or ``..``, and never a symbolic link that leads out of the naming file's folder (or a
  folder the user gave on the command line), checked on the fully resolved path *before*
  anything is read. A file from a stranger can only make statrecon read files beside it.
- :func:`read_bytes` / :func:`read_text`: the whole of a small text file through both.

Files named on the command line are the user's own choice: they may be links anywhere.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path, PureWindowsPath
from typing import Any

from statrecon.errors import StatreconError

# at most this many bytes are read from any one text input file (a columnar file has its
# own budget on what decoding produces: statrecon.columnar)
MAX_BYTES = 2**30

# the real paths of the files read by the command running now, each with what it was (None:
# no command is running, e.g. a library caller outside the CLI: nothing is recorded)
_READ: ContextVar[dict[Path, str] | None] = ContextVar("statrecon_inputs_read", default=None)


def begin_session() -> Callable[[], None]:
    """Start recording, for one command, every file it reads (``outputs`` refuses to write
    over one); returns the function that ends the session."""
    token = _READ.set({})
    return lambda: _READ.reset(token)


@contextlib.contextmanager
def command_session() -> Iterator[None]:
    """:func:`begin_session` for a ``with`` block."""
    end = begin_session()
    try:
        yield
    finally:
        end()


def real(path: Path) -> Path:
    """``path`` with every link followed (an unreadable one as given, made absolute)."""
    try:
        return Path(os.path.realpath(path))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def record(*paths: Path | str, what: str = "input") -> None:
    """Note ``paths`` (their real paths) as inputs of the running command (``what``: how a
    message names them, e.g. "--release file"): a command records the files named on its
    command line before it checks its outputs, and :func:`admit` records every file as it is
    opened."""
    seen = _READ.get()
    if seen is not None:
        for p in paths:
            seen.setdefault(real(Path(p)), what)


def read_as(path: Path) -> str | None:
    """What the running command read ``path`` as (under any name: links are followed), or
    None if it did not read it."""
    seen = _READ.get()
    return None if not seen else seen.get(real(path))


def admit(path: Path | str, what: str, *, limit: int | None = MAX_BYTES) -> Path:
    """``path`` if a reader may open it: it exists, is a regular file and (``limit``) holds
    at most that many bytes; else a one-line StatreconError naming it. Recorded as read."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise StatreconError(f"{path}: no such file (the {what})", where=str(path)) from None
    except (OSError, ValueError) as e:
        raise StatreconError(f"{path}: cannot read the {what}: {getattr(e, 'strerror', e) or e}",
                             where=str(path)) from None
    if stat.S_ISDIR(info.st_mode):
        raise StatreconError(f"{path}: the {what} is a folder, not a file", where=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise StatreconError(f"{path}: the {what} is not a regular file (a device, pipe or "
                             "socket is never read)", where=str(path))
    if limit is not None and info.st_size > limit:
        raise StatreconError(f"{path}: {what} of {info.st_size:,} bytes is over the limit of "
                             f"{limit:,}", where=str(path))
    record(path, what=what)
    return path


def read_bytes(path: Path | str, what: str, *, limit: int | None = MAX_BYTES) -> bytes:
    """The bytes of ``path`` after :func:`admit` (and never more than ``limit``, even if the
    file grows while it is read)."""
    path = admit(path, what, limit=limit)
    try:
        with path.open("rb") as f:
            data = f.read() if limit is None else f.read(limit + 1)
    except OSError as e:
        raise StatreconError(f"{path}: cannot read the {what}: {e.strerror or e}",
                             where=str(path)) from None
    if limit is not None and len(data) > limit:
        raise StatreconError(f"{path}: {what} is over the limit of {limit:,} bytes",
                             where=str(path))
    return data


def read_text(path: Path | str, what: str, *, limit: int | None = MAX_BYTES,
              latin1: bool = False) -> str:
    """The text of ``path``: UTF-8 (a byte-order mark dropped); ``latin1``: else Latin-1, as
    tau-Argus on Windows writes; otherwise a file that is not UTF-8 is an error."""
    data = read_bytes(path, what, limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        if latin1:
            return data.decode("latin-1")
        raise StatreconError(f"{path}: the {what} is not UTF-8 text (byte {e.start})",
                             where=str(path)) from None


def inside(path: Path, folders: Sequence[Path]) -> bool:
    """Whether ``path``, every link followed, lies in one of ``folders`` (theirs followed)."""
    target = real(path)
    return any(target.is_relative_to(real(f)) for f in folders)


def named_file(name: str, named_by: Path, what: str, where: str, *,
               roots: Sequence[Path] = (), by_file_name: bool = False,
               ignore_case: bool = False) -> Path:
    """The file ``name`` that the file ``named_by`` names, in ``named_by``'s folder.

    Refused, before anything is read: an empty name, a NUL, an absolute path or ``..``
    (``by_file_name``: such a name is looked up by its last part instead, as tau-Argus falls
    back to the data folder), and any name whose real path (every symbolic link followed,
    the folder's included) lies outside that folder and the folders of ``roots``.
    ``ignore_case``: each part matches a file whose name differs only in case (tau-Argus on
    Windows finds ``REGION.CDL`` as ``region.cdl``)."""
    folder = named_by.parent if str(named_by.parent) else Path(".")
    shown = name if len(name) <= 80 else name[:80] + "..."
    if not name.strip() or "\x00" in name:
        raise StatreconError(f"{where}: {what}: an empty or invalid file name", where=where)
    parts = PureWindowsPath(name).parts  # splits on both / and \
    leaves = bool(PureWindowsPath(name).anchor or Path(name).is_absolute() or ".." in parts)
    if leaves and not by_file_name:
        raise StatreconError(f"{where}: {what} {shown!r} leaves the folder of {named_by.name} "
                             "(an absolute path or '..'); a file from another folder is given "
                             "on the command line", where=where)
    if leaves:
        parts = (PureWindowsPath(name).name,)
    path = folder
    for part in parts:
        path = _child(path, part) if ignore_case else path / part
    if not inside(path, [folder, *roots]):
        raise StatreconError(f"{where}: {what} {shown!r} leads outside {folder} (a symbolic "
                             "link); it is not read", where=where)
    if not path.is_file():
        raise StatreconError(f"{where}: {what} {shown!r}: no such file in {folder}",
                             where=where)
    return path


def _child(folder: Path, name: str) -> Path:
    """``folder / name``, or the one entry of ``folder`` whose name differs only in case."""
    exact = folder / name
    if exact.exists() or not folder.is_dir():
        return exact
    matches = sorted(p for p in folder.iterdir() if p.name.lower() == name.lower())
    return matches[0] if matches else exact


# ---------------------------------------------------------------------------- columnar files

# bytes that decoding one columnar file may produce (Arrow's buffers, every dictionary page
# expanded), and cells it may hold: a few megabytes of Parquet can declare billions of
# repeated strings, so the budget counts what decoding makes, not the file's size
MAX_DECODED = 2**31
MAX_CELLS = 50_000_000
_BATCH_ROWS = 16_384


def read_columnar(path: Path | str, what: str, *, columns: Sequence[str] | None = None,
                  text: bool = True, budget: int = MAX_DECODED, max_cells: int = MAX_CELLS,
                  dictionary: Sequence[str] = ()) -> Any:
    """A Parquet (``.parquet``/``.pq``) or CSV/TSV file as an Arrow table, through the gate:
    admitted (:func:`admit`), then decoded in batches that count every byte decoding
    produces, stopped with a one-line error past ``budget`` bytes or ``max_cells`` cells.
    ``columns``: only these (Parquet). ``dictionary``: Parquet text columns kept
    dictionary-encoded (a few bytes a row; counted as encoded, their dictionaries included),
    every other one decoded and counted as decoded. ``text``: every CSV column as text
    (numbers are read exactly later, :mod:`statrecon.number_reader`); Parquet keeps its types
    and its schema's metadata."""
    path = admit(path, what, limit=None)
    suffix = path.suffix.lower()
    spent = _Budget(path, what, budget, max_cells)
    if suffix in (".parquet", ".pq"):
        return _read_parquet(path, what, columns, spent, tuple(dictionary))
    if suffix in (".csv", ".tsv", ".txt"):
        return _read_csv(path, what, "\t" if suffix == ".tsv" else ",", text, spent)
    raise StatreconError(f"{path}: the {what} must be .csv, .tsv or .parquet, not "
                         f"'{suffix or path.name}'", where=str(path))


class _Budget:
    """Bytes and cells decoded so far from one file, and the error past the limits."""

    def __init__(self, path: Path, what: str, budget: int, max_cells: int) -> None:
        self.path, self.what, self.budget, self.max_cells = path, what, budget, max_cells
        self.bytes = self.cells = 0

    def add(self, nbytes: int, cells: int) -> None:
        self.bytes += nbytes
        self.cells += cells
        if self.bytes > self.budget:
            raise StatreconError(f"{self.path}: the {self.what} decodes to more than "
                                 f"{self.budget:,} bytes (a file of "
                                 f"{self.path.stat().st_size:,} bytes); it is not read",
                                 where=str(self.path))
        if self.cells > self.max_cells:
            raise StatreconError(f"{self.path}: the {self.what} holds more than "
                                 f"{self.max_cells:,} cells; it is not read",
                                 where=str(self.path))


def _decoded_bytes(column: Any, keep: bool = False) -> int:
    """What one batch column takes once decoded: a dictionary column's values are counted
    once per row that uses them (the footer counts only their indices); ``keep``: a column
    that stays encoded, counted as it is (indices and dictionary)."""
    # lazy: pyarrow loads only when a columnar file is read
    import pyarrow as pa
    import pyarrow.compute as pc

    if keep and pa.types.is_dictionary(column.type):
        return int(column.indices.nbytes + column.dictionary.nbytes)
    if pa.types.is_dictionary(column.type):
        values = column.dictionary
        if pa.types.is_string(values.type) or pa.types.is_binary(values.type) or \
                pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
            lengths = pc.binary_length(values).take(column.indices)
            total = pc.sum(lengths).as_py() or 0
            return int(total) + 8 * len(column)
        return int(values.nbytes / max(len(values), 1) * len(column)) + column.indices.nbytes
    return int(column.nbytes)


def _read_parquet(path: Path, what: str, columns: Sequence[str] | None, spent: _Budget,
                  keep: tuple[str, ...]) -> Any:
    # lazy: pyarrow loads only when a columnar file is read
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as probe:
            schema = probe.schema_arrow
        texts = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(
            f.type) or pa.types.is_large_string(f.type) or pa.types.is_large_binary(f.type)]
        wanted = [c for c in texts if columns is None or c in columns]
        batches = []
        with pq.ParquetFile(path, read_dictionary=wanted) as f:
            for batch in f.iter_batches(batch_size=_BATCH_ROWS, columns=columns):
                spent.add(sum(_decoded_bytes(c, n in keep)
                              for n, c in zip(batch.schema.names, batch.columns, strict=True)),
                          batch.num_rows * batch.num_columns)
                batches.append(batch)
            full = f.schema_arrow  # built anew on each call (4 ms with a release's metadata)
            out_schema = full if columns is None else pa.schema(
                [full.field(c) for c in columns], metadata=full.metadata)
        table = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else \
            out_schema.empty_table()
    except (pa.ArrowException, OSError, KeyError) as e:
        raise StatreconError(f"{path}: cannot read the {what}: {_first_line(e)}",
                             where=str(path)) from None
    # one chunk per column, dictionaries unified: the batches each came with a dictionary of
    # their own, and DuckDB's parallel scan of such chunks crashed under load (a segfault in
    # a join over a registered table)
    table = _decode_dictionaries(table, keep).unify_dictionaries().combine_chunks()
    return table.replace_schema_metadata(schema.metadata)


# bytes of JSON a columnar file may keep in its schema metadata, at most, before it is decoded
# (a census release's 4,071 cell definitions take 0.98 MB; 20,000 of them about 5 MB)
MAX_METADATA = 16_000_000


def metadata_bytes(metadata: Mapping[bytes, bytes] | None, key: bytes, path: Path | str,
                   what: str, *, limit: int = MAX_METADATA) -> bytes | None:
    """What a Parquet file keeps under ``key`` in its schema metadata (None: nothing), its
    size checked before anything decodes it: the one gate for file metadata."""
    raw = (metadata or {}).get(key)
    if raw is not None and len(raw) > limit:
        raise StatreconError(f"{path}: {len(raw):,} bytes of {what} metadata, more than the "
                             f"limit of {limit:,}", where=str(path))
    return raw


def json_metadata(metadata: Mapping[bytes, bytes] | None, key: bytes, path: Path | str,
                  what: str, *, limit: int = MAX_METADATA) -> Any:
    """The JSON under ``key`` (``metadata_bytes``) decoded, None when there is none;
    malformed JSON is one line naming the file."""
    import json

    raw = metadata_bytes(metadata, key, path, what, limit=limit)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise StatreconError(f"{path}: unreadable {what} metadata ({_first_line(e)[:200]})",
                             where=str(path)) from None


def _decode_dictionaries(table: Any, keep: tuple[str, ...]) -> Any:
    """Dictionary columns back to plain ones (their size was counted as decoded), but those
    to ``keep`` encoded."""
    # lazy: pyarrow loads only when a columnar file is read
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type) and field.name not in keep:
            table = table.set_column(i, field.name, table.column(i).cast(field.type.value_type))
    return table


def _read_csv(path: Path, what: str, delimiter: str, text: bool, spent: _Budget) -> Any:
    # lazy: pyarrow loads only when a columnar file is read
    import pyarrow as pa
    import pyarrow.csv as pcsv

    names = _csv_header(path, what, delimiter)
    try:
        reader = pcsv.open_csv(
            path, read_options=pcsv.ReadOptions(block_size=1 << 22),
            parse_options=pcsv.ParseOptions(delimiter=delimiter),
            convert_options=pcsv.ConvertOptions(
                column_types={n: pa.string() for n in names} if text else None,
                strings_can_be_null=False, quoted_strings_can_be_null=False))
        batches = []
        for batch in reader:
            spent.add(batch.nbytes, batch.num_rows * batch.num_columns)
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=reader.schema)
    except (pa.ArrowException, OSError) as e:
        raise StatreconError(f"{path}: cannot read the {what}: {_first_line(e)}",
                             where=str(path)) from None


def _csv_header(path: Path, what: str, delimiter: str) -> list[str]:
    """The CSV's column names (to read every column as text, so "565981/6" and 007 stay)."""
    import csv
    import io

    opener = gzip.open if path.suffix.lower() == ".gz" else open  # DuckDB reads .csv.gz too
    try:
        with opener(path, "rb") as f:
            head = f.read(1 << 20)
    except (OSError, EOFError) as e:
        raise StatreconError(f"{path}: cannot read the {what}: {e}", where=str(path)) from None
    first = head.split(b"\n", 1)[0].rstrip(b"\r")
    try:
        line = first.decode("utf-8-sig")
        header = next(csv.reader(io.StringIO(line), delimiter=delimiter), None)
    except (UnicodeDecodeError, csv.Error) as e:
        raise StatreconError(f"{path}: cannot read the {what}'s header: {e}",
                             where=str(path)) from None
    if not header or not any(h.strip() for h in header):
        raise StatreconError(f"{path}: empty file: the {what} needs a header row of column "
                             "names", where=str(path))
    if len(set(header)) != len(header):
        twice = next(h for h in header if header.count(h) > 1)
        raise StatreconError(f"{path}: column {twice!r} appears twice in the {what}'s header",
                             where=str(path))
    return header


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def read_frame(path: Path | str, what: str, *, text: bool = True,
               budget: int = MAX_DECODED) -> Any:
    """:func:`read_columnar` as a pandas DataFrame (CSV: every column text, an empty cell
    None), after checking what the Python objects would take."""
    table = read_columnar(path, what, text=text, budget=budget)
    return table.to_pandas()


# ------------------------------------------------------------------------ small JSON files


def read_json(path: Path | str, what: str, *, limit: int = 1_000_000) -> Any:
    """A small JSON file from a stranger: through the gate, no key given twice (JSON would
    keep the last one without a word), no NaN or Infinity (not JSON); each mistake one line
    naming the file. (Not read as YAML: YAML 1.1 reads a JSON number such as 1e-05 as
    text.)"""
    import json

    path = Path(path)
    text = read_text(path, what, limit=limit)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"key {key[:40]!r} is given twice")
            out[key] = value
        return out

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as e:
        where = f"{path}:{e.lineno}"
        raise StatreconError(f"{where}: malformed JSON in the {what} ({e.msg})",
                             where=where) from None
    except (ValueError, RecursionError) as e:
        raise StatreconError(f"{path}: the {what}: {_unbuildable(e)}",
                             where=str(path)) from None


# ------------------------------------------------------------------------ small YAML files


def read_yaml(path: Path | str, what: str, *, limit: int = 1_000_000) -> Any:
    """A small YAML file from a stranger (an allocation, a mapping of options): through the
    gate, without aliases (a few hundred bytes of nested aliases expand to billions of
    values) and without a key given twice (YAML would keep the last one without a word);
    each mistake one line naming ``file:line``."""
    # lazy: PyYAML loads only when a YAML file is read
    import yaml

    path = Path(path)
    text = read_text(path, what, limit=limit)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent):
                raise _yaml_error(path, event.start_mark, f"aliases (*name) are not allowed "
                                                          f"in the {what}")
        node = yaml.compose(text, Loader=loader)
        _no_duplicate_keys(path, node)
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        raise _yaml_error(path, getattr(e, "problem_mark", None),
                          f"malformed YAML in the {what}") from None
    except (ValueError, RecursionError) as e:  # a value PyYAML cannot build
        raise StatreconError(f"{path}: a value of the {what} cannot be read: "
                             f"{_unbuildable(e)}", where=str(path)) from None


def _unbuildable(e: Exception) -> str:
    """Why a parser could not build a value, in a few words: an integer of thousands of
    digits (Python's limit), a date such as 2001-02-30, nesting too deep, a key twice."""
    if "digits" in str(e):
        return "a number with more digits than Python reads"
    return _first_line(e)[:120]


def _no_duplicate_keys(path: Path, node: Any) -> None:
    # lazy: PyYAML loads only when a YAML file is read
    import yaml

    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: set[object] = set()
            for key, value in current.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else id(key)
                if name in seen:
                    raise _yaml_error(path, key.start_mark, f"key {str(name)[:40]!r} is given "
                                                            "twice")
                seen.add(name)
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def _yaml_error(path: Path, mark: Any, message: str) -> StatreconError:
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    return StatreconError(f"{where}: {message}", where=where)


def check_csv_header(path: Path | str, what: str, delimiter: str = ",") -> list[str]:
    """The column names of a CSV file: refused when there are none or one is given twice
    (readers would rename or drop the second without a word)."""
    return _csv_header(Path(path), what, delimiter)
