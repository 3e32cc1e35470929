"""View state: what the projector keeps per node, run and pause (plain data, no widgets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.messages import Message, Usage
from .._runtime.costs import NodeSpend
from ..events import Event, ModelRequest, PausedRequest, RunStarted, TaskSpawned, ToolCallFinished

if TYPE_CHECKING:
    from ._context_diff import ContextChanges

Stored = Message | RunStarted | TaskSpawned | ToolCallFinished
"""An item of storage: a message, or the event that carried it. The projector keeps references to
events (alive in the session's log anyway) rather than copies: fewer objects for the garbage
collector to walk during a run."""


@dataclass(slots=True)
class ToolCard:
    """One tool call of a node, from its pause or start to its result."""

    call_id: str
    name: str
    arguments: str
    seq: int
    status: str = "running"
    result: str | None = None
    duration: float | None = None
    display_text: str | None = None
    child: str | None = None
    """The child a `task` call started or reattached to."""
    notes: tuple[str, ...] = ()
    """Pause decisions, reattach and refusal reasons."""


@dataclass(slots=True)
class Turn:
    """One model turn of a node: the view sent beside the storage it was built from."""

    number: int
    kind: str
    seq: int
    view_tokens: int
    storage_tokens: int
    view_count: int
    storage_count: int
    hidden: int
    hidden_as: str = "hidden"
    """How the node's kind had left stored items out of the view (see `NodeState.hidden_as`)."""
    from_storage: list[int] | None = None
    """Which view messages are which stored ones (see `ContextBuilt.from_storage`)."""
    view: Sequence[Message] = ()
    """The messages sent (set with the request: a turn is built first)."""
    storage: Sequence[Stored] = ()
    """The node's storage list as it was; only its first `storage_len` items belong to this turn."""
    storage_len: int = 0
    forgotten_len: int = 0
    model: str = ""
    tool_choice: str | None = None
    reply: Message | None = None
    usage: Usage | None = None
    duration: float | None = None


@dataclass
class Mark:
    """A context event on a node's timeline (and a marker on its context chart)."""

    seq: int
    type: str
    at: int
    """Turns the node had finished when it happened."""
    title: str
    details: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    previews: list[str] = field(default_factory=list)
    event: Event | None = None
    """The event itself (alive in the session's log anyway), for readers of its fields."""


@dataclass(slots=True)
class NodeState:
    """Everything a view shows about one agent instance."""

    path: str
    agent: str
    parent: str | None
    kind: str = "?"
    hidden_as: str = "hidden"
    """What stored items left out of the view are called, as the events that left them out
    tell (`sunk` after a cold sink, `trimmed` after a window trim)."""
    status: str = "spawned"
    detail: str | None = None
    turns: int = 0
    tokens: int = 0
    """This node's own tokens (children not included)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    spend: NodeSpend = field(default_factory=NodeSpend)
    """Its own reported tokens by model and its CLI's reported cost (priced when the tree is drawn)."""
    display_text: str | None = None
    prompt: str | None = None
    """The latest task delegated to this node."""
    reattached: int = 0
    refused: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    inputs: list[TaskSpawned] = field(default_factory=list)
    """Delegated tasks the child has not started on yet."""
    transcript: list[Event] = field(default_factory=list)
    """The events that put a line in the transcript (see `_panes.transcript_row`)."""
    streaming: list[str] = field(default_factory=list)
    storage: list[Stored] = field(default_factory=list)
    """Storage rebuilt from events. Only ever appended to; a compaction swaps in a new list, so a
    turn can keep a reference and a length instead of a copy."""
    forgotten: list[tuple[str, Stored]] = field(default_factory=list)
    """Messages compaction removed from storage, with how (`summarised` or `truncated`)."""
    turn_log: list[Turn] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)
    """Every request the node sent, turns and summaries alike (to find its wire exchanges)."""
    cards: dict[str, ToolCard] = field(default_factory=dict)
    timeline: list[Mark] = field(default_factory=list)
    building: Turn | None = None
    """A turn whose context is built and whose request is not sent yet."""
    asking: Turn | None = None
    """The turn waiting for its reply (None while a summary request is out)."""
    about_to_send: PausedRequest | None = None
    """The whole request a model pause of this node stands before (the Context tab shows it)."""
    version: int = 0
    context_changes: ContextChanges | None = None
    """What entered and left the view turn by turn, worked out on first look and extended as
    turns come (see `_context_diff`)."""


@dataclass
class RunState:
    """One run of the session, as its events tell it."""

    number: int
    status: str = "running"
    input: str | None = None
    text: str | None = None
    turns: int = 0
    tokens: int = 0


@dataclass
class PendingState:
    """A pause waiting for a decision."""

    pause_id: int
    action: str
    path: str
    seq: int
    name: str | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    run: int = 0
    stored: bool = False
    """Stored by a run that was cut (a reopen or a fork): it waits for `session.resume()`."""


@dataclass
class Loading:
    """How far a view's long stored log has been folded (`Projector.loading`, `_replay`)."""

    done: int
    of: int
    last_seq: int
    """The seq of the log's last stored event."""

    def words(self) -> str:
        return f"reading the {self.of:,} stored events…"
