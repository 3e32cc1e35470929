"""Worker: a child for one task; local messages, all of them in view, a hard turn cap with salvage."""

from __future__ import annotations

from .._base.checks import check_int
from ._protocol import BaseKind


class Worker(BaseKind):
    """The default child kind.

    Args:
        max_turns: model calls per task (clamped to 1..30); at the cap, one salvage call without
            tools asks for a summary of what was found.
    """

    name = "worker"
    salvage = True
    max_turns_cap = 30

    def __init__(self, max_turns: int = 5) -> None:
        check_int("max_turns", max_turns, where="sn.kinds.Worker(...)")
        self.default_max_turns = max(1, min(30, max_turns))

    @property
    def max_turns(self) -> int:
        """Model calls per task, as clamped."""
        return self.default_max_turns

    def __repr__(self) -> str:
        return f"Worker(max_turns={self.max_turns})"
