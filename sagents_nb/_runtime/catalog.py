"""What a store holds, a line a session: who ran it, when, how many runs, how it stands, what it
used and cost, read from a few fields of its events (what `sn.browse` lists)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._base.messages import Usage
from .._base.prices import PriceBook, checked_prices
from .._store.protocol import EventRow, SkimmingStore, Store, StoredSession
from .._store.resolve import resolve_store
from .costs import Cost, NodeSpend, priced

TYPES = (
    "run_started",
    "run_finished",
    "paused",
    "resumed",
    "model_request",
    "model_response",
    "harness_event",
)
"""The events a summary reads."""

FIELDS = {
    "status": "$.status",
    "model": "$.model",
    "usage": "$.usage",
    "pause_id": "$.pause_id",
    "cli": "$.event.type",
    "cli_cost": "$.event.cost_usd",
}
"""The fields it reads of them, by name."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One stored session as a listing shows it."""

    id: str
    agent: str
    """The top agent's name."""
    started: float
    """Unix time the session was created."""
    runs: int
    status: str
    """The last run's: `done`, `error`, `cancelled`... as it finished; `paused` when it was
    cut at a pause `resume()` presents again; `incomplete` when cut otherwise (or still
    running elsewhere); `new` before any run."""
    tokens: int
    """Every node's reported tokens, in every run."""
    cost: Cost
    parent: str | None = None
    """The session this one was forked from."""
    fork_seq: int | None = None
    """The parent's event it branched at."""
    events: int = 0
    """Its last event's seq."""


def catalog(store: Any, *, prices: Any = None) -> list[SessionSummary]:
    """A summary of every session in `store` (a path, a `postgresql://` URL or a `Store`),
    oldest first; costs are priced with `prices` (as `Session(prices=...)` takes them) before
    the price table.

    Raises:
        StoreError: the store cannot be read (e.g. no such file).
        ConfigurationError: `prices` has another shape.
    """
    book = PriceBook(checked_prices(prices)) if prices else None
    resolved = resolve_store(store, create=False)
    sessions = resolved.sessions()
    rows = _skim(resolved, sessions)
    return [summary(info, rows.get(info.id, ()), book) for info in sessions]


def summary(
    info: StoredSession, rows: Iterable[EventRow], prices: PriceBook | None = None
) -> SessionSummary:
    """`info` summed up from its skimmed `rows` (bodies of `FIELDS`, in seq order)."""
    runs: set[int] = set()
    last_run = 0
    finished: dict[int, str] = {}
    open_pauses: dict[int, set[int]] = {}
    asking: dict[str, str] = {}
    spend = NodeSpend()
    tokens = 0
    for row in rows:
        data = json.loads(row.body)
        kind = row.type
        if kind == "run_started":
            runs.add(row.run)
            last_run = max(last_run, row.run)
        elif kind == "run_finished":
            finished[row.run] = data["status"] or "done"
        elif kind == "paused":
            open_pauses.setdefault(row.run, set()).add(data["pause_id"])
        elif kind == "resumed":
            open_pauses.get(row.run, set()).discard(data["pause_id"])
        elif kind == "model_request":
            asking[row.path] = data["model"] or ""
        elif kind == "model_response" and data["usage"]:
            usage = Usage.model_validate(data["usage"])
            spend.add(asking.pop(row.path, "") or "(unknown model)", usage)
            tokens += usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        elif kind == "harness_event" and data["cli"] == "done":
            spend.reported(data["cli_cost"])
    if not runs:
        status = "new"
    elif last_run in finished:
        status = finished[last_run]
    else:
        status = "paused" if open_pauses.get(last_run) else "incomplete"
    return SessionSummary(
        info.id,
        info.agent,
        info.created,
        len(runs),
        status,
        tokens,
        priced([spend], prices),
        info.parent,
        info.fork_seq,
        info.last_seq,
    )


def _skim(store: Store, sessions: list[StoredSession]) -> dict[str, list[EventRow]]:
    """`TYPES` events with `FIELDS` of every session: in one pass where the store can, else
    session by session."""
    if isinstance(store, SkimmingStore):
        return store.skim(TYPES, FIELDS)
    return {info.id: _picked(store.load(info.id).events) for info in sessions}


def _picked(events: Iterable[EventRow]) -> list[EventRow]:
    rows = []
    for row in events:
        if row.type in TYPES:
            data = json.loads(row.body) if isinstance(row.body, str) else row.body
            body = json.dumps({name: _at(data, path) for name, path in FIELDS.items()})
            rows.append(EventRow(row.seq, row.run, row.type, row.path, body))
    return rows


def _at(data: Any, path: str) -> Any:
    """The value at a `$.a.b` path of `data`, None when there is none."""
    for key in path.removeprefix("$.").split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
