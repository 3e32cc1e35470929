"""Coalesces update requests into calls on the library loop, at a bounded rate."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

from .._loop import call_soon, on_library_thread

log = logging.getLogger("sagents_nb")


class Throttle:
    """Calls `push` on the library's loop thread after each `request()`, at most `rate` times a
    second; a request made while a call is pending joins it, so the last state always goes out.

    Args:
        push: what to call; it should read the newest state when it runs.
        rate: calls per second at most.
    """

    def __init__(self, push: Callable[[], None], *, rate: float = 20.0) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be a positive number of updates per second, not {rate}")
        self.interval = 1.0 / rate
        self._push = push
        self._lock = threading.Lock()
        self._scheduled = False
        self._closed = False
        self._last = 0.0

    def request(self) -> None:
        """Ask for a call (from any thread); cheap when one is already pending."""
        if self._scheduled or self._closed:
            return
        with self._lock:
            if self._scheduled:
                return
            self._scheduled = True
        if on_library_thread():
            self._schedule()
        else:
            call_soon(self._schedule)

    def close(self) -> None:
        """Make no more calls."""
        self._closed = True

    def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        delay = self._last + self.interval - time.monotonic()
        if delay > 0:
            loop.call_later(delay, self._run)
        else:
            loop.call_soon(self._run)

    def _run(self) -> None:
        # Cleared before reading the state: a request arriving during the push schedules another.
        self._scheduled = False
        if self._closed:
            return
        self._last = time.monotonic()
        try:
            self._push()
        except Exception:
            log.exception("a live view failed to update; it will try again on the next event")
