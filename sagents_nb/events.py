"""Typed events: everything that happens in a run, as JSON-serialisable `msgspec` structs.

Every event has `type` (its tag: a class constant, first in its JSON), `seq` (monotonic per
session), `ts` (unix time), `path` (the id of the node it concerns, e.g. `coordinator/explore.1`)
and `run` (the run's number in its session). The classes keep pydantic's methods
(`model_dump`, `model_dump_json`, `model_validate`, `model_copy`, `model_fields`: see
`_base.model`); constructing one does not validate its fields, parsing does. `parse_event` (or
`event_adapter()`) turns JSON back into the right class.

Defining a subclass of `Event` with its own `type` literal (`type: Literal["mine"] = "mine"`)
registers it: parsing, the store and the view's event log take it from the class alone (the
package's events are also listed in `AnyEvent`, for type checkers; ARCHITECTURE.md walks adding
one). Its fields are annotated, with plain defaults or `msgspec.field(default_factory=...)`;
pydantic's `Field(...)`, validators and `model_config` do not apply. A consumer that folds events
(the view, the Timing tab, the trace, a store's reload, the forgetting report) finds its handler
of each event's class in a `Fold`.
"""

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, Union

import msgspec
from msgspec import field

from ._base.messages import Message, Usage
from ._base.model import Model, ModelMeta

ToolStatus = Literal["ok", "error", "denied", "refused", "cancelled"]


class _EventMeta(ModelMeta):
    """Registers each class that names a `type` of its own (see `_register`)."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **options: Any
    ) -> Any:
        cls = super().__new__(mcls, name, bases, namespace, **options)
        if isinstance(namespace.get("type"), str):
            _register(cls)
        return cls


class Event(Model, metaclass=_EventMeta, tag_field="type", tag=False):
    """Fields every event carries."""

    if TYPE_CHECKING:
        type: str  # each class's `type` literal, which type checkers see as a field
    else:
        type: ClassVar[str]
        """The event's tag: set by each class's `type` literal."""
    ends_step: ClassVar[bool] = False
    """An action ended with this event: a durable session commits its step soon after."""
    waits: ClassVar[bool] = False
    """The session may wait long after this event (for a person, or the next message): a
    durable session commits its step at once."""
    names_child: ClassVar[bool] = False
    """Emitted at a parent's path after its task entries changed; `child` is the child's path."""

    seq: int = 0
    """Position in the session's event log, from 1."""
    ts: float = 0.0
    """Unix time when the event was emitted."""
    path: str = ""
    """The node (agent instance) the event concerns."""
    run: int = 0
    """The run's number within its session, from 1."""


_TYPES: dict[str, type[Event]] = {}
"""The registry: every event class by its `type`, the package's first, in definition order."""
_FOLDS: "weakref.WeakSet[Fold[Any]]" = weakref.WeakSet()
"""Every `Fold`, whose `for_type` answers are forgotten when the registry changes."""


def _register(cls: type[Event]) -> None:
    """Register an event class under its `type` literal (a subclass that keeps its parent's
    type is a variant of it; a class defined again, as when a notebook cell runs again,
    replaces its older self)."""
    global _adapter
    name = cls.type
    known = _TYPES.get(name)
    if known is not None and issubclass(cls, known):
        return
    if known is not None and (known.__module__, known.__qualname__) != (
        cls.__module__,
        cls.__qualname__,
    ):
        raise TypeError(
            f"event type {name!r} is taken by {known.__module__}.{known.__qualname__}: "
            f"give {cls.__qualname__} a `type` literal of its own"
        )
    _TYPES[name] = cls
    _adapter = None
    for fold in _FOLDS:
        fold._by_type.clear()


