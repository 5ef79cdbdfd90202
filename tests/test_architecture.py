"""The map of the house (docs/architecture.md) holds in the code: imports only go down the
layers, no module imports itself through others, and an import inside a function says why."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "statrecon"
# the CLI's front modules import commands and engines inside functions so that
# `statrecon --help` and error paths start without loading solvers (module docstrings say so)
FRONT = ("cli.py", "_entry.py", "commands")


def test_the_layers_contract_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                        no_logo=True) == 0


def test_the_layers_contract_fails_on_an_upward_import(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The contract is not vacuous: a copy of the package where an engine imports a command
    breaks it."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "statrecon",
                    ignore=shutil.ignore_patterns("__pycache__", "data"))
    engine = copy / "statrecon" / "engines" / "exact.py"
    engine.write_text(engine.read_text() + "\nfrom statrecon.commands import progress\n")
    monkeypatch.syspath_prepend(str(copy))
    for name in [m for m in list(os.sys.modules) if m == "statrecon" or
                 m.startswith("statrecon.")]:
        monkeypatch.delitem(os.sys.modules, name)
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                        no_logo=True) == 1


def test_no_import_circles() -> None:
    graph = grimp.build_graph("statrecon", include_external_packages=False,
                              exclude_type_checking_imports=True)
    circles = []
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            # a package's __init__ re-exporting its own modules is no circle
            if back and not importer.startswith(imported + ".") \
                    and not imported.startswith(importer + "."):
                circles.append(" -> ".join((importer, *back)))
    assert circles == []


def _imports_the_package(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").startswith("statrecon")
    return isinstance(node, ast.Import) and any(a.name.startswith("statrecon")
                                                for a in node.names)


def _local_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if _imports_the_package(node):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def test_a_function_local_import_says_why() -> None:
    """Outside the CLI's front modules, a package import inside a function is preceded by a
    ``# lazy: <reason>`` comment (a few lines up, for a block of imports)."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(FRONT):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, text in _local_imports(path):
            above = lines[max(0, lineno - 6):lineno - 1]
            if not any(line.strip().startswith("# lazy:") for line in above):
                unexplained.append(f"{rel}:{lineno}: {text}")
    assert unexplained == []


def test_the_result_and_option_types_are_exported_from_the_top() -> None:
    import statrecon
    from statrecon.engines.census import TractResult
    from statrecon.engines.claims.model import ClaimsOptions
    from statrecon.engines.linear import LinearOptions, LinearResult

    assert {"reconstruct", "ExactOptions", "LinearOptions", "LinearResult", "CensusOptions",
            "TractResult", "ClaimsOptions", "BlockClaims", "ReconstructionResult"
            } <= set(statrecon.__all__)
    assert (statrecon.LinearOptions, statrecon.LinearResult, statrecon.TractResult,
            statrecon.ClaimsOptions) == (LinearOptions, LinearResult, TractResult, ClaimsOptions)
    for name in statrecon.__all__:
        assert getattr(statrecon, name) is not None
