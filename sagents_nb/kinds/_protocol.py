"""The `ChildKind` protocol and `BaseKind`, the defaults every built-in kind starts from."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

from .._base.errors import ConfigurationError
from .._base.messages import Message, ToolCall
from .._base.outcome import Outcome
from .._tools.tool import ToolResult
from ..events import TextDelta

if TYPE_CHECKING:
    from ._child import Child, OfferedTool

DisposePolicy = Literal["keep", "drop"]


class CompactUnsupported(Exception):
    """Raised by `compact` on kinds that have no compaction."""


class View(list[Message]):
    """The messages a kind shows the model this turn, and what it already knows of them.

    `measure` is (tokens, messages that come from storage), as the session's token counter
    counts them; None means unknown (then the turn counts the view itself). `runs` says which
    view messages are which stored ones, as `ContextBuilt.from_storage` does: flat runs of
    (view index, storage index, count); None lets the turn find them by identity (a walk of
    storage, when the view skips some of it). Build a new one each turn: the turn's
    `ModelRequest` event keeps it as it is, without a copy.
    """

    __slots__ = ("measure", "runs")
    measure: tuple[int, int] | None
    runs: list[int] | None

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(messages)
        self.measure = None
        self.runs = None

    @classmethod
    def of(cls, messages: Iterable[Message]) -> View:
        """`messages` as a view: itself if it is one, else a new one that says nothing of them."""
        return messages if isinstance(messages, View) else cls(messages)


def whole_view(child: Child) -> View:
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
    `BaseKind` has a default for each member. A kind sees its child through `Child` only.
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
    interrupts: bool
    """A busy child of this kind can be cut into: an input waiting for it is offered with
    `deliver(..., interrupt=True)` at each turn boundary of the task it is working on (after
    that task's first request); taken there, it joins that task, and its caller gets that
    task's answer. False: waiting inputs wait until the child is free."""

    def turn_limit(self, agent_max_turns: int | None) -> int:
        """The turn cap for an agent of this kind (`agent_max_turns` when the agent sets one)."""

    def deliver(self, child: Child, message: Message, interrupt: bool = False) -> bool:
        """Take an input (write it to storage) and return True; False hands it back to the
        skeleton, which queues it in the child's inbox until the child is free and then writes
        it to storage itself (`append_history`), as the task on it starts.

        Every input reaches a child through here (a session's message, a delegated task): for a
        free child just before the task on it starts (a False there is written at once); for a
        busy child whose kind `interrupts`, with `interrupt=True` at the running task's next
        turn boundary (a False there leaves it waiting for its own task).
        """

    async def run_task(self, child: Child) -> Outcome | None:
        """Run the task on the delivered input in the kind's own loop (e.g. an external CLI);
        None lets the shared turn loop run it."""

    async def maintain(self, child: Child) -> None:
        """Called first each turn; may compact (async)."""

    def prepare(self, child: Child) -> None:
        """Called before each turn's `build_context` (budget checks, sinking, signals)."""

    def build_context(self, child: Child, input: str) -> View:
        """The view sent to the model this turn (a plain list is taken as a `View` that says
        nothing of its size). Never mutates storage."""

    def own_tools(self, child: Child) -> list[OfferedTool]:
        """Extra tools the kind offers its own agent this turn (e.g. `recall`)."""

    def append_history(self, child: Child, *messages: Message) -> None:
        """Write a turn's messages to storage."""

    async def compact(self, child: Child, keep_recent: int | None = None) -> CompactionReport:
        """Compact storage; raise `CompactUnsupported` where the kind has none."""

    async def overflow(self, child: Child, limit: int) -> str | None:
        """The endpoint refused this turn's view as longer than its context window: keep the
        next views within `limit` tokens (by the session's counter) by the kind's own means
        (Main sinks, Resident compacts, Realtime narrows its window) and say what was set aside,
        which the model is told; None when the kind has no such means (the turn loop then
        leaves the oldest message groups out of the view itself)."""

    def emit(self, child: Child, text: str) -> None:
        """Output text: per chunk for streaming kinds, whole otherwise."""

    async def flush(self, child: Child) -> None:
        """Called when a task ends: deliver any output still queued."""

    async def run_tools(self, child: Child, calls: list[ToolCall]) -> list[ToolResult]:
        """Run the calls (hooks applied) and return results in the calls' order."""

    def dispose(self, child: Child, policy: DisposePolicy) -> str:
        """Release the child's state; `keep` hands queued inputs back, `drop` answers them skipped."""

    def parent_tools(self) -> list[OfferedTool]:
        """Control tools this kind gives the parent model."""

    def describe(self, child: Child) -> dict[str, Any]:
        """What a control tool (e.g. `resident_agents`) shows about `child`: JSON-able."""

    def dump_state(self, child: Child) -> Any:
        """What the kind keeps for `child` besides its messages, as JSON-able data (dicts, lists,
        text, numbers, booleans), or None when there is nothing to keep.

        Taken for the store (tagged with `name`) whenever the child's status changes (a task
        starts, pauses or ends), after a compaction or a kind swap, and when the kind calls
        `child.state_changed()` (a change mid-task: then a fork or a crash finds it too).
        Return a new value each time: the store keeps it to compare with the next one.
        """

    def load_state(self, child: Child, state: Any) -> None:
        """Put back what `dump_state` returned (as stored: JSON types, tuples become lists).

        Called by `Session.open` and `fork` after the child's messages are restored, only when
        the stored state was dumped by a kind of the same `name`.
        """


class BaseKind(ChildKind):
    """Defaults for a kind: storage is the message list, the view is all of it, output is whole.

    Subclass it and override what differs; a custom kind plugs in exactly like the built-ins.
    `configured(**changes)` makes a copy with other constructor arguments (what `sn.compare`
    and `sn.sweep` variants use).
    """

    name = "base"
    persistent = False
    stream = False
    salvage = False
    waiting_inputs: int | None = None
    interrupts = False
    default_max_turns = 25
    max_turns_cap: int | None = None
    _given: tuple[tuple[Any, ...], dict[str, Any]]

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        kind = super().__new__(cls)
        kind._given = (args, kwargs)  # what `configured` builds on
        return kind

    @classmethod
    def parameters(cls) -> list[str]:
        """The names `configured` takes: the parameters of the kind's constructor."""
        signature = inspect.signature(cls.__init__)
        return [
            p.name
            for p in list(signature.parameters.values())[1:]
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def configured(self, **changes: Any) -> Self:
        """A new kind of this class, built with the arguments this one was given and `changes`
        on top (attributes changed since construction are not carried over).

        Raises:
            ConfigurationError: a change names no parameter of the constructor, or the
                constructor refuses a value.
        """
        names = self.parameters()
        unknown = [name for name in changes if name not in names]
        if unknown:
            raise ConfigurationError(
                f"{type(self).__name__} has no parameter {unknown[0]!r} "
                f"(its parameters: {', '.join(names) or 'none'})"
            )
        args, kwargs = self._given
        bound = inspect.signature(type(self).__init__).bind(self, *args, **kwargs)
        bound.arguments.update(changes)
        try:
            return type(self)(*bound.args[1:], **bound.kwargs)
        except ConfigurationError:  # the constructor's own check names the argument
            raise
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"cannot build {type(self).__name__} with {changes} ({exc})"
            ) from exc

    def turn_limit(self, agent_max_turns: int | None) -> int:
        limit = agent_max_turns if agent_max_turns is not None else self.default_max_turns
        if self.max_turns_cap is not None:
            limit = min(limit, self.max_turns_cap)
        return max(1, limit)

    def deliver(self, child: Child, message: Message, interrupt: bool = False) -> bool:
        if child.busy and not interrupt:
            return False
        self.append_history(child, message)
        return True

    async def run_task(self, child: Child) -> Outcome | None:
        return None

    async def maintain(self, child: Child) -> None:
        return None

    def prepare(self, child: Child) -> None:
        return None

    def build_context(self, child: Child, input: str) -> View:
        return whole_view(child)

    def own_tools(self, child: Child) -> list[OfferedTool]:
        return []

    def append_history(self, child: Child, *messages: Message) -> None:
        child.append(*messages)

    async def compact(self, child: Child, keep_recent: int | None = None) -> CompactionReport:
        raise CompactUnsupported(f"kind {self.name!r} has no compaction")

    async def overflow(self, child: Child, limit: int) -> str | None:
        return None

    def emit(self, child: Child, text: str) -> None:
        if text:
            child.emit(TextDelta(text=text))

    async def flush(self, child: Child) -> None:
        return None

    async def run_tools(self, child: Child, calls: list[ToolCall]) -> list[ToolResult]:
        return await child.execute_tools(calls)

    def dispose(self, child: Child, policy: DisposePolicy) -> str:
        return child.release_inbox(policy)

    def parent_tools(self) -> list[OfferedTool]:
        return []

    def describe(self, child: Child) -> dict[str, Any]:
        return {
            "id": child.path,
            "agent": child.agent.name,
            "kind": self.name,
            "status": child.status,
            "tokens": child.context_tokens(),
            "messages": len(child.history),
            "queued": len(child.inbox),
        }

    def dump_state(self, child: Child) -> Any:
        return None

    def load_state(self, child: Child, state: Any) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
