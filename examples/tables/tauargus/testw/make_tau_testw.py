"""Write ``tau_testW.asc``: synthetic enterprise microdata in exactly the fixed-width layout of
tau-Argus's ``Tau_TestW.rda`` (tau-Argus's own ``tau_testW.asc`` is not in its public
repository's snapshot). Run from anywhere; the file is written beside this script and is
the same on every run (a seeded generator from the standard library):

    python examples/tables/tauargus/testw/make_tau_testw.py

Layout (positions counted from 1, as the .rda gives them): Year 1-2, IndustryCode 4-8 (five
digits, a hierarchy by digits 3 1 1), Size 9-10, Region 12-13 (``region2.hrc``'s codes 1 to
12), Wgt 15-18 (one decimal), Var1 19-27, Var2 28-37 (two decimals), Var3 to Var8 38-97,
Request 99 (``1``, ``2`` or blank). A few records carry the missing codes of Size and Region
(99); none that of IndustryCode (99999): tau-Argus's engine (pytauargus 0.6.0, the peer
these data are checked against) crashes on a missing code of a hierarchy by digits.
Turnover-like values are skewed, so that a few enterprises dominate some cells.
"""

from __future__ import annotations

import random
from pathlib import Path

RECORDS = 1200
SEED = 2018
# industry codes: 5 digits, grouped 3 + 1 + 1; IndCode2.grc closes 142, 1500 and 1512
INDUSTRIES = ("14211", "14212", "14221", "14229", "14290", "15001", "15002", "15009",
              "15121", "15122", "15130", "15510", "15811", "15812", "17110", "17211",
              "17212", "18100")


def record(rng: random.Random) -> str:
    industry = rng.choice(INDUSTRIES)
    size = 99 if rng.random() < 0.01 else min(9, 1 + int(rng.expovariate(0.45)))
    region = 99 if rng.random() < 0.01 else rng.randint(1, 12)
    weight = rng.randint(10, 999) / 10
    scale = 10 ** (min(size, 9) / 4)
    turnover = min(rng.lognormvariate(0, 1.2) * scale * 1000, 9_999_999.99)
    values = [min(rng.lognormvariate(0, 1) * scale * 100, 999_999_999) for _ in range(6)]
    request = rng.choices(["1", "2", " "], weights=[3, 2, 95])[0]
    fields = [
        f"{rng.randint(15, 19):02d}", " ", industry, f"{size:>2}", " ", f"{region:>2}", " ",
        f"{weight:>4.1f}", f"{round(turnover / 7):>9d}", f"{turnover:>10.2f}",
        *(f"{round(v):>10d}" for v in values), " ", request,
    ]
    line = "".join(fields)
    assert len(line) == 99, line
    return line


def main() -> Path:
    rng = random.Random(SEED)
    path = Path(__file__).with_name("tau_testW.asc")
    path.write_text("".join(record(rng) + "\n" for _ in range(RECORDS)), encoding="ascii")
    return path


if __name__ == "__main__":
    print(main())
