"""One tool call, start to finish: pause gate, argument decoding, hooks, the call, its events."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from .._base.messages import ToolCall
from .._tools.hooks import ToolCallInfo, apply_after, apply_before
from .._tools.node_tool import NodeTool
from .._tools.tool import Tool, ToolError, ToolResult, parse_arguments, validation_message
from ..events import ToolCallFinished, ToolCallStarted
from .pausing import APPROVE

if TYPE_CHECKING:
    from .node import Node


async def execute_call(node: Node, call: ToolCall) -> ToolResult:
    """Run one call and return its result; every failure becomes an error result, never a raise."""
    name = call.name
    tool = node.tool_map.get(name)
    try:
        arguments = parse_arguments(call.arguments)
    except ValueError as exc:
        return _finish(
            node,
            call,
            call.arguments,
            0.0,
            ToolResult(
                call.id,
                name,
                f"error: {exc}; send the arguments as a JSON object matching the tool's schema",
                "error",
            ),
        )
    action = "task" if name == "task" else "tool"
    session = node.session
    decision = (
        await session.gate(node, action, name=name, arguments=arguments, call_id=call.id)
        if session.may_pause(node, action, name)
        else APPROVE
    )
    if decision.kind == "reject":
        reason = decision.changes.get("reason") or "no reason given"
        return _finish(
            node,
            call,
            call.arguments,
            0.0,
            ToolResult(call.id, name, f"the user rejected this call: {reason}", "denied"),
        )
    edited = decision.kind == "edit"
    if edited:
        arguments = decision.edited_arguments(arguments)
    hooks = [*session.hooks, *node.agent.hooks]
    info = (
        ToolCallInfo(  # hooks get a copy, so a rewrite in place still shows in the events
            name=name,
            arguments=dict(arguments),
            path=node.path,
            id=call.id,
            agent=node.agent.name,
        )
        if hooks
        else None
    )
    # the model's own argument text, unless a pause edit changed the arguments
    shown = _dump(arguments) if edited else call.arguments
    node.emit(
        ToolCallStarted(
            call_id=call.id,
            name=name,
            arguments=shown,
            display_text=_display_text(node, arguments) if name == "task" else None,
        )
    )
    started = time.perf_counter()
    try:
        if info is not None:
            result = await _call_with_hooks(node, tool, call, info, hooks)
        elif tool is None:
            result = _unknown(node, call)
        else:
            result = await _invoke(node, tool, call.id, arguments)
    except asyncio.CancelledError:
        # every started call ends in the event stream, so the view's card does not stay "running"
        cancelled = ToolResult(call.id, name, "[cancelled] the call was stopped", "cancelled")
        _finish(node, call, shown, time.perf_counter() - started, cancelled)
        raise
    if info is not None and info.arguments != arguments:  # a hook rewrote them
        shown = _dump(info.arguments)
    return _finish(node, call, shown, time.perf_counter() - started, result)


async def _call_with_hooks(
    node: Node, tool: Any, call: ToolCall, info: ToolCallInfo, hooks: list[Any]
) -> ToolResult:
    denied = await apply_before(hooks, info)
    if denied is not None:
        return ToolResult(call.id, call.name, f"call rejected: {denied.reason}", "denied")
    if tool is None:
        return _unknown(node, call)
    result = await _invoke(node, tool, call.id, info.arguments)
    return await apply_after(hooks, info, result)


def _unknown(node: Node, call: ToolCall) -> ToolResult:
    available = ", ".join(sorted(node.tool_map)) or "none"
    return ToolResult(
        call.id, call.name, f"error: unknown tool {call.name!r} (available: {available})", "error"
    )


async def _invoke(node: Node, tool: Any, call_id: str, arguments: dict[str, Any]) -> ToolResult:
    name = tool.name
    try:
        if isinstance(tool, NodeTool):
            return await tool.run(node, call_id, arguments)
        return ToolResult(call_id, name, await tool.invoke(arguments))
    except ToolError as exc:
        message = f"error: {exc}"
    except TimeoutError:
        limit = tool.timeout if isinstance(tool, Tool) else None
        message = f"error: tool {name} timed out after {limit} s"
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # SystemExit from an argparse helper must not end the loop
        message = _failed(name, exc)
    return ToolResult(call_id, name, message, "error")


def _failed(name: str, exc: BaseException) -> str:
    """The model's error text for a failed call: invalid arguments said field by field."""
    pydantic = sys.modules.get("pydantic")  # loaded with the first tool's arguments model
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        return f"error: invalid arguments for {name}: {validation_message(exc)}"
    return f"error: tool {name} failed: {type(exc).__name__}: {exc}"


def _finish(
    node: Node, call: ToolCall, arguments: str, duration: float, result: ToolResult
) -> ToolResult:
    result.duration = duration
    node.emit(
        ToolCallFinished(
            call_id=call.id,
            name=call.name,
            arguments=arguments,
            result=result.content,
            status=result.status,
            duration=duration,
        )
    )
    return result


def _display_text(node: Node, arguments: dict[str, Any]) -> str | None:
    """The running label of the team member a `task` call names."""
    member = node.agent.member(str(arguments.get("agent")))
    return member.running_label if member is not None else None


def _dump(arguments: dict[str, Any]) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)
