"""Cell key perturbation: ``ptable`` builds perturbation tables for counts by maximum
entropy, as sdcTools' ``ptable`` does (the tables themselves, their keys and the perturbation
are the domain's: ``statrecon.tables.ckm``); ``posterior`` gives each true count's posterior
behind a perturbed publication (exact by enumeration, else sampled by ``chain``)."""

from statrecon.engines.ckm.posterior import (
    CellPosterior,
    PosteriorOptions,
    posteriors,
    ranking,
)
from statrecon.engines.ckm.ptable import (
    MAX_D,
    PTableParams,
    build_ptable,
    maximum_entropy,
    ptable_row,
)

__all__ = ["MAX_D", "CellPosterior", "PTableParams", "PosteriorOptions", "build_ptable",
           "maximum_entropy", "posteriors", "ptable_row", "ranking"]
