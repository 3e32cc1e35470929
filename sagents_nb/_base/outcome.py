"""`Outcome`: how one task ended for one node (status and text), as kinds and the runtime pass it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Outcome:
    """How a task ended for one node."""

    status: str
    text: str

    def as_tool_text(self) -> str:
        """What the parent's `task` call returns: the text, prefixed by the status unless done."""
        return self.text if self.status == "done" else f"[{self.status}] {self.text}"
