"""Claude Code's `stream-json` lines (which Cursor's agent CLI mirrors) as harness events."""

from __future__ import annotations

from typing import Any, Literal

from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessModelCall,
    HarnessPermissionDenied,
    HarnessReasoning,
    HarnessRetry,
    HarnessSession,
    HarnessSubagent,
    HarnessText,
    HarnessToolCall,
    HarnessToolResult,
    HarnessUsage,
)
from ._json_lines import list_field, object_field, text_field, token_count

_ERROR_HINTS = {
    "error_max_turns": "raise the turn limit with extra_args=['--max-turns', 'N']",
    "error_max_budget_usd": "raise the budget with extra_args=['--max-budget-usd', 'N']",
}


_ENDED: dict[str, Literal["done", "error", "cancelled"]] = {
    "completed": "done",
    "failed": "error",
    "killed": "cancelled",
    "stopped": "cancelled",
}
"""A task's ending status in Claude Code's words, as a sub-agent's status."""

# Claude Code writes a failed API call as an assistant message from this "model".
_SYNTHETIC_MODEL = "<synthetic>"


def assistant_events(event: dict[str, Any], cli: str) -> list[HarnessEvent]:
    """Text, thinking and tool calls from an `assistant` line, in block order; a sub-agent's
    line (it names the sub-agent) also reports its model request's tokens, first.

    A message the CLI made up itself to report an API error is an error, not the child's text.
    """
    message = object_field(event, "message")
    content = message.get("content")
    if message.get("model") == _SYNTHETIC_MODEL:
        blocks = content if isinstance(content, list) else [{"text": content}]
        said = " ".join(t for b in blocks if isinstance(b, dict) and (t := text_field(b, "text")))
        return [HarnessError(message=f"{cli}: {said or 'the model request failed'}", fatal=False)]
    subagent = subagent_of(event)
    events: list[HarnessEvent] = []
    if subagent is not None and (message_id := text_field(message, "id")):
        usage = usage_of(object_field(message, "usage"))
        events.append(HarnessModelCall(id=message_id, usage=usage, subagent=subagent))
    if isinstance(content, str):
        return [*events, HarnessText(text=content, subagent=subagent)] if content else events
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use" and (name := text_field(block, "name")):
            arguments = object_field(block, "input")
            call_id = text_field(block, "id") or None
            events.append(
                HarnessToolCall(name=name, arguments=arguments, id=call_id, subagent=subagent)
            )
        elif kind == "text" and (text := text_field(block, "text")):
            events.append(HarnessText(text=text, subagent=subagent))
        elif kind == "thinking" and (thinking := text_field(block, "thinking")):
            events.append(HarnessReasoning(text=thinking, subagent=subagent))
    return events


def user_events(event: dict[str, Any]) -> list[HarnessEvent]:
    """The tool results a `user` line hands the model (the main thread's or a sub-agent's).

    The result of a call that ran a sub-agent in the foreground carries that sub-agent's last
    model request's tokens (`tool_use_result.usage`), which no other line reports.
    """
    content = object_field(event, "message").get("content")
    results = [
        block
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    report = object_field(event, "tool_use_result")
    usage = object_field(report, "usage") if text_field(report, "agentId") else {}
    subagent = subagent_of(event)
    return [
        HarnessToolResult(
            id=call_id,
            content=_result_text(block.get("content")),
            is_error=block.get("is_error") is True,
            usage=usage_of(usage) if usage and len(results) == 1 else None,
            subagent=subagent,
        )
        for block in results
        if (call_id := text_field(block, "tool_use_id"))
    ]


def subagent_of(event: dict[str, Any]) -> str | None:
    """The sub-agent a line comes from: its `agent_id` (the CLI's task id), else the id of the
    tool call that started it (`parent_tool_use_id`); None for the main thread's lines."""
    return text_field(event, "agent_id") or text_field(event, "parent_tool_use_id") or None


def usage_of(usage: dict[str, Any]) -> HarnessUsage:
    """Anthropic's usage object as counts; `input_tokens` leaves out cached prompt tokens, so
    they are counted in too."""
    return HarnessUsage(
        input_tokens=token_count(
            usage, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
        ),
        output_tokens=token_count(usage, "output_tokens"),
    )


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "\n".join(t for b in blocks if isinstance(b, dict) and (t := text_field(b, "text")))


def result_events(event: dict[str, Any], cli: str) -> list[HarnessEvent]:
    """The terminal `result` line: done with the answer and usage, or the error it reports."""
    subtype = text_field(event, "subtype")
    result = text_field(event, "result")
    if event.get("is_error") is True or subtype.startswith("error"):
        details = result or "; ".join(e for e in list_field(event, "errors") if isinstance(e, str))
        hint = _ERROR_HINTS.get(subtype)
        reason = f" ({subtype})" if subtype.startswith("error") else ""
        message = f"{cli} ended with an error{reason}: {details or 'no details given'}"
        return [HarnessError(message=f"{message}; {hint}" if hint else message)]
    cost = event.get("total_cost_usd")
    return [
        HarnessDone(
            content=result,
            # the main thread's (Claude Code's `modelUsage` adds its sub-agents' requests, which
            # are reported with them)
            usage=usage_of(object_field(event, "usage")),
            session_id=text_field(event, "session_id") or None,
            cost_usd=_number(cost),
            turns=_count(event.get("num_turns")),
            duration_ms=_count(event.get("duration_ms")),
            permission_denials=[
                d for d in list_field(event, "permission_denials") if isinstance(d, dict)
            ],
        )
    ]


def system_events(event: dict[str, Any]) -> list[HarnessEvent]:
    """The session id from `init`, retries from `api_retry`, refusals from `permission_denied`,
    sub-agents starting and ending from `task_started` / `task_notification`."""
    match event.get("subtype"):
        case "task_started" if text_field(event, "task_type").endswith("agent"):
            return [
                HarnessSubagent(
                    id=task,
                    status="running",
                    call=text_field(event, "tool_use_id") or None,
                    parent=text_field(event, "parent_task_id") or None,
                    agent=text_field(event, "subagent_type"),
                    description=text_field(event, "description"),
                    prompt=text_field(event, "prompt"),
                    background=event.get("is_backgrounded") is True,
                )
                for task in [text_field(event, "task_id")]
                if task
            ]
        case "task_notification" if task := text_field(event, "task_id"):
            status = text_field(event, "status")
            return [
                HarnessSubagent(
                    id=task,
                    status=_ENDED.get(status, "error"),
                    call=text_field(event, "tool_use_id") or None,
                    text=text_field(event, "summary")
                    or text_field(event, "reason")
                    or f"it ended {status or 'without a status'}",
                )
            ]
        case "init" if session := text_field(event, "session_id"):
            return [HarnessSession(session_id=session)]
        case "api_retry":
            delay = event.get("retry_delay_ms")
            return [
                HarnessRetry(
                    attempt=_count(event.get("attempt")) or 1,
                    status=_count(event.get("error_status")),
                    error=_error_text(event.get("error")),
                    delay=(_number(delay) or 0.0) / 1000,
                )
            ]
        case "permission_denied":
            return [
                HarnessPermissionDenied(
                    name=text_field(event, "tool_name") or "a tool",
                    reason=text_field(event, "reason") or text_field(event, "message"),
                    id=text_field(event, "tool_use_id") or None,
                )
            ]
        case _:
            return []


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _error_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return text_field(value, "message") or text_field(value, "type")
    return ""
