"""Live notebook views of sessions, runs and results: `view(obj)` and `%load_ext sagents_nb`."""

from __future__ import annotations

from ._compare_view import ComparisonView, compare_view
from ._display import display_live, view
from ._magics import load_ipython_extension
from ._progress import sweep_progress
from ._widget import LiveView

__all__ = [
    "ComparisonView",
    "LiveView",
    "compare_view",
    "display_live",
    "load_ipython_extension",
    "sweep_progress",
    "view",
]
