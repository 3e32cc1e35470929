"""Whole-request time limits for the requests of one event loop, kept by one shared timer."""

from __future__ import annotations

import asyncio
from types import TracebackType


class Deadlines:
    """The deadlines of the requests in flight on one loop.

    Like `asyncio.timeout_at`, but one timer serves them all: a timer of its own per request
    costs more than an in-process mock request takes. The timer is set for the earliest deadline
    in flight; requests of one endpoint share a timeout, so later ones never move it earlier.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.active: set[Deadline] = set()
        self.handle: asyncio.TimerHandle | None = None

    def at(self, when: float) -> Deadline:
        """An `async with` block that raises `TimeoutError` if it is still running at `when`."""
        return Deadline(self, when)

    def _arm(self, when: float) -> None:
        if self.handle is None or when < self.handle.when():
            if self.handle is not None:
                self.handle.cancel()
            self.handle = self.loop.call_at(when, self._check)

    def close(self) -> None:
        """Drop the timer when no request is in flight (its endpoint is closed): left, it
        would stay on the loop until the deadline it was set for."""
        if not self.active and self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _check(self) -> None:
        self.handle = None
        now = self.loop.time()
        for deadline in [d for d in self.active if d.when <= now]:
            deadline.expired = True
            deadline.task.cancel()
            self.active.discard(deadline)
        if self.active:
            self._arm(min(d.when for d in self.active))


class Deadline:
    """One block under a deadline (see `Deadlines.at`)."""

    __slots__ = ("cancelling", "expired", "task", "watch", "when")

    def __init__(self, watch: Deadlines, when: float) -> None:
        self.watch = watch
        self.when = when
        self.expired = False

    async def __aenter__(self) -> Deadline:
        task = asyncio.current_task()
        assert task is not None, "a deadline is kept for a task"
        self.task = task
        self.cancelling = task.cancelling()
        self.watch.active.add(self)
        self.watch._arm(self.when)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.watch.active.discard(self)
        # our cancel, and no one else's, is turned into a timeout (as asyncio.timeout does)
        if self.expired and kind is asyncio.CancelledError:
            if self.task.uncancel() <= self.cancelling:
                raise TimeoutError from error
