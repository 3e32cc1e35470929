"""Driver for Claude Code (`claude -p`), read through its `stream-json` output."""

from __future__ import annotations

from dataclasses import dataclass

from ._events import HarnessEvent
from ._json_lines import load_object
from ._protocol import MCP_SERVER_NAME, HarnessConfig
from ._stream_json import assistant_events, result_events


@dataclass(frozen=True, kw_only=True)
class ClaudeCode:
    """Claude Code in print mode. The child's tools arrive through `--mcp-config`.

    Args:
        executable: The `claude` program to run, by name on PATH or by path.
    """

    executable: str = "claude"
    name = "Claude Code"
    injects_mcp_tools = True

    def args(self, config: HarnessConfig) -> list[str]:
        """`-p --output-format stream-json --verbose [options] -- PROMPT`."""
        argv = ["-p", "--output-format", "stream-json", "--verbose"]
        if config.model:
            argv += ["--model", config.model]
        if config.system_prompt and config.system_prompt.strip():
            argv += ["--append-system-prompt", config.system_prompt]
        if config.mcp_config_path:
            # Both options are variadic: in the `--name=value` form they take exactly one value
            # and cannot swallow the arguments after them (anthropics/claude-code#16122).
            argv.append(f"--mcp-config={config.mcp_config_path}")
            # A print-mode run cannot ask for permission, so the injected tools are allowed up
            # front; the kernel's hooks still see (and may deny) every call.
            argv.append(f"--allowedTools=mcp__{MCP_SERVER_NAME}")
        # `--` ends option parsing, so the prompt stays one positional argument even when it
        # starts with "-" (anthropics/claude-code#25925).
        return [*argv, *config.extra_args, "--", config.prompt]

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from an `assistant` or `result` line; `system`, `user` and noise give `[]`."""
        event = load_object(line)
        if event is None:
            return []
        match event.get("type"):
            case "assistant":
                return assistant_events(event)
            case "result":
                return result_events(event, self.name)
            case _:
                return []
