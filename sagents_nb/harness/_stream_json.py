"""Claude Code's `stream-json` lines (which Cursor's agent CLI mirrors) as harness events."""

from __future__ import annotations

from typing import Any

from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessPermissionDenied,
    HarnessReasoning,
    HarnessRetry,
    HarnessSession,
    HarnessText,
    HarnessToolCall,
    HarnessUsage,
)
from ._json_lines import list_field, object_field, text_field, token_count

_ERROR_HINTS = {
    "error_max_turns": "raise the turn limit with extra_args=['--max-turns', 'N']",
    "error_max_budget_usd": "raise the budget with extra_args=['--max-budget-usd', 'N']",
}


# Claude Code writes a failed API call as an assistant message from this "model".
_SYNTHETIC_MODEL = "<synthetic>"


def assistant_events(event: dict[str, Any], cli: str) -> list[HarnessEvent]:
    """Text, thinking and tool calls from an `assistant` line, in block order.

    A message the CLI made up itself to report an API error is an error, not the child's text.
    """
    message = object_field(event, "message")
    content = message.get("content")
    if message.get("model") == _SYNTHETIC_MODEL:
        blocks = content if isinstance(content, list) else [{"text": content}]
        said = " ".join(t for b in blocks if isinstance(b, dict) and (t := text_field(b, "text")))
        return [HarnessError(message=f"{cli}: {said or 'the model request failed'}", fatal=False)]
    if isinstance(content, str):
        return [HarnessText(text=content)] if content else []
    # A sub-agent's messages carry the id of the Task call that spawned it. Their text is not the
    # answer, so only their tool calls are reported.
    nested = bool(event.get("parent_tool_use_id"))
    events: list[HarnessEvent] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use" and (name := text_field(block, "name")):
            arguments = object_field(block, "input")
            call_id = text_field(block, "id") or None
            events.append(HarnessToolCall(name=name, arguments=arguments, id=call_id))
        elif nested:
            continue
        elif kind == "text" and (text := text_field(block, "text")):
            events.append(HarnessText(text=text))
        elif kind == "thinking" and (thinking := text_field(block, "thinking")):
            events.append(HarnessReasoning(text=thinking))
    return events


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
    usage = object_field(event, "usage")
    cost = event.get("total_cost_usd")
    return [
        HarnessDone(
            content=result,
            usage=HarnessUsage(
                # Anthropic's `input_tokens` leaves out cached prompt tokens; count them too.
                input_tokens=token_count(
                    usage, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
                ),
                output_tokens=token_count(usage, "output_tokens"),
            ),
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
    """The session id from `init`, retries from `api_retry`, refusals from `permission_denied`."""
    match event.get("subtype"):
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
