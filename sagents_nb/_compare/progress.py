"""A sweep's progress: a bar widget in a notebook, one rewritten line in a terminal."""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Protocol


class Progress(Protocol):
    """What a sweep reports to; called on the library's loop thread."""

    def start(self, total: int, done: int) -> None:
        """`total` runs, `done` of them read back from the store."""

    def advance(self, done: int, errors: int) -> None:
        """`done` runs have ended so far, `errors` of them in `error`."""

    def close(self, interrupted: bool) -> None:
        """The sweep ended (or was cancelled)."""


class TerminalProgress:
    """`sweep 12/200 · 1 error · 3.4 s`, rewritten in place (at most every `every` seconds)."""

    def __init__(self, stream: IO[str] | None = None, *, every: float = 0.2) -> None:
        self.stream = stream or sys.stderr
        self.every = every
        self.total = 0
        self.started = self.shown = 0.0
        self.line = ""

    def start(self, total: int, done: int) -> None:
        self.total = total
        self.started = time.monotonic()
        self._show(done, 0, force=True)

    def advance(self, done: int, errors: int) -> None:
        self._show(done, errors, force=done == self.total)

    def close(self, interrupted: bool) -> None:
        end = " (interrupted)" if interrupted else ""
        self.stream.write(f"\r{self.line}{end}\n")
        self.stream.flush()

    def _show(self, done: int, errors: int, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self.shown < self.every:
            return
        self.shown = now
        failed = f" · {errors} error{'s' * (errors != 1)}" if errors else ""
        self.line = f"sweep {done}/{self.total}{failed} · {now - self.started:.1f} s"
        self.stream.write(f"\r{self.line}")
        self.stream.flush()


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython is looked at only when loaded)."""
    if "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def progress_for(progress: Any) -> Progress | None:
    """The reporter `progress=` asks for: True picks the bar or the line, False none, or a
    `Progress` of the caller's."""
    if progress is False or progress is None:
        return None
    if progress is not True:
        return progress  # type: ignore[no-any-return]
    if in_kernel():
        from ..notebook import sweep_progress

        return sweep_progress()  # type: ignore[no-any-return]
    return TerminalProgress()
