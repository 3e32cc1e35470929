"""Spans from a session's events, one event at a time: live from the bus, or after the fact.

Each span starts and ends at its events' own `ts`: `invoke_agent {agent}` from a run's start
(or a `task_spawned`) to its end (or `task_finished`), `chat {model}` from a `model_request` to
its `model_response`, `execute_tool {tool}` from a `tool_call_started` to its
`tool_call_finished`. A child's `invoke_agent` has its parent's `execute_tool task` span as its
parent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from ..events import (
    ErrorOccurred,
    Event,
    Fold,
    ModelRequest,
    ModelResponse,
    Paused,
    Resumed,
    Retry,
    RunFinished,
    RunStarted,
    TaskFinished,
    TaskSpawned,
    ToolCallFinished,
    ToolCallStarted,
)
from . import _names as n

FOLD: Fold[Callable[[Spans, Any], None]] = Fold("otel", sees_all=False)
"""The events that open, close or mark a span; the others are left alone."""

PROVIDER = "openai"
"""`gen_ai.provider.name`: the wire every endpoint of sagents_nb speaks (chat completions)."""
ENDED_WELL = {"done", "ok"}


def ns(ts: float) -> int:
    """An event's unix time in seconds as OpenTelemetry's nanoseconds."""
    return int(ts * 1e9)


class Spans:
    """The open spans of one session, and what starts and ends them."""

    def __init__(
        self,
        tracer: Tracer,
        conversation_id: str,
        *,
        capture_content: bool,
        redact: Callable[[str], str],
    ) -> None:
        self.tracer = tracer
        self.conversation_id = conversation_id
        self.capture_content = capture_content
        self.redact = redact
        self.nodes: dict[str, Span] = {}
        """Each running node's `invoke_agent` span, by path."""
        self.agents: dict[str, str] = {}
        self.chats: dict[str, Span] = {}
        """Each node's model call in flight, by path."""
        self.tools: dict[tuple[str, str], Span] = {}
        """Tool calls in flight, by (path, call id): call ids are the model's, unique per node."""
        self.last_ts = 0.0

    def feed(self, event: Event) -> None:
        """Open, end or mark the spans `event` concerns."""
        if event.seq == 0:  # the bus's statuses handed to a new subscriber: no event of the log
            return
        handler = FOLD.handler(type(event))
        if handler is not None:
            handler(self, event)
        self.last_ts = max(self.last_ts, event.ts)

    def end_all(self) -> None:
        """End every span still open at the last event's time, marked unfinished (a paused or
        interrupted run read after the fact)."""
        for span in [*self.tools.values(), *self.chats.values(), *self.nodes.values()]:
            span.set_attribute(n.UNFINISHED, True)
            span.end(end_time=ns(self.last_ts))
        self.tools.clear()
        self.chats.clear()
        self.nodes.clear()

    # building blocks

    def text(self, value: str | None) -> str:
        return self.redact(value or "")

    def start(
        self,
        name: str,
        event: Event,
        parent: Span | None,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        base = {n.CONVERSATION: self.conversation_id, n.SESSION_ID: self.conversation_id}
        return self.tracer.start_span(
            name,
            context=context,
            kind=kind,
            attributes={**base, n.PATH: event.path, n.RUN: event.run, **attributes},
            start_time=ns(event.ts),
        )

    def start_node(
        self, path: str, agent: str, event: Event, parent: Span | None, said: str
    ) -> None:
        old = self.nodes.pop(path, None)
        if old is not None:
            old.end(end_time=ns(event.ts))
        self.agents[path] = agent
        attributes: dict[str, Any] = {
            n.OPERATION: "invoke_agent",
            n.PROVIDER: PROVIDER,
            n.AGENT_NAME: agent,
            n.AGENT_ID: path,
            n.SPAN_KIND: "AGENT",
        }
        if self.capture_content:
            attributes[n.INPUT_VALUE] = self.text(said)
        span = self.start(f"invoke_agent {agent}", event, parent, attributes)
        span.set_attribute(n.PATH, path)
        self.nodes[path] = span

    def end_node(self, path: str, event: RunFinished | TaskFinished) -> None:
        """End the node's span, and what is still open under it, with the usage it reports."""
        span = self.nodes.pop(path, None)
        if span is None:
            return
        status, text, ts = event.status, event.text, event.ts
        span.set_attribute(n.INPUT_TOKENS, event.usage.prompt_tokens)
        span.set_attribute(n.OUTPUT_TOKENS, event.usage.completion_tokens)
        for key in [k for k in self.tools if k[0] == path or k[0].startswith(path + "/")]:
            self.tools.pop(key).end(end_time=ns(ts))
        for chat in [k for k in self.chats if k == path or k.startswith(path + "/")]:
            self.chats.pop(chat).end(end_time=ns(ts))
        span.set_attribute(n.STATUS, status)
        if self.capture_content:
            span.set_attribute(n.OUTPUT_VALUE, self.text(text))
        if status not in ENDED_WELL and span.is_recording():
            fail(span, status, "")
        span.end(end_time=ns(ts))


def fail(span: Span, error_type: str, message: str) -> None:
    """Mark `span` as ended in error (`error.type` and the span's status)."""
    span.set_attribute(n.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, message or error_type))


