"""Generate the "bring your own workload" example: a clinical table of 160 patients whose
diastolic pressure and age are public, and 16 published AVG(sysbp) statistics over unions of
diastolic-pressure ranges, written as an outside attack generator would write them.

Sixteen patients (the only ones with diastolic pressure under 40) are covered by the
statistics; the other 144 are decoys no statistic touches. The statistics' 0/1 matrix over
the sixteen is invertible, so exact answers pin every one of them; published rounded to two
decimals (``decimals: 2``) they still do, rounded to whole numbers they do not.

Run from the repository root: ``python examples/workload/generate.py`` (seeded: the files it
writes are the ones shipped).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
N, TARGETS, LOW = 160, 16, 20  # targets have diastolic pressure LOW .. LOW + 15


def _ranges(members: list[int]) -> str:
    """The union of maximal runs of diastolic pressures, as a generator would print it."""
    runs: list[tuple[int, int]] = []
    for m in sorted(members):
        if runs and runs[-1][1] == m:
            runs[-1] = (runs[-1][0], m + 1)
        else:
            runs.append((m, m + 1))
    parts = [f"(diabp >= {LOW + a} AND diabp < {LOW + b})" for a, b in runs]
    return " OR ".join(parts)


def _pins_all(C: np.ndarray, decimals: int) -> bool:
    """Every target's certificate interval narrower than one (rounding to ``decimals``)."""
    inverse = np.linalg.inv(C)
    half = 0.5 * 10.0 ** -decimals
    width = np.abs(inverse) @ (C.sum(axis=1) * half)
    return bool(np.all(width < 0.5))


def main() -> None:
    rng = np.random.default_rng(2026)
    while True:  # an invertible design that 2 decimals still pin and 0 decimals do not
        C = (rng.random((TARGETS, TARGETS)) < 0.3).astype(int)
        C[np.arange(TARGETS), rng.permutation(TARGETS)] = 1
        if (abs(np.linalg.det(C)) > 0.5 and _pins_all(C, 2) and not _pins_all(C, 0)
                and C.sum(axis=1).min() >= 2):
            break
    diabp = np.concatenate([LOW + rng.permutation(TARGETS),
                            rng.integers(45, 111, N - TARGETS)])
    age = rng.integers(20, 91, N)
    sysbp = np.clip(np.round(rng.normal(125, 18, N)), 80, 220).astype(int)
    order = rng.permutation(N)
    diabp, age, sysbp = diabp[order], age[order], sysbp[order]
    with open(HERE / "vitals_public.csv", "w", encoding="utf-8") as f:
        f.write("diabp,age\n" + "".join(f"{d},{a}\n" for d, a in zip(diabp, age, strict=True)))
    with open(HERE / "vitals_truth.csv", "w", encoding="utf-8") as f:
        f.write("diabp,age,sysbp\n" + "".join(
            f"{d},{a},{s}\n" for d, a, s in zip(diabp, age, sysbp, strict=True)))
    lines = []
    for i, row in enumerate(C):
        members = [int(j) for j in np.flatnonzero(row)]
        rows = np.isin(diabp, [LOW + m for m in members])
        mean = Fraction(int(sysbp[rows].sum()), int(rows.sum()))
        sql = f"SELECT AVG(sysbp) FROM vitals WHERE {_ranges(members)}"
        lines.append(f"  - id: q{i + 1:02d}\n    sql: \"{sql}\"\n"
                     f"    value: {round(float(mean), 2)}\n    decimals: 2\n")
    (HERE / "vitals.yaml").write_text(
        "# 16 published means of systolic pressure over unions of diastolic-pressure ranges;\n"
        "# written by generate.py (an outside attack generator's output, rounded to 2 decimals)\n"
        "version: 1\nname: vitals\ntable: vitals\npublic: vitals_public.csv\ncolumns:\n"
        "  diabp: {type: integer, known: true}\n  age: {type: integer, known: true}\n"
        "  sysbp: {type: integer, min: 0, max: 100000}\nstatistics:\n" + "".join(lines),
        encoding="utf-8")


if __name__ == "__main__":
    main()