class RunStarted(Event):
    """A run began: `input` is the display text of the message that started it."""

    type: Literal["run_started"] = "run_started"
    agent: str
    input: str | None = None
    pause_on: list[str] = field(default_factory=list)
    """The run's own pause points (`send(..., pause_on=...)`), stored so that a run resumed
    after a crash still stops at them: an approval gate a restart could skip is no gate."""
    breakpoints: list[dict[str, Any]] = field(default_factory=list)
    """Its `sn.when(...)` and callable breakpoints as stored (`_runtime.breakpoints.stored`):
    their declarative fields, and whether they had code, which cannot be stored."""


class StatusChanged(Event):
    """A node's (or the run's, at the root path) status changed."""

    type: Literal["status_changed"] = "status_changed"
    status: str
    detail: str | None = None


class MessagePreprocessed(Event):
    """A user message went through the session's preprocessor."""

    type: Literal["message_preprocessed"] = "message_preprocessed"
    preprocessor: str
    display: Message
    llm: Message


class MessageRefused(Event):
    """The session's preprocessor refused a user message (`sn.Rejected`): nothing was sent and
    nothing added to the transcripts. The message itself is left out: a refusal often guards a
    secret."""

    type: Literal["message_refused"] = "message_refused"
    waits = True
    preprocessor: str
    reason: str


class ModelRequest(Event):
    """A request is about to go to the endpoint; `messages` is the exact view sent."""

    type: Literal["model_request"] = "model_request"
    ends_step = True
    turn: int
    model: str
    messages: list[Message]
    tools: list[str] = field(default_factory=list)
    tool_choice: str | None = None
    stream: bool = False


class ModelResponse(Event):
    """The endpoint answered."""

    type: Literal["model_response"] = "model_response"
    turn: int
    message: Message
    usage: Usage | None = None
    duration: float = 0.0
    finish_reason: str | None = None
    truncated: bool = False


class TextDelta(Event):
    """A chunk of streamed text."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallStarted(Event):
    """A tool call is starting."""

    type: Literal["tool_call_started"] = "tool_call_started"
    call_id: str
    name: str
    arguments: str
    display_text: str | None = None


class ToolCallFinished(Event):
    """A tool call ended: its result text, duration in seconds and status."""

    type: Literal["tool_call_finished"] = "tool_call_finished"
    ends_step = True
    call_id: str
    name: str
    arguments: str = "{}"
    result: str
    status: ToolStatus = "ok"
    duration: float = 0.0


class TaskSpawned(Event):
    """A `task` call started a child; `child` is its path."""

    type: Literal["task_spawned"] = "task_spawned"
    names_child = True
    child: str
    agent: str
    prompt: str
    kind: str
    call_id: str | None = None
    display_text: str | None = None


class TaskReattached(Event):
    """A repeated `task` call met an existing child (`state`: settled, running or pending)."""

    type: Literal["task_reattached"] = "task_reattached"
    names_child = True
    child: str
    agent: str
    prompt: str
    state: str
    call_id: str | None = None


class TaskRefused(Event):
    """A `task` call was refused (outside the team, depth limit...)."""

    type: Literal["task_refused"] = "task_refused"
    agent: str
    prompt: str
    reason: str
    call_id: str | None = None


class TaskFinished(Event):
    """A child finished a task."""

    type: Literal["task_finished"] = "task_finished"
    ends_step = True
    names_child = True
    child: str
    agent: str
    status: str
    text: str
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    replaced: str | None = None
    """The child's own answer when the user edited it at a `reply` pause (`text` is what the
    parent received instead)."""


class ContextBuilt(Event):
    """The kind built this turn's view from storage."""

    type: Literal["context_built"] = "context_built"
    turn: int
    kind: str
    view_messages: int
    storage_messages: int
    view_tokens: int
    """The view's size, estimated by the session's token counter."""
    storage_tokens: int
    """Storage's size, estimated by the same counter, so the two compare (logs from before
    it may hold the endpoint's reported figure here). What the endpoint measured is the turn's
    `model_response` usage."""
    hidden: int = 0
    """Storage messages left out of the view (sunk, trimmed or summarised)."""
    from_storage: list[int] | None = None
    """Which of the view's messages are which stored messages, by identity: runs of three
    numbers (view index, storage index, count), each saying `view[v : v + n]` is
    `storage[s : s + n]` (storage as it was this turn). None in logs written before it."""


