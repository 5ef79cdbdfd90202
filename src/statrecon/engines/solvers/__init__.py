"""The solvers every engine family stands on, one module each: ``cpsat`` (the one CP-SAT
factory, the monotonic ``Deadline``, status reading), ``highs`` (HiGHS over one LP, built once
and hot-started), ``modp`` (FLINT matrices modulo a prime, rational reconstruction).

Nothing is re-exported here: each module loads its own library (OR-Tools, scipy's HiGHS,
FLINT), so importing one loads none of the others. Import them by their paths.
"""

__all__: list[str] = []
