"""A parent's record of each delegated task, and inputs waiting for a busy persistent child."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._base.outcome import Outcome

if TYPE_CHECKING:
    from .node import Node


@dataclass
class TaskEntry:
    """One delegated task among a parent's children, keyed by (agent, prompt)."""

    child: Node
    prompt: str
    task: asyncio.Task[Outcome] | None = None
    outcome: Outcome | None = None
    run: int = 0
    """The run (user message) that spawned it: with `reattach="run"` only that run reattaches."""
    stopped: str | None = None
    """Why the parent stopped the task before it settled (e.g. its resident was destroyed)."""


@dataclass
class QueuedInput:
    """An input waiting for a busy persistent child."""

    prompt: str
    future: asyncio.Future[Outcome]
