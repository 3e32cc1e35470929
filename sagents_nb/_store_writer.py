"""`StepWriter`: commits a session's steps off the event loop; steps that pile up share a
transaction. One library thread serves every writer."""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from typing import TYPE_CHECKING, Protocol

from ._errors import StoreError

if TYPE_CHECKING:
    from ._store import Step, Store


class Encodable(Protocol):
    """A step recorded on the loop, encoded to rows by the writer (off the loop)."""

    def encode(self) -> Step: ...


log = logging.getLogger("sagents_nb")

COMMIT_DELAY = 0.002
"""Seconds a handed-over step waits for the steps that follow it, to share their transaction.
A crash loses at most this much finished work besides the action in flight."""

_lock = threading.Condition()
_waiting: list[StepWriter] = []
_thread: threading.Thread | None = None
_writers: weakref.WeakSet[StepWriter] = weakref.WeakSet()


class StepWriter:
    """Commits one session's steps in order, within `COMMIT_DELAY` of their hand-over.

    A failed commit is logged and retried with the session's next step; `drain` raises it.

    Args:
        store: where to write.
        session_id: the session the steps belong to.
    """

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._pending: list[Encodable] = []
        self._writing = False
        _writers.add(self)

    def put(self, step: Encodable) -> None:
        """Queue `step` for the next commit."""
        global _thread
        with _lock:
            self._pending.append(step)
            if self in _waiting:
                return  # the store thread already counts down to this writer's commit
            _waiting.append(self)
            if _thread is None:
                _thread = threading.Thread(target=_serve, name="sagents_nb-store", daemon=True)
                _thread.start()
            if len(_waiting) == 1:
                _lock.notify_all()

    def drain(self) -> None:
        """Commit every queued step now, on this thread, and wait; raise `StoreError` if the store
        refuses."""
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
        if steps:
            try:
                self.store.commit(self.session_id, [step.encode() for step in steps])
            except Exception as exc:
                error = exc
        with _lock:
            self._writing = False
            if error is not None:
                self._pending[:0] = steps
            _lock.notify_all()
        return error


def _serve() -> None:
    """The store thread: `COMMIT_DELAY` after a step arrives, commit what each writer has queued
    (a writer whose commit failed waits for its next step, or a drain, to try again)."""
    while True:
        with _lock:
            _lock.wait_for(lambda: _waiting)
            deadline = time.monotonic() + COMMIT_DELAY
            while (left := deadline - time.monotonic()) > 0:
                _lock.wait(left)
        _commit_waiting()


def _commit_waiting() -> None:
    """Commit every waiting writer's steps (a writer being drained elsewhere waits its turn)."""
    with _lock:
        ready = [w for w in _waiting if not w._writing]
        _waiting[:] = [w for w in _waiting if w._writing]
        batches = [(w, w._pending) for w in ready]
        for writer in ready:
            writer._pending, writer._writing = [], True
    for writer, steps in batches:
        error = writer._commit(steps)
        if error is not None:
            log.error(
                "could not write session %s to %r (%s); the run goes on in memory and the "
                "write is retried with the next step",
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
