"""The session's event log and its live subscribers (callbacks and async iterators)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable

from .._base.loop import on_library_thread
from ..events import Event, StatusChanged
from .eventlog import EventLog

log = logging.getLogger("sagents_nb")

Subscriber = Callable[[Event], None]


class EventBus:
    """Numbers events, keeps them, and hands each to every subscriber as it happens."""

    def __init__(self) -> None:
        self.log = EventLog()
        self.statuses: dict[str, str] = {}
        self.run = 0
        self._seq = 0
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()

    @property
    def last_seq(self) -> int:
        return self._seq

    def emit(self, event: Event) -> Event:
        """Stamp `event` (seq, ts, run), record it and deliver it."""
        with self._lock:  # setters on the kernel's thread emit too (preprocessor, llm swaps)
            self._seq += 1
            stamp = event.__dict__  # plain dict writes: pydantic's __setattr__ is slow
            stamp["seq"], stamp["ts"], stamp["run"] = self._seq, time.time(), self.run
            if type(event) is StatusChanged:
                self.statuses[event.path] = event.status
            self.log.append(event)
        for subscriber in self._subscribers:
            try:
                subscriber(event)
            except Exception:
                log.exception("an event subscriber failed on %s; it stays subscribed", event.type)
            except BaseException:
                if not on_library_thread():  # a real Ctrl-C on the caller's thread goes through
                    raise
                log.exception("an event subscriber raised on %s; it stays subscribed", event.type)
        return event

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Deliver every future event to `callback`; it first gets each node's current status.

        Returns a function that unsubscribes.
        """
        with self._lock:
            current = list(self.statuses.items())
            self._subscribers = [*self._subscribers, callback]
        for path, status in current:
            callback(StatusChanged(path=path, status=status, seq=0, run=self.run, ts=time.time()))

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s is not callback]

        return unsubscribe

    async def stream(self) -> AsyncIterator[Event]:
        """Iterate over events as they happen, on the caller's loop (current statuses first)."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event] = asyncio.Queue()
        owner = threading.get_ident()

        def push(event: Event) -> None:
            if threading.get_ident() == owner:
                queue.put_nowait(event)
            else:
                loop.call_soon_threadsafe(queue.put_nowait, event)

        unsubscribe = self.subscribe(push)
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()