class Compaction(Event):
    """Storage was compacted: by a model-written `summary` or by `truncation`."""

    type: Literal["compaction"] = "compaction"
    ends_step = True
    strategy: Literal["summary", "truncation"]
    reason: str
    before_tokens: int
    after_tokens: int
    removed: int
    summary: str | None = None
    error: str | None = None
    """Why summarising failed, when the strategy fell back to truncation."""


class ContextFull(Event):
    """A resident's untrimmed history reached 0.9 x its window (fires once until compaction),
    or an endpoint refused a view as longer than its context window (`endpoint_said`)."""

    type: Literal["context_full"] = "context_full"
    tokens: int
    window: int
    endpoint_said: str | None = None
    """The endpoint's refusal, when it refused the view (`tokens` is then the view's size and
    `window` the endpoint's, or the size the view is cut to when the endpoint did not say)."""


class ColdSink(Event):
    """The relevance view sank low-relevance items to cold storage (recallable)."""

    type: Literal["cold_sink"] = "cold_sink"
    sunk: int
    previews: list[str] = field(default_factory=list)
    before_tokens: int
    after_tokens: int
    reason: str = "relevance"


class ColdRestore(Event):
    """The relevance view brought sunk items back from cold storage: they match the current input."""

    type: Literal["cold_restore"] = "cold_restore"
    restored: int
    previews: list[str] = field(default_factory=list)
    before_tokens: int
    after_tokens: int


class RelevanceView(Event):
    """A light relevance view left older message groups unrelated to the current input out of
    the view (storage untouched; recent groups are always in it)."""

    type: Literal["relevance_view"] = "relevance_view"
    kept_groups: int
    left_out: int
    before_tokens: int
    after_tokens: int


class WindowTrim(Event):
    """A sliding-window view left out older turn groups (storage untouched)."""

    type: Literal["window_trim"] = "window_trim"
    dropped_groups: int
    kept_groups: int
    before_tokens: int
    after_tokens: int


class KindSwapped(Event):
    """An agent's kind changed between turns."""

    type: Literal["kind_swapped"] = "kind_swapped"
    ends_step = True
    agent: str
    old: str
    new: str
    policy: str = "keep"


class PreprocessorSwapped(Event):
    """The session's preprocessor changed."""

    type: Literal["preprocessor_swapped"] = "preprocessor_swapped"
    ends_step = True
    old: str
    new: str


class LLMSwapped(Event):
    """An endpoint changed: the session's (at the root's path), or the one a node's agent uses
    (`agent.model = ...` mid-run: at that node's path, at its next request)."""

    type: Literal["llm_swapped"] = "llm_swapped"
    ends_step = True
    old: str
    new: str


class PausedRequest(Model):
    """The model request a pause stands before, as it would be sent (the endpoint by its label,
    never its key; the tools by name)."""

    messages: list[Message]
    """The view the node's kind built for this call."""
    model: str
    tools: list[str] = field(default_factory=list)
    tool_choice: str | None = None
    endpoint: str = ""
    tokens: int = 0
    """The view's estimated tokens."""


class Paused(Event):
    """The run stopped before an action (`action`: model, tool or task); before a model request,
    `request` is that whole request."""

    type: Literal["paused"] = "paused"
    ends_step = True
    waits = True
    pause_id: int
    action: str
    name: str | None = None
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    request: PausedRequest | None = None


class Resumed(Event):
    """A pause ended: `decision` is approve, reject or edit, or `cancelled` when the run stopped
    while it waited."""

    type: Literal["resumed"] = "resumed"
    ends_step = True
    pause_id: int
    decision: str
    reason: str | None = None
    changed: list[str] | None = None
    """What an edit changed: `arguments`, `reply`, `messages` (None for other decisions)."""
    changes: dict[str, Any] | None = None
    """An edit's changes (new arguments, a replacement reply or view), as stored."""
    mode: str | None = None
    """The run's mode after the decision (`normal`, `step`, `free`): a resumed run keeps it."""
    until: list[dict[str, Any]] | None = None
    """The stored breakpoints of a `run.step(pause_on=...)` the run now steps to."""


