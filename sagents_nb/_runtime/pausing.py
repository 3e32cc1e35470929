"""Pause points: the pending action a run stopped before, and the user's decision about it."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._base.errors import ConfigurationError
from .._base.messages import Message, ToolCall

PAUSE_ACTIONS = frozenset({"model", "tool", "task"})


def checked_pause_on(pause_on: str | Iterable[str], where: str) -> set[str]:
    """The actions `pause_on` names (one action name, or several); anything else is refused."""
    try:
        actions = {pause_on} if isinstance(pause_on, str) else set(pause_on)
    except TypeError:
        raise TypeError(
            f"pause_on of {where} takes an action name or several of {sorted(PAUSE_ACTIONS)}, "
            f"not {type(pause_on).__name__}"
        ) from None
    unknown = actions - PAUSE_ACTIONS
    if unknown:
        raise ConfigurationError(
            f"pause_on of {where} accepts {sorted(PAUSE_ACTIONS)}, not {sorted(unknown, key=repr)}"
        )
    return actions


@dataclass
class Decision:
    """`approve`, `reject` (with `changes["reason"]`) or `edit` (with the changes)."""

    kind: str = "approve"
    changes: dict[str, Any] = field(default_factory=dict)

    def edited_arguments(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Tool arguments after an edit: `arguments=` replaces them, other keys are merged in."""
        if "arguments" in self.changes:
            replaced = self.changes["arguments"]
            return json.loads(replaced) if isinstance(replaced, str) else dict(replaced)
        return {**arguments, **{k: v for k, v in self.changes.items() if k != "reason"}}

    def reply_message(self) -> Message:
        """The replacement model reply of an edit (`reply=` a str, `sn.reply(...)` or Message)."""
        reply = self.changes["reply"]
        if isinstance(reply, Message):
            return reply
        if isinstance(reply, str):
            return Message(role="assistant", content=reply)
        calls = tuple(
            ToolCall(
                id=spec.id or f"edit_{next(_edit_ids)}",
                name=spec.name,
                arguments=json.dumps(spec.arguments),
            )
            for spec in getattr(reply, "tool_calls", ())
        )
        return Message(
            role="assistant", content=getattr(reply, "text", None), tool_calls=calls or None
        )


APPROVE = Decision()
_edit_ids = itertools.count(1)


@dataclass(eq=False)
class PendingAction:
    """What a paused run is waiting to do.

    `action` is `model`, `tool` or `task`; a tool or task call has `name`, `arguments` and
    `call_id`; a model request has `messages`, the exact view about to be sent.
    """

    id: int
    action: str
    path: str
    name: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None
    messages: list[Message] | None = None
    future: asyncio.Future[Decision] | None = field(default=None, repr=False)

    def __str__(self) -> str:
        if self.action == "model":
            return f"model request from {self.path} ({len(self.messages or [])} messages)"
        return f"{self.action} call {self.name}({json.dumps(self.arguments, ensure_ascii=False)}) from {self.path}"


class StoredPause(NamedTuple):
    """A decision a stored (reopened or forked) session was waiting for at its last event."""

    path: str
    action: str
    name: str | None
    arguments: dict[str, Any] | None
