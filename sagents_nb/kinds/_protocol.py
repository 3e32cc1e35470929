"""The `ChildKind` protocol and `BaseKind`, the defaults every built-in kind starts from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .._base.messages import Message, ToolCall
from .._base.outcome import Outcome
from .._tools.tool import ToolResult
from ..events import TextDelta

if TYPE_CHECKING:
    from .._runtime.node import Node

DisposePolicy = Literal["keep", "drop"]


class CompactUnsupported(Exception):
    """Raised by `compact` on kinds that have no compaction."""


class View(list[Message]):
    """A view whose size its kind already knows, so the turn need not count it again.

    `measure` is (tokens, messages that come from storage), as the session's token counter
    counts them; None means unknown (then the turn counts the view itself). `runs` says which
    view messages are which stored ones, as `ContextBuilt.from_storage` does; None lets the
    turn find them by identity (a walk of storage, when the view skips some of it). Build a
    new one each turn: the turn's `ModelRequest` event keeps it as it is, without a copy.
    """

    __slots__ = ("measure", "runs")

    def __init__(self, messages: Any = ()) -> None:
        super().__init__(messages)
        self.measure: tuple[int, int] | None = None
        self.runs: list[int] | None = None


def whole_view(child: Node) -> View:
    """The system prompt and the whole storage, with its `runs` said."""
    view = View(child.system_messages())
    history = child.history
    view.runs = [len(view), 0, len(history)] if history else []
    view.extend(history)
    return view


@dataclass
class CompactionReport:
    """What a compaction did."""

    strategy: Literal["summary", "truncation"]
    before_tokens: int
    after_tokens: int
    removed: int
    summary: str | None = None
    error: str | None = None


@runtime_checkable
class ChildKind(Protocol):
    """Everything that differs between child types: context management and async tool/output calls.

    Registration, stop, reattach and events live in the shared skeleton; a kind only decides what
    is kept (storage), what the model sees (the view), how overflow is handled and how output and
    tools are called. This protocol is all the runtime, the store and the views use of a kind;
    `BaseKind` has a default for each member.
    """

    name: str
    """Shown in events, trees and views; also the key of the kind's stored state."""
    persistent: bool
    """One child per (parent, agent) that lives across tasks, instead of one child per task."""
    stream: bool
    """Ask the endpoint to stream, and emit output per chunk."""
    salvage: bool
    """At the turn cap, make one last call without tools asking for a summary."""
    waiting_inputs: int | None
    """How many inputs may wait while a persistent child is busy (None: all, answered in
    order); a newer input beyond that replaces the oldest waiting one, which is answered as
    superseded (Realtime keeps a single slot)."""

    def turn_limit(self, agent_max_turns: int | None) -> int:
        """The turn cap for an agent of this kind (`agent_max_turns` when the agent sets one)."""

    def deliver(self, child: Node, message: Message, interrupt: bool = False) -> bool:
        """Take an input; False hands it back to the skeleton to queue until the child is free.

        Every input reaches a child through here (a session's message, a delegated task), just
        before the task on it starts.
        """

    async def run_task(self, child: Node) -> Outcome | None:
        """Run the task on the delivered input in the kind's own loop (e.g. an external CLI);
        None lets the shared turn loop run it."""

    async def maintain(self, child: Node) -> None:
        """Called first each turn; may compact (async)."""

    def prepare(self, child: Node) -> None:
        """Called before each turn's `build_context` (budget checks, sinking, signals)."""

    def build_context(self, child: Node, input: str) -> list[Message]:
        """The view sent to the model this turn. Never mutates storage."""

    def own_tools(self, child: Node) -> list[Any]:
        """Extra tools the kind offers its own agent this turn (e.g. `recall`)."""

    def append_history(self, child: Node, *messages: Message) -> None:
        """Write a turn's messages to storage."""

    async def compact(self, child: Node, keep_recent: int | None = None) -> CompactionReport:
        """Compact storage; raise `CompactUnsupported` where the kind has none."""

    def emit(self, child: Node, text: str) -> None:
        """Output text: per chunk for streaming kinds, whole otherwise."""

    async def flush(self, child: Node) -> None:
        """Called when a task ends: deliver any output still queued."""

    async def run_tools(self, child: Node, calls: list[ToolCall]) -> list[ToolResult]:
        """Run the calls (hooks applied) and return results in the calls' order."""

    def dispose(self, child: Node, policy: DisposePolicy) -> str:
        """Release the child's state; `keep` hands queued inputs back, `drop` answers them skipped."""

    def parent_tools(self) -> list[Any]:
        """Control tools this kind gives the parent model."""

    def describe(self, child: Node) -> dict[str, Any]:
        """What a control tool (e.g. `resident_agents`) shows about `child`: JSON-able."""

    def dump_state(self, child: Node) -> Any:
        """What the kind keeps for `child` besides its messages, as JSON-able data (dicts, lists,
        text, numbers, booleans), or None when there is nothing to keep.

        Taken for the store (tagged with `name`) whenever the child's status changes (a task
        starts, pauses or ends), after a compaction or a kind swap, and when the kind calls
        `child.state_changed()` (a change mid-task: then a fork or a crash finds it too).
        Return a new value each time: the store keeps it to compare with the next one.
        """

    def load_state(self, child: Node, state: Any) -> None:
        """Put back what `dump_state` returned (as stored: JSON types, tuples become lists).

        Called by `Session.open` and `fork` after the child's messages are restored, only when
        the stored state was dumped by a kind of the same `name`.
        """


