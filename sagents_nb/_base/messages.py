"""Chat messages, tool calls and token usage: the model layer shared by every other layer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from .text import estimate_text_tokens

M = TypeVar("M", bound=BaseModel)

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One tool call requested by the model."""

    # Schemas here build on first use, not at import: pydantic's first schema build also loads
    # importlib.metadata and scans every installed package for pydantic plugins.
    model_config = ConfigDict(frozen=True, defer_build=True)

    id: str
    """The call id the model gave; tool results answer it."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """The arguments exactly as the model sent them (a JSON text, possibly malformed)."""

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI chat-completions shape of this call."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


class Message(BaseModel):
    """One chat message, as stored in transcripts and sent on the wire."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    role: Role
    """Who speaks: `system`, `user`, `assistant` or `tool`."""
    content: str | None = None
    """The text; `None` for an assistant message that only calls tools."""
    tool_calls: tuple[ToolCall, ...] | None = None
    """Tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For a `tool` message: the call it answers."""
    name: str | None = None
    """Optional speaker name."""
    meta: dict[str, Any] = Field(default_factory=dict, repr=False)
    """Runtime annotations (never sent to the model), e.g. `{"summary": True}`."""

    _wire: dict[str, Any] | None = PrivateAttr(default=None)
    _tokens: int | None = PrivateAttr(default=None)

    def to_wire(self) -> dict[str, Any]:
        """The OpenAI chat-completions dict, built once per message (messages are immutable)."""
        # a plain dict (`self._wire` goes through __getattr__); set, since the model has private attrs
        private: dict[str, Any] = self.__pydantic_private__  # type: ignore[assignment]
        wire = private["_wire"]
        if wire is None:
            wire = {"role": self.role, "content": self.content}
            if self.tool_calls:
                wire["tool_calls"] = [call.to_wire() for call in self.tool_calls]
            if self.tool_call_id is not None:
                wire["tool_call_id"] = self.tool_call_id
            if self.name is not None:
                wire["name"] = self.name
            private["_wire"] = wire
        return wire

    def __eq__(self, other: object) -> bool:
        # fields only: the private wire/token caches must not make equal messages differ
        if not isinstance(other, Message):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.role, self.content, self.tool_calls, self.tool_call_id, self.name))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Message:
        """A copy with `update` applied; the wire and token caches start afresh."""
        copy = super().model_copy(update=update, deep=deep)
        copy.__pydantic_private__ = {"_wire": None, "_tokens": None}
        return copy

    @property
    def text(self) -> str:
        """The content, or an empty string."""
        return self.content or ""


def _fresh_caches(message: Message, context: Any, /) -> None:
    """`Message`'s private-attribute set-up: empty caches. Pydantic's generic one (each
    attribute's default resolved and copied) costs as much as validating a short message, and
    a long session's reopen validates thousands of them."""
    object.__setattr__(message, "__pydantic_private__", {"_wire": None, "_tokens": None})


Message.model_post_init = _fresh_caches  # type: ignore[method-assign,assignment]


class Usage(BaseModel):
    """Token usage as reported by the endpoint (or estimated)."""

    model_config = ConfigDict(defer_build=True)

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return trusted(
            Usage,
            {
                "prompt_tokens": self.prompt_tokens + other.prompt_tokens,
                "completion_tokens": self.completion_tokens + other.completion_tokens,
                "total_tokens": self.total_tokens + other.total_tokens,
            },
        )


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of the pydantic model `cls` (one without private attributes) from
    `values`, which must be valid and give every field: like `model_construct`, minus its
    per-field default lookup (for objects built on every turn)."""
    instance = cls.__new__(cls)
    object.__setattr__(instance, "__dict__", values)
    object.__setattr__(instance, "__pydantic_fields_set__", set(values))
    object.__setattr__(instance, "__pydantic_extra__", None)
    object.__setattr__(instance, "__pydantic_private__", None)
    return instance


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
    private: dict[str, Any] = message.__pydantic_private__  # type: ignore[assignment]
    tokens = private["_tokens"]
    if tokens is None:
        tokens = estimate_text_tokens(message.content or "") + 4
        if message.tool_calls:
            tokens += sum(estimate_text_tokens(c.name + c.arguments) for c in message.tool_calls)
        private["_tokens"] = tokens
    return tokens
