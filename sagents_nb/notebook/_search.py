"""Find anything in a view's session: every event's text (transcripts, tool arguments and
results, event fields), matched case-, accent- and width-insensitively, and "go to seq N"."""

from __future__ import annotations

import bisect
import re
import time
import unicodedata
from collections.abc import Sequence
from typing import Any

from .._base.model import Model
from ..events import Event
from ._paging import page_of

FOUND = 50
"""Results one page of the search holds."""
QUERY_LIMIT = 500
"""Characters of a query kept."""
SNIPPET = 70
"""Characters shown on each side of a match."""
BUDGET = 0.1
"""Seconds one search may spend folding events not indexed yet; it lists what it found so
far and goes on at the next update (a long stored session is indexed in the background when
its view opens, `LiveView._warm_search`)."""

_MARKS = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\ufe0e\ufe0f]"
)
"""Accents and other combining marks of the Latin, Greek and Cyrillic scripts, and emoji
variation selectors (kana voicing marks are kept: か is not が)."""
_SEQ = re.compile(r"^\s*(?:#|seq\s*)(\d+)\s*$", re.IGNORECASE)
_UNSEARCHED = frozenset({"text_delta"})
"""Streamed pieces: the whole message follows as its own event."""
_SKIPPED = {"model_request": frozenset({"messages", "tools"})}
"""Fields that repeat what other events said (a request carries the whole context again)."""


def fold(text: str) -> str:
    """`text` as the search compares it: accents dropped, compatibility forms (full-width
    letters, ligatures) unified, case folded; other scripts and emoji unchanged."""
    stripped = _MARKS.sub("", unicodedata.normalize("NFKD", text))
    return unicodedata.normalize("NFKC", stripped).casefold()


def seq_query(query: str) -> int | None:
    """The event number `#123` or `seq 123` asks for, else None."""
    match = _SEQ.match(query)
    return int(match.group(1)) if match else None


def texts(event: Event) -> list[str]:
    """Every text an event carries: its path, type and string fields, nested ones too."""
    if event.type in _UNSEARCHED:
        return []
    skipped = _SKIPPED.get(event.type, ())
    found: list[str] = []
    for name in type(event).model_fields:
        value = getattr(event, name)
        if type(value) is str:
            if value:
                found.append(value)
        elif value is not None and type(value) not in _PLAIN and name not in skipped:
            _strings(value, found)
    return found


_PLAIN = frozenset({int, float, bool})


def _strings(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        if value:
            found.append(value)
    elif isinstance(value, Model):
        for name in value.model_fields:
            _strings(getattr(value, name), found)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _strings(item, found)


class SearchIndex:
    """Each event's folded text, in the order of the projector's `events`, kept up to date
    as the list grows (an event never changes once emitted)."""

    CHUNK = 1000
    """Events folded between two looks at the clock."""

    def __init__(self) -> None:
        self.folded: list[str] = []

    def update(
        self, events: Sequence[Event], budget: float | None = None, upto: int | None = None
    ) -> bool:
        """Fold the events not indexed yet (the first `upto` of them if given), for at most
        `budget` seconds (None: until done); whether they are all indexed."""
        deadline = None if budget is None else time.perf_counter() + budget
        end = len(events) if upto is None else min(upto, len(events))
        while len(self.folded) < end:
            done = len(self.folded)
            chunk = events[done : min(end, done + self.CHUNK)]
            self.folded.extend(_fold_all(["\n".join(texts(event)) for event in chunk]))
            if deadline is not None and time.perf_counter() > deadline:
                break
        return len(self.folded) >= end

    def matches(self, query: str) -> list[int]:
        """Indices of the indexed events whose text holds `query` (already folded)."""
        return [index for index, text in enumerate(self.folded) if query in text]


def _fold_all(raw: list[str]) -> list[str]:
    """`fold` of each text: ASCII ones lowered, the others folded together in one call."""
    folded = [text.lower() if text.isascii() else None for text in raw]
    other = [i for i, text in enumerate(folded) if text is None]
    if other:
        joined = "\x00".join(raw[i].replace("\x00", " ") for i in other)
        for i, text in zip(other, fold(joined).split("\x00"), strict=True):
            folded[i] = text
    return folded  # type: ignore[return-value]


def search_state(
    index: SearchIndex, events: Sequence[Event], query: str, start: int | None
) -> dict[str, Any]:
    """What the search box lists for `query`: a page of matching events (seq, path, the node
    it is about — a task's child —, type and the text around the match), how many match, or
    the one event `#N` names."""
    query = query[:QUERY_LIMIT]
    if not query.strip():
        return {}
    number = seq_query(query)
    if number is not None:
        return _goto(events, query, number)
    folded = fold(query.strip())
    complete = index.update(events, BUDGET)
    rows, page = page_of(index.matches(folded), start or 0, FOUND)
    searched = len(index.folded)
    state: dict[str, Any] = {
        "query": query,
        "rows": [_row(events[at], folded) for at in rows],
        "page": page,
        "note": None if page["total"] or not complete else f"nothing matches “{query.strip()}”",
    }
    if not complete:
        state["searching"] = {"done": searched, "of": len(events)}
    return state


def _goto(events: Sequence[Event], query: str, number: int) -> dict[str, Any]:
    at = event_index(events, number)
    if at is None:
        last = events[-1].seq if events else 0
        note = f"no event #{number} in this view (its events are #1–#{last})"
        return {"query": query, "seq": number, "rows": [], "note": note}
    row = _row(events[at], "")
    return {"query": query, "seq": number, "rows": [row], "note": None}


def event_index(events: Sequence[Event], seq: int) -> int | None:
    """Where the event numbered `seq` is in `events` (in seq order), or None."""
    at = bisect.bisect_left(events, seq, key=lambda event: event.seq)
    return at if at < len(events) and events[at].seq == seq else None


def _row(event: Event, query: str) -> dict[str, Any]:
    before, match, after = _snippet(event, query)
    child = getattr(event, "child", None)
    return {
        "seq": event.seq,
        "path": event.path,
        "node": child if isinstance(child, str) else event.path,
        "type": event.type,
        "before": before,
        "match": match,
        "after": after,
    }


def _snippet(event: Event, query: str) -> tuple[str, str, str]:
    """The text around the first match of `query`, cut in three: before, the match, after."""
    leaves = texts(event)
    for text in leaves if query else ():
        found = _locate(text, query)
        if found is not None:
            first, end = found
            before = text[max(0, first - SNIPPET) : first]
            after = text[end : end + SNIPPET]
            return (
                ("…" if first > SNIPPET else "") + before,
                text[first:end],
                after + ("…" if end + SNIPPET < len(text) else ""),
            )
    shown = " · ".join(leaves[2:]) if len(leaves) > 2 else ""  # after path and type
    return "", "", shown[: 2 * SNIPPET] + ("…" if len(shown) > 2 * SNIPPET else "")


def _locate(text: str, query: str) -> tuple[int, int] | None:
    """Where folded `query` is in `text`, in `text`'s own characters."""
    whole = fold(text)
    at = whole.find(query)
    if at < 0:
        return None
    if len(whole) == len(text) and fold(text[at : at + len(query)]) == query:
        return at, at + len(query)  # folded char for char (most text): the same places
    origin: list[int] = []
    parts = []
    for position, char in enumerate(text):
        folded = fold(char)
        parts.append(folded)
        origin.extend([position] * len(folded))
    at = "".join(parts).find(query)
    if at < 0:  # folded together, not char by char (a decomposed accent): show the text
        return None
    return origin[at], origin[at + len(query) - 1] + 1
