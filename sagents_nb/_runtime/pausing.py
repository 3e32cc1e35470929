"""Pause points: the pending action a run stopped before, and the user's decision about it."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from msgspec import to_builtins

from .._base.checks import check_str
from .._base.errors import ConfigurationError
from .._base.messages import Message, ToolCall
from .._tools.tool import parse_arguments
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


@dataclass(frozen=True)
class PendingRequest:
    """The whole model request a pause stands before, as it would be sent.

    `messages` is the view the node's kind built for this call (not its storage), `tools` the
    tools offered in their wire form, `endpoint` the endpoint's label (never its key) and
    `tokens` the view's estimated tokens.
    """

    messages: list[Message]
    tools: list[dict[str, Any]]
    model: str
    tool_choice: str | None
    endpoint: str
    tokens: int
    stream: bool = False

    def body(self) -> dict[str, Any]:
        """The JSON body this request is sent as (what a mock handler's `req.body` holds)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_wire() for m in self.messages],
        }
        if self.tools:
            body["tools"] = self.tools
            if self.tool_choice:
                body["tool_choice"] = self.tool_choice
        if self.stream:
            body["stream"] = True
        return body


Decide = Callable[["PendingAction", Decision, "str | None"], None]
"""How a pending action hands its decision to its run (`Run._decide_pause`)."""


@dataclass(eq=False)
class PendingAction:
    """What a paused run is waiting to do; `approve()`, `edit(...)`, `reject(reason)` and
    `step()` decide this one (thread-safe, like the run's own controls).

    `id` is stable for the run; `action` is `model`, `tool`, `task` or `reply`; a tool or task
    call has `name`, `arguments` and `call_id`; a model request has `messages`, the exact view
    about to be sent, and `request`, the whole request (`PendingRequest`); a `reply` (a child's
    answer its parent has not read yet) is at the child's path, `name` its agent, `arguments`
    `{"reply": text, "status": status}`, `call_id` the parent's `task` call.
    """

    id: int
    action: str
    path: str
    name: str | None = None
    arguments: dict[str, Any] | None = None
    call_id: str | None = None
    messages: list[Message] | None = None
    request: PendingRequest | None = field(default=None, repr=False)
    future: asyncio.Future[Decision] | None = field(default=None, repr=False)
    decide: Decide | None = field(default=None, repr=False)

    def __str__(self) -> str:
        if self.action == "model":
            return f"model request from {self.path} ({len(self.messages or [])} messages)"
        if self.action == "reply":
            text = (self.arguments or {}).get("reply", "")
            return f"reply of {self.path} to its parent: {json.dumps(text, ensure_ascii=False)}"
        return f"{self.action} call {self.name}({json.dumps(self.arguments, ensure_ascii=False)}) from {self.path}"

    def approve(self) -> None:
        """Let this action go ahead; keep pausing at the configured points."""
        self._decide(APPROVE, "normal")

    def reject(self, reason: str = "rejected by the user") -> None:
        """Refuse this action; a tool call's model is told `reason`."""
        check_str("reason", reason, where="pending.reject()")
        self._decide(Decision("reject", {"reason": reason}), None)

    def edit(self, **changes: Any) -> None:
        """Change this action, then let it go ahead (the changes `run.edit` takes)."""
        self._decide(edit_decision(changes), None)

    def step(self) -> None:
        """Approve this action, and pause again before the very next action of any kind."""
        self._decide(APPROVE, "step")

    def _decide(self, decision: Decision, mode: str | None) -> None:
        if self.decide is None:
            raise ConfigurationError(
                f"pause {self.id} ({self}) belongs to no run; nothing to decide"
            )
        self.decide(self, decision, mode)


def edit_decision(changes: dict[str, Any]) -> Decision:
    """The decision of an edit, its changes checked here, at the call (the run stays paused).

    Raises:
        ConfigurationError: `arguments=` is not a JSON object, or `messages=` not a list of
            messages.
    """
    if "arguments" in changes:
        changes["arguments"] = _arguments_object(changes["arguments"])
    if "messages" in changes:
        changes["messages"] = _messages(changes["messages"])
    return Decision("edit", changes)


def _arguments_object(value: Any) -> dict[str, Any]:
    """Replacement tool arguments as a dict; anything but a JSON object is refused here, at the
    call, rather than ending the run in an error later."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            return parse_arguments(value)
        except ValueError as exc:
            problem = str(exc)
    else:
        problem = f"got {type(value).__name__}"
    raise ConfigurationError(
        f"run.edit(arguments=...) needs a JSON object (a dict, or a str of JSON holding one): "
        f"{problem}; nothing was changed and the run is still paused"
    )


def _messages(value: Any) -> list[Message]:
    """Replacement messages: `sn.Message`s, or dicts in their wire form (`role`, `content`)."""
    problem = f"got {type(value).__name__}"
    if isinstance(value, list | tuple):
        try:
            return [m if isinstance(m, Message) else Message.model_validate(m) for m in value]
        except (TypeError, ValueError) as exc:
            problem = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    raise ConfigurationError(
        "edit(messages=...) needs a list of sn.Message (or dicts such as "
        f'{{"role": "user", "content": "..."}}): {problem}; nothing was changed and the run '
        "is still paused"
    )


class StoredPause(NamedTuple):
    """A decision a stored (reopened or forked) session was waiting for at its last event."""

    path: str
    action: str
    name: str | None
    arguments: dict[str, Any] | None
