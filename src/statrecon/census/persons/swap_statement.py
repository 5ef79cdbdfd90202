"""The statement a swap publishes with its release (``census swap`` writes it as
``<stem>.swap.json``; ``census tabulate --swap-statement`` carries it into the release's
metadata): the method and its parameters, never the seed nor a record.

Read from a stranger (the file, or a release's metadata), so every field is checked: the
keys exactly those ``census swap`` writes, the rate a share, k a whole number, the levels
and variables names, and each message names the file and the field.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from statrecon import inputs
from statrecon.errors import StatreconError

METHOD = "targeted record swapping (as sdcMicro's recordSwap)"
UNITS = ("persons", "households")
GEOGRAPHIES = ("state", "county", "tract", "block")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
MAX_BYTES = 64_000  # a statement is a few hundred bytes
KEYS = ("method", "units", "swap_rate", "k_anonymity", "levels", "within", "risk_variables",
        "similarity_profiles", "preserved")


def check_statement(data: object) -> dict[str, Any]:
    """The statement, each field checked (``ValueError`` naming the field)."""
    if not isinstance(data, dict):
        raise ValueError("a swap statement is a JSON object")
    if set(data) != set(KEYS):
        missing, extra = sorted(set(KEYS) - set(data)), sorted(set(data) - set(KEYS))
        raise ValueError("fields " + "; ".join(filter(None, [
            f"missing: {', '.join(missing)}" if missing else "",
            f"not understood: {', '.join(_show(k) for k in extra)}" if extra else ""])))
    if data["method"] != METHOD:
        raise ValueError(f"method: {_show(data['method'])} is not {METHOD!r}")
    if data["units"] not in UNITS:
        raise ValueError(f"units: {_show(data['units'])}, not one of {', '.join(UNITS)}")
    rate = data["swap_rate"]
    if isinstance(rate, bool) or not isinstance(rate, int | float) \
            or not math.isfinite(rate) or not 0 <= rate <= 1:
        raise ValueError(f"swap_rate: {_show(rate)} is not a share in [0, 1]")
    k = data["k_anonymity"]
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 10**6:
        raise ValueError(f"k_anonymity: {_show(k)} is not a whole number in 0..1000000")
    levels = _names(data["levels"], "levels", GEOGRAPHIES)
    if not levels:
        raise ValueError("levels: none given")
    within = data["within"]
    if within is not None and within not in GEOGRAPHIES:
        raise ValueError(f"within: {_show(within)}, not one of {', '.join(GEOGRAPHIES)}")
    risk = _names(data["risk_variables"], "risk_variables")
    profiles = data["similarity_profiles"]
    if not isinstance(profiles, list) or not profiles or len(profiles) > 20:
        raise ValueError("similarity_profiles: a list of 1 to 20 lists of variable names")
    similar = [_names(p, f"similarity_profiles[{i}]") for i, p in enumerate(profiles)]
    preserved = data["preserved"]
    if not isinstance(preserved, list) or len(preserved) > 20 or not all(
            isinstance(s, str) and len(s) <= 200 and s.isprintable() for s in preserved):
        raise ValueError("preserved: a list of at most 20 printable sentences")
    return {"method": METHOD, "units": data["units"], "swap_rate": rate, "k_anonymity": k,
            "levels": levels, "within": within, "risk_variables": risk,
            "similarity_profiles": similar, "preserved": list(preserved)}


def read_statement(path: Path) -> dict[str, Any]:
    """A ``.swap.json`` file through the gate of small JSON files from strangers, checked."""
    data = inputs.read_json(path, "swap statement", limit=MAX_BYTES)
    try:
        return check_statement(data)
    except ValueError as e:
        raise StatreconError(f"{path}: not a swap statement as census swap writes it: "
                             f"{e}") from None


def describe(statement: dict[str, Any]) -> str:
    """The statement in one sentence."""
    k = statement["k_anonymity"]
    at_risk = f", and every unit counted below {k} in its area" if k else ""
    return (f"targeted record swapping of {statement['swap_rate']:.1%} of the "
            f"{statement['units']}{at_risk}")


def _names(value: object, field: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    if not isinstance(value, list) or len(value) > 40:
        raise ValueError(f"{field}: a list of at most 40 names")
    for name in value:
        if not isinstance(name, str) or not NAME.fullmatch(name) or (
                allowed is not None and name not in allowed):
            what = f"one of {', '.join(allowed)}" if allowed else "a variable name"
            raise ValueError(f"{field}: {_show(name)} is not {what}")
    return list(value)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
