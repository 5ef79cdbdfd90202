"""Convert SSBtools' example tables (R .RData) to compressed Parquet, once.

    pip install pyreadr
    python examples/tables/ssbtools/convert.py /path/to/ssb-ssbtools/data

Reads z1, z2, z3 and sosialFiktiv from the R package's data/ folder (statisticsnorway/
ssb-ssbtools, MIT licence) and writes <name>.parquet beside this script. R stores whole
numbers as doubles (``region`` 10100, ``ant`` 103): a numeric column whose every value is
whole becomes int64, so codes read back as "10100", not "10100.0". Text columns stay text.
pyreadr is needed only here, never by statrecon at run time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pyreadr

NAMES = ("z1", "z2", "z3", "sosialFiktiv")
HERE = Path(__file__).resolve().parent


def whole_numbers_as_integers(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.reset_index(drop=True)
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_float_dtype(values) and values.notna().all() \
                and (values == values.round()).all():
            frame[column] = values.astype("int64")
        elif pd.api.types.is_string_dtype(values):
            frame[column] = values.astype(str)
    return frame


def main(source: Path) -> None:
    for name in NAMES:
        frame = pyreadr.read_r(str(source / f"{name}.RData"))[name]
        frame = whole_numbers_as_integers(frame)
        target = HERE / f"{name}.parquet"
        frame.to_parquet(target, compression="zstd", index=False)
        print(f"{target.name}: {len(frame)} rows, columns "
              + ", ".join(f"{c} ({t})" for c, t in frame.dtypes.astype(str).items()))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/tables/ssbtools/convert.py /path/to/ssb-ssbtools/data")
    main(Path(sys.argv[1]))
