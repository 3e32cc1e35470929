"""Tool hooks: `before_tool` may deny a call or rewrite its arguments; `after_tool` may rewrite results."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .._base.checks import check_fields
from .tool import ToolResult


@dataclass(frozen=True)
class Deny:
    """Returned by `before_tool` to refuse a call; the model is told `reason`."""

    reason: str

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class ToolCallInfo:
    """The call a hook sees: tool `name`, decoded `arguments`, the node's `path` and the call `id`."""

    name: str
    arguments: dict[str, Any]
    path: str
    id: str
    agent: str = ""


class ToolHook(Protocol):
    """A hook object; both methods are optional and may be sync or async."""

    def before_tool(self, call: ToolCallInfo) -> Deny | dict[str, Any] | None: ...

    def after_tool(self, call: ToolCallInfo, result: ToolResult) -> str | ToolResult | None: ...


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def apply_before(hooks: Iterable[Any], call: ToolCallInfo) -> Deny | None:
    """Run every `before_tool`; a `Deny` stops at once, a dict replaces the arguments."""
    for hook in hooks:
        before = getattr(hook, "before_tool", None)
        if before is None:
            continue
        outcome = await _maybe_await(before(call))
        if isinstance(outcome, Deny):
            return outcome
        if isinstance(outcome, dict):
            call.arguments = outcome
    return None


async def apply_after(hooks: Iterable[Any], call: ToolCallInfo, result: ToolResult) -> ToolResult:
    """Run every `after_tool`; a str replaces the result text, a ToolResult replaces the result."""
    for hook in hooks:
        after = getattr(hook, "after_tool", None)
        if after is None:
            continue
        outcome = await _maybe_await(after(call, result))
        if isinstance(outcome, str):
            result.content = outcome
        elif isinstance(outcome, ToolResult):
            result = outcome
    return result
