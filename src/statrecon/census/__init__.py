"""Census domain data: SF1 person tables (cells, persons, releases) and housing units.

A regular package (it used to be a namespace package, which a built wheel would have left
out, and which made doctest collection import ``census/statistics.py`` as the standard
library's ``statistics``)."""
