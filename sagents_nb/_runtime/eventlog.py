"""The session's event log: a list of events whose stored part is decoded when it is read."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeAlias, overload

from ..events import Event

if TYPE_CHECKING:  # the store's modules load with the first durable session
    from .._store.protocol import EventRow

Decode: TypeAlias = "Callable[[EventRow], Event]"
Read: TypeAlias = "Callable[[int, int], list[EventRow]]"
"""Reads the stored rows of seqs first..last (an index's seq is the index + 1)."""

BLOCK = 2_000
"""Stored rows read at once when one of them is first read (see `EventLog`)."""

UNREAD: object = type("Unread", (), {"__repr__": lambda self: "UNREAD"})()
"""Stands in the log for a stored row not read from its store yet (see `EventLog`)."""


class EventLog(Sequence[Event]):
    """A list-like log (len, index, slice, iteration, reversed, ==) that the bus appends to.

    A reopened session's log starts with its stored rows, each decoded to its event the first
    time it is read and kept: reopening a long session reads none of them, and looking back
    (the last run's events, the tail) decodes only what it looks at. A slice is a view over
    the same items (an event read through it is decoded once for both), fixed to the events
    there were when it was taken, as a list's slice is.

    A log may start with `UNREAD` items (a session opened from an outline of its events, see
    `OutliningStore`): the first read of one reads the `BLOCK` of stored rows around it
    (`read`), so a long session's events are read from the store a slice at a time.
    """

    __slots__ = ("_decode", "_items", "_live", "_lock", "_read", "_start", "_stop")

    def __init__(
        self,
        items: Iterable[Event | EventRow | object] = (),
        decode: Decode | None = None,
        read: Read | None = None,
    ):
        self._items: list[Event | EventRow | object] = list(items)
        self._decode = decode
        self._read = read
        self._lock = threading.Lock()
        self._start = 0
        self._stop: int | None = None
        """None: the whole log, growing; else where this view ends."""
        self._live = len(self._items)
        """Where the events the bus appended begin (the items before may be stored rows)."""

    def append(self, event: Event) -> None:
        if self._stop is not None:
            raise TypeError("a slice of the event log is read-only")
        self._items.append(event)

    def __len__(self) -> int:
        stop = len(self._items) if self._stop is None else self._stop
        return stop - self._start

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | Sequence[Event]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(len(self))
            if stride != 1:
                return [self[i] for i in range(start, stop, stride)]
            view = EventLog.__new__(EventLog)
            view._items, view._decode, view._lock = self._items, self._decode, self._lock
            view._read = self._read
            view._live = self._live
            view._start, view._stop = self._start + start, self._start + max(start, stop)
            return view
        size = len(self)
        if not -size <= index < size:
            raise IndexError("event log index out of range")
        at = self._start + (index if index >= 0 else size + index)
        item = self._items[at]
        return item if isinstance(item, Event) else self._decoded(at)

    def since(self, index: int) -> list[Event]:
        """`list(self[index:])`, quicker for the newest events (the journal's seal): those the
        bus appended are taken as they are."""
        start = self._start + index
        if start >= self._live:
            return self._items[start : self._stop]  # type: ignore[return-value]
        return list(self[index:])

    def _decoded(self, at: int) -> Event:
        with self._lock:  # readers on two threads get the same object
            item = self._items[at]
            if isinstance(item, Event):
                return item
            if item is UNREAD:
                item = self._read_rows(at)
            assert self._decode is not None, "a stored row without its decoder"
            event = self._items[at] = self._decode(item)  # type: ignore[arg-type]
            return event

    def _read_rows(self, at: int) -> object:
        """Put the stored rows of the `BLOCK` around `at` in place of their `UNREAD` (the
        caller holds the lock); the item at `at` then. A failed read raises, and leaves the
        log as it was."""
        assert self._read is not None, "an unread row without its reader"
        items = self._items
        start = at - at % BLOCK
        stop = min(start + BLOCK, self._live)
        rows = self._read(start + 1, stop)
        for index, row in enumerate(rows, start):
            if items[index] is UNREAD:
                items[index] = row
        return items[at]

    def __iter__(self) -> Iterator[Event]:
        items = self._items  # the items there are now, read without the checks of `self[i]`
        for at in range(self._start, self._start + len(self)):
            item = items[at]
            yield item if isinstance(item, Event) else self._decoded(at)

    def __reversed__(self) -> Iterator[Event]:
        for index in range(len(self) - 1, -1, -1):
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

    def __reduce__(self) -> tuple[type[EventLog], tuple[list[Event]]]:
        """Pickled and copied as its events (the lock and the decoder stay here)."""
        return EventLog, (list(self),)

    @property
    def undecoded(self) -> int:
        """How many stored rows have not been read yet."""
        return sum(
            not isinstance(self._items[at], Event)
            for at in range(self._start, self._start + len(self))
        )
