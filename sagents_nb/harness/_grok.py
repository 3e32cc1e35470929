"""Driver for the Grok CLI published on npm as `@vibe-kit/grok-cli` (`grok --prompt`), read as JSON messages."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._events import HarnessError, HarnessEvent, HarnessText, HarnessToolCall
from ._json_lines import list_field, load_object, object_field, text_field
from ._protocol import BaseHarness, HarnessConfig

# The CLI reports a failure as an assistant message of this form, then exits with code 1.
_ERROR_PREFIX = "Error: "


@dataclass(frozen=True, kw_only=True)
class Grok(BaseHarness):
    """`@vibe-kit/grok-cli` in headless mode: it prints the run's chat messages, one JSON per line.

    It speaks OpenAI chat completions, so `base_url` may be a served mock's `openai_base_url`. It
    has no flag for a system prompt, so `system_prompt` goes at the head of the prompt. It reads
    MCP servers only from its settings file, so tools are not injected; it approves its own tool
    calls in headless mode. Its output carries no usage. An answer that itself starts with
    "Error: " reads as the CLI's failure message.

    Args:
        executable: The `grok` program to run, by name on PATH or by path.
        base_url: The chat-completions root to use (`GROK_BASE_URL`; the CLI's `-u` would save it
            to the user's settings, the variable does not).
        api_key: The key to send (`GROK_API_KEY`); default whatever the CLI finds.
    """

    executable: str = "grok"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    name = "Grok"
    injects_mcp_tools = False
    env_vars = ("GROK_*",)

    def args(self, config: HarnessConfig) -> list[str]:
        """`--prompt=PROMPT [-m MODEL] [options]`."""
        prompt = config.prompt
        if config.system_prompt and config.system_prompt.strip():
            prompt = f"{config.system_prompt}\n\n{prompt}"
        # `--prompt=value` binds the value to its flag, so a prompt starting with "-" is never
        # read as a flag.
        argv = [f"--prompt={prompt}"]
        if config.model:
            argv += ["-m", config.model]
        return [*argv, *config.extra_args]

    def env(self, config: HarnessConfig) -> dict[str, str]:
        """The endpoint and key, when given."""
        settings = {}
        if self.base_url:
            settings["GROK_BASE_URL"] = self.base_url
        if self.api_key:
            settings["GROK_API_KEY"] = self.api_key
        return settings

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Text from assistant messages, tool calls from their `tool_calls`, the CLI's error line."""
        message = load_object(line)
        if message is None or message.get("role") != "assistant":
            return []
        calls = [c for c in list_field(message, "tool_calls") if isinstance(c, dict)]
        if calls:  # the text beside tool calls is the CLI's own filler ("Using tools...")
            return [event for call in calls for event in _tool_call(call)]
        text = text_field(message, "content")
        if text.startswith(_ERROR_PREFIX):
            return [HarnessError(message=f"Grok: {text}")]
        return [HarnessText(text=text)] if text else []


def _tool_call(call: dict[str, Any]) -> list[HarnessEvent]:
    function = object_field(call, "function")
    name = text_field(function, "name")
    if not name:
        return []
    try:
        arguments = json.loads(text_field(function, "arguments") or "{}")
    except (ValueError, RecursionError):
        arguments = {}
    arguments = arguments if isinstance(arguments, dict) else {}
    return [HarnessToolCall(name=name, arguments=arguments, id=text_field(call, "id") or None)]