class BaseKind(ChildKind):
    """Defaults for a kind: storage is the message list, the view is all of it, output is whole.

    Subclass it and override what differs; a custom kind plugs in exactly like the built-ins.
    """

    name = "base"
    persistent = False
    stream = False
    salvage = False
    waiting_inputs: int | None = None
    default_max_turns = 25
    max_turns_cap: int | None = None

    def turn_limit(self, agent_max_turns: int | None) -> int:
        limit = agent_max_turns if agent_max_turns is not None else self.default_max_turns
        if self.max_turns_cap is not None:
            limit = min(limit, self.max_turns_cap)
        return max(1, limit)

    def deliver(self, child: Node, message: Message, interrupt: bool = False) -> bool:
        if child.busy and not interrupt:
            return False
        self.append_history(child, message)
        return True

    async def run_task(self, child: Node) -> Outcome | None:
        return None

    async def maintain(self, child: Node) -> None:
        return None

    def prepare(self, child: Node) -> None:
        return None

    def build_context(self, child: Node, input: str) -> list[Message]:
        return whole_view(child)

    def own_tools(self, child: Node) -> list[Any]:
        return []

    def append_history(self, child: Node, *messages: Message) -> None:
        child.append(*messages)

    async def compact(self, child: Node, keep_recent: int | None = None) -> CompactionReport:
        raise CompactUnsupported(f"kind {self.name!r} has no compaction")

    def emit(self, child: Node, text: str) -> None:
        if text:
            child.emit(TextDelta(text=text))

    async def flush(self, child: Node) -> None:
        return None

    async def run_tools(self, child: Node, calls: list[ToolCall]) -> list[ToolResult]:
        return await child.execute_tools(calls)

    def dispose(self, child: Node, policy: DisposePolicy) -> str:
        return child.release_inbox(policy)

    def parent_tools(self) -> list[Any]:
        return []

    def describe(self, child: Node) -> dict[str, Any]:
        return {
            "id": child.path,
            "agent": child.agent.name,
            "kind": self.name,
            "status": child.status,
            "tokens": child.context_tokens(),
            "messages": len(child.history),
            "queued": len(child.inbox),
        }

    def dump_state(self, child: Node) -> Any:
        return None

    def load_state(self, child: Node, state: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
