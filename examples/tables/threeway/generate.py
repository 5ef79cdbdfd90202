"""Writes threeway.csv: a 3-way frequency table (a x b x c, totals included) of 60 synthetic
people, cells with 1 or 2 people primary, and about a third of the other cells suppressed at
random as secondaries: a pattern where the LP bounds of some cells are fractions, so the
integer audit proves more than the LP audit of tau-Argus or sdcTable. Synthetic, no real
person. Run: python examples/tables/threeway/generate.py"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from statrecon.tables import CellStatus, TableSet
from statrecon.tables.frames import to_frame
from statrecon.tables.rules import MinFrequency, TableSpec, table_from_microdata


def main() -> None:
    rng = np.random.default_rng(11)
    people = pd.DataFrame({v: rng.choice(list(codes), 60)
                           for v, codes in (("a", "pqr"), ("b", "xyz"), ("c", "uvw"))})
    tables = TableSet((table_from_microdata(people, TableSpec(variables=["a", "b", "c"]),
                                            [MinFrequency(2)]),))
    extra = {k: CellStatus.SECONDARY for k, c in zip(tables.keys(), tables.cells(), strict=True)
             if c.status is CellStatus.SAFE and rng.random() < 0.35}
    frame = to_frame(tables.with_statuses(extra).tables[0])
    frame.to_csv(Path(__file__).with_name("threeway.csv"), index=False)


if __name__ == "__main__":
    main()
