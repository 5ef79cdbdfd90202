"""Figures for every report and experiment, drawn one way: Agg, without pyplot."""

from __future__ import annotations

from typing import Any, Literal

Layout = Literal["constrained", "tight"] | None


def agg_figure(ncols: int, width: float, height: float, *,
               layout: Layout = "constrained") -> tuple[Any, list[Any]]:
    """A figure of ``ncols`` panels (each ``width`` x ``height`` inches) on its own Agg canvas:
    no global backend (``matplotlib.use``), no GUI, safe in threads and workers."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height), layout=layout)
    FigureCanvasAgg(fig)
    return fig, list(fig.subplots(1, ncols, squeeze=False)[0])
