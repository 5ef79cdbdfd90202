"""The one rational reconstruction (engines/solvers/modp.py ``reconstruct``): every fraction
small enough for the modulus comes back from its residue, modulo one prime (exact
determinability) or a product of two (the stream auditor's Chinese remainders); a residue
with no such fraction says so; the random primes are primes of 31 bits."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statrecon.engines.solvers.modp import PRIMES, random_prime, reconstruct

TWO = PRIMES[0] * PRIMES[1]  # below 2^62


@pytest.mark.parametrize("m", [101, PRIMES[0], TWO])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_small_fractions_come_back_from_their_residues(m: int, data: st.DataObject) -> None:
    bound = math.isqrt(m // 2)
    nums = data.draw(st.lists(st.integers(-bound, bound), min_size=1, max_size=20))
    dens = data.draw(st.lists(st.integers(1, bound), min_size=len(nums), max_size=len(nums)))
    fracs = [Fraction(n, d) for n, d in zip(nums, dens, strict=True)]
    fracs = [f for f in fracs if f.denominator <= bound]
    residues = np.array([f.numerator * pow(f.denominator, -1, m) % m for f in fracs],
                        dtype=np.int64)
    num, den, ok = reconstruct(residues, m)
    assert ok.all()
    assert [Fraction(int(a), int(b)) for a, b in zip(num, den, strict=True)] == fracs


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 100))
def test_what_comes_back_is_the_one_small_fraction_or_nothing(a: int) -> None:
    """Modulo 101 (bound 7), against every fraction n/d with |n|, d <= 7."""
    num, den, ok = reconstruct(np.array([a]), 101)
    small = {Fraction(n, d) for n in range(-7, 8) for d in range(1, 8)
             if n * pow(d, -1, 101) % 101 == a}
    if ok[0]:
        assert small == {Fraction(int(num[0]), int(den[0]))}
    else:
        assert not small


def test_a_modulus_that_int64_cannot_carry_is_refused() -> None:
    with pytest.raises(ValueError):
        reconstruct(np.array([1]), 2**62 + 1)


def test_random_primes_are_31_bit_primes_drawn_by_the_generator() -> None:
    rng = random.Random(7)
    drawn = [random_prime(rng) for _ in range(20)]
    assert all(2**30 < p < 2**31 and flint.fmpz(p).is_prime() for p in drawn)
    assert drawn == [random_prime(r) for r in [random.Random(7)] for _ in range(20)]
    assert len(set(drawn)) > 1
