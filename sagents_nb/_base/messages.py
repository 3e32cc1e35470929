"""Chat messages, tool calls and token usage: the model layer shared by every other layer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic_core import PydanticUndefined

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


Check = tuple[frozenset[type], frozenset[Any] | None, type | None]
"""What `built` takes as a field's value without validating it: the exact types, the values of
a `Literal`, and the exact type of a list's items."""
_SCALARS = (str, int, float, bool, type(None))
BUILT_BEFORE_VALIDATING = 100
"""How many objects of a model `built` makes itself before it lets pydantic validate them:
its schema is built then (a first run need not), and validation is faster from there on."""
_MAKERS: dict[type[BaseModel], Maker] = {}
_UNSET: Any = object()


def _check(annotation: Any) -> Check | None:
    """How to recognise a value pydantic would keep as it is; None: not recognised (`Any`,
    nested containers): such fields are taken as the runtime gives them."""
    origin, args = get_origin(annotation), get_args(annotation)
    if annotation in _SCALARS or (
        isinstance(annotation, type) and issubclass(annotation, BaseModel)
    ):
        return frozenset({annotation}), None, None
    if origin is Literal:
        return frozenset(type(a) for a in args), frozenset(args), None
    if origin in (Union, UnionType):
        parts = [_check(a) for a in args]
        items = {p[2] for p in parts if p is not None and p[2] is not None}
        if any(p is None or p[1] is not None for p in parts) or len(items) > 1:
            return None
        return frozenset().union(*(p[0] for p in parts if p)), None, next(iter(items), None)
    if origin is list and len(args) == 1 and args[0] in _SCALARS:
        return frozenset({list}), None, args[0]
    return None


class Maker:
    """`made`'s constructor for one model, and how many objects it made."""

    __slots__ = ("cls", "make", "names", "uses")

    def __init__(
        self, cls: type[BaseModel], make: Callable[[dict[str, Any]], Any], names: frozenset[str]
    ) -> None:
        self.cls, self.make, self.names, self.uses = cls, make, names, 0

    def __call__(self, **given: Any) -> Any:
        instance = made(self.cls, given)
        return instance if instance is not None else self.cls(**given)


def _maker(cls: type[BaseModel]) -> Maker:
    """A function made for `cls` (as `dataclasses` makes `__init__`) that builds an instance
    from a dict of given values, or returns None where validation must decide: a value it does
    not recognise (see `_check`), a required field missing, any value of a model with
    validators of its own."""
    scope: dict[str, Any] = {"cls": cls, "new": object.__new__, "put": object.__setattr__}
    scope["UNSET"] = _UNSET
    lines = ["def make(given):"]
    found = cls.__pydantic_decorators__
    if found.validators or found.field_validators or found.model_validators:
        lines.append("    return None")
    names = []
    for i, (name, info) in enumerate(cls.model_fields.items()):
        names.append(name)
        value = f"v{i}"
        lines.append(f"    {value} = given.get({name!r}, UNSET)")
        lines.append(f"    if {value} is UNSET:")
        if info.default_factory is not None:
            scope[f"F{i}"] = info.default_factory
            lines.append(f"        {value} = F{i}()")
        elif info.default is PydanticUndefined:
            lines.append("        return None")
        elif isinstance(info.default, (*_SCALARS, tuple)):
            scope[f"D{i}"] = info.default
            lines.append(f"        {value} = D{i}")
        else:
            scope[f"F{i}"] = info.get_default  # a mutable default is copied, as pydantic does
            lines.append(f"        {value} = F{i}()")
        check = _check(info.annotation)
        if check is not None:
            types, literal, items = check
            scope[f"T{i}"] = types
            test = f"type({value}) not in T{i}"
            if literal is not None:
                scope[f"L{i}"] = literal
                test += f" or {value} not in L{i}"
            if items is not None:
                scope[f"I{i}"] = items
                test += f" or (type({value}) is list and any(type(x) is not I{i} for x in {value}))"
            lines.append(f"    elif {test}:")
            lines.append("        return None")
    values = ", ".join(f"{name!r}: v{i}" for i, name in enumerate(names))
    lines.append("    made = new(cls)")
    lines.append(f"    put(made, '__dict__', {{{values}}})")
    lines.append("    put(made, '__pydantic_fields_set__', set(given))")
    lines.append("    put(made, '__pydantic_extra__', None)")
    lines.append("    put(made, '__pydantic_private__', None)")
    if cls.__pydantic_post_init__:
        lines.append(f"    made.{cls.__pydantic_post_init__}(None)")
    lines.append("    return made")
    exec("\n".join(lines), scope)  # source made above from the model's own fields
    maker = _MAKERS[cls] = Maker(cls, scope["make"], frozenset(names))
    return maker


def made(cls: type[M], given: dict[str, Any]) -> M | None:
    """`cls(**given)` made without validation, if every given value is one validation would
    keep as it is (of its field's exact type, a `Literal`'s value, a list of exact items):
    the defaults filled in as pydantic fills them, `model_fields_set` as given. None
    otherwise: validation decides (converts, or refuses with pydantic's error)."""
    maker = _MAKERS.get(cls) or _maker(cls)
    maker.uses += 1
    return maker.make(given) if given.keys() <= maker.names else None  # type: ignore[no-any-return]


def built(cls: type[M]) -> Callable[..., M]:
    """What makes a `cls` from keyword values: `cls` itself (validation) once its schema is
    built or `BUILT_BEFORE_VALIDATING` objects were made; until then a `Maker`, which `made`s
    them without validation where it can. A first run then builds no schema (pydantic's first
    build also scans every installed package for plugins: a tenth of a first run); later,
    validation, faster than any construction in Python (benchmarks/README.md), takes over.
    For the events and messages made on every turn: `built(StatusChanged)(status=...)`. A
    list is kept, not copied: give a fresh one."""
    if cls.__pydantic_complete__:
        return cls
    maker = _MAKERS.get(cls) or _maker(cls)
    return maker if maker.uses < BUILT_BEFORE_VALIDATING else cls


def system(text: str) -> Message:
    """A system message."""
    return built(Message)(role="system", content=text)


def user(text: str) -> Message:
    """A user message."""
    return built(Message)(role="user", content=text)


def tool_message(call_id: str, content: str) -> Message:
    """A tool result message answering `call_id`."""
    return built(Message)(role="tool", tool_call_id=call_id, content=content)


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
