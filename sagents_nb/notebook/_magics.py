"""`%load_ext sagents_nb`: the `%sagents_view` magic."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import Result, Run, Session


def load_ipython_extension(ipython: Any) -> None:
    """Register `%sagents_view [expression]` on `ipython`."""

    def sagents_view(line: str) -> None:
        """Show the live view of `expression` (a session, run or result), or of the most
        recent run of the sessions, runs and results in the notebook's namespace."""
        from ._display import display_live

        expression = line.strip()
        target = ipython.ev(expression) if expression else latest(list(ipython.user_ns.values()))
        if target is None:
            print(
                "%sagents_view found no sagents_nb session in this notebook; create one with "
                "sn.Session(agent, llm=...) and send it a message, or name one: %sagents_view s"
            )
            return
        display_live(target)

    ipython.register_magic_function(sagents_view, "line", "sagents_view")


def latest(candidates: Iterable[Any]) -> Session | Run | Result | None:
    """The run (or result) among `candidates`, and their sessions, that changed last."""
    sessions: dict[int, Session] = {}
    results: list[Result] = []
    for value in candidates:
        if isinstance(value, Session):
            sessions[id(value)] = value
        elif isinstance(value, Run):
            sessions[id(value.session)] = value.session
        elif isinstance(value, Result):
            results.append(value)
    best: tuple[float, Session | Run | Result] | None = None
    for session in sessions.values():
        events = session.events
        when = events[-1].ts if events else 0.0
        if best is None or when > best[0]:
            best = (when, session.last_run or session)
    for result in results:
        when = result.events[-1].ts if result.events else 0.0
        if best is None or when > best[0]:
            best = (when, result)
    return best[1] if best is not None else None
