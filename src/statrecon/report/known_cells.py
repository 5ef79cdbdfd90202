"""The audit of tables published within known sets (``runs/known_cells.py``: cell key
perturbation, rounding) as JSON and on the terminal, the same for every protection: per
cell its true value (the steward's view, never a publication), what was published, the
a-priori interval that allows, the proven LP and integer intervals, whether the equations
pin or narrow it, and the equations that do.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from rich.console import Console

from statrecon.report import safe_text
from statrecon.runs.known_cells import KnownCellsAudit
from statrecon.tables.values import show

MAX_SHOWN = 10


def number(value: int | Fraction | None) -> int | str | None:
    """A value for JSON: a whole number as an int, any other exactly as text."""
    if value is None or isinstance(value, int):
        return value
    return value.numerator if value.denominator == 1 else str(value)


def audit_json(checked: KnownCellsAudit, names: Sequence[str],
               values: Sequence[int | Fraction | None], published: Sequence[Any]) -> dict[str, Any]:
    """``--audit --json``'s ``audit``: per cell its name, true value, published value (None:
    not in the publication), a-priori interval, LP and integer intervals, pinned, narrowed,
    verdict and attack; the counts."""
    narrowed = {c.cell for c in checked.narrowed}
    cells = []
    for audit in checked.result.cells:
        low, high = checked.bounds[audit.cell]
        cells.append({
            "name": names[audit.cell], "value": number(values[audit.cell]),
            "published": published[audit.cell],
            "a_priori": [number(low), number(high)], "lp": audit.lp.to_json(),
            "integer": None if audit.integer is None else audit.integer.to_json(),
            "pinned": audit.verdict == "disclosed", "narrowed": audit.cell in narrowed,
            "verdict": audit.verdict, "attack": list(audit.attack.equations)})
    return {"attacker_knows": checked.knowledge, "cells": cells,
            "pinned": len(checked.pinned), "narrowed": len(narrowed),
            "unknown": len(checked.unknown),
            "elapsed_s": round(checked.result.elapsed_s, 6)}


def render_audit(checked: KnownCellsAudit, names: Sequence[str],
                 values: Sequence[int | Fraction | None], published: Sequence[Any],
                 console: Console, noun: str = "true counts") -> None:
    """How many true values the attacker pins or narrows, and the first pinned ones with
    the equations that pin them."""
    pinned = checked.pinned
    console.print(f"audit ({checked.knowledge} known): {len(pinned)} of "
                  f"{len(checked.result.cells)} {noun} pinned exactly, "
                  f"{len(checked.narrowed) - len(pinned)} more narrowed by the tables' "
                  f"equations, in {checked.result.elapsed_s:.2f} s", highlight=False)
    for audit in pinned[:MAX_SHOWN]:
        low, high = checked.bounds[audit.cell]
        equations = "; ".join(audit.attack.equations) or "its published value alone"
        seen = published[audit.cell]
        told = "not published" if seen is None else f"published {seen}"
        value = values[audit.cell]
        true = "?" if value is None else show(Fraction(value))
        console.print(f"  {safe_text(names[audit.cell])} = {true}"
                      f" ({told}, alone in [{show(Fraction(low))}"
                      f", {'inf' if high is None else show(Fraction(high))}]): proven by "
                      f"{safe_text(equations)}", highlight=False)
    if len(pinned) > MAX_SHOWN:
        console.print(f"  ... and {len(pinned) - MAX_SHOWN} more (--json lists every cell)")
    for what, cells in (("under-protected (their protection levels not covered)",
                         checked.under_protected),
                        ("unknown within the time limit", checked.unknown)):
        if cells:
            console.print(f"{len(cells)} {what}: "
                          + ", ".join(safe_text(names[c.cell]) for c in cells[:MAX_SHOWN])
                          + (" ..." if len(cells) > MAX_SHOWN else ""), highlight=False)
