"""Cell key perturbation: ``ptable`` builds perturbation tables for counts by maximum
entropy, as sdcTools' ``ptable`` does (the tables themselves, their keys and the perturbation
are the domain's: ``statrecon.tables.ckm``)."""

from statrecon.engines.ckm.ptable import PTableParams, build_ptable, maximum_entropy, ptable_row

__all__ = ["PTableParams", "build_ptable", "maximum_entropy", "ptable_row"]