# messages in the GenAI conventions' JSON shape (gen_ai.input.messages / output.messages)


def message_json(message: Any, redact: Callable[[str], str]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if message.role == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": message.tool_call_id,
                "response": redact(message.content or ""),
            }
        )
    elif message.content:
        parts.append({"type": "text", "content": redact(message.content)})
    for call in message.tool_calls or ():
        parts.append(
            {
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": redact(call.arguments),
            }
        )
    return {"role": message.role, "parts": parts}


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# the handlers


@FOLD.handles(RunStarted)
def _run_started(spans: Spans, event: RunStarted) -> None:
    spans.start_node(event.path, event.agent, event, None, event.input or "")


@FOLD.handles(RunFinished)
def _run_finished(spans: Spans, event: RunFinished) -> None:
    spans.end_node(event.path, event)


@FOLD.handles(TaskSpawned)
def _task_spawned(spans: Spans, event: TaskSpawned) -> None:
    call = spans.tools.get((event.path, event.call_id or ""))
    parent = call if call is not None else spans.nodes.get(event.path)
    spans.start_node(event.child, event.agent, event, parent, event.prompt)


@FOLD.handles(TaskFinished)
def _task_finished(spans: Spans, event: TaskFinished) -> None:
    spans.end_node(event.child, event)


@FOLD.handles(ModelRequest)
def _model_request(spans: Spans, event: ModelRequest) -> None:
    attributes: dict[str, Any] = {
        n.OPERATION: "chat",
        n.PROVIDER: PROVIDER,
        n.REQUEST_MODEL: event.model,
        n.MODEL_NAME: event.model,
        n.AGENT_NAME: spans.agents.get(event.path, ""),
        n.SPAN_KIND: "LLM",
    }
    if spans.capture_content:
        messages = dumps([message_json(m, spans.redact) for m in event.messages])
        attributes[n.INPUT_MESSAGES] = attributes[n.INPUT_VALUE] = messages
    old = spans.chats.pop(event.path, None)
    if old is not None:
        old.end(end_time=ns(event.ts))
    parent = spans.nodes.get(event.path)
    spans.chats[event.path] = spans.start(
        f"chat {event.model}", event, parent, attributes, SpanKind.CLIENT
    )


