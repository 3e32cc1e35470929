"""Pause points: what `pause_on` takes, and the user's decision about a pending action (the action
itself, `PendingAction`, is `pending`'s: it loads with a first pause)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from msgspec import to_builtins

from .._base.errors import ConfigurationError
from .._base.messages import Message, ToolCall
from .breakpoints import ACTIONS

PAUSE_ACTIONS = frozenset(ACTIONS)


def checked_pause_on(pause_on: Any, where: str) -> set[Any]:
    """The breakpoints `pause_on` names: an action name, an `sn.when(...)`, a callable taking a
    `PendingAction` and returning a bool, or several of these; anything else is refused."""
    try:
        items = {pause_on} if isinstance(pause_on, str) or callable(pause_on) else set(pause_on)
    except TypeError:
        raise TypeError(
            f"pause_on of {where} takes an action name ({', '.join(ACTIONS)}), an sn.when(...), "
            f"a callable taking the PendingAction, or several of these; not "
            f"{type(pause_on).__name__}"
        ) from None
    unknown = {item for item in items if not isinstance(item, str) and not callable(item)}
    unknown |= {item for item in items if isinstance(item, str)} - PAUSE_ACTIONS
    if unknown:
        raise ConfigurationError(
            f"pause_on of {where} accepts {sorted(PAUSE_ACTIONS)}, sn.when(...) or a callable "
            f"taking the PendingAction, not {sorted(unknown, key=repr)}"
        )
    return items


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

    def stored(self) -> dict[str, Any] | None:
        """The changes as a `resumed` event keeps them (JSON: a replacement reply or view as
        message objects), so that a reopened run applies the decision rather than ask again."""
        if not self.changes:
            return None
        changes = dict(self.changes)
        reply = changes.get("reply")
        if reply is not None and not isinstance(reply, str):
            changes["reply"] = _message_data(self.reply_message())
        if "messages" in changes:
            changes["messages"] = [_message_data(m) for m in changes["messages"]]
        return dict(to_builtins(changes, enc_hook=str))

    @classmethod
    def from_stored(cls, kind: str, changes: dict[str, Any] | None, reason: str | None) -> Decision:
        """A decision as `stored` kept it (a `resumed` event's decision, changes and reason)."""
        changes = dict(changes or {})
        if isinstance(changes.get("reply"), dict):
            changes["reply"] = Message.model_validate(changes["reply"])
        if "messages" in changes:
            changes["messages"] = [Message.model_validate(m) for m in changes["messages"]]
        if kind == "reject":
            changes["reason"] = reason
        return cls(kind, changes)


def _message_data(message: Message) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_defaults=True)


APPROVE = Decision()
_edit_ids = itertools.count(1)
