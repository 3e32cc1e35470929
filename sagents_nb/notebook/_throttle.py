"""Coalesces update requests into calls on the library loop thread, at a bounded rate."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable

from .._base.loop import call_soon, on_library_thread

log = logging.getLogger("sagents_nb")


class Throttle:
    """Calls `push` on the library's loop thread after `request()`, at most `rate` times a second;
    a request that comes too soon is covered by one trailing call, so the last state always goes out.

    Args:
        push: what to call; it reads the newest state when it runs.
        rate: calls per second at most.
        clock: seconds, monotonic (tests pass their own).
        call_later: `(delay, callback)` schedules a trailing call; the library loop's timer by
            default (tests pass their own).
    """

    def __init__(
        self,
        push: Callable[[], None],
        *,
        rate: float = 20.0,
        clock: Callable[[], float] = time.monotonic,
        call_later: Callable[[float, Callable[[], None]], object] | None = None,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be a positive number of updates per second, not {rate}")
        self.interval = 1.0 / rate
        self._clock = clock
        self._call_later = call_later or _loop_timer
        self._push = push
        self._lock = threading.Lock()
        self._scheduled = False
        """A trailing call is pending on the loop."""
        self._closed = False
        self._urgent = False
        """A call that skips the interval is pending on the loop."""
        self._asked = False
        """A call was asked for since the last one began."""
        self._calling = False
        self._last = float("-inf")

    @property
    def settled(self) -> bool:
        """Whether the last call is done and nothing was asked for since it began."""
        return not (self._asked or self._calling)

    def request(self) -> None:
        """Ask for a call (from any thread); cheap when one is already pending."""
        if self._closed:
            return
        self._asked = True
        if self._clock() - self._last >= self.interval and on_library_thread():
            # Call now: a run that never awaits (a sync mock handler) keeps the loop busy, and
            # a timer would only fire after it ends.
            self._call()
            return
        if self._scheduled:
            return
        with self._lock:
            if self._scheduled:
                return
            self._scheduled = True
        if on_library_thread():
            self._fire()
        else:
            call_soon(self._fire)

    def request_now(self) -> None:
        """Ask for a call as soon as the loop is free, not waiting out the interval: for what
        a person just did (a click), whose answer they are watching for."""
        if self._closed or self._urgent:
            return
        self._asked = self._urgent = True
        call_soon(self._call_urgent)

    def request_at_once(self) -> None:
        """Call now on the library loop thread (elsewhere as soon as the loop is free), not
        waiting out the interval: for a state the person waits for (a run's end)."""
        if not on_library_thread():
            self.request_now()
        elif not self._closed:
            self._asked = True
            self._call()

    def _call_urgent(self) -> None:
        self._urgent = False
        self._call()

    def count_call(self) -> None:
        """Count a push the caller made itself: the next call comes `interval` later at the earliest."""
        self._last = self._clock()

    def close(self) -> None:
        """Make no more calls."""
        self._closed = True

    def _fire(self) -> None:
        delay = self._last + self.interval - self._clock()
        if delay > 0:
            # The timer holds the throttle weakly: it does not keep a dropped view alive.
            self._call_later(delay, functools.partial(_fire_later, weakref.ref(self)))
            return
        # Cleared before the state is read: a request arriving during the call makes another.
        self._scheduled = False
        if self._asked:  # else a call since (at once, or a click's) served what was asked
            self._call()

    def call(self) -> None:
        """Call now, on the library loop thread (the caller's), whatever the interval; what
        the call raises goes to the caller."""
        self._asked, self._calling = False, True
        self._last = self._clock()
        try:
            self._push()
        finally:
            self._calling = False

    def _call(self) -> None:
        if self._closed:
            return
        try:
            self.call()
        except Exception:
            log.exception("a live view failed to update; it will try again on the next event")


def _fire_later(throttle: weakref.ref[Throttle]) -> None:
    alive = throttle()
    if alive is not None:
        alive._fire()


def _loop_timer(delay: float, callback: Callable[[], None]) -> None:
    asyncio.get_running_loop().call_later(delay, callback)
