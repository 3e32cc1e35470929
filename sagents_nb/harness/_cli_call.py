"""Which of the CLI's calls is being served: its own id for it, while the kernel runs it."""

from __future__ import annotations

from contextvars import ContextVar

CLI_CALL_ID: ContextVar[str | None] = ContextVar("sagents_nb_cli_call_id", default=None)
"""Set while a call from the CLI runs: the CLI's own id for it (`cli_call_id`)."""


def cli_call_id() -> str | None:
    """Inside a `call_tool` or `approve_tool` the runtime is running: the CLI's own id for the
    call, when it names one (Claude Code sends its tool-use id with each MCP call, and with each
    permission question), else None. It tells which of the CLI's sub-agents made the call."""
    return CLI_CALL_ID.get()
