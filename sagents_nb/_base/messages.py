"""Chat messages, tool calls and token usage: the model layer shared by every other layer."""

# No `from __future__ import annotations`: `sagents_nb` publishes these classes as its own
# (`__module__`), where msgspec would look their annotations' names up when it decodes.

from typing import Any, ClassVar, Literal

from msgspec import convert, field
from msgspec.structs import force_setattr

from .checks import refuse
from .model import Model
from .text import estimate_text_tokens

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset(("system", "user", "assistant", "tool"))
_WHERE = "sn.Message(...)"


class ToolCall(Model, frozen=True):  # type: ignore[misc]
    """One tool call requested by the model (its fields text, else `ArgumentError`)."""

    id: str
    """The call id the model gave; tool results answer it."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """The arguments exactly as the model sent them (a JSON text, possibly malformed)."""

    def __post_init__(self) -> None:
        for name in ("id", "name", "arguments"):
            value = getattr(self, name)
            if not isinstance(value, str):
                refuse(name, value, "a str", where="sn.ToolCall(...)")

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI chat-completions shape of this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class Message(Model, frozen=True, dict=True):  # type: ignore[misc]
    """One chat message, as stored in transcripts and sent on the wire. Immutable; built with
    a bad role or a content that is not text, it raises `ArgumentError` (a `TypeError`)."""

    repr_hidden: ClassVar[frozenset[str]] = frozenset({"meta"})

    role: Role
    """Who speaks: `system`, `user`, `assistant` or `tool`."""
    content: str | None = None
    """The text; `None` for an assistant message that only calls tools."""
    tool_calls: tuple[ToolCall, ...] | None = None
    """Tool calls of an assistant message (a list given is kept as a tuple)."""
    tool_call_id: str | None = None
    """For a `tool` message: the call it answers."""
    name: str | None = None
    """Optional speaker name."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Runtime annotations (never sent to the model), e.g. `{"summary": True}`."""

    def __post_init__(self) -> None:
        role = self.role
        if type(role) is not str or role not in _ROLES:
            refuse("role", role, "one of 'system', 'user', 'assistant', 'tool'", where=_WHERE)
        for name in ("content", "tool_call_id", "name"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                refuse(name, value, "a str or None", where=_WHERE)
        calls = self.tool_calls
        if calls is not None and (
            type(calls) is not tuple or any(type(c) is not ToolCall for c in calls)
        ):
            force_setattr(self, "tool_calls", _tool_calls(calls))
        if type(self.meta) is not dict:
            refuse("meta", self.meta, "a dict", where=_WHERE)

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI chat-completions dict, built once per message (messages are immutable)."""
        cache = self.__dict__
        wire: dict[str, Any] | None = cache.get("_wire")
        if wire is None:
            wire = {"role": self.role, "content": self.content}
            if self.tool_calls:
                wire["tool_calls"] = [call.to_wire() for call in self.tool_calls]
            if self.tool_call_id is not None:
                wire["tool_call_id"] = self.tool_call_id
            if self.name is not None:
                wire["name"] = self.name
            cache["_wire"] = wire
        return wire

    def __hash__(self) -> int:
        return hash((self.role, self.content, self.tool_calls, self.tool_call_id, self.name))

    @property
    def text(self) -> str:
        """The content, or an empty string."""
        return self.content or ""


def _tool_calls(calls: Any) -> tuple[ToolCall, ...]:
    """A message's tool calls as a tuple of `ToolCall`s (dicts converted)."""
    if not isinstance(calls, (list, tuple)):
        refuse("tool_calls", calls, "a tuple of ToolCall or None", where=_WHERE)
    made = []
    for call in calls:
        if isinstance(call, dict):
            call = convert(call, ToolCall)
        elif not isinstance(call, ToolCall):
            refuse("tool_calls", call, "ToolCall items (or dicts of their fields)", where=_WHERE)
        made.append(call)
    return tuple(made)


class Usage(Model):
    """Token usage as reported by the endpoint (or estimated); counts are ints, else
    `ArgumentError`."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int):
                refuse(name, value, "an int", where="sn.Usage(...)")

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


def system(text: str) -> Message:
    """A system message."""
    return Message(role="system", content=text)


def user(text: str) -> Message:
    """A user message."""
    return Message(role="user", content=text)


def tool_message(call_id: str, content: str) -> Message:
    """A tool result message answering `call_id`."""
    return Message(role="tool", tool_call_id=call_id, content=content)


def estimate_tokens(message: Message) -> int:
    """A cheap, script-aware token estimate (`text.estimate_text_tokens`) plus a few tokens for
    the message's framing.

    Cached on the (immutable) message, so views can be re-measured every turn at no cost.
    """
    cache = message.__dict__
    tokens: int | None = cache.get("_tokens")
    if tokens is None:
        tokens = estimate_text_tokens(message.content or "") + 4
        if message.tool_calls:
            tokens += sum(estimate_text_tokens(c.name + c.arguments) for c in message.tool_calls)
        cache["_tokens"] = tokens
    return tokens
