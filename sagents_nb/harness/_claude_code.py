"""Driver for Claude Code (`claude -p`), read through its `stream-json` output."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ._events import HarnessEvent, HarnessText
from ._json_lines import load_object, object_field, text_field
from ._protocol import MCP_SERVER_NAME, BaseHarness, HarnessConfig
from ._stream_json import assistant_events, result_events, system_events, user_events

PermissionMode = Literal["default", "acceptEdits", "bypassPermissions", "plan", "dontAsk"]


@dataclass(frozen=True, kw_only=True)
class ClaudeCode(BaseHarness):
    """Claude Code in print mode. The child's tools arrive through `--mcp-config`.

    The CLI gets the variables it reads (`ANTHROPIC_*`, `CLAUDE_*`, `DISABLE_*`, `MCP_*`) from
    this process's environment and no others, with auto-update, telemetry and other
    non-essential traffic turned off.

    Args:
        executable: The `claude` program to run, by name on PATH or by path.
        base_url: The Messages API root to use instead of Anthropic's (`ANTHROPIC_BASE_URL`),
            e.g. a served mock's `base_url`.
        api_key: The key to send (`ANTHROPIC_API_KEY`); default whatever the CLI finds.
        permission_mode: `--permission-mode` for the CLI's own tools (Bash, Edit, ...).
        gate_builtin_tools: Ask the kernel before the CLI runs one of its own tools (Bash, Edit,
            ...) that its permission rules do not already allow: the call goes through the
            `before_tool` hooks and `pause_on={"tool"}` like any tool call of the child, and
            the CLI runs it only if they let it (`--permission-prompt-tool`).
        stream_text: Report text as it streams (`--include-partial-messages`), as `text` events
            with `delta` set (a `Native` child emits them as `text_delta` events), beside the
            whole messages.
    """

    executable: str = "claude"
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    permission_mode: PermissionMode | None = None
    gate_builtin_tools: bool = False
    stream_text: bool = False
    name = "Claude Code"
    env_vars = ("ANTHROPIC_*", "CLAUDE_*", "DISABLE_*", "MCP_*")

    def args(self, config: HarnessConfig) -> list[str]:
        """`-p --output-format stream-json --verbose [options] -- PROMPT`."""
        argv = ["-p", "--output-format", "stream-json", "--verbose"]
        if self.stream_text:
            argv.append("--include-partial-messages")
        if config.resume:
            argv.append(f"--resume={config.resume}")
        if config.model:
            argv += ["--model", config.model]
        if config.system_prompt and config.system_prompt.strip():
            argv += ["--append-system-prompt", config.system_prompt]
        if self.permission_mode:
            argv.append(f"--permission-mode={self.permission_mode}")
        if config.mcp_config_path:
            # Both options are variadic: in the `--name=value` form they take exactly one value
            # and cannot swallow the arguments after them; ARCHITECTURE.md lists the upstream report.
            argv.append(f"--mcp-config={config.mcp_config_path}")
            # A print-mode run cannot ask for permission, so the injected tools are allowed up
            # front; the kernel's hooks still see (and may deny) every call.
            argv.append(f"--allowedTools=mcp__{MCP_SERVER_NAME}")
            if config.permission_tool:
                tool = f"mcp__{MCP_SERVER_NAME}__{config.permission_tool}"
                argv.append(f"--permission-prompt-tool={tool}")
        # `--` ends option parsing, so the prompt stays one positional argument even when it
        # starts with "-"; ARCHITECTURE.md lists the upstream report.
        return [*argv, *config.extra_args, "--", config.prompt]

    def env(self, config: HarnessConfig) -> dict[str, str]:
        """Where to send requests, and the switches that keep the CLI to them."""
        settings = {
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        if config.mcp_config_path:
            # Claude Code otherwise hides MCP tools behind its ToolSearch tool.
            settings["ENABLE_TOOL_SEARCH"] = "false"
        if self.base_url:
            settings["ANTHROPIC_BASE_URL"] = self.base_url
        if self.api_key:
            settings["ANTHROPIC_API_KEY"] = self.api_key
        return settings

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from `assistant`, `user` (tool results), `result`, `system` and (streamed)
        `stream_event` lines; a sub-agent's events name it (`subagent`)."""
        event = load_object(line)
        if event is None:
            return []
        match event.get("type"):
            case "assistant":
                return assistant_events(event, self.name)
            case "user":
                return user_events(event)
            case "result":
                return result_events(event, self.name)
            case "system":
                return system_events(event)
            case "stream_event" if not event.get("parent_tool_use_id"):
                delta = object_field(object_field(event, "event"), "delta")
                if delta.get("type") == "text_delta" and (text := text_field(delta, "text")):
                    return [HarnessText(text=text, delta=True)]
                return []
            case _:
                return []
