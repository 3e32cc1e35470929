"""`StepWriter`: commits a session's steps off the event loop, in groups; one library thread
(the store thread) serves every writer."""

from __future__ import annotations

import atexit
import collections
import heapq
import itertools
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ._errors import StoreError

if TYPE_CHECKING:
    from ._store import SessionRows, Step, Store

log = logging.getLogger("sagents_nb")

QUIET_SECONDS = 0.002
"""Steps are committed once their session has handed over nothing new for this long..."""

MAX_DELAY_SECONDS = 0.05
"""...or at the latest this long after the first of them. A crash loses at most this much
finished work besides the action in flight; a session waiting for a model or a tool is quiet,
so its steps are committed within `QUIET_SECONDS`."""

IDLE_CHECK_SECONDS = MAX_DELAY_SECONDS
"""How often the store thread looks for what was queued without waking it: a new session's
record and the chores `later` runs after a delay. Waking the thread costs the busy library
loop a GIL hand-over (~0.1 ms a wake, measured in the fanout benchmark)."""

_lock = threading.Condition()
_waiting: list[StepWriter] = []
_chores: collections.deque[Callable[[], None]] = collections.deque()
_timed: list[tuple[float, int, Callable[[], None]]] = []
_order = itertools.count()
_sleeping_until = 0.0
"""When the store thread wakes up next by itself (monotonic time; 0 while it is awake)."""
_thread: threading.Thread | None = None
_writers: weakref.WeakSet[StepWriter] = weakref.WeakSet()


class Encodable(Protocol):
    """A step recorded on the loop, encoded to rows by the writer (off the loop)."""

    def encode(self) -> Step: ...


class StepWriter:
    """Commits one session's steps in order, in groups that share a transaction.

    A failed commit is logged and retried with the session's next step; `drain` raises it.

    Args:
        store: where to write.
        session_id: the session the steps belong to.
        cut: called first by `drain`, to queue the step being recorded.
        create: the new session's rows, written (`Store.create`) by the store thread before
            its first step, and at its next look in any case (`IDLE_CHECK_SECONDS`).
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        cut: Callable[[], None] | None = None,
        create: SessionRows | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self._cut = cut
        self._create = create
        self._pending: list[Encodable] = []
        self._writing = False
        self._first = self._last = 0.0
        _writers.add(self)
        if create is not None:  # stored at the store thread's next look, without waking it
            with _lock:
                self._first = self._last = time.monotonic()
                _waiting.append(self)
                _wake(math.inf)

    def put(self, step: Encodable, *, at_once: bool = False) -> None:
        """Queue `step` for the next commit: once the session is quiet, or `at_once`."""
        now = time.monotonic()
        with _lock:
            self._pending.append(step)
            self._last = now
            if self not in _waiting:
                self._first = now
                _waiting.append(self)
            elif not at_once:
                return  # the store thread already watches this writer
            if at_once:
                self._first = now - MAX_DELAY_SECONDS
            _wake(self.due())

    def due(self) -> float:
        """When this writer's queued steps should be committed (monotonic time)."""
        return min(self._last + QUIET_SECONDS, self._first + MAX_DELAY_SECONDS)

    def drain(self) -> None:
        """Commit every queued step (and the one being recorded) now, on this thread, and
        wait; raise `StoreError` if the store refuses."""
        if self._cut is not None:
            self._cut()
        with _lock:
            _lock.wait_for(lambda: not self._writing)
            steps, self._pending = self._pending, []
            self._writing = True
        error = self._commit(steps)
        if error is not None:
            raise StoreError(
                f"could not write session {self.session_id} to {self.store!r} ({error}); it "
                "goes on in memory; free the disk or fix the file, then call session.store.flush()"
            ) from error

    def _commit(self, steps: list[Encodable]) -> Exception | None:
        """Encode and commit `steps` (the caller set `_writing`); on failure put them back
        first in line."""
        error = None
        try:
            if self._create is not None:
                self.store.create(self._create)
                self._create = None
            if steps:
                self.store.commit(self.session_id, [step.encode() for step in steps])
        except Exception as exc:
            error = exc
        with _lock:
            self._writing = False
            if error is not None:
                self._pending[:0] = steps
            _lock.notify_all()
        return error


def later(chore: Callable[[], None], delay: float = 0.0) -> None:
    """Run `chore` on the store thread (at its first look `delay` seconds or more from now,
    within `IDLE_CHECK_SECONDS` more), e.g. closing a connection
    (SQLite then checkpoints and syncs the file, which takes milliseconds nobody should wait
    for).

    Safe without a delay from a garbage-collection finalizer on any thread, the store thread
    included: the chore waits in a deque until the thread next looks.
    """
    if delay <= 0:
        _chores.append(chore)
        with _lock:
            _wake(0.0)
        return
    with _lock:  # run at the store thread's next look after `delay`
        heapq.heappush(_timed, (time.monotonic() + delay, next(_order), chore))
        _wake(math.inf)


def _wake(due: float) -> None:
    """Start the store thread, or wake it if it would sleep past `due` (the caller holds
    `_lock`): a wake-up costs the busy loop thread a GIL hand-over."""
    global _thread
    if _thread is None:
        _thread = threading.Thread(target=_serve, name="sagents_nb-store", daemon=True)
        _thread.start()
    if due < _sleeping_until:
        _lock.notify_all()


def _serve() -> None:
    """The store thread: run chores; commit each waiting writer's steps when they are due (a
    writer whose commit failed waits for its next step, or a drain, to try again)."""
    while True:
        chores, batches = _next_turn()
        _run(chores)
        _commit_all(batches)
        del chores, batches  # nothing of a session outlives its turn here


def _next_turn() -> tuple[list[Callable[[], None]], list[tuple[StepWriter, list[Encodable]]]]:
    """Wait for chores or due writers; take them (each writer's steps, marked as writing)."""
    global _sleeping_until
    with _lock:
        while not _chores:
            ready = [w.due() for w in _waiting if not w._writing]
            if _timed:
                ready.append(_timed[0][0])
            now = time.monotonic()
            left = min(min(ready) - now if ready else math.inf, IDLE_CHECK_SECONDS)
            if left <= 0:
                break
            _sleeping_until = now + left
            _lock.wait(left)  # or woken early
            _sleeping_until = 0.0
        now = time.monotonic()
        while _timed and _timed[0][0] <= now:
            _chores.append(heapq.heappop(_timed)[2])
        chores = [_chores.popleft() for _ in range(len(_chores))]
        due = [w for w in _waiting if not w._writing and w.due() <= now]
        _waiting[:] = [w for w in _waiting if w not in due]
        batches = [(w, w._pending) for w in due]
        for writer in due:
            writer._pending, writer._writing = [], True
        return chores, batches


def _run(chores: list[Callable[[], None]]) -> None:
    for chore in chores:
        try:
            chore()
        except Exception:
            log.exception("a store chore failed: %r", chore)


def _commit_all(batches: list[tuple[StepWriter, list[Encodable]]]) -> None:
    for writer, steps in batches:
        error = writer._commit(steps)
        if error is not None:
            log.error(
                "could not write session %s to %r (%s); the run goes on in memory and "
                "the write is retried with the next step",
                writer.session_id,
                writer.store,
                error,
            )


def drain_all() -> None:
    """Commit every session's queued steps, so that reading a store in this process sees them
    (a failure is logged: the session's own `flush()` raises it)."""
    for writer in list(_writers):
        try:
            writer.drain()
        except StoreError as exc:
            log.error("%s", exc)


atexit.register(drain_all)  # a script that ends normally keeps everything its sessions recorded
