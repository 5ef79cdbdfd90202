"""The files statrecon carries beside its code: the README's examples (releases, public tables,
microdata, statistical tables) and the census extract (gzip-compressed CSV), which
``statrecon examples`` writes out so that every README command runs outside the repository.

They live in the package as ``statrecon/data/examples``. In a checkout that is a link to the
repository's ``examples/`` folder, which the README's commands name; a wheel holds a copy
(``package-data`` in ``pyproject.toml``: setuptools copies what the link points to).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from statrecon.errors import StatreconError
from statrecon.outputs import check_writable_folder, write_atomically

FOLDER = "examples"  # the README's commands read examples/...: written as DIR/examples


def bundled_examples() -> Traversable:
    """The examples folder inside the installed package."""
    folder = files("statrecon") / "data" / FOLDER
    if not folder.is_dir():
        raise StatreconError("this installation of statrecon carries no examples "
                             "(statrecon/data/examples is missing: reinstall the wheel)")
    return folder


def example_files() -> list[tuple[PurePosixPath, Traversable]]:
    """Every bundled file with its path inside the examples folder, in order."""
    return sorted(_walk(bundled_examples(), PurePosixPath()), key=lambda pair: str(pair[0]))


def _walk(folder: Traversable, at: PurePosixPath) -> Iterator[tuple[PurePosixPath, Traversable]]:
    for entry in folder.iterdir():
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_dir():
            yield from _walk(entry, at / entry.name)
        else:
            yield at / entry.name, entry


def write_examples(dest: Path, *, force: bool = False) -> list[Path]:
    """Write the bundled examples to ``dest/examples`` (created if missing) and return the
    files written. A file already there is an error unless ``force`` (then it is replaced),
    found before anything is written; every folder is checked writable before the first
    file, and each file is written atomically."""
    target = Path(dest) / FOLDER
    wanted = [(target.joinpath(*rel.parts), source) for rel, source in example_files()]
    if not force:
        there = [path for path, _ in wanted if path.exists() or path.is_symlink()]
        if there:
            more = f" (and {len(there) - 1} more)" if len(there) > 1 else ""
            raise StatreconError(f"{there[0]}: exists{more}; --force replaces the bundled "
                                 "examples already there, or choose another folder")
    for folder in sorted({path.parent for path, _ in wanted} | {target}):
        check_writable_folder(folder, "examples folder")  # before any file is written
    return [write_atomically(path, _copy_of(source)) for path, source in wanted]


def _copy_of(source: Traversable) -> Callable[[Path], int]:
    return lambda tmp: tmp.write_bytes(source.read_bytes())