class Retry(Event):
    """A transient endpoint failure will be retried after `delay` seconds."""

    type: Literal["retry"] = "retry"
    attempt: int
    status: int | None = None
    error: str
    delay: float


class HarnessEventOccurred(Event):
    """A line from a native CLI child, parsed by its driver."""

    type: Literal["harness_event"] = "harness_event"
    event: dict[str, Any]


class ErrorOccurred(Event):
    """Something failed; `error_type` names the exception class."""

    type: Literal["error"] = "error"
    ends_step = True
    error_type: str
    message: str


class RunFinished(Event):
    """A run ended."""

    type: Literal["run_finished"] = "run_finished"
    ends_step = True
    waits = True
    status: str
    text: str
    turns: int
    usage: Usage = field(default_factory=Usage)


AnyEvent = (
    RunStarted
    | StatusChanged
    | MessagePreprocessed
    | MessageRefused
    | ModelRequest
    | ModelResponse
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | TaskSpawned
    | TaskReattached
    | TaskRefused
    | TaskFinished
    | ContextBuilt
    | Compaction
    | ContextFull
    | ColdSink
    | ColdRestore
    | RelevanceView
    | WindowTrim
    | KindSwapped
    | PreprocessorSwapped
    | LLMSwapped
    | Paused
    | Resumed
    | Retry
    | HarnessEventOccurred
    | ErrorOccurred
    | RunFinished
)


class EventAdapter:
    """Parses any registered event, by its `type` (pydantic's `TypeAdapter` methods)."""

    def __init__(self, classes: tuple[type[Event], ...]) -> None:
        members: Any = Union[classes]  # noqa: UP007 (built from a tuple)
        self.union = members
        self.decoder = msgspec.json.Decoder(members)

    def validate_json(self, data: str | bytes) -> Event:
        """The event of a JSON text."""
        return self.decoder.decode(data)  # type: ignore[no-any-return]

    def validate_python(self, data: dict[str, Any] | Event) -> Event:
        """The event of a dict of its fields (nested messages as dicts or `Message`s)."""
        return msgspec.convert(data, self.union)  # type: ignore[no-any-return]


_adapter: EventAdapter | None = None
"""Built on first use, and again after a class registers."""


def _event_classes() -> tuple[type[Event], ...]:
    """Every registered event class (see `_register`), in definition order."""
    return tuple(_TYPES.values())


def event_adapter() -> EventAdapter:
    """The parser of any event, built from the registry on first use: events defined
    elsewhere parse too."""
    global _adapter
    adapter = _adapter
    if adapter is None:
        adapter = _adapter = EventAdapter(_event_classes())
    return adapter


