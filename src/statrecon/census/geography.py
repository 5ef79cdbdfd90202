"""Census geography, once: a block GEOID is state (2) county (3) tract (6) block (4) digits,
so its tract and state are prefixes of it."""

from __future__ import annotations

import re

GEOID_LENGTH = 15  # a block: state 2, county 3, tract 6, block 4
TRACT_LENGTH = 11  # state, county, tract
STATE_LENGTH = 2
BLOCK_GEOID = re.compile(r"[0-9]{15}")  # ASCII digits only (\d also matches other scripts)


def tract_of(block: str) -> str:
    """The tract GEOID of a block GEOID (its first 11 digits)."""
    return block[:TRACT_LENGTH]


def state_of(block: str) -> str:
    """The state FIPS code of a block (or tract) GEOID (its first 2 digits)."""
    return block[:STATE_LENGTH]
