"""Live notebook views of sessions, runs and results: `view(obj)` and `%load_ext sagents_nb`;
`token_rollup(obj)`, a run's tokens per node."""

from __future__ import annotations

from ._compare_view import ComparisonView, compare_view
from ._display import display_live, view
from ._magics import load_ipython_extension
from ._progress import sweep_progress
from ._save import save_html
from ._token_rollup import token_rollup
from ._waterfall import NodeTokens
from ._widget import LiveView

__all__ = [
    "ComparisonView",
    "LiveView",
    "NodeTokens",
    "compare_view",
    "display_live",
    "load_ipython_extension",
    "save_html",
    "sweep_progress",
    "token_rollup",
    "view",
]
