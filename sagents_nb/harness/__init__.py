"""Native CLI harnesses: coding-agent CLIs run as children, their events streamed, tools over MCP.

A driver implements `NativeHarness`; `BaseHarness` has the defaults (the built-in drivers start
from it).
"""

from ._claude_code import ClaudeCode
from ._cli_call import cli_call_id
from ._codex import Codex
from ._cursor_agent import CursorAgent
from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessEventAdapter,
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
from ._grok import Grok
from ._mcp import CallTool, McpInjection, ServedTool, serve_tools
from ._outcome import HarnessOutcome
from ._permission import PERMISSION_TOOL, ApproveTool
from ._protocol import (
    MCP_SERVER_NAME,
    MCP_TOKEN_ENV,
    BaseHarness,
    HarnessConfig,
    NativeHarness,
    available,
)
from ._runtime import OnEvent, run_harness
from ._tool_answer import ToolAnswer

__all__ = [
    "MCP_SERVER_NAME",
    "MCP_TOKEN_ENV",
    "PERMISSION_TOOL",
    "ApproveTool",
    "BaseHarness",
    "CallTool",
    "ClaudeCode",
    "Codex",
    "CursorAgent",
    "Grok",
    "HarnessConfig",
    "HarnessDone",
    "HarnessError",
    "HarnessEvent",
    "HarnessEventAdapter",
    "HarnessModelCall",
    "HarnessOutcome",
    "HarnessPermissionDenied",
    "HarnessReasoning",
    "HarnessRetry",
    "HarnessSession",
    "HarnessSubagent",
    "HarnessText",
    "HarnessToolCall",
    "HarnessToolResult",
    "HarnessUsage",
    "McpInjection",
    "NativeHarness",
    "OnEvent",
    "ServedTool",
    "ToolAnswer",
    "available",
    "cli_call_id",
    "run_harness",
    "serve_tools",
]
