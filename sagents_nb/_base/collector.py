"""Holding off Python's cycle collector around work whose objects are all gone when it ends."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def collector_held() -> Iterator[None]:
    """No collection while the block runs: for a block that makes only short-lived objects
    (a commit's packing and rows), a young collection in its middle would walk everything the
    run made so far, for no garbage. Counted across threads: the collector is on again (if it
    was) when the last such block ends; its count of objects made goes on meanwhile."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
