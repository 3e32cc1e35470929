"""One readable line per event, for consoles, logs and the demo."""

from __future__ import annotations

from collections.abc import Callable

from .. import events
from ..events import (
    ColdSink,
    Compaction,
    ContextBuilt,
    ContextFull,
    ErrorOccurred,
    Event,
    Fold,
    ModelRequest,
    ModelResponse,
    Paused,
    RunFinished,
    RunStarted,
    StatusChanged,
    TaskFinished,
    TaskReattached,
    TaskRefused,
    TaskSpawned,
    ToolCallFinished,
    ToolCallStarted,
)

LINES: Fold[Callable[[Event], str]] = Fold(
    "trace",
    ignores={
        # told by their type alone (the line's default)
        events.ColdRestore,
        events.HarnessEventOccurred,
        events.KindSwapped,
        events.LLMSwapped,
        events.MessagePreprocessed,
        events.MessageRefused,
        events.PreprocessorSwapped,
        events.RelevanceView,
        events.Resumed,
        events.Retry,
        events.TextDelta,
        events.WindowTrim,
    },
)
"""What each event class's line says after its seq and path."""


def describe(event: Event) -> str:
    """A one-line description of `event`."""
    line = LINES.handler(type(event))
    what = line(event) if line is not None else event.type
    return f"{event.seq:>4}  {event.path:<32} {what}"


def _short(text: str | None, limit: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@LINES.handles(RunStarted)
def _run_started(event: RunStarted) -> str:
    return f"run started: {_short(event.input)!r}"


@LINES.handles(RunFinished)
def _run_finished(event: RunFinished) -> str:
    return f"run finished [{event.status}] {_short(event.text)!r}"


@LINES.handles(StatusChanged)
def _status_changed(event: StatusChanged) -> str:
    return f"status -> {event.status}"


@LINES.handles(ContextBuilt)
def _context_built(event: ContextBuilt) -> str:
    return (
        f"context turn {event.turn}: view {event.view_messages} msgs / storage "
        f"{event.storage_messages} msgs"
    )


@LINES.handles(ModelRequest)
def _model_request(event: ModelRequest) -> str:
    return f"model request #{event.turn} ({len(event.messages)} messages, {event.model})"


@LINES.handles(ModelResponse)
def _model_response(event: ModelResponse) -> str:
    message = event.message
    calls = ", ".join(c.name for c in message.tool_calls or ())
    return f"model: calls {calls}" if calls else f"model: {_short(message.content)!r}"


@LINES.handles(ToolCallStarted)
def _tool_call_started(event: ToolCallStarted) -> str:
    return f"tool {event.name}({_short(event.arguments, 60)})"


@LINES.handles(ToolCallFinished)
def _tool_call_finished(event: ToolCallFinished) -> str:
    return f"tool {event.name} -> [{event.status}] {_short(event.result, 60)!r}"


@LINES.handles(TaskSpawned)
def _task_spawned(event: TaskSpawned) -> str:
    return f"task -> {event.child} [{event.kind}]: {_short(event.prompt, 50)!r}"


@LINES.handles(TaskReattached)
def _task_reattached(event: TaskReattached) -> str:
    return f"task reattached to {event.child} ({event.state})"


@LINES.handles(TaskRefused)
def _task_refused(event: TaskRefused) -> str:
    return f"task refused: {event.reason}"


@LINES.handles(TaskFinished)
def _task_finished(event: TaskFinished) -> str:
    return f"task {event.child} finished [{event.status}]"


@LINES.handles(Compaction)
def _compaction(event: Compaction) -> str:
    return f"compaction by {event.strategy}: {event.before_tokens} -> {event.after_tokens} tokens"


@LINES.handles(ContextFull)
def _context_full(event: ContextFull) -> str:
    return f"context full: {event.tokens}/{event.window} tokens"


@LINES.handles(ColdSink)
def _cold_sink(event: ColdSink) -> str:
    return f"{event.sunk} item(s) sunk to cold storage ({event.reason})"


@LINES.handles(Paused)
def _paused(event: Paused) -> str:
    return f"paused before {event.action} {event.name or ''}".rstrip()


@LINES.handles(ErrorOccurred)
def _error(event: ErrorOccurred) -> str:
    return f"error {event.error_type}: {_short(event.message)}"