@FOLD.handles(ModelResponse)
def _model_response(spans: Spans, event: ModelResponse) -> None:
    span = spans.chats.pop(event.path, None)
    if span is None:
        return
    usage = event.usage
    if usage is not None:
        span.set_attribute(n.INPUT_TOKENS, usage.prompt_tokens)
        span.set_attribute(n.OUTPUT_TOKENS, usage.completion_tokens)
        span.set_attribute(n.PROMPT_TOKENS, usage.prompt_tokens)
        span.set_attribute(n.COMPLETION_TOKENS, usage.completion_tokens)
        span.set_attribute(n.TOTAL_TOKENS, usage.total_tokens)
    if event.finish_reason:
        span.set_attribute(n.FINISH_REASONS, [event.finish_reason])
    if spans.capture_content:
        out = message_json(event.message, spans.redact)
        out["finish_reason"] = event.finish_reason or "stop"
        span.set_attribute(n.OUTPUT_MESSAGES, dumps([out]))
        span.set_attribute(n.OUTPUT_VALUE, spans.text(event.message.content))
    span.end(end_time=ns(event.ts))


@FOLD.handles(ToolCallStarted)
def _tool_started(spans: Spans, event: ToolCallStarted) -> None:
    attributes: dict[str, Any] = {
        n.OPERATION: "execute_tool",
        n.TOOL_NAME: event.name,
        n.OI_TOOL_NAME: event.name,
        n.TOOL_TYPE: "function",
        n.TOOL_CALL_ID: event.call_id,
        n.AGENT_NAME: spans.agents.get(event.path, ""),
        n.SPAN_KIND: "TOOL",
    }
    if spans.capture_content:
        attributes[n.TOOL_ARGUMENTS] = attributes[n.INPUT_VALUE] = spans.text(event.arguments)
    parent = spans.nodes.get(event.path)
    key = (event.path, event.call_id)
    spans.tools[key] = spans.start(f"execute_tool {event.name}", event, parent, attributes)


@FOLD.handles(ToolCallFinished)
def _tool_finished(spans: Spans, event: ToolCallFinished) -> None:
    span = spans.tools.pop((event.path, event.call_id), None)
    if span is None:  # refused before it started (a denial): a span of its own duration
        _tool_started(
            spans,
            ToolCallStarted(
                call_id=event.call_id,
                name=event.name,
                arguments=event.arguments,
                path=event.path,
                run=event.run,
                ts=event.ts - event.duration,
            ),
        )
        span = spans.tools.pop((event.path, event.call_id))
    span.set_attribute(n.STATUS, event.status)
    if spans.capture_content:
        span.set_attribute(n.TOOL_RESULT, spans.text(event.result))
        span.set_attribute(n.OUTPUT_VALUE, spans.text(event.result))
    if event.status != "ok":
        fail(span, event.status, spans.text(event.result)[:200])
    span.end(end_time=ns(event.ts))


@FOLD.handles(ErrorOccurred)
def _error(spans: Spans, event: ErrorOccurred) -> None:
    chat = spans.chats.pop(event.path, None)
    message = spans.text(event.message)
    if chat is not None:
        fail(chat, event.error_type, message)
        chat.end(end_time=ns(event.ts))
    node = spans.nodes.get(event.path)
    if node is not None:
        node.add_event(
            "exception",
            {"exception.type": event.error_type, "exception.message": message},
            timestamp=ns(event.ts),
        )
        fail(node, event.error_type, message)


@FOLD.handles(Retry)
def _retry(spans: Spans, event: Retry) -> None:
    span = spans.chats.get(event.path)
    if span is not None:
        span.add_event(
            "retry",
            {"attempt": event.attempt, "error": spans.text(event.error), "delay": event.delay},
            timestamp=ns(event.ts),
        )


@FOLD.handles(Paused, Resumed)
def _pause(spans: Spans, event: Paused | Resumed) -> None:
    span = spans.nodes.get(event.path)
    if span is None:
        return
    if isinstance(event, Paused):
        attributes: dict[str, Any] = {"action": event.action, "name": event.name or ""}
    else:
        attributes = {"decision": event.decision}
    span.add_event(event.type, {"pause_id": event.pause_id, **attributes}, timestamp=ns(event.ts))
