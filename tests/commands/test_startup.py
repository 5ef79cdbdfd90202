"""Start-up (issue 31, item 2): help loads no solver, sqlglot, DuckDB, pandas or pyarrow, and a
command loads only what its route uses. Each check runs in a fresh interpreter (a subprocess)
so that nothing another test imported counts; the timings are in
``benchmarks/bench_front_door.py`` (c) and BENCHMARKS.md."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

# what `statrecon --help` and `statrecon <command> --help` must leave unimported
HEAVY = ("sqlglot", "duckdb", "pandas", "pyarrow", "ortools", "scipy", "highspy", "flint",
         "matplotlib", "pydantic", "yaml", "dask", "distributed", "opendp", "statrecon.api",
         "statrecon.release", "statrecon.tables", "statrecon.census")

# every --help of the app, in one interpreter, then the heavy modules it loaded
_EVERY_HELP = """
import contextlib, io, json, sys
import typer
from statrecon import cli

def commands(group, path):
    for name, sub in group.commands.items():
        yield [*path, name]
        if hasattr(sub, "commands"):
            yield from commands(sub, [*path, name])

root = typer.main.get_command(cli.app)
seen = [[]] + list(commands(root, []))
for path in seen:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            root.main(args=[*path, "--help"], prog_name="statrecon", standalone_mode=False)
        except SystemExit:
            pass
    assert "Usage" in out.getvalue(), path
heavy = json.loads(sys.argv[1])
print(json.dumps({"commands": len(seen),
                  "loaded": [m for m in heavy if m in sys.modules]}))
"""

# a command run in-process (the real cli.main), then the heavy modules it loaded
_ONE_COMMAND = """
import contextlib, io, json, sys
from statrecon import cli
sys.argv = ["statrecon", *json.loads(sys.argv[1])]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main()
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.modules if "." not in m)}))
"""


def _fresh(code: str, arg: list[str] | tuple[str, ...]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code, json.dumps(list(arg))], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_no_help_loads_a_heavy_module() -> None:
    found = _fresh(_EVERY_HELP, HEAVY)
    assert found["loaded"] == []
    assert isinstance(found["commands"], int) and found["commands"] >= 20  # not vacuous


def test_the_exact_route_loads_no_linear_solver_or_duckdb() -> None:
    found = _fresh(_ONE_COMMAND, ["reconstruct", "examples/block.yaml"])
    assert found["code"] == 0
    loaded = set(found["loaded"])  # type: ignore[arg-type]
    assert "ortools" in loaded  # the route's own solver: the check below is not vacuous
    assert not loaded & {"scipy", "highspy", "flint", "duckdb", "matplotlib", "dask"}


def test_the_linear_route_loads_no_or_tools() -> None:
    """The linear route checks the exact route's size (``auto``) but never builds its model."""
    found = _fresh(_ONE_COMMAND, ["reconstruct", "examples/hospital.yaml"])
    assert found["code"] == 0
    loaded = set(found["loaded"])  # type: ignore[arg-type]
    assert "scipy" in loaded or "flint" in loaded  # the route's own solvers ran
    assert "ortools" not in loaded
