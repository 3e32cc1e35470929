"""Each run's timings folded from the event stream: its spans (model calls, tool calls, pauses,
children's tasks) and each node's reported tokens and cost."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import events
from .._runtime.costs import UNKNOWN_MODEL
from ..events import (
    ContextBuilt,
    Event,
    Fold,
    HarnessEventOccurred,
    ModelRequest,
    ModelResponse,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    StatusChanged,
    TaskFinished,
    TaskReattached,
    TaskSpawned,
    ToolCallFinished,
    ToolCallStarted,
)
from ._words import counted

_ACTIVE = frozenset({"running", "spawned", "paused", "waiting"})

FOLD: Fold[Callable[[RunTiming, Any], None]] = Fold(
    "timings",
    ignores={
        # they take no time of their own and report no tokens: only their run's clock moves
        events.MessagePreprocessed,
        events.MessageRefused,
        events.TaskRefused,
        events.ErrorOccurred,
        events.Retry,
        # the context's changes (a summary's model call is timed as one)
        events.Compaction,
        events.ContextFull,
        events.ColdSink,
        events.ColdRestore,
        events.RelevanceView,
        events.WindowTrim,
        # swaps between turns
        events.KindSwapped,
        events.PreprocessorSwapped,
        events.LLMSwapped,
        # a streamed chunk: within its model call's span
        events.TextDelta,
    },
)
"""What each timed event class does to its run (an event of a run already timed moves its
clock even when ignored)."""


@dataclass(slots=True)
class Span:
    """One thing that took time: a model call, a tool call, a pause or a child's task."""

    key: str
    kind: str
    """`model`, `tool`, `pause` or `task`."""
    label: str
    start: float
    end: float | None = None
    """None while it is still going."""
    status: str = "running"
    detail: str = ""
    """More for the hover title (a tool call's arguments, a model call's tokens)."""
    began: float | None = None
    """A task's start of work, after waiting in the queue since `start`."""
    children: list[str] = field(default_factory=list)
    """The children a `task` tool call spawned."""
    spent: tuple[str, int, int] | None = None
    """A model call's model and reported prompt and completion tokens (priced when drawn)."""


@dataclass(slots=True)
class NodeTiming:
    """One node's part of one run."""

    path: str
    agent: str
    status: str = "spawned"
    tasks: list[Span] = field(default_factory=list)
    """The node's tasks in the run (the root's one span is the run itself)."""
    entries: list[Span | str] = field(default_factory=list)
    """Its own spans and the paths of children no tool call of it spawned, in starting order."""
    children: list[str] = field(default_factory=list)
    linked: set[str] = field(default_factory=set)
    """Children already placed among its entries or under one of its calls."""
    model_calls: int = 0
    tool_calls: int = 0
    prompt_tokens: int = 0
    """Reported by the endpoint (or the CLI) for this node's own calls."""
    completion_tokens: int = 0
    unreported: int = 0
    """Model calls whose reply carried no usage."""
    estimated_prompt: int = 0
    """The estimated size of the views those unreported calls sent (the view's own estimate)."""
    cost_usd: float | None = None
    """What the node's CLI runs cost, as the CLI reported it; None when nothing reported one."""
    by_model: dict[str, list[int]] = field(default_factory=dict)
    """Its own calls' reported [prompt, completion] tokens by model (priced when read)."""


