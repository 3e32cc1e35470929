"""The decisions timeline: every pause of the session and how it ended (approved, edited with
the arguments' diff, rejected with the reason, cancelled, interrupted), kept after the run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._base.messages import Message
from ..events import ModelRequest, ModelResponse, Paused, ToolCallStarted

WAITING = "waiting"
SHOWN = {"approve": "approved", "edit": "edited", "reject": "rejected"}
"""A decision as the timeline words it (the others read as they are: cancelled, interrupted)."""


@dataclass(slots=True)
class DecisionEntry:
    """One pause and what was decided there."""

    pause_id: int
    run: int
    seq: int
    """The `paused` event."""
    path: str
    action: str
    name: str | None
    call_id: str | None
    arguments: dict[str, Any] | None
    """The tool or task call's arguments as the model wrote them."""
    decision: str = WAITING
    reason: str | None = None
    edited: dict[str, Any] | str | None = None
    """The arguments the call ran with after an edit (their text if they were not JSON)."""
    reply: str | None = None
    """The reply used instead of calling the model, after an edit at a model pause."""
    proposed: list[Message] | None = None
    """At a model pause: the messages about to be sent."""
    changed: list[str] | None = None
    """What an edit changed (`reply`, `messages`, `arguments`...); None if not recorded."""
    sent: list[Message] | None = None
    """After an edit of a model request's messages: the messages sent instead."""


class DecisionLog:
    """Folds pauses, their ends and the calls they let through into `entries`, oldest first."""

    def __init__(self) -> None:
        self.entries: list[DecisionEntry] = []
        self._open: dict[int, DecisionEntry] = {}
        self.edited_calls: dict[str, DecisionEntry] = {}
        self.edited_replies: dict[str, DecisionEntry] = {}
        self.edited_requests: dict[str, DecisionEntry] = {}
        """Edits waiting for the call, reply or request that shows them, by call id or node
        (`started`, `responded`, `requested`; a fold calls them only while one waits)."""
        self.by_call: dict[str, DecisionEntry] = {}
        """The latest decided pause of each tool or task call, by call id."""

    def paused(self, event: Paused) -> None:
        cut = self._open.get(event.pause_id)
        if cut is not None:  # a run resumed after a cut numbers its pauses afresh
            self.ended(event.pause_id, "interrupted", "the run was cut here, and resumed later")
        entry = DecisionEntry(
            event.pause_id,
            event.run,
            event.seq,
            event.path,
            event.action,
            event.name,
            event.call_id,
            event.arguments,
            proposed=event.request.messages if event.request is not None else None,
        )
        self.entries.append(entry)
        self._open[event.pause_id] = entry

    def stored(self, pause_id: int, cut: str) -> None:
        """A pause a reopened or forked run was cut at (`cut` says how) waits for `resume()`."""
        entry = self._open.get(pause_id)
        if entry is not None:
            entry.reason = f"{cut} — waiting for session.resume(), which asks it again"

    def ended(
        self, pause_id: int, decision: str, reason: str | None, changed: list[str] | None = None
    ) -> None:
        entry = self._open.pop(pause_id, None)
        if entry is None:
            return
        entry.decision, entry.reason, entry.changed = decision, reason, changed
        if entry.call_id is not None:
            self.by_call[entry.call_id] = entry
            if decision == "edit":
                self.edited_calls[entry.call_id] = entry
        elif decision == "edit":
            if changed is None or "reply" in changed:  # a log from before `changed`: a reply
                self.edited_replies[entry.path] = entry
            if changed is not None and "messages" in changed:
                self.edited_requests[entry.path] = entry

    def started(self, event: ToolCallStarted) -> None:
        """An edited call starts with the arguments it runs with."""
        entry = self.edited_calls.pop(event.call_id, None)
        if entry is not None:
            entry.edited = _parsed(event.arguments)

    def requested(self, event: ModelRequest) -> None:
        """After an edit of a model request's messages, the node's next request sends them."""
        entry = self.edited_requests.pop(event.path, None)
        if entry is not None:
            entry.sent = event.messages

    def responded(self, event: ModelResponse) -> None:
        """After an edit at a model pause, the next reply of that node is the one edited in."""
        entry = self.edited_replies.pop(event.path, None)
        if entry is not None:
            entry.reply = event.message.content or ""


def _parsed(text: str) -> dict[str, Any] | str:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text
