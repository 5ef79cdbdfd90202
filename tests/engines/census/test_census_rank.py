"""The copy scores of the census ranking, counted by hand."""

from __future__ import annotations

import numpy as np

from statrecon.engines.census.rank import copy_scores


def test_copy_j_scores_the_samples_with_at_least_j() -> None:
    first = np.array([2, 0, 1, 3])
    samples = [np.array([2, 1, 0, 3]), np.array([1, 0, 1, 1]), np.array([0, 4, 1, 2]),
               np.array([2, 0, 0, 0])]
    # variable 0, copies 1 and 2: >=1 in 3 of 4, >=2 in 2; variable 2: >=1 in 2;
    # variable 3, copies 1-3: >=1 in 3, >=2 in 2, >=3 in 1
    expected = [3 / 4, 2 / 4, 2 / 4, 3 / 4, 2 / 4, 1 / 4]
    assert np.allclose(copy_scores(first, samples), expected)
    assert np.isnan(copy_scores(first, [])).all() and len(copy_scores(first, [])) == 6
