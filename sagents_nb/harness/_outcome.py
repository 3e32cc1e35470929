"""`HarnessOutcome`: how one run of a native CLI ended."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ._events import HarnessUsage


class HarnessOutcome(BaseModel):
    """How one CLI run ended: status, answer, usage and what the process left behind."""

    model_config = ConfigDict(frozen=True)

    status: Literal["done", "error", "cancelled"]
    """`done` or `error`. `run_harness` re-raises cancellation; `cancelled` lets callers record a
    cancelled run in the same shape."""
    text: str = ""
    """The final answer when done; the text received so far otherwise."""
    usage: HarnessUsage = Field(default_factory=HarnessUsage)
    """Tokens the CLI reported for the run (zero when it reported none)."""
    exit_code: int | None = None
    """The process's exit status; negative for a signal; None when it never started."""
    stderr_tail: list[str] = Field(default_factory=list)
    """The last lines the CLI wrote to stderr."""
    error: str | None = None
    """What went wrong, when the status is `error`."""
