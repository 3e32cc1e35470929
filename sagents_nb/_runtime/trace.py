"""One readable line per event, for consoles, logs and the demo."""

from __future__ import annotations

from ..events import (
    ColdSink,
    Compaction,
    ContextBuilt,
    ContextFull,
    ErrorOccurred,
    Event,
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


def _short(text: str | None, limit: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(event: Event) -> str:
    """A one-line description of `event`."""
    match event:
        case RunStarted():
            what = f"run started: {_short(event.input)!r}"
        case RunFinished():
            what = f"run finished [{event.status}] {_short(event.text)!r}"
        case StatusChanged():
            what = f"status -> {event.status}"
        case ContextBuilt():
            what = (
                f"context turn {event.turn}: view {event.view_messages} msgs / storage "
                f"{event.storage_messages} msgs"
            )
        case ModelRequest():
            what = f"model request #{event.turn} ({len(event.messages)} messages, {event.model})"
        case ModelResponse():
            message = event.message
            calls = ", ".join(c.name for c in message.tool_calls or ())
            what = f"model: calls {calls}" if calls else f"model: {_short(message.content)!r}"
        case ToolCallStarted():
            what = f"tool {event.name}({_short(event.arguments, 60)})"
        case ToolCallFinished():
            what = f"tool {event.name} -> [{event.status}] {_short(event.result, 60)!r}"
        case TaskSpawned():
            what = f"task -> {event.child} [{event.kind}]: {_short(event.prompt, 50)!r}"
        case TaskReattached():
            what = f"task reattached to {event.child} ({event.state})"
        case TaskRefused():
            what = f"task refused: {event.reason}"
        case TaskFinished():
            what = f"task {event.child} finished [{event.status}]"
        case Compaction():
            what = (
                f"compaction by {event.strategy}: {event.before_tokens} -> "
                f"{event.after_tokens} tokens"
            )
        case ContextFull():
            what = f"context full: {event.tokens}/{event.window} tokens"
        case ColdSink():
            what = f"{event.sunk} item(s) sunk to cold storage ({event.reason})"
        case Paused():
            what = f"paused before {event.action} {event.name or ''}".rstrip()
        case ErrorOccurred():
            what = f"error {event.error_type}: {_short(event.message)}"
        case _:
            what = event.type
    return f"{event.seq:>4}  {event.path:<32} {what}"
