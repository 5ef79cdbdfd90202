"""SF1 person tables: cells, microdata, tabulation, the release file, identities between cells."""
