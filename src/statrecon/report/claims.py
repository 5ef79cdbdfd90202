"""The terminal view of ``claims verify``: verified claims per block, what the work budget left
open, and an alarm when a verified claim fails in a true block. The claims themselves are in
the JSON only (they describe real housing units)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from statrecon.report import safe_text

if TYPE_CHECKING:  # the records' module loads with the run, not at CLI start-up
    from statrecon.runs.records import BlockRecord


def _markup(text: str) -> str:
    """A block id from a user's CSV, literal in Rich markup and without terminal escapes."""
    return escape(safe_text(text))


def render_blocks(records: list[BlockRecord], out: Console) -> None:
    """One row per block, then the open questions and any unsound claim."""
    table = Table(title="Generate-then-Verify: verified claims per block (trivial ones aside)")
    for name in ("block", "units", "status", "claims", "singletons", "max k (singleton)",
                 "negative", "negative open", "whole block", "seconds"):
        table.add_column(name, justify="left" if name in ("block", "status") else "right",
                         no_wrap=name == "block")  # a block id cut short names no block
    for r in records:
        nontrivial = r.nontrivial()
        single = [c.columns for c in nontrivial if c.singleton]
        table.add_row(_markup(r.block), str(r.households), r.status,
                      str(len(nontrivial)),
                      str(len(single)), str(max(single, default=0)),
                      str(sum(not c.trivial for c in r.negative_claims)),
                      str(r.negative_undecided),
                      "certain" if r.reconstructed else "-", f"{r.elapsed_s:.2f}")
    out.print(table)
    left_open = sum(r.negative_undecided for r in records)
    if left_open:
        out.print(f"{left_open:,} 'at least one' questions left open by the per-block work "
                  "budget (negative open): neither proven nor refuted.")
    unsound = [r.block for r in records if r.truth is not None and not r.truth.sound]
    if unsound:
        out.print(f"[red]UNSOUND: a verified claim fails in the true block "
                  f"{_markup(unsound[0])}[/red]")
    out.print("The claims themselves: --json (they describe real housing units).")
