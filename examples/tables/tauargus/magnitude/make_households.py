"""Write statrecon's synthetic household savings microdata and their tau-Argus metadata,
beside this script: ``households.csv`` (free format, ``;`` between fields, no header),
``households.rda`` (``<SEPARATOR> ";"``), and the hierarchies ``area.hrc`` and
``tenure.hrc``. Every file is statrecon's own (MIT), the same on every run (a seeded
generator from the standard library); a test checks that the files in the repository are
what this script writes:

    python examples/tables/tauargus/magnitude/make_households.py

The fields, in order: Area (``1`` to ``6``, under ``North`` and ``South`` in ``area.hrc``),
Tenure (``owner``, ``renter``, ``social``, ``other``, six characters wide: a shorter code is
padded on the left, as ``tenure.hrc`` writes it; ``renter`` and ``social`` under
``rented``), Members (persons in the household), Savings (two decimals, some zero), Weight
(one decimal), Key (a record key in [0, 1), eight decimals, as the cell-key method reads
one). Social tenants are rare in two areas and a few households hold most of the savings of
their cell, so the frequency, p% and dominance rules each find unsafe cells.
"""

from __future__ import annotations

import random
from pathlib import Path

RECORDS = 1500
SEED = 7311
TENURES = {"owner": 55, "renter": 30, "social": 10, "other": 5}
RARE = {"5", "6"}  # areas with (almost) no social housing

RDA = """<SEPARATOR> ";"
Area 1
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERCODELIST> "area.hrc"
  <HIERLEADSTRING> "@"
Tenure 6
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERCODELIST> "tenure.hrc"
  <HIERLEADSTRING> "@"
Members 1
  <NUMERIC>
Savings 9
  <NUMERIC>
  <DECIMALS> 2
Weight 5
  <WEIGHT>
  <DECIMALS> 1
Key 10
  <RECORDKEY>
  <DECIMALS> 8
"""
AREA_HRC = """North
@1
@2
@3
South
@4
@5
@6
"""
TENURE_HRC = """ owner
rented
@renter
@social
 other
"""


def record(rng: random.Random) -> str:
    area = str(rng.randint(1, 6))
    tenure = rng.choices(list(TENURES), weights=list(TENURES.values()))[0]
    if tenure == "social" and area in RARE and rng.random() < 0.9:
        tenure = "renter"
    members = min(6, 1 + int(rng.expovariate(0.7)))
    rich = rng.random() < 0.01
    savings = 0.0 if rng.random() < 0.12 else \
        rng.lognormvariate(8, 1.1) * (60 if rich else 1)
    savings = min(savings, 999_999.99)
    weight = rng.randint(50, 3000) / 10
    key = rng.randrange(100_000_000) / 100_000_000
    return f"{area};{tenure};{members};{savings:.2f};{weight:.1f};{key:.8f}"


def main() -> Path:
    rng = random.Random(SEED)
    folder = Path(__file__).parent
    for name, text in (("households.rda", RDA), ("area.hrc", AREA_HRC),
                       ("tenure.hrc", TENURE_HRC)):
        (folder / name).write_text(text, encoding="ascii")
    path = folder / "households.csv"
    path.write_text("".join(record(rng) + "\n" for _ in range(RECORDS)), encoding="ascii")
    return path


if __name__ == "__main__":
    print(main())