@dataclass(slots=True)
class RunTiming:
    """One run's spans and tokens, by node."""

    number: int
    start: float
    last: float
    """The newest event's time: where running spans end for now."""
    end: float | None = None
    status: str = "running"
    root: str | None = None
    nodes: dict[str, NodeTiming] = field(default_factory=dict)
    asking: dict[str, Span] = field(default_factory=dict)
    """Each node's model call waiting for its reply."""
    models: dict[str, str] = field(default_factory=dict)
    """The model each waiting call asked."""
    views: dict[str, int] = field(default_factory=dict)
    """Each node's built and not yet sent view, estimated tokens."""
    calls: dict[tuple[str, str], Span] = field(default_factory=dict)
    pauses: dict[int, Span] = field(default_factory=dict)
    count: int = 0

    def node(self, path: str) -> NodeTiming:
        """The node at `path`, created (with its ancestors) on first mention."""
        node = self.nodes.get(path)
        if node is None:
            parent, _, segment = path.rpartition("/")
            agent = (segment.rpartition(".")[0] or segment) if parent else segment
            node = self.nodes[path] = NodeTiming(path, agent)
            if parent:
                self.node(parent).children.append(path)
            elif self.root is None:
                self.root = path
        return node

    def span(self, kind: str, label: str, start: float, **fields: Any) -> Span:
        self.count += 1
        return Span(f"{kind}{self.count}", kind, label, start, **fields)


class Timings:
    """Every run's `RunTiming`, folded from a growing event list on demand (`update`): a view
    pays for it only while its Timing tab is open, once per event."""

    def __init__(self) -> None:
        self.runs: dict[int, RunTiming] = {}
        self.seen = 0
        """How many events of the list are folded."""

    def update(self, events: Sequence[Event]) -> None:
        """Fold the events of `events` after the ones already folded."""
        handler_of = FOLD.handler
        for index in range(self.seen, len(events)):
            event = events[index]
            fold = handler_of(type(event))
            run = self.runs.get(event.run)
            if run is None:
                if fold is None:
                    continue  # nothing to time before a run's first timed event
                run = self.runs[event.run] = RunTiming(event.run, event.ts, event.ts)
            run.last = max(run.last, event.ts)
            if fold is not None:
                fold(run, event)
        self.seen = len(events)


@FOLD.handles(RunStarted)
def _run_started(run: RunTiming, event: RunStarted) -> None:
    run.start = min(run.start, event.ts)
    node = run.node(event.path)
    node.agent, node.status = event.agent, "running"
    node.tasks.append(run.span("task", f"run {event.run}", event.ts, began=event.ts))


@FOLD.handles(RunFinished)
def _run_finished(run: RunTiming, event: RunFinished) -> None:
    run.end, run.status = event.ts, event.status
    ended = "cancelled" if event.status == "cancelled" else "unfinished"
    for span in [*run.asking.values(), *run.calls.values(), *run.pauses.values()]:
        span.end, span.status = event.ts, ended
    run.asking.clear()
    run.models.clear()
    run.calls.clear()
    run.pauses.clear()
    run.node(event.path).status = event.status
    for node in run.nodes.values():
        for task in node.tasks:
            if task.end is None:
                task.end = event.ts
                task.status = ended if node.status in _ACTIVE else node.status


@FOLD.handles(StatusChanged)
def _status_changed(run: RunTiming, event: StatusChanged) -> None:
    node = run.node(event.path)
    node.status = event.status
    if event.status == "running" and node.tasks:
        task = node.tasks[-1]
        if task.began is None and task.end is None:
            task.began = event.ts


@FOLD.handles(ContextBuilt)
def _context_built(run: RunTiming, event: ContextBuilt) -> None:
    run.views[event.path] = event.view_tokens


@FOLD.handles(ModelRequest)
def _model_request(run: RunTiming, event: ModelRequest) -> None:
    node = run.node(event.path)
    view = run.views.pop(event.path, None)
    what = f"model call · turn {event.turn}" if view is not None else "model call · summary"
    span = run.span("model", f"{what} · {event.model}", event.ts)
    span.detail = f"~{counted(view, 'token')} sent (estimated)" if view is not None else ""
    span.began = float(view) if view is not None else None  # kept for an unreported reply
    node.entries.append(span)
    node.model_calls += 1
    run.asking[event.path] = span
    run.models[event.path] = event.model


