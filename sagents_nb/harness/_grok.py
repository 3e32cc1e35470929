"""Driver for xAI's Grok Build CLI (`grok --single`), read through its `streaming-json` output."""

from __future__ import annotations

from dataclasses import dataclass
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
from ._json_lines import load_object, object_field, text_field, token_count
from ._protocol import HarnessConfig


@dataclass(frozen=True, kw_only=True)
class Grok:
    """Grok Build in headless mode. Its text arrives as deltas; `end` carries only usage.

    Grok reads MCP servers only from its own config files, so tools are not injected. A headless
    run cancels any tool call that needs permission unless given `extra_args=["--always-approve"]`.

    Args:
        executable: The `grok` program to run, by name on PATH or by path.
    """

    executable: str = "grok"
    name = "Grok"
    injects_mcp_tools = False

    def args(self, config: HarnessConfig) -> list[str]:
        """`--output-format streaming-json --single=PROMPT [options]`."""
        # `--flag=value` binds the value to its flag, so a prompt or rules text starting with "-"
        # is never read as a flag (`--single VALUE` is rejected for such values).
        argv = ["--output-format", "streaming-json", f"--single={config.prompt}"]
        if config.model:
            argv += ["--model", config.model]
        if config.system_prompt and config.system_prompt.strip():
            argv.append(f"--rules={config.system_prompt}")
        return [*argv, *config.extra_args]

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from `text`, `thought`, `tool_call`, `end` and `error` lines; others give `[]`."""
        event = load_object(line)
        if event is None:
            return []
        match event.get("type"):
            case "text" if text := text_field(event, "data"):
                return [HarnessText(text=text)]
            case "thought" if text := text_field(event, "data"):
                return [HarnessReasoning(text=text)]
            case "tool_call":
                return _tool_call(event)
            case "end":
                return [_end(event)]
            case "error":
                message = text_field(event, "message") or "no details given"
                return [HarnessError(message=f"Grok: {message}")]
            case "max_turns_reached":
                message = (
                    "Grok reached its turn limit; raise it with extra_args=['--max-turns', 'N']"
                )
                return [HarnessError(message=message)]
            case _:
                return []


def _tool_call(event: dict[str, Any]) -> list[HarnessEvent]:
    """A tool call, given flat on the event or nested under `toolCall`/`tool_call`."""
    call = object_field(event, "toolCall") or object_field(event, "tool_call") or event
    name = text_field(call, "name")
    if not name:
        return []
    arguments = object_field(call, "arguments") or object_field(call, "args")
    return [HarnessToolCall(name=name, arguments=arguments, id=text_field(call, "id") or None)]


def _end(event: dict[str, Any]) -> HarnessEvent:
    """Done with usage (the text came as deltas), or the error a cancelled run stands for."""
    if text_field(event, "stopReason") == "Cancelled":
        return HarnessError(
            message="Grok cancelled the run, usually because a tool call needed a permission a "
            "headless run cannot grant; pass extra_args=['--always-approve'] to let it run tools"
        )
    usage = object_field(event, "usage")
    tokens = HarnessUsage(
        # Grok counts cache reads apart from `input_tokens` (they add up to `total_tokens`).
        input_tokens=token_count(usage, "input_tokens", "cache_read_input_tokens"),
        output_tokens=token_count(usage, "output_tokens"),
    )
    return HarnessDone(content="", usage=tokens)