def event_fields(event: Event) -> dict[str, Any]:
    """An event's fields as a dict, `type` first: its JSON's keys, in order."""
    return {"type": event.type, **msgspec.structs.asdict(event)}  # type: ignore[arg-type]


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Rebuild an event from its JSON text or dict; a bad one raises `msgspec.ValidationError`
    (a `ValueError`)."""
    if isinstance(data, dict):
        return event_adapter().validate_python(data)
    return event_adapter().validate_json(data)


Handler = TypeVar("Handler", bound=Callable[..., Any])
"""A fold's handler: how its consumer calls it is its own (`handler(self, event)`,
`line(event)`, `scan(stored, row)`...)."""
Decorated = TypeVar("Decorated", bound=Callable[..., Any])


class Fold(Generic[Handler]):
    """One consumer's handlers of events, by event class.

    `@fold.handles(A, B)` registers a handler of `A` and `B`; `fold.handler(type(event))` finds
    the handler of a class or of its nearest registered base class, None if it has none. Each
    class is resolved once and kept, so folding costs one dict lookup per event;
    `fold.for_type(row.type)` does the same for a stored row's `type`, before it is parsed, and
    `fold.into(state, events)` calls each event's handler as `handler(state, event)`.

    Args:
        consumer: who folds (named in `tests/test_event_folds.py`'s table of event classes by
            consumer).
        ignores: the event classes it leaves alone on purpose (their subclasses too).
        sees_all: whether every registered event class must be handled or ignored: true for a
            consumer that shows everything (the view, the Timing tab, the trace line), so a new
            event it does not know about fails the table's test; false for one that reads only
            the events it names (a store's reload, a report).
    """

    def __init__(
        self, consumer: str, *, ignores: Iterable[type[Event]] = (), sees_all: bool = True
    ) -> None:
        self.consumer = consumer
        self.sees_all = sees_all
        self.handlers: dict[type[Event], Handler] = {}
        """The handlers as registered, by event class."""
        self.ignores: set[type[Event]] = set(ignores)
        self._by_class: dict[type[Event], Handler | None] = {}
        self._by_type: dict[str, Handler | None] = {}
        _FOLDS.add(self)

    def handles(self, *classes: type[Event]) -> Callable[[Decorated], Decorated]:
        """Register the decorated function as the handler of these event classes (and of their
        subclasses that have no handler of their own)."""

        def register(handler: Decorated) -> Decorated:
            for cls in classes:
                self.handlers[cls] = handler  # type: ignore[assignment]
            self._by_class.clear()
            self._by_type.clear()
            return handler

        return register

    def ignore(self, *classes: type[Event]) -> None:
        """Say that the consumer leaves these event classes alone on purpose."""
        self.ignores.update(classes)

    def handler(self, cls: type[Event]) -> Handler | None:
        """The handler of event class `cls` (or of its nearest handled base class), or None."""
        try:
            return self._by_class[cls]
        except KeyError:
            found = next((self.handlers[b] for b in cls.__mro__ if b in self.handlers), None)
            self._by_class[cls] = found
            return found

    def for_type(self, name: str) -> Handler | None:
        """The handler of the event class registered under `type` `name`, or None."""
        try:
            return self._by_type[name]
        except KeyError:
            cls = _TYPES.get(name)
            found = self._by_type[name] = self.handler(cls) if cls is not None else None
            return found

    def types(self) -> list[str]:
        """The stored `type` names of the event classes defined now that it handles."""
        return [name for name in list(_TYPES) if self.for_type(name) is not None]

    def into(self, state: Any, events: Iterable[Event]) -> None:
        """Fold `events` into `state`: each event's handler, if it has one, is called as
        `handler(state, event)`."""
        by_class = self._by_class  # looked up inline: a view folds every event of a run
        for event in events:
            try:
                handler = by_class[type(event)]
            except KeyError:
                handler = self.handler(type(event))
            if handler is not None:
                handler(state, event)

    def ignored(self, cls: type[Event]) -> bool:
        """Whether the consumer leaves event class `cls` alone on purpose."""
        return any(base in self.ignores for base in cls.__mro__)

    def __repr__(self) -> str:
        return f"Fold({self.consumer!r}, {len(self.handlers)} event classes handled)"


__all__ = [
    "AnyEvent",
    "ColdRestore",
    "ColdSink",
    "Compaction",
    "ContextBuilt",
    "ContextFull",
    "ErrorOccurred",
    "Event",
    "EventAdapter",
    "Fold",
    "HarnessEventOccurred",
    "KindSwapped",
    "LLMSwapped",
    "MessagePreprocessed",
    "MessageRefused",
    "ModelRequest",
    "ModelResponse",
    "Paused",
    "PausedRequest",
    "PreprocessorSwapped",
    "RelevanceView",
    "Resumed",
    "Retry",
    "RunFinished",
    "RunStarted",
    "StatusChanged",
    "TaskFinished",
    "TaskReattached",
    "TaskRefused",
    "TaskSpawned",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolStatus",
    "WindowTrim",
    "event_adapter",
    "parse_event",
]
