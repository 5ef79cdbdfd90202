"""The solvers every engine family stands on, one module each: ``cpsat`` (the one CP-SAT
factory, the monotonic ``Deadline``, status reading), ``highs`` (the one HiGHS wrapper: an LP
or MIP from sparse arrays, or one LP built once and hot-started; one answer type),
``worker`` (the killable process that holds a solve to its time limit), ``modp`` (FLINT
matrices modulo a prime, rational reconstruction, the primes), ``elimination`` (the
incremental sparse elimination, modulo a prime or exact) and ``propagation`` (exact bound
propagation over integer rows).

Nothing is re-exported here: each module loads its own library (OR-Tools, scipy's HiGHS,
FLINT; ``worker``, ``elimination`` and ``propagation`` none but numpy/scipy), so importing
one loads none of the others. Import them by their paths.
"""

__all__: list[str] = []
