"""The map of the house (docs/architecture.md) holds in the code: imports only go down the
layers, the engine families meet only in the solvers below them, each family has one entry
point, no module imports itself through others, and an import inside a function says why."""

from __future__ import annotations

import ast
import os
import re
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


def _lint_a_broken_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str,
                        line: str) -> int:
    """lint-imports over a copy of the package where ``module`` (a path under the package)
    gains ``line``."""
    import shutil

    copy = tmp_path / "src"
    shutil.copytree(PACKAGE, copy / "statrecon",
                    ignore=shutil.ignore_patterns("__pycache__", "data"))
    broken = copy / "statrecon" / module
    broken.write_text(broken.read_text() + f"\n{line}\n")
    monkeypatch.syspath_prepend(str(copy))
    for name in [m for m in list(os.sys.modules) if m == "statrecon" or
                 m.startswith("statrecon.")]:
        monkeypatch.delitem(os.sys.modules, name)
    monkeypatch.chdir(ROOT)
    return lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True,
                        no_logo=True)


def test_the_layers_contract_fails_on_an_upward_import(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The contract is not vacuous: a copy of the package where an engine imports a command
    breaks it."""
    assert _lint_a_broken_copy(tmp_path, monkeypatch, "engines/exact/reconstruct.py",
                               "from statrecon.commands import progress") == 1


@pytest.mark.parametrize(("module", "line", "contract"), [
    # two families meet outside solvers: the independence contract
    ("engines/census/tract.py", "from statrecon.engines.claims import model",
     "Engine families are independent"),
    # suppression may use intervals, and nothing else beside it
    ("engines/suppression/run.py", "from statrecon.engines.linear import problem",
     "Engine families are independent"),
    # the ignored edges go one way only: intervals may not use suppression
    ("engines/intervals/reach.py", "from statrecon.engines.suppression import run",
     "Engine families are independent"),
    # solvers import no family: the layers inside engines
    ("engines/solvers/modp.py", "from statrecon.engines.linear import problem",
     "Engines: solvers below every family"),
])
def test_the_engine_contracts_fail_when_families_meet(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str],
                                                      module: str, line: str,
                                                      contract: str) -> None:
    """The engine families' contracts are not vacuous: a copy where one family imports
    another (or a solver imports a family) breaks the contract that forbids it."""
    assert _lint_a_broken_copy(tmp_path, monkeypatch, module, line) == 1
    summary = " ".join(capsys.readouterr().out.split()).split(" dependencies. ")[1]
    verdicts = {name.strip(" -"): verdict for name, verdict in re.findall(
        r"(.+?) (KEPT|BROKEN)(?: \(\d+ ignored imports?\))?", summary.split("Contracts:")[0])}
    assert [v for name, v in verdicts.items() if name.startswith(contract)] == ["BROKEN"]
    assert verdicts["Layers: an import only goes down (docs/architecture.md)"] == "KEPT"


# claims, exact and linear keep a lazy __getattr__ table: the CLI reads the registries of claims
# and linear (formulations, estimators) at start-up and makes ExactOptions on every route, and
# an eager re-export would load OR-Tools, sqlglot and FLINT for `statrecon --help`
LAZY_FAMILIES = ("claims", "exact", "linear")


def test_every_engine_family_has_one_entry_point() -> None:
    """Each folder of ``engines/`` has the one ``__init__`` convention (docs/architecture.md):
    a docstring, explicit re-exports from the family's own modules and ``__all__``; no code."""
    import importlib

    families = sorted(p.parent for p in (PACKAGE / "engines").glob("*/__init__.py"))
    assert [f.name for f in families] == ["census", "ckm", "claims", "exact", "intervals",
                                          "linear", "solvers", "stream", "suppression"]
    for folder in families:
        if folder.name in LAZY_FAMILIES:
            continue
        tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), folder.name
        for node in tree.body[1:]:
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").startswith(f"statrecon.engines.{folder.name}."), \
                    f"{folder.name}: {ast.unparse(node)}"
            else:
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [getattr(node, "target", None)]
                assert [ast.unparse(t) for t in targets if t is not None] == ["__all__"], \
                    f"{folder.name}: {ast.unparse(node)}"
        module = importlib.import_module(f"statrecon.engines.{folder.name}")
        assert all(getattr(module, name) is not None for name in module.__all__)


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
    from statrecon.engines.claims.options import ClaimsOptions
    from statrecon.engines.linear import LinearOptions, LinearResult

    assert {"reconstruct", "ExactOptions", "LinearOptions", "LinearResult", "CensusOptions",
            "TractResult", "ClaimsOptions", "BlockClaims", "ReconstructionResult"
            } <= set(statrecon.__all__)
    assert (statrecon.LinearOptions, statrecon.LinearResult, statrecon.TractResult,
            statrecon.ClaimsOptions) == (LinearOptions, LinearResult, TractResult, ClaimsOptions)
    for name in statrecon.__all__:
        assert getattr(statrecon, name) is not None
