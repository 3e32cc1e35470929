"""Find anything in a view's session: every event's text (transcripts, tool arguments and
results, event fields), matched case-, accent- and width-insensitively, and "go to seq N"."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from ..events import Event
from ._paging import page_of

FOUND = 50
"""Results one page of the search holds."""
QUERY_LIMIT = 500
"""Characters of a query kept."""
SNIPPET = 70
"""Characters shown on each side of a match."""

_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\ufe0e\ufe0f]")
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


def texts(event: Event) -> Iterator[str]:
    """Every text an event carries: its path, type and string fields, nested ones too."""
    if event.type in _UNSEARCHED:
        return
    skipped = _SKIPPED.get(event.type, frozenset())
    for name in type(event).model_fields:
        if name not in skipped:
            yield from _strings(getattr(event, name))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


class SearchIndex:
    """Each event's folded text, in the order of the projector's `events`, kept up to date
    as the list grows (an event never changes once emitted)."""

    def __init__(self) -> None:
        self.folded: list[str] = []

    def update(self, events: Sequence[Event]) -> None:
        """Fold the events not indexed yet."""
        for event in events[len(self.folded) :]:
            self.folded.append(fold("\n".join(texts(event))))

    def matches(self, query: str) -> list[int]:
        """Indices of the events whose text holds `query` (already folded)."""
        return [index for index, text in enumerate(self.folded) if query in text]


def search_state(
    index: SearchIndex, events: Sequence[Event], query: str, start: int | None
) -> dict[str, Any]:
    """What the search box lists for `query`: a page of matching events (node, seq, type and
    the text around the match), how many match, or the one event `#N` names."""
    query = query[:QUERY_LIMIT]
    if not query.strip():
        return {}
    number = seq_query(query)
    if number is not None:
        return _goto(events, query, number)
    folded = fold(query.strip())
    index.update(events)
    rows, page = page_of(index.matches(folded), start or 0, FOUND)
    return {
        "query": query,
        "rows": [_row(events[at], folded) for at in rows],
        "page": page,
        "note": None if page["total"] else f"nothing matches “{query.strip()}”",
    }


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
    return {
        "seq": event.seq,
        "path": event.path,
        "type": event.type,
        "before": before,
        "match": match,
        "after": after,
    }


def _snippet(event: Event, query: str) -> tuple[str, str, str]:
    """The text around the first match of `query`, cut in three: before, the match, after."""
    leaves = list(texts(event))
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
