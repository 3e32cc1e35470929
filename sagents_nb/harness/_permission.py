"""The injected server's permission tool: a CLI's own tool calls (Bash, Edit...) asked of the kernel."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._cli_call import CLI_CALL_ID
from ._mcp import CallTool, ServedTool
from ._tool_answer import ToolAnswer

PERMISSION_TOOL = "approve_tool_use"
"""The injected server's tool that answers a CLI's permission questions through the kernel's gate."""

ApproveTool = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | str]]
"""Asks the kernel about one of the CLI's own tool calls: `await approve(name, arguments)` returns
the arguments to run it with (maybe rewritten), or the reason it is refused."""


@dataclass(frozen=True)
class _PermissionTool:
    name: str = PERMISSION_TOOL
    description: str = "Decide whether a tool call may run (answered by the notebook's hooks)."
    parameters: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {
                "tool_name": {"type": "string"},
                "input": {"type": "object"},
                "tool_use_id": {"type": "string"},
            },
            "required": ["tool_name", "input"],
        }
    )


def with_permission_tool(
    tools: Sequence[ServedTool], call_tool: CallTool | None, approve: ApproveTool
) -> tuple[list[ServedTool], CallTool]:
    """`tools` plus the permission tool, and a `call_tool` that routes its calls to `approve`."""

    async def routed(name: str, arguments: dict[str, Any]) -> str | ToolAnswer:
        if name != PERMISSION_TOOL:
            if call_tool is None:
                return ToolAnswer(f"no tool named {name!r}", is_error=True)
            return await call_tool(name, arguments)
        tool_input = arguments.get("input")
        asked_about = arguments.get("tool_use_id")
        if isinstance(asked_about, str) and asked_about:
            CLI_CALL_ID.set(asked_about)  # the call asked about, not the question's own
        verdict = await approve(
            str(arguments.get("tool_name") or "a tool"),
            tool_input if isinstance(tool_input, dict) else {},
        )
        # The answer Claude Code's --permission-prompt-tool expects, as the tool's text.
        if isinstance(verdict, dict):
            return json.dumps({"behavior": "allow", "updatedInput": verdict})
        return json.dumps({"behavior": "deny", "message": verdict})

    return [*tools, _PermissionTool()], routed
