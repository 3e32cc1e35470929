"""Sync tools run in worker threads, so one that blocks never stalls the library's loop.

A hop through `asyncio.to_thread` wakes the loop through its self-pipe and a chain of futures;
for the many sync tools that return at once that hop would cost more than the rest of a turn.
So the loop first waits a short `GRACE_SECONDS` on a plain lock for the answer (no loop wake-up
at all) and only then hands the wait to an asyncio future.
"""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import os
import threading
from _queue import SimpleQueue  # not `queue`: a user script named queue.py must not shadow it
from collections.abc import Callable
from typing import Any

GRACE_SECONDS = 0.002
"""How long the loop blocks for a sync tool's answer before it goes on with other work."""

MAX_WORKERS = 64
"""Worker threads at most; beyond this, calls wait for a free worker."""


class _Job:
    __slots__ = ("context", "done", "error", "fn", "guard", "kwargs", "value", "waiter")

    def __init__(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self.fn, self.kwargs = fn, kwargs
        self.context = contextvars.copy_context()
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.guard = _thread.allocate_lock()
        self.waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None

    def run(self) -> None:
        try:
            self.value = self.context.run(self.fn, **self.kwargs)
        except BaseException as exc:  # handed to the loop, raised there
            self.error = exc

    def announce(self) -> None:
        """Wake whoever waits for this job: the loop blocked in its grace wait, or its future."""
        with self.guard:
            self.done.release()
            waiter = self.waiter
        if waiter is not None:
            loop, future = waiter
            try:
                loop.call_soon_threadsafe(_wake, future)
            except RuntimeError:  # the loop was closed while this tool ran
                pass

    def outcome(self) -> Any:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        return self.value


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Pool:
    """Daemon worker threads taking jobs from one queue; a new one starts when none is idle.

    `idle` counts idle workers less the jobs queued for want of one.
    """

    def __init__(self) -> None:
        self.jobs: SimpleQueue[_Job] = SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0
        self.workers = 0
        self.pid = os.getpid()

    def submit(self, job: _Job) -> None:
        with self.lock:
            if self.idle > 0 or self.workers >= MAX_WORKERS:
                self.idle -= 1  # an idle worker is taken (below zero: the job waits for one)
            else:
                self.workers += 1
                threading.Thread(
                    target=self._work, name=f"sagents_nb-tool-{self.workers}", daemon=True
                ).start()
        self.jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            job.run()
            with self.lock:
                self.idle += 1
            # last, so the woken loop thread finds the GIL about to be free (this thread
            # goes straight back to waiting for a job)
            job.announce()


_pool: _Pool | None = None


def _current_pool() -> _Pool:
    global _pool
    if _pool is None or _pool.pid != os.getpid():  # threads do not survive a fork
        _pool = _Pool()
    return _pool


async def run_in_worker(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """`fn(**kwargs)` in a worker thread, in a copy of the caller's context variables.

    Cancelling the await (a run cancelled, a timeout) abandons the call: the thread runs it to
    its end and its result is dropped.
    """
    job = _Job(fn, kwargs)
    _current_pool().submit(job)
    if job.done.acquire(True, GRACE_SECONDS):
        return job.outcome()
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    with job.guard:
        finished = job.done.acquire(False)
        if not finished:
            job.waiter = (loop, future)
    if not finished:
        await future
    return job.outcome()
