"""A tiny lexical relevance scorer (word overlap), and message groups that never split a tool call."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Protocol

from .._base.messages import Message

_WORD = re.compile(r"[a-z0-9_]{3,}")
_STOP = frozenset(
    "the and for are but not you all any can had her was one our out has him his how its may new "
    "now old see two who did get let put say she too use that with this from they will what when "
    "your have been were which their there then them than into more some such only also just".split()
)


class Scorer(Protocol):
    """Pluggable relevance: `index` a text once, then `score` a query's index against it."""

    def index(self, text: str) -> Any: ...

    def score(self, query: Any, item: Any) -> float: ...


class LexicalScorer:
    """Scores by shared words, normalised by the item's vocabulary size."""

    def index(self, text: str) -> frozenset[str]:
        return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)

    def score(self, query: frozenset[str], item: frozenset[str]) -> float:
        if not query or not item:
            return 0.0
        return len(query & item) / math.sqrt(len(item))


@dataclass(eq=False)
class Group:
    """A span of storage kept or dropped as one: a message, or an assistant turn with its results."""

    start: int
    end: int
    tokens: int
    terms: Any = None
    score: float = 0.0
    scored: Any = None
    """The query `score` was computed for (None: not yet, or `terms` changed since)."""


def group_text(messages: list[Message]) -> str:
    """The searchable text of a group's messages."""
    parts = []
    for m in messages:
        parts.append(m.content or "")
        for call in m.tool_calls or ():
            parts.append(f"{call.name} {call.arguments}")
    return " ".join(parts)


def split_groups(history: list[Message], token_of: Any) -> list[Group]:
    """Split `history` into groups; a `tool` message always joins the group of its call."""
    groups: list[Group] = []
    for i, message in enumerate(history):
        tokens = token_of(message)
        if message.role == "tool" and groups:
            groups[-1].end = i + 1
            groups[-1].tokens += tokens
        else:
            groups.append(Group(i, i + 1, tokens))
    return groups
