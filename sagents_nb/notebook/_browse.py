"""`sn.browse(store)`: the sessions and forks a store holds, searchable, each opening its view."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import anywidget
import ipywidgets as widgets
import traitlets
from IPython.display import display

from .._base.errors import SagentsError
from .._runtime.agent import Agent
from .._runtime.catalog import SessionSummary, catalog
from .._runtime.costs import dollars
from .._runtime.session import Session
from ._display import view
from ._view_module import STATIC, view_module

if TYPE_CHECKING:
    from .._endpoints.openai import LLM


class SessionTable(anywidget.AnyWidget):
    """The table of a `SessionBrowser`: rows from `session_row`, searched and sorted in the
    front end; a click sends `{"type": "open", "id": ...}`."""

    _esm = view_module(shell="browse.js")
    _css = (STATIC / "browse.css").read_text(encoding="utf-8")

    rows: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    opened = traitlets.Unicode("").tag(sync=True)
    """The id of the session whose view is open below."""
    notice = traitlets.Unicode("").tag(sync=True)
    """What the last click did not manage (e.g. a store error), else empty."""


class SessionBrowser(widgets.VBox):  # type: ignore[misc]
    """A store's sessions in a table (`table`) and the view of the one last opened (`shown`).

    `sessions` holds the summaries; `show(id)` does what a click does and returns the reopened
    `sn.Session`. Build one with `sn.browse`.
    """

    def __init__(
        self,
        store: Any,
        *,
        agents: Agent | Iterable[Agent] = (),
        llm: LLM | None = None,
        prices: Any = None,
    ) -> None:
        self.store = store
        self.agents = {a.name: a for a in ([agents] if isinstance(agents, Agent) else agents)}
        self.llm = llm
        self.sessions: list[SessionSummary] = catalog(store, prices=prices)
        self.session: Session | None = None
        """The session opened last."""
        self.table = SessionTable(rows=[session_row(summary) for summary in self.sessions])
        self.shown = widgets.Output()
        self.table.on_msg(self._clicked)
        super().__init__([self.table, self.shown])

    def show(self, session_id: str) -> Session:
        """Reopen `session_id` with its agent from `agents` (a bare agent of its name when
        there is none: the session then shows, and resumes once given its agent) and show its
        view below the table."""
        stored = next((s for s in self.sessions if s.id == session_id), None)
        name = stored.agent if stored is not None else ""
        agent = self.agents.get(name) or Agent(name or "agent")
        session = Session.open(self.store, session_id, agent=agent, llm=self.llm)
        self.session = session
        self.shown.clear_output()
        with self.shown:
            display(view(session))
        self.table.opened = session_id
        self.table.notice = ""
        return session

    def _clicked(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "open":
            return
        try:
            self.show(str(content.get("id", "")))
        except SagentsError as exc:  # the store refused: say so in the table, keep it usable
            self.table.notice = f"could not open {content.get('id')}: {exc}"


def browse(
    store: Any,
    *,
    agents: Agent | Iterable[Agent] = (),
    llm: LLM | None = None,
    prices: Any = None,
) -> SessionBrowser:
    """The sessions and forks stored in `store` as a searchable table; a click opens one's view.

    Args:
        store: a store file's path, a `postgresql://` URL or a `sn.Store`.
        agents: the agents sessions were run with (matched by name), so an opened session can
            be resumed and sent to; without them a session opens to be looked at.
        llm: the endpoint an opened session resumes with.
        prices: prices for the cost column, as `sn.Session(prices=...)` takes them (the
            price table's otherwise).

    Returns:
        A `SessionBrowser`; display it, or leave it as a cell's last expression.
    """
    return SessionBrowser(store, agents=agents, llm=llm, prices=prices)


def session_row(summary: SessionSummary) -> dict[str, Any]:
    """One session as the table's front end shows and searches it (text already formatted)."""
    fork = ""
    if summary.parent is not None:
        fork = f"fork of {summary.parent} at #{summary.fork_seq}"
    cost = summary.cost
    if cost.usd is None:
        cost_text = cost.missing
    else:
        cost_text = dollars(cost.usd) + (" estimated" if cost.estimated_usd is not None else "")
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.started))
    words = " ".join([summary.id, summary.agent, summary.status, started, fork])
    return {
        "id": summary.id,
        "agent": summary.agent,
        "created": summary.started,
        "started": started,
        "runs": summary.runs,
        "status": summary.status,
        "tokens": summary.tokens,
        "tokens_text": f"{summary.tokens:,}",
        "cost": cost_text,
        "fork": fork,
        "search": _folded(words),
    }


def _folded(text: str) -> str:
    """Lower case without accents: the front end folds the query the same way."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()
