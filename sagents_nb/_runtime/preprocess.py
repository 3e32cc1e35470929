"""Message preprocessors: each user message becomes a display version and an LLM version."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._base.checks import check_bool, refuse
from .._base.errors import ConfigurationError, Rejected
from .._base.messages import Message, Usage


@dataclass(frozen=True)
class AgentState:
    """The top agent's state when a message arrives (sagents' `State`), read-only."""

    agent: str
    status: str
    messages: tuple[Message, ...] = ()
    """The LLM transcript so far."""
    display_messages: tuple[Message, ...] = ()
    """The display transcript so far."""
    turns: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass
class PreprocessContext:
    """What a preprocessor knows besides the message.

    Attributes:
        agent_id: the top agent's id (its path).
        conversation_id: the session's id.
        tool_context: the session's `tool_context` (the integrator's data for tools).
        state: the agent's state (`AgentState`: transcripts, status, turns, usage), as in sagents.
        user_state: the session's `state=` dict, yours to read and write.
    """

    agent_id: str
    conversation_id: str
    tool_context: dict[str, Any] = field(default_factory=dict)
    state: AgentState | None = None
    user_state: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MessagePreprocessor(Protocol):
    """`preprocess(scope, message, context) -> (display_message, llm_message)`, sync or async.

    Raise `sn.Rejected(reason)` to refuse the message: nothing is added anywhere.
    """

    def preprocess(self, scope: Any, message: Message, context: PreprocessContext) -> Any: ...


def preprocessor_name(preprocessor: Any) -> str:
    """A short label for events and views: its `name` if it has one (`mentions`), a function's
    own name (`redact`, `Scrubber.clean`, `<lambda>`; a `functools.partial` by the function it
    wraps), else its class's (`NoSecrets`)."""
    if preprocessor is None:
        return "none"
    if name := getattr(preprocessor, "name", None):
        return str(name)
    while isinstance(preprocessor, functools.partial):
        preprocessor = preprocessor.func
    qualname = getattr(preprocessor, "__qualname__", None) or getattr(
        preprocessor, "__name__", None
    )
    if isinstance(qualname, str) and qualname:
        return qualname.rpartition("<locals>.")[2]  # `shout`, not `make.<locals>.shout`
    return type(preprocessor).__name__


EXPECTED = (
    "a preprocessor is a function `(scope, message, context) -> (display_message, llm_message)` "
    "or an object with such a `preprocess` method, sync or async, e.g. "
    "`def tag(scope, message, context): return message, message`"
)


def checked_preprocessor(preprocessor: Any) -> Any:
    """`preprocessor` if it can be called as one; else a `ConfigurationError` that says what a
    preprocessor looks like (caught when it is set, not at the first message)."""
    if preprocessor is None:
        return None
    if inspect.isclass(preprocessor):
        name = preprocessor.__name__
        raise ConfigurationError(f"preprocessor {name} is a class; pass an instance, {name}()")
    method = getattr(preprocessor, "preprocess", preprocessor)
    if not callable(method):
        raise ConfigurationError(
            f"the preprocessor is a {type(preprocessor).__name__}, which cannot be called; "
            f"{EXPECTED}"
        )
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):  # some builtins have no signature to read: trust them
        return preprocessor
    try:
        signature.bind(None, None, None)
    except TypeError:
        what = preprocessor_name(preprocessor)
        if method is not preprocessor:
            what += "'s preprocess method"
        raise ConfigurationError(
            f"preprocessor {what} takes {signature}, not the three arguments "
            f"(scope, message, context) a preprocessor is given; {EXPECTED}"
        ) from None
    return preprocessor


class Mentions:
    """Expands `@Name` mentions into documents in the LLM message; the display keeps `@Name`.

    Args:
        documents: a mapping from name to text, or a callable returning the text (or None).
        strict: refuse messages that mention an unknown name instead of leaving them as typed.
    """

    name = "mentions"
    pattern = re.compile(r"@([A-Za-z0-9_][\w.\-]*)")

    def __init__(
        self, documents: Mapping[str, str] | Callable[[str], str | None], *, strict: bool = False
    ) -> None:
        if not isinstance(documents, Mapping) and not callable(documents):
            refuse(
                "documents",
                documents,
                "a dict {name: text} or a function name -> text (or None)",
                where="sn.Mentions(...)",
            )
        self.documents = documents
        self.strict = check_bool("strict", strict, where="sn.Mentions(...)")

    def _lookup(self, name: str) -> str | None:
        if callable(self.documents):
            return self.documents(name)
        return self.documents.get(name)

    def preprocess(
        self, scope: Any, message: Message, context: PreprocessContext
    ) -> tuple[Message, Message]:
        text = message.content or ""
        found: dict[str, str] = {}
        for name in self.pattern.findall(text):
            name = name.rstrip(".")
            if name in found:
                continue
            document = self._lookup(name)
            if document is None:
                if self.strict:
                    raise Rejected(f"unknown mention @{name}; known: {self._known()}")
                continue
            found[name] = document
        if not found:
            return message, message
        from html import escape  # here, not at import: `html` loads its entity table

        attached = "\n\n".join(
            f'<document name="{escape(name, quote=True)}">\n{doc}\n</document>'
            for name, doc in found.items()
        )
        return message, message.model_copy(update={"content": f"{text}\n\n{attached}"})

    def _known(self) -> str:
        if callable(self.documents):
            return "(looked up by a function)"
        return ", ".join(f"@{k}" for k in sorted(self.documents)) or "none"

    def __repr__(self) -> str:
        return f"Mentions({self._known()})"
