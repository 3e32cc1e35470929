"""The session's event log and its live subscribers (callbacks and async iterators).

The library's own consumers (the journal, the view) are called on the loop thread as each event
is emitted; a user's callback (`session.subscribe`) gets the events in order on a thread of its
own, through a bounded queue, so a slow callback never holds up the run (the seed: no plugin
latency throttles generation). Past `QUEUE_LIMIT` waiting events it drops the newest, counting
them in a warning, and a run's `wait()` / `result()` return once every callback has been handed
what came before (at most `CATCH_UP_SECONDS` later).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable

from .._base.loop import on_library_thread
from ..events import Event, StatusChanged
from .eventlog import EventLog

log = logging.getLogger("sagents_nb")

Subscriber = Callable[[Event], None]

QUEUE_LIMIT = 10_000
"""Events a user's callback may fall behind by before the newest are dropped."""

IDLE_SECONDS = 5.0
"""A callback's thread ends after this long without events (and starts again with the next)."""

CATCH_UP_SECONDS = 5.0
"""How long a run's `wait()` waits for slow callbacks to be handed its events."""


class Delivery:
    """One user callback's queue and the thread that calls it, in order."""

    def __init__(self, callback: Subscriber) -> None:
        self.callback = callback
        self.limit = QUEUE_LIMIT
        self.dropped = 0
        self._queue: collections.deque[Event] = collections.deque()
        self._busy = False
        self._closed = False
        self._ready = threading.Condition()
        self.name = "sagents_nb-subscriber-" + getattr(
            callback, "__qualname__", type(callback).__name__
        )
        self._thread: threading.Thread | None = None

    def __call__(self, event: Event) -> None:
        with self._ready:
            if len(self._queue) >= self.limit:
                self._drop()
                return
            self._queue.append(event)
            if self._thread is None:  # started on demand, ended when idle
                self._thread = threading.Thread(target=self._deliver, name=self.name, daemon=True)
                self._thread.start()
            elif not self._busy:  # a busy thread takes the queue when it is done
                self._ready.notify()

    def _drop(self) -> None:
        self.dropped += 1
        if self.dropped == 1 or self.dropped % self.limit == 0:
            log.warning(
                "a session.subscribe callback (%s) is %d events behind: %d dropped so far; "
                "make it faster or hand its work to a queue of its own",
                self.name,
                self.limit,
                self.dropped,
            )

    def caught_up(self, timeout: float) -> bool:
        """Wait until every queued event was handed over (False after `timeout` seconds)."""
        with self._ready:
            return self._ready.wait_for(lambda: not (self._queue or self._busy), timeout)

    def close(self) -> None:
        """Stop: events still queued are not handed over."""
        with self._ready:
            self._closed = True
            self._queue.clear()
            self._ready.notify_all()

    def _deliver(self) -> None:
        while True:
            with self._ready:
                self._busy = False
                self._ready.notify_all()
                waiting = self._ready.wait_for(lambda: self._queue or self._closed, IDLE_SECONDS)
                if self._closed or not waiting:
                    self._thread = None
                    return
                batch, self._queue = self._queue, collections.deque()
                self._busy = True
            for event in batch:
                if self._closed:
                    return
                try:
                    self.callback(event)
                except BaseException:  # its own thread: nothing of the run's to stop
                    log.exception(
                        "an event subscriber failed on %s; it stays subscribed", event.type
                    )


class EventBus:
    """Numbers events, keeps them, and hands each to every subscriber as it happens."""

    def __init__(self) -> None:
        self.log = EventLog()
        self.statuses: dict[str, str] = {}
        self.run = 0
        self._seq = 0
        self._subscribers: list[Subscriber] = []
        self.deliveries: list[Delivery] = []
        """The user's callbacks (`subscribe_queued`), each on its own thread."""
        self._lock = threading.Lock()

    @property
    def last_seq(self) -> int:
        return self._seq

    def emit(self, event: Event) -> Event:
        """Stamp `event` (seq, ts, run), record it and deliver it."""
        with self._lock:  # setters on the kernel's thread emit too (preprocessor, llm swaps)
            self._seq += 1
            event.seq, event.ts, event.run = self._seq, time.time(), self.run
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

    def subscribe(self, callback: Subscriber, *, statuses: bool = True) -> Callable[[], None]:
        """Deliver every future event to `callback`; it first gets each node's current status
        (`statuses=False`: not, for a consumer that has read them already).

        Returns a function that unsubscribes.
        """
        with self._lock:
            current = list(self.statuses.items()) if statuses else []
            self._subscribers = [*self._subscribers, callback]
        for path, status in current:
            callback(StatusChanged(path=path, status=status, seq=0, run=self.run, ts=time.time()))

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = [s for s in self._subscribers if s is not callback]

        return unsubscribe

    def subscribe_queued(self, callback: Subscriber) -> Callable[[], None]:
        """`subscribe` for a user's callback: called on a thread of its own, off the run's path
        (see the module's docstring). Returns a function that unsubscribes."""
        delivery = Delivery(callback)
        with self._lock:
            self.deliveries = [*self.deliveries, delivery]
        unsubscribe = self.subscribe(delivery)

        def stop() -> None:
            unsubscribe()
            with self._lock:
                self.deliveries = [d for d in self.deliveries if d is not delivery]
            delivery.close()

        return stop

    def caught_up(self, timeout: float = CATCH_UP_SECONDS) -> None:
        """Wait (at most `timeout` seconds in all) until every user callback was handed every
        event emitted so far."""
        deadline = time.monotonic() + timeout
        for delivery in self.deliveries:
            delivery.caught_up(max(0.0, deadline - time.monotonic()))

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
