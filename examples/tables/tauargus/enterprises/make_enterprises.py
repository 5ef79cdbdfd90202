"""Write statrecon's synthetic enterprise microdata and their tau-Argus metadata, beside this
script: ``enterprises.asc`` (fixed width), ``enterprises.rda`` (its layout), ``size.grc`` and
``size.cdl`` (a recode of the size classes and its labels) and ``activity.grc`` (a
``<TREERECODE>`` of the activity codes). Every file is statrecon's own (MIT), the same on
every run (a seeded generator from the standard library); a test checks that the files in
the repository are what this script writes:

    python examples/tables/tauargus/enterprises/make_enterprises.py

``region2.hrc`` and ``region.cdl`` beside them are tau-Argus's region hierarchy and labels
(sdcTools/tauargus ``data/``, EUPL-1.2), kept as they are in ``examples/tables/tauargus/``.

Layout (positions counted from 1, as the .rda gives them): Year 1-4; Activity 6-10, five
digits, a hierarchy by digits ``<HIERLEVELS> 2 1 2`` (division, group, class); Size 12-13
(classes 1 to 9); Region 15-16 (``region2.hrc``'s codes 1 to 12); Weight 18-22 (one
decimal); Turnover 23-33 (two decimals); Employees 34-39; Wages 40-49; Exports 50-59; Request
61 (``1``, ``2`` or blank: the enterprise asked for protection). A few records carry the
missing code of Size or Region (99); none that of Activity (99999): tau-Argus's engine
(pytauargus 0.6.0, the peer these data are checked against) crashes on a missing code of a
hierarchy by digits. Turnover grows with the size class and is skewed, so a few enterprises
dominate some cells; some activities are rare, so some cells have few enterprises.
"""

from __future__ import annotations

import random
from pathlib import Path

RECORDS = 1500
SEED = 20240611
# activity classes: five digits, grouped 2 + 1 + 2; their weights make some of them rare
ACTIVITIES = {"10110": 6, "10120": 3, "10511": 4, "10520": 1, "11010": 2, "11050": 1,
              "45110": 8, "45190": 2, "45200": 6, "47110": 12, "47190": 5, "47410": 2,
              "47420": 1, "56101": 10, "56102": 4, "56210": 3, "62010": 9, "62020": 4}

RDA = """Year 1 4 9999
  <RECODEABLE>
  <DISTANCE> 1 2 3 4 5
Activity 6 5 99999
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERLEVELS> 2 1 2 0 0
Size 12 2 99
  <RECODEABLE>
Region 15 2 99
  <RECODEABLE>
  <CODELIST> "region.cdl"
  <HIERARCHICAL>
  <HIERCODELIST> "region2.hrc"
  <HIERLEADSTRING> "@"
Weight 18 5
  <WEIGHT>
  <DECIMALS> 1
Turnover 23 11 99999999999
  <NUMERIC>
  <DECIMALS> 2
Employees 34 6 999999
  <NUMERIC>
Wages 40 10
  <NUMERIC>
Exports 50 10
  <NUMERIC>
Request 61 1
  <REQUEST> "1" "2"
"""
# size classes 1-4 into 1, 5 and 6 into 5; 7, 8 and 9 keep their codes
SIZE_GRC = """1: 1-4
5: 5, 6
"""
SIZE_CDL = """1,fewer than 20 employees
5,20 to 49 employees
7,50 to 99 employees
8,100 to 249 employees
9,250 employees or more
"""
# close division 10 (manufacture of food), group 451 (sale of motor vehicles) and division
# 62 (programming): each becomes a bottom code
ACTIVITY_GRC = """<TREERECODE>
10
451
62
"""


def record(rng: random.Random) -> str:
    activity = rng.choices(list(ACTIVITIES), weights=list(ACTIVITIES.values()))[0]
    size = 99 if rng.random() < 0.01 else min(9, 1 + int(rng.expovariate(0.5)))
    region = 99 if rng.random() < 0.01 else rng.randint(1, 12)
    weight = rng.randint(10, 2500) / 10
    scale = 2 ** min(size, 9)
    turnover = min(rng.lognormvariate(0, 1.4) * scale * 250, 99_999_999.99)
    employees = min(round(scale * rng.uniform(1.5, 3)), 99_999)
    wages = round(employees * rng.uniform(20_000, 60_000) / 100)
    exports = round(turnover * rng.choice([0, 0, 0.1, 0.4]))
    request = rng.choices(["1", "2", " "], weights=[2, 1, 97])[0]
    line = (f"{rng.randint(2021, 2024)} {activity} {size:>2} {region:>2} {weight:>5.1f}"
            f"{turnover:>11.2f}{employees:>6d}{wages:>10d}{exports:>10d} {request}")
    assert len(line) == 61, line
    return line


def main() -> Path:
    rng = random.Random(SEED)
    folder = Path(__file__).parent
    for name, text in (("enterprises.rda", RDA), ("size.grc", SIZE_GRC),
                       ("size.cdl", SIZE_CDL), ("activity.grc", ACTIVITY_GRC)):
        (folder / name).write_text(text, encoding="ascii")
    path = folder / "enterprises.asc"
    path.write_text("".join(record(rng) + "\n" for _ in range(RECORDS)), encoding="ascii")
    return path


if __name__ == "__main__":
    print(main())
