"""Driver for Cursor's agent CLI (`cursor-agent -p`), read through its `stream-json` output."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._events import HarnessEvent, HarnessReasoning, HarnessToolCall
from ._json_lines import load_object, object_field, text_field
from ._protocol import BaseHarness, HarnessConfig
from ._stream_json import assistant_events, result_events


@dataclass(frozen=True, kw_only=True)
class CursorAgent(BaseHarness):
    """Cursor's agent CLI in print mode.

    It has no flag for a system prompt, so `system_prompt` goes at the head of the prompt. It reads
    MCP servers only from `.cursor/mcp.json` files, so tools are not injected. Headless runs
    usually need `extra_args=["--trust"]` (and `"--force"` to let it run commands).

    Args:
        executable: The `cursor-agent` program to run, by name on PATH or by path.
    """

    executable: str = "cursor-agent"
    name = "Cursor Agent"
    injects_mcp_tools = False

    def args(self, config: HarnessConfig) -> list[str]:
        """`-p --output-format stream-json [options] -- PROMPT`."""
        argv = ["-p", "--output-format", "stream-json"]
        if config.model:
            argv += ["--model", config.model]
        prompt = config.prompt
        if config.system_prompt and config.system_prompt.strip():
            prompt = f"{config.system_prompt}\n\n{prompt}"
        # `--` ends option parsing, so a prompt starting with "-" stays the positional prompt.
        return [*argv, *config.extra_args, "--", prompt]

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from `assistant`, `thinking`, `tool_call` and `result` lines; others give `[]`."""
        event = load_object(line)
        if event is None:
            return []
        match event.get("type"):
            case "assistant":
                return assistant_events(event, self.name)
            case "result":
                return result_events(event, self.name)
            case "thinking" if event.get("subtype") == "delta" and (
                text := text_field(event, "text")
            ):
                return [HarnessReasoning(text=text)]
            case "tool_call" if event.get("subtype") == "started":
                return _tool_call(event)
            case _:
                return []


def _tool_call(event: dict[str, Any]) -> list[HarnessEvent]:
    """Cursor nests a call under one key: `{"readToolCall": {"args": ...}}` or `{"function": ...}`."""
    call_id = text_field(event, "call_id") or None
    for key, body in object_field(event, "tool_call").items():
        if not isinstance(body, dict):
            continue
        if key == "function" and (name := text_field(body, "name")):
            return [HarnessToolCall(name=name, arguments=_json_arguments(body), id=call_id)]
        if key.endswith("ToolCall") and len(key) > len("ToolCall"):
            name = key.removesuffix("ToolCall")
            return [HarnessToolCall(name=name, arguments=object_field(body, "args"), id=call_id)]
    return []


def _json_arguments(function: dict[str, Any]) -> dict[str, Any]:
    """A function call's `arguments`, given as an object or as a JSON string of one."""
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return {}
    return arguments if isinstance(arguments, dict) else {}
