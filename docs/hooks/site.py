"""MkDocs hook: the pages made when the site is built, from files kept elsewhere.

- ``index.md``: the README (the repository's front page is the site's), its ``docs/`` links
  made relative to the site;
- ``benchmarks.md``: BENCHMARKS.md;
- ``reference/cli.md``: the command-line reference, generated from the Typer app
  (``cli_reference.markdown``), so no command, option or default can be left undocumented.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import cli_reference  # noqa: E402


def site_links(text: str) -> str:
    """A root Markdown file's links as the site sees them: ``docs/x.md`` is ``x.md``,
    ``BENCHMARKS.md`` is ``benchmarks.md``, ``README.md`` the front page."""
    text = re.sub(r"\]\((?:\./)?docs/", "](", text)
    text = re.sub(r"\]\((?:\./)?BENCHMARKS\.md", "](benchmarks.md", text)
    return re.sub(r"\]\((?:\./)?README\.md", "](index.md", text)


def generated_pages() -> dict[str, str]:
    """Site path -> Markdown of every generated page."""
    return {
        "index.md": site_links((ROOT / "README.md").read_text(encoding="utf-8")),
        "benchmarks.md": site_links((ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")),
        "reference/cli.md": cli_reference.markdown(),
    }


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, content in generated_pages().items():
        old = files.get_file_from_path(uri)
        if old is not None:
            files.remove(old)
        files.append(File.generated(config, uri, content=content))
    return files
