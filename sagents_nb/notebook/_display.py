"""`view(obj)` and `display_live(obj)`: the live view of a session, run or result."""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any

from ._widget import LiveView

if TYPE_CHECKING:
    from .. import Result, Run, Session

_reused: weakref.WeakValueDictionary[int, LiveView] = weakref.WeakValueDictionary()
"""Under marimo, the open view of each object shown (by its id), for the cell's next run."""


def view(
    obj: Session | Run | Result,
    *,
    preprocessors: dict[str, Any] | None = None,
    rate: float = 10.0,
) -> LiveView:
    """The live view of a session, run or result, as a widget.

    Args:
        obj: a `sn.Session` (follows its latest run), a `sn.Run` (shows and controls that run
            only: the session as of that run's end, and a note naming any later run) or a
            `sn.Result` (a finished run, without controls).
        preprocessors: more named preprocessors the session's selector offers, e.g.
            `{"mentions": sn.Mentions(docs)}`; `none` and every preprocessor the session has
            had (by name) are always offered.
        rate: front-end updates per second at most while a run streams; the last state is
            always sent, and a run's end and the answer to a click go out at once.

    Returns:
        A `LiveView` widget; display it, or leave it as a cell's last expression. Under marimo,
        which runs a cell again on every change, the same object with the same options gives
        the same open view again, so a re-run updates the view on screen instead of mounting
        a new one (Jupyter gets a new widget each call).
    """
    if not _in_marimo():
        return LiveView(obj, preprocessors=preprocessors, rate=rate)
    shown = _reused.get(id(obj))
    if (
        shown is not None
        and shown.comm is not None  # not closed
        and any(obj is t for t in (shown.target.session, shown.target.run, shown.target.result))
        and (shown.preprocessors, shown._rate) == (dict(preprocessors or {}), rate)
    ):
        return shown
    fresh = LiveView(obj, preprocessors=preprocessors, rate=rate)
    _reused[id(obj)] = fresh
    return fresh


def _in_marimo() -> bool:
    marimo = sys.modules.get("marimo")
    return marimo is not None and bool(marimo.running_in_notebook())


def display_live(obj: Session | Run | Result) -> None:
    """Display the live view of `obj` in the current cell's output."""
    from IPython.display import display

    display(view(obj))
