"""What the front door needs from the linear family to choose a route and compile for it,
loaded only when it is called: the plan (is the release linear in one secret column of the
public table's rows, and why not), the secret column, and the compiled system. Importing the
family stays as light as the CLI's start-up needs (no scipy until a release is compiled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from statrecon.engines.linear.model import LinearPlan, LinearSystem
    from statrecon.release.known import PublicTable
    from statrecon.release.model import Release
    from statrecon.release.schema import Column


def plan(release: Release, public: PublicTable | None) -> tuple[LinearPlan | None, str | None]:
    """The release's linear plan, or None and why it is not linear."""
    # lazy: the compiler (scipy) loads only when a release is routed
    from statrecon.engines.linear.model import linear_plan

    return linear_plan(release, public)


def secret(release: Release) -> Column:
    """The one secret column a linear release reconstructs."""
    # lazy: as above
    from statrecon.engines.linear.model import secret_column

    return secret_column(release)


def compile_system(release: Release, public: PublicTable, bounds: Any = None, *,
                   max_cells: int | None = None, linear_plan: LinearPlan | None = None
                   ) -> LinearSystem:
    """The linear system of the release over the public table's rows."""
    # lazy: as above
    from statrecon.engines.linear.model import compile_linear

    return compile_linear(release, public, bounds, max_cells=max_cells, plan=linear_plan)
