"""The command-line reference, generated from the Typer app (``statrecon.cli.app``).

``markdown()`` walks every command of the app, as Click sees it after Typer built it, and
writes one section per command: what it does (its help), its usage line, a table of every
argument and option with its type, default and help, and its exit codes. The mkdocs hook
(``docs/hooks/site.py``) writes it as ``reference/cli.md`` at build time; nothing of it is
kept in the repository, so it cannot fall behind the app.

Exit codes: every command shares ``COMMON_EXIT_CODES`` (``statrecon.exitcodes``);
``EXIT_CODES`` says which of the others (2 infeasible, 3 unknown, 4 unprotected) each command
can give. ``tests/test_docs.py`` fails when a command has no entry there, no help, or an
option without help.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

COMMON_EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "a user error: one line on stderr naming the file, line, statistic or option",
    70: "an internal error (a bug in statrecon): the traceback and a request to report it",
    130: "interrupted (Ctrl-C or SIGTERM); finished units of a run are kept",
}

# The exit codes a command gives besides COMMON_EXIT_CODES, with what each means there.
EXIT_CODES: dict[str, dict[int, str]] = {
    "reconstruct": {2: "infeasible: no dataset fits the release (a smallest conflicting set "
                       "of statistics is named)",
                    3: "unknown: the time limit ran out; nothing is claimed"},
    "tabulate": {},
    "audit-stream": {2: "the statistics contradict each other"},
    "examples": {},
    "tables audit": {2: "--ptable: a published value the ptable cannot produce from any "
                        "count, or no additive tables within what the published values "
                        "allow: the release is inconsistent with its ptable",
                     3: "some suppressed cell is unknown within the time limit",
                     4: "some suppressed cell is disclosed or under-protected (--ptable: "
                        "some true count pinned)"},
    "tables protect": {2: "no pattern protects some primary cell (proven over the cells "
                          "that may be suppressed)",
                       3: "no pattern found within the time limit (nothing written)"},
    "tables perturb": {4: "with --audit: the audit pins some true count"},
    "tables round": {2: "--method controlled: no controlled rounding exists (CP-SAT proves "
                        "it; the equations that admit none are named); nothing written",
                     3: "--method controlled: none found within the time limit; nothing "
                        "written",
                     4: "with --audit: the audit pins some true value, or leaves a primary "
                        "cell under-protected"},
    "tables ptable": {},
    "experiment dinur-nissim": {},
    "experiment diffix": {},
    "experiment dp-census": {},  # tracts and blocks cut short are counted in its output
    "experiment protections": {},  # blocks cut short claim nothing, counted in its rows
    "census tabulate": {},
    "census swap": {},
    "census reconstruct": {2: "the tables of a tract contradict each other (conflicting "
                              "cells named)",
                           3: "some tract is unknown within its time limit"},
    "census certain": {3: "the time limit ran out (blocks cut short claim nothing)"},
    "census block-release": {},
    "census compare": {},
    "census report": {},
    "claims generate-blocks": {},
    "claims check-households": {},
    "claims verify": {2: "the block's tables contradict each other (cells named)",
                      3: "some block is unknown within its time limit"},
    "claims tabulate": {},
    "claims experiment": {3: "some block is unknown within its time limit"},
    "claims block-release": {},
}


@dataclass(frozen=True)
class Param:
    """One argument or option as the reference shows it."""

    names: str  # "--out <path>", "--all", "--integer / --no-integer", "release <path>"
    kind: str  # "argument" or "option"
    default: str  # "required", "off", "10000", "–" (none)
    help: str  # the help text, without Click's "[default: ...]" suffix
    constraint: str  # "x>=1", a choice list..., or ""


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]  # ("tables", "audit")
    help: str
    usage: str
    params: tuple[Param, ...]

    @property
    def name(self) -> str:
        return " ".join(self.path)


def _root() -> tuple[Any, Any]:
    import typer
    from typer.main import get_command

    from statrecon.cli import app

    root = get_command(app)
    context_type = type(typer.Context(root))  # the Click context class Typer uses
    return root, context_type(root, info_name="statrecon")


def _walk(command: Any, path: tuple[str, ...], ctx: Any) -> Iterator[tuple[tuple[str, ...],
                                                                         Any, Any]]:
    if hasattr(command, "list_commands"):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            yield from _walk(sub, (*path, name), type(ctx)(sub, info_name=name, parent=ctx))
    else:
        yield path, command, ctx


_SUFFIX = re.compile(r"\s*\[([^\[\]]*)\]\s*$")


def _param(param: Any, ctx: Any) -> Param | None:
    if getattr(param, "hidden", False):
        return None
    record = param.get_help_record(ctx)
    if record is None:
        return None
    names, text = record
    constraint = ""
    found = _SUFFIX.search(text)
    if found:
        text = text[:found.start()]
        kept = [p.strip() for p in found.group(1).split(";")
                if not p.strip().startswith(("default:", "required"))]
        constraint = "; ".join(k for k in kept if k)
    return Param(names, "argument" if type(param).__name__.endswith("Argument") else "option",
                 _default(param), text.strip(), constraint)


def _default(param: Any) -> str:
    if param.required:
        return "required"
    value = param.default
    if getattr(param, "is_flag", False):
        secondary = getattr(param, "secondary_opts", None)
        if secondary:
            return param.opts[0] if value else secondary[0]
        return "on" if value else "off"
    if value is None or value == ():
        return "–"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return str(value)


def commands() -> list[Command]:
    """Every command of the app, in the order ``statrecon --help`` lists them."""
    root, ctx = _root()
    found = []
    for path, command, cctx in _walk(root, (), ctx):
        params = tuple(p for p in (_param(x, cctx) for x in command.params) if p is not None)
        usage = command.get_usage(cctx).removeprefix("Usage: ").strip()
        found.append(Command(path, (command.help or "").strip(), usage, params))
    return found


def _text(text: str) -> str:
    """Help text as Markdown: HTML-escaped (``<SAFETYRULE>`` stays text), no table breaks,
    no stray emphasis; `code` spans kept."""
    out = html.escape(text, quote=False).replace("|", "\\|").replace("*", "\\*")
    return re.sub(r"\s*\n\s*", " ", out)


def _paragraphs(text: str) -> list[str]:
    return [_text(p) for p in re.split(r"\n\s*\n", text.replace("\b", "")) if p.strip()]


def _section(command: Command) -> list[str]:
    lines = [f"## statrecon {command.name}", ""]
    for paragraph in _paragraphs(command.help):
        lines += [paragraph, ""]
    lines += ["```text", command.usage, "```", ""]
    if command.params:
        lines += ["| argument or option | default | what it does |", "|---|---|---|"]
        for p in command.params:
            what = _text(p.help) or "–"
            if p.constraint:
                what += f" ({_text(p.constraint)})"
            default = p.default if p.default in ("required", "on", "off", "–") \
                else f"`{p.default}`"
            lines.append(f"| `{p.names}` | {default} | {what} |")
        lines.append("")
    codes = {**COMMON_EXIT_CODES, **EXIT_CODES.get(command.name, {})}
    lines += ["Exit codes: " + "; ".join(f"**{code}** {_text(codes[code])}"
                                         for code in sorted(codes)) + ".", ""]
    return lines


def markdown() -> str:
    """The whole reference page."""
    from statrecon import __version__

    found = commands()
    lines = [
        "# Command-line reference",
        "",
        f"Generated from the command-line app of statrecon {__version__} when this site "
        "was built: every command, argument and option with its default, and the exit codes "
        "each command gives. `statrecon COMMAND --help` prints the same on the terminal.",
        "",
        "Every command exits with "
        + "; ".join(f"**{c}** {m}" for c, m in COMMON_EXIT_CODES.items())
        + ". The codes a command adds are listed under it.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    for command in found:
        first = _paragraphs(command.help)[0] if command.help else ""
        anchor = "statrecon-" + "-".join(command.path)
        lines.append(f"| [`statrecon {command.name}`](#{anchor}) | {first} |")
    lines.append("")
    for command in found:
        lines += _section(command)
    return "\n".join(lines)