@FOLD.handles(ModelResponse)
def _model_response(run: RunTiming, event: ModelResponse) -> None:
    node = run.node(event.path)
    span = run.asking.pop(event.path, None)
    model = run.models.pop(event.path, UNKNOWN_MODEL)
    if span is None:  # its request came before this log starts
        span = run.span("model", f"model call · turn {event.turn}", event.ts - event.duration)
        node.entries.append(span)
        node.model_calls += 1
    span.end = event.ts
    span.status = "truncated" if event.truncated else "ok"
    usage = event.usage
    if usage is not None:
        node.prompt_tokens += usage.prompt_tokens
        node.completion_tokens += usage.completion_tokens
        tokens = node.by_model.setdefault(model, [0, 0])
        tokens[0] += usage.prompt_tokens
        tokens[1] += usage.completion_tokens
        span.spent = (model, usage.prompt_tokens, usage.completion_tokens)
        span.detail = (
            f"{usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens (reported)"
        )
    else:
        node.unreported += 1
        node.estimated_prompt += int(span.began or 0)
        span.detail = f"{span.detail}; no usage reported".lstrip("; ")
    span.began = None


@FOLD.handles(ToolCallStarted)
def _tool_call_started(run: RunTiming, event: ToolCallStarted) -> None:
    node = run.node(event.path)
    span = run.span("tool", event.name, event.ts, detail=_clip(event.arguments))
    node.entries.append(span)
    node.tool_calls += 1
    run.calls[(event.path, event.call_id)] = span


@FOLD.handles(ToolCallFinished)
def _tool_call_finished(run: RunTiming, event: ToolCallFinished) -> None:
    span = run.calls.pop((event.path, event.call_id), None)
    if span is None:  # refused before it started (bad arguments, a rejection at a pause)
        node = run.node(event.path)
        span = run.span("tool", event.name, event.ts - event.duration)
        span.detail = _clip(event.arguments)
        node.entries.append(span)
        node.tool_calls += 1
    span.end, span.status = event.ts, event.status


@FOLD.handles(Paused)
def _paused(run: RunTiming, event: Paused) -> None:
    what = event.action if event.name is None else f"{event.action} {event.name}"
    span = run.span("pause", f"paused before {what}", event.ts)
    run.node(event.path).entries.append(span)
    run.pauses[event.pause_id] = span


@FOLD.handles(Resumed)
def _resumed(run: RunTiming, event: Resumed) -> None:
    span = run.pauses.pop(event.pause_id, None)
    if span is not None:
        span.end, span.status = event.ts, event.decision
        if event.reason:
            span.detail = _clip(event.reason)


@FOLD.handles(TaskSpawned)
def _task_spawned(run: RunTiming, event: TaskSpawned) -> None:
    parent = run.node(event.path)
    child = run.node(event.child)
    child.agent, child.status = event.agent, "spawned"
    label = event.display_text or event.prompt
    child.tasks.append(run.span("task", _clip(label, 120), event.ts))
    if event.child in parent.linked:
        return  # a resident child's next task: its row is placed already
    parent.linked.add(event.child)
    call = run.calls.get((event.path, event.call_id or ""))
    if call is not None:
        call.children.append(event.child)
    else:
        parent.entries.append(event.child)


@FOLD.handles(TaskReattached)
def _task_reattached(run: RunTiming, event: TaskReattached) -> None:
    run.node(event.child)  # its row, whichever run its task began in


@FOLD.handles(TaskFinished)
def _task_finished(run: RunTiming, event: TaskFinished) -> None:
    child = run.node(event.child)
    child.status = event.status
    if child.tasks and child.tasks[-1].end is None:
        child.tasks[-1].end, child.tasks[-1].status = event.ts, event.status
    elif not child.tasks:  # a task restored from a store, continued in this run
        child.tasks.append(run.span("task", "continued", event.ts, end=event.ts))


@FOLD.handles(HarnessEventOccurred)
def _harness_event(run: RunTiming, event: HarnessEventOccurred) -> None:
    data = event.event
    if data.get("type") != "done":
        return
    node = run.node(event.path)
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    node.prompt_tokens += _int(usage.get("input_tokens"))
    node.completion_tokens += _int(usage.get("output_tokens"))
    cost = data.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        node.cost_usd = (node.cost_usd or 0.0) + float(cost)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _clip(text: str | None, limit: int = 2000) -> str:
    text = text or ""
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"
