"""A small lexical relevance scorer (term overlap, any script), and message groups that never split an
input from its answer nor a tool call from its result."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._base.checks import refuse
from .._base.messages import Message
from .._base.text import terms


class Scorer(Protocol):
    """Pluggable relevance: `index` a text once, then `score` a query's index against it."""

    def index(self, text: str) -> Any: ...

    def score(self, query: Any, item: Any) -> float: ...


def checked_scorer(scorer: object, where: str) -> Any:
    """`scorer` if it is None or has `index` and `score` (a `Scorer`)."""
    if scorer is not None and not (hasattr(scorer, "index") and hasattr(scorer, "score")):
        refuse("scorer", scorer, "a Scorer (with index() and score()) or None", where=where)
    return scorer


class LexicalScorer:
    """Scores by shared terms (any script: see `terms`), normalised by the item's vocabulary size."""

    def index(self, text: str) -> frozenset[str]:
        return terms(text)

    def score(self, query: frozenset[str], item: frozenset[str]) -> float:
        if not query or not item:
            return 0.0
        return len(query & item) / math.sqrt(len(item))


@dataclass(eq=False, slots=True)
class Group:
    """A span of storage kept or dropped as one (see `split_groups`)."""

    start: int
    end: int
    tokens: int
    terms: Any = None
    score: float = 0.0
    scored: Any = None
    """The query `score` was computed for (None: not yet, or `terms` changed since)."""


def group_text(messages: Sequence[Message]) -> str:
    """The searchable text of a group's messages."""
    parts = []
    for m in messages:
        parts.append(m.content or "")
        for call in m.tool_calls or ():
            parts.append(f"{call.name} {call.arguments}")
    return " ".join(parts)


def joins_group(history: Sequence[Message], i: int) -> bool:
    """Whether `history[i]` belongs to the group of the message before it: a tool result joins
    its call, and the reply right after an input joins that input (HologramAgent's event: an
    input with its response), so a question and its answer enter and leave a view together."""
    if i == 0:
        return False
    role = history[i].role
    return role == "tool" or (role == "assistant" and history[i - 1].role == "user")


def split_groups(history: Sequence[Message], token_of: Callable[[Message], int]) -> list[Group]:
    """Split `history` into groups: an input with the reply to it (and that reply's tool
    results), a later tool call with its results, or a message of its own."""
    groups: list[Group] = []
    for i, message in enumerate(history):
        tokens = token_of(message)
        if groups and joins_group(history, i):
            groups[-1].end = i + 1
            groups[-1].tokens += tokens
        else:
            groups.append(Group(i, i + 1, tokens))
    return groups
