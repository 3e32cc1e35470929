"""A CLI driven over stdin as well as read from stdout: what the runtime writes, and the questions
(approval requests) it answers through the kernel."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._events import HarnessEvent

Verdict = dict[str, Any] | str
"""The kernel's answer to an `Ask`: the arguments to run with, or the reason it is refused."""


@dataclass(frozen=True)
class Ask:
    """One of the CLI's questions about its own tool call, answered by the kernel's gate."""

    name: str
    arguments: dict[str, Any]
    answer: Callable[[Verdict | None], Received]
    """The reply to the CLI for a verdict (None: nobody in the kernel answers such questions)."""


@dataclass
class Received:
    """What one line (or one answer) of the conversation gives."""

    events: list[HarnessEvent] = field(default_factory=list)
    """Events for the run, as a driver's `parse_line` gives them."""
    replies: list[str] = field(default_factory=list)
    """Lines to write to the CLI's stdin now."""
    asks: list[Ask] = field(default_factory=list)
    """Questions for the kernel; each one's answer is written when it comes, reading goes on."""
    finished: bool = False
    """Nothing more will be written: the runtime closes stdin, and the CLI exits."""


class Conversation(ABC):
    """One run of a CLI that takes requests on stdin (a JSON-RPC server such as
    `codex app-server`). Pure like a driver: it builds lines and reads lines, the runtime does
    the I/O."""

    @abstractmethod
    def opening(self) -> list[str]:
        """The lines written to stdin as soon as the CLI starts."""

    @abstractmethod
    def receive(self, line: str) -> Received:
        """What one stdout line gives. Never raises: noise and unknown shapes give nothing."""


def conversation_of(driver: object, config: object) -> Conversation | None:
    """The conversation `driver` holds with its CLI for `config`, or None for a driver that only
    reads stdout (every driver but `Codex(gate_builtin_tools=True)` today)."""
    start = getattr(driver, "_conversation", None)
    conversation = start(config) if callable(start) else None
    return conversation if isinstance(conversation, Conversation) else None
