"""The session's event log: a list of events whose stored part is decoded when it is read."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import overload

from .._store.protocol import EventRow
from ..events import Event

Decode = Callable[[EventRow], Event]


class EventLog(Sequence[Event]):
    """A list-like log (len, index, slice, iteration, reversed, ==) that the bus appends to.

    A reopened session's log starts with its stored rows, each decoded to its event the first
    time it is read and kept: reopening a long session reads none of them, and looking back
    (the last run's events, the tail) decodes only what it looks at. A slice is a log of its
    own over the same rows.
    """

    __slots__ = ("_decode", "_items", "_lock")

    def __init__(self, items: Iterable[Event | EventRow] = (), decode: Decode | None = None):
        self._items: list[Event | EventRow] = list(items)
        self._decode = decode
        self._lock = threading.Lock()

    def append(self, event: Event) -> None:
        self._items.append(event)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> EventLog: ...

    def __getitem__(self, index: int | slice) -> Event | EventLog:
        if isinstance(index, slice):
            return EventLog(self._items[index], self._decode)
        item = self._items[index]
        return item if isinstance(item, Event) else self._decoded(index, item)

    def _decoded(self, index: int, row: EventRow) -> Event:
        with self._lock:  # readers on two threads get the same object
            item = self._items[index]
            if isinstance(item, Event):
                return item
            assert self._decode is not None, "a stored row without its decoder"
            event = self._decode(row)
            self._items[index] = event
            return event

    def __iter__(self) -> Iterator[Event]:
        for index in range(len(self._items)):
            yield self[index]

    def __reversed__(self) -> Iterator[Event]:
        for index in range(len(self._items) - 1, -1, -1):
            yield self[index]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __add__(self, other: Iterable[Event]) -> list[Event]:
        return [*self, *other]

    def __repr__(self) -> str:
        return repr(list(self))

    @property
    def undecoded(self) -> int:
        """How many stored rows have not been read yet."""
        return sum(not isinstance(item, Event) for item in self._items)
