"""The front door: ``statrecon.reconstruct(release, public=None, method="auto")``."""

from __future__ import annotations

from pathlib import Path

from statrecon.engines.exact import ExactOptions, reconstruct_exact
from statrecon.errors import StatreconError
from statrecon.release.files import load_release
from statrecon.release.known import PublicTable, compile_known, load_public
from statrecon.release.model import Release
from statrecon.result import ReconstructionResult

METHODS = ("auto", "exact")


def reconstruct(
    release: Release | str | Path,
    public: PublicTable | str | Path | None = None,
    method: str = "auto",
    options: ExactOptions | None = None,
) -> ReconstructionResult:
    """Find every dataset consistent with a release and what they all agree on.

    >>> result = reconstruct("examples/block.yaml")      # doctest: +SKIP
    >>> result.status, result.solution_count              # doctest: +SKIP
    ('unique', 1)
    """
    if not isinstance(release, Release):
        release = load_release(release)
    if method not in METHODS:
        raise StatreconError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    table = resolve_public(release, public)
    known = compile_known(release, table)
    missing = [s.where_text for s in release.statistics if s.answer is None]
    if missing:
        raise StatreconError(
            f"{release.source or 'release'}: {missing[0]} has no published value "
            "(fill it with statrecon tabulate)"
        )
    return reconstruct_exact(release, known, options)


def resolve_public(release: Release, public: PublicTable | str | Path | None
                   ) -> PublicTable | None:
    """The public table given explicitly, else the one the release file names, else none."""
    if isinstance(public, PublicTable):
        return public
    path = Path(public) if public is not None else release.public
    if path is None:
        return None
    return load_public(path, release.schema)
