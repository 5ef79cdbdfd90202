"""The documentation site's own checks (the strict build itself is ``make docs``, in CI).

- The command-line reference is generated from the Typer app (``docs/hooks/cli_reference.py``)
  and covers every command: its help, every option's help and default, its exit codes. A
  command added without them fails here.
- The site's navigation names every page, and every page it names exists.
- The tutorial notebooks run (nbclient, a real kernel) and their results draw themselves.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from conftest import ROOT

DOCS = ROOT / "docs"
NOTEBOOKS = sorted((DOCS / "notebooks").glob("*.ipynb"))


def _module(name: str) -> ModuleType:
    path = DOCS / "hooks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"docs_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    return _module("cli_reference")


def _every_command() -> list[tuple[str, ...]]:
    """Every command of the app, walked independently of the generator."""
    from typer.main import get_command

    from statrecon.cli import app

    root = get_command(app)
    context = type(__import__("typer").Context(root))
    found = []

    def walk(command: object, path: tuple[str, ...], ctx: object) -> None:
        names = getattr(command, "list_commands", None)
        if names is None:
            found.append(path)
            return
        for name in names(ctx):
            sub = command.get_command(ctx, name)  # type: ignore[attr-defined]
            walk(sub, (*path, name), context(sub, info_name=name, parent=ctx))

    walk(root, (), context(root, info_name="statrecon"))
    return found


def test_the_cli_reference_covers_every_command(reference: ModuleType) -> None:
    commands = {c.path: c for c in reference.commands()}
    assert set(commands) == set(_every_command())
    assert {("tables", "audit"), ("census", "reconstruct"), ("reconstruct",)} <= set(commands)
    page = reference.markdown()
    for path, command in commands.items():
        name = " ".join(path)
        assert f"## statrecon {name}\n" in page, name
        assert command.help, f"statrecon {name} has no help"
        assert name in reference.EXIT_CODES, f"statrecon {name}: no exit codes documented"
        for param in command.params:
            assert param.help, f"statrecon {name} {param.names}: no help"
            assert f"| `{param.names}` | " in page, (name, param.names)


def test_the_cli_reference_shows_defaults_and_exit_codes(reference: ModuleType) -> None:
    page = reference.markdown()
    audit = page[page.index("## statrecon tables audit\n"):]
    audit = audit[:audit.index("\n## ", 1)]
    assert "| `--apriori <str>` | `nonnegative` |" in audit
    assert "| `--json` | off |" in audit
    assert "**4** some suppressed cell is disclosed or under-protected" in audit
    assert "**130** interrupted" in audit
    reconstruct = page[page.index("## statrecon reconstruct\n"):]
    assert "| `--symmetry-breaking / --no-symmetry-breaking` | `--symmetry-breaking` |" \
        in reconstruct
    assert "| `--limit <int range>` | `10000` | Stop enumerating after this many datasets. " \
        "(x&gt;=1) |" in reconstruct


def test_a_command_without_docs_fails_the_reference_test(reference: ModuleType,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The check is not vacuous: a command the generator meets without an exit-code entry
    is caught."""
    monkeypatch.delitem(reference.EXIT_CODES, "census report")
    with pytest.raises(AssertionError, match="census report"):
        test_the_cli_reference_covers_every_command(reference)


def _nav_pages(entries: object) -> list[str]:
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, dict):
        return [p for v in entries.values() for p in _nav_pages(v)]
    if isinstance(entries, list):
        return [p for v in entries for p in _nav_pages(v)]
    return []


def test_the_navigation_names_every_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    named = set(_nav_pages(config["nav"]))
    generated = set(_module("site").generated_pages())
    kept = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*")
            if p.suffix in (".md", ".ipynb") and "hooks" not in p.parts}
    assert named == kept | generated, (named ^ (kept | generated))


def test_the_site_links_of_the_front_page() -> None:
    site = _module("site")
    text = site.site_links("[a](docs/guides/census.md) ![b](docs/figures/dp_census.png) "
                           "[c](BENCHMARKS.md#census)")
    assert text == "[a](guides/census.md) ![b](figures/dp_census.png) [c](benchmarks.md#census)"
    readme = site.generated_pages()["index.md"]
    assert "](docs/" not in readme and re.search(r"\]\(guides/\w", readme)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebooks_run(path: Path, tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = [o.get("data", {}).get("text/html", "") for cell in notebook.cells
             if cell.cell_type == "code" for o in cell.get("outputs", [])]
    views = [html for html in shown if "statrecon-view" in html]
    assert views, "no result drew itself"
    if path.stem == "sql-release":
        assert "UNIQUE: exactly one dataset" in views[0] and "class=proven" in views[0]
        assert any("MULTIPLE" in v and "class=proven" in v for v in views[1:])
    else:
        assert "disclosed" in views[0] and "table class=tg" in views[0]
        assert "Protection:" in views[1] and "× secondary" in views[1]
        assert re.search(r"Audit: (\d+) suppressed cells, \1 protected</b>", views[2])


def test_the_readme_stays_a_front_page() -> None:
    """Issue 31: the README is the front page, at most 200 lines (the rest is in the site)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move detail into docs/"
