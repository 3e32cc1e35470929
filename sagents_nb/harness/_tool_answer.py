"""`ToolAnswer`: a kernel tool's answer to a CLI, marked as an error or not."""

from __future__ import annotations

from dataclasses import dataclass

from .._base.checks import check_fields


@dataclass(frozen=True)
class ToolAnswer:
    """What a tool call from the CLI answered, and whether it is an error (`is_error` in MCP)."""

    text: str
    """The text the CLI's model sees."""
    is_error: bool = False
    """True when the tool failed or the call was refused, so the CLI treats it as a failure."""

    def __post_init__(self) -> None:
        check_fields(self)
