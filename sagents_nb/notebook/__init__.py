"""Live notebook views of sessions, runs and results: `view(obj)` and `%load_ext sagents_nb`."""

from __future__ import annotations

from ._display import display_live, view
from ._magics import load_ipython_extension
from ._widget import LiveView

__all__ = ["LiveView", "display_live", "load_ipython_extension", "view"]
