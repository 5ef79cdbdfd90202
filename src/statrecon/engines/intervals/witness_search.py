"""Witness tables found by CP-SAT, for the cells that neither LP vertices (:mod:`.reach`) nor
small moves (:mod:`.moves`) could prove protected: one feasibility search per side a cell
still needs. Cheaper than the full audit's two optimisations and two refutations, and what
it finds is checked exactly like every other witness.
"""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from typing import cast

import numpy as np

from statrecon.engines.intervals.integer import ComponentModel, model_problem
from statrecon.engines.intervals.problem import Prepared
from statrecon.engines.intervals.reach import Board, Lattice, Reached, completes
from statrecon.engines.solvers.cpsat import Deadline, found, new_solver


def search(prep: Prepared, reached: dict[int, Reached], deadline: Deadline,
           per_solve: float = 1.0) -> None:
    """Extend ``reached`` (from :func:`.reach.targets` or :func:`.reach.reach`) with the
    completions CP-SAT finds: for each side a cell still needs, one feasibility search for
    the cell at or beyond that end (at most ``per_solve`` seconds). A completion found is
    checked exactly and kept for every cell it takes further; a search that finds nothing
    proves nothing (the cell keeps its full audit). The model's domains may be narrower
    than the truth allows: that can only hide witnesses, never make a false one."""
    cells = list(reached)
    out = reached
    by_comp: dict[int, list[Reached]] = {}
    for j in cells:
        by_comp.setdefault(prep.component_of[j], []).append(out[j])
    boards: dict[int, tuple[ComponentModel, Board] | None] = {}
    scale = prep.problem.scale
    for j in cells:
        if deadline.expired:  # a component's model alone is work in exact fractions
            break
        ci = prep.component_of[j]
        comp = prep.components[ci]
        if ci not in boards:
            model, board = _component_model(prep, ci), Board(prep, ci, by_comp[ci])
            boards[ci] = None if model is None or board.lattice is None else (model, board)
        got = boards[ci]
        if got is None:
            continue
        model, board = got
        lat = cast(Lattice, board.lattice)
        for side in ("up", "down"):
            r = out[j]
            up, down = r.wants()
            if deadline.expired or not (up if side == "up" else down):
                continue
            target = r.goal(side == "up")
            xi = _feasible(model, comp.local[j], target * scale, side == "up", deadline,
                           per_solve)
            if xi is not None and completes(lat, xi):
                board.record(xi)


def _component_model(prep: Prepared, ci: int) -> ComponentModel | None:
    """The component's CP-SAT model (shared with the full audit's cache), with a proven
    box when one is cached, else cells above the largest right-hand side left out of
    reach (witnesses only: a narrower domain hides completions, it invents none)."""
    key = ("cpsat", ci, threading.get_ident())
    if key in prep.cache:
        return cast(ComponentModel, prep.cache[key])
    comp, scale = prep.components[ci], prep.problem.scale
    box = prep.cache.get(("box", ci))
    truth = tuple(prep.problem.values[c] for c in comp.cells)
    if box is None:
        cap = max((abs(v) for v in comp.b), default=Fraction(0)) + 1
        box = tuple(h if h is not None else max(cap, lo, t) for h, lo, t in
                    zip(comp.hi, comp.lo, truth, strict=True))
    if model_problem(box, comp, scale) is not None:
        return None
    model = ComponentModel(comp, box, truth, scale)
    if ("box", ci) in prep.cache:
        prep.cache[key] = model  # a proven box: the full audit may use the same model
    return model


def _feasible(base: ComponentModel, j: int, target: Fraction, up: bool, deadline: Deadline,
              per_solve: float) -> np.ndarray | None:
    """CP-SAT's completion (integers times scale) with z_j at or beyond ``target``."""
    left = deadline.left()
    limit = per_solve if left is None else min(per_solve, left)
    model = base.model.clone()
    var = model.get_int_var_from_proto_index(base.z[j].index)
    model.add(var >= math.ceil(target) if up else var <= math.floor(target))
    solver = new_solver(left=limit)
    if not found(solver.solve(model)):
        return None
    return np.array([solver.value(v) for v in base.z], dtype=np.int64)


