"""Writes firms.csv: 240 synthetic firms (no real one) with their county and municipality
(nested), their industry (a two-level code, see industry.hrc) and their turnover, for the
table spec spec.yaml (municipality within county x industry within section, turnover summed,
primary cells by the minimum-frequency, p% and dominance rules).
Run: python examples/tables/firms/generate.py"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

COUNTIES = {"North": ["N1", "N2", "N3"], "South": ["S1", "S2"]}
INDUSTRIES = ["A01", "A02", "C10", "C11", "C12", "G46", "G47"]


def main() -> None:
    rng = np.random.default_rng(7)
    municipalities = [m for ms in COUNTIES.values() for m in ms]
    county_of = {m: c for c, ms in COUNTIES.items() for m in ms}
    n = 240
    municipality = rng.choice(municipalities, n, p=[0.3, 0.2, 0.1, 0.25, 0.15])
    industry = rng.choice(INDUSTRIES, n, p=[0.1, 0.05, 0.2, 0.1, 0.05, 0.2, 0.3])
    turnover = np.round(rng.lognormal(3.0, 1.2, n)).astype(int) + 1
    frame = pd.DataFrame({"firm": [f"f{i:03d}" for i in range(n)],
                          "county": [county_of[m] for m in municipality],
                          "municipality": municipality, "industry": industry,
                          "turnover": turnover})
    frame.to_csv(Path(__file__).with_name("firms.csv"), index=False)


if __name__ == "__main__":
    main()
