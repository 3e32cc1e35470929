"""One tool call, start to finish: pause gate, argument decoding, hooks, the call, its events."""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

import pydantic

from .._base.messages import ToolCall, built
from .._tools.hooks import ToolCallInfo, apply_after, apply_before
from .._tools.node_tool import NodeTool
from .._tools.tool import Tool, ToolError, ToolResult, parse_arguments, validation_message
from ..events import ToolCallFinished, ToolCallStarted
from .pausing import APPROVE

if TYPE_CHECKING:
    from .node import Node


def _hooks(node: Node) -> list[Any]:
    return [*node.session.hooks, *node.agent.hooks]


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
    if decision.kind == "edit":
        arguments = decision.edited_arguments(arguments)
    hooks = _hooks(node)
    info = ToolCallInfo(  # hooks get a copy, so a rewrite in place still shows in the events
        name=name,
        arguments=dict(arguments) if hooks else arguments,
        path=node.path,
        id=call.id,
        agent=node.agent.name,
    )
    # the model's own argument text, unless a pause edit changed the arguments
    shown = _dump(arguments) if decision.kind == "edit" else call.arguments
    node.emit(
        built(ToolCallStarted)(
            call_id=call.id,
            name=name,
            arguments=shown,
            display_text=_display_text(node, name, arguments),
        )
    )
    started = time.perf_counter()
    try:
        result = await _call_with_hooks(node, tool, call, info, hooks)
    except asyncio.CancelledError:
        # every started call ends in the event stream, so the view's card does not stay "running"
        cancelled = ToolResult(call.id, name, "[cancelled] the call was stopped", "cancelled")
        _finish(node, call, shown, time.perf_counter() - started, cancelled)
        raise
    if hooks and info.arguments != arguments:  # a hook rewrote them
        shown = _dump(info.arguments)
    return _finish(node, call, shown, time.perf_counter() - started, result)


async def _call_with_hooks(
    node: Node, tool: Any, call: ToolCall, info: ToolCallInfo, hooks: list[Any]
) -> ToolResult:
    name = call.name
    denied = await apply_before(hooks, info) if hooks else None
    if denied is not None:
        return ToolResult(call.id, name, f"call rejected: {denied.reason}", "denied")
    if tool is None:
        available = ", ".join(sorted(node.tool_map)) or "none"
        return ToolResult(
            call.id, name, f"error: unknown tool {name!r} (available: {available})", "error"
        )
    result = await _invoke(node, tool, call.id, info.arguments)
    return await apply_after(hooks, info, result) if hooks else result


async def _invoke(node: Node, tool: Any, call_id: str, arguments: dict[str, Any]) -> ToolResult:
    name = tool.name
    try:
        if isinstance(tool, NodeTool):
            return await tool.run(node, call_id, arguments)
        return ToolResult(call_id, name, await tool.invoke(arguments))
    except pydantic.ValidationError as exc:
        message = f"error: invalid arguments for {name}: {validation_message(exc)}"
    except ToolError as exc:
        message = f"error: {exc}"
    except TimeoutError:
        limit = tool.timeout if isinstance(tool, Tool) else None
        message = f"error: tool {name} timed out after {limit} s"
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # SystemExit from an argparse helper must not end the loop
        message = f"error: tool {name} failed: {type(exc).__name__}: {exc}"
    return ToolResult(call_id, name, message, "error")


def _finish(
    node: Node, call: ToolCall, arguments: str, duration: float, result: ToolResult
) -> ToolResult:
    result.duration = duration
    node.emit(
        built(ToolCallFinished)(
            call_id=call.id,
            name=call.name,
            arguments=arguments,
            result=result.content,
            status=result.status,
            duration=duration,
        )
    )
    return result


def _display_text(node: Node, name: str, arguments: dict[str, Any]) -> str | None:
    if name != "task":
        return None
    member = node.agent.member(str(arguments.get("agent")))
    return member.running_label if member is not None else None


def _dump(arguments: dict[str, Any]) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)
