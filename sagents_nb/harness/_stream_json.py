"""Claude Code's `stream-json` lines (which Cursor's agent CLI mirrors) as harness events."""

from __future__ import annotations

from typing import Any

from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessReasoning,
    HarnessText,
    HarnessToolCall,
    HarnessUsage,
)
from ._json_lines import list_field, object_field, text_field, token_count

_ERROR_HINTS = {
    "error_max_turns": "raise the turn limit with extra_args=['--max-turns', 'N']",
    "error_max_budget_usd": "raise the budget with extra_args=['--max-budget-usd', 'N']",
}


def assistant_events(event: dict[str, Any]) -> list[HarnessEvent]:
    """Text, thinking and tool calls from an `assistant` line, in block order."""
    content = object_field(event, "message").get("content")
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
        hint = _ERROR_HINTS.get(subtype, "see the stderr lines and the CLI's own documentation")
        reason = f" ({subtype})" if subtype.startswith("error") else ""
        message = f"{cli} ended with an error{reason}: {details or 'no details given'}; {hint}"
        return [HarnessError(message=message)]
    usage = object_field(event, "usage")
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
        )
    ]
