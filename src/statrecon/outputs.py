"""Check that an output can be written before any work starts, and write files atomically:
the one output guard.

A run that solves for an hour and then finds its output folder read-only has wasted the hour;
so every command checks each output path first (creating nothing that stays behind), and
writes each file to a temporary name that is renamed into place only when complete.

An output never replaces an input: ``statrecon.inputs`` records every file the running
command read (the files named on its command line and every file they name), and both
:func:`check_writable` (called once the inputs are read, before the work) and
:func:`atomic_outputs` (every write, the last line of defence) refuse such a path, under any
name (links and relative paths resolved).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from statrecon import inputs
from statrecon.errors import StatreconError


def check_writable(path: Path, what: str = "output", *,
                   inputs_given: Sequence[tuple[str, Path | str | None]] = ()) -> Path:
    """``path`` if a file can be created (or replaced) there, else a one-line StatreconError.

    ``inputs_given``: the command's input files named on its command line, as (option, path)
    pairs, recorded as inputs first (a file they name is recorded when it is read): ``path``
    may be none of them.
    Creates and removes a temporary file next to ``path``: the only reliable test (permissions,
    read-only mounts, ACLs, full disks all show up). An existing ``path`` is left untouched.
    """
    path = Path(path)
    for option, given in inputs_given:
        if given is not None:
            inputs.record(given, what=f"{option} file")
    check_not_input(path, what)
    if path.is_dir():
        raise StatreconError(f"{what} {path}: is a folder, not a file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise StatreconError(f"{what} {path}: no such folder {folder}")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=folder)
    except OSError as e:
        raise StatreconError(f"{what} {path}: cannot write there: "
                             f"{e.strerror or e}") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    if path.exists() and not os.access(path, os.W_OK):
        raise StatreconError(f"{what} {path}: the existing file is read-only")
    return path


def check_not_input(path: Path, what: str = "output") -> Path:
    """``path`` unless the running command read it (an output never replaces an input)."""
    found = inputs.read_as(path)
    if found is not None:
        raise StatreconError(f"{what} {path}: is the {found} this command reads; an output "
                             "never replaces an input: choose another path")
    return path


def check_writable_folder(folder: Path, what: str = "output folder") -> Path:
    """``folder`` if files can be written in it (it is created if missing), else an error."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise StatreconError(f"{what} {folder}: exists and is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StatreconError(f"{what} {folder}: cannot create it: {e.strerror or e}") from None
    check_writable(folder / "probe", what)
    return folder


def temporary_sibling(path: Path) -> Path:
    """A fresh temporary file name in ``path``'s folder (same file system: rename is atomic)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                dir=path.parent if str(path.parent) else Path("."))
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # as open() would: mkstemp makes it owner-only
    finally:
        os.close(fd)
    return Path(name)


def _umask() -> int:
    """The process umask (read without changing it where the system allows)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_outputs(*paths: Path) -> Iterator[tuple[Path, ...]]:
    """Temporary paths to write ``paths`` to; all renamed into place only if the block succeeds.

    On any failure every temporary file is removed and no final path is touched, so a run
    never leaves one of several outputs half-written or out of step with the others.
    """
    for p in paths:
        check_not_input(Path(p))
    temps: list[Path] = []
    try:
        for p in paths:
            try:
                temps.append(temporary_sibling(Path(p)))
            except OSError as e:
                raise StatreconError(f"{p}: cannot write: {e.strerror or e}") from None
        try:
            yield tuple(temps)
        except StatreconError as e:  # name the file the user asked for, not our temporary
            message = str(e)
            for tmp, final in zip(temps, paths, strict=True):
                message = message.replace(str(tmp), str(final))
            raise StatreconError(message) from None
        for tmp, final in zip(temps, paths, strict=True):
            try:
                tmp.replace(final)
            except OSError as e:
                raise StatreconError(f"{final}: cannot write: {e.strerror or e}") from None
    finally:
        for tmp in temps:
            with contextlib.suppress(OSError):
                tmp.unlink()


def write_atomically(path: Path, write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` to a temporary sibling renamed to ``path`` when done (the one way a single
    file is written atomically); an OSError becomes one line naming ``path``."""
    try:
        with atomic_outputs(path) as (tmp,):
            write(tmp)
    except OSError as e:
        raise StatreconError(f"{path}: cannot write: {e.strerror or e}") from None
    return path


def dump_yaml(data: object, *, width: int = 120) -> str:
    """YAML without anchors or aliases (release files refuse them: the 'billion laughs'), keys
    in the order given, text as written."""
    import yaml

    class _Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: object) -> bool:
            return True

    return str(yaml.dump(data, Dumper=_Plain, sort_keys=False, allow_unicode=True, width=width))
