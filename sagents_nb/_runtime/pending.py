"""A pending action (`PendingAction`: what a paused run is waiting to do, and the whole model
request it stands before) and an edit's decision; loaded with a run's first pause, not with
every run."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .._base.checks import check_str
from .._base.errors import ConfigurationError
from .._base.messages import Message
from .._tools.tool import parse_arguments
from .pausing import APPROVE, Decision


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
        """The JSON body this request is sent as (what a mock handler's `req.body` holds), a
        copy of its own: the messages' and tools' wire dicts are kept and sent again, so a
        change made to it changes no request."""
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
        return copy.deepcopy(body)


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
