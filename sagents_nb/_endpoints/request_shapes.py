"""What is wrong with a served request's JSON body for its wire format, named for a 400 answer."""

from __future__ import annotations

from typing import Any

from .served_formats import Api

_FORMATS = {
    "chat_completions": "chat-completions",
    "anthropic_messages": "Anthropic Messages",
    "responses": "Responses",
}


def _kind(value: Any) -> str:
    if value is None:
        return "missing (or null)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


class _Wrong(Exception):
    pass


def _need(value: Any, where: str, *accepted: type | None, what: str) -> Any:
    """`value`, if it is one of the `accepted` types."""
    if not any(value is None if t is None else isinstance(value, t) for t in accepted):
        raise _Wrong(f"{where} is {_kind(value)}, not {what}")
    return value


def _objects(value: Any, where: str) -> list[dict[str, Any]]:
    _need(value, where, list, what="an array")
    for i, item in enumerate(value):
        _need(item, f"{where}[{i}]", dict, what="an object")
    return value


def _content(value: Any, where: str, *, optional: bool) -> None:
    accepted = (str, list, None) if optional else (str, list)
    _need(value, where, *accepted, what="a string or an array of content blocks")
    if isinstance(value, list):
        _objects(value, where)


def _chat(body: dict[str, Any]) -> None:
    for i, message in enumerate(_objects(body.get("messages"), "messages")):
        where = f"messages[{i}]"
        _need(message.get("role"), f"{where}.role", str, what="a string")
        _content(message.get("content"), f"{where}.content", optional=True)
        for j, call in enumerate(_objects(message.get("tool_calls") or [], f"{where}.tool_calls")):
            function = _need(
                call.get("function"), f"{where}.tool_calls[{j}].function", dict, what="an object"
            )
            _need(
                function.get("name"), f"{where}.tool_calls[{j}].function.name", str, what="a string"
            )
    for i, tool in enumerate(_objects(body.get("tools") or [], "tools")):
        function = _need(tool.get("function"), f"tools[{i}].function", dict, what="an object")
        _need(function.get("name"), f"tools[{i}].function.name", str, what="a string")


def _anthropic(body: dict[str, Any]) -> None:
    system = body.get("system")
    _need(system, "system", str, list, None, what="a string or an array of text blocks")
    if isinstance(system, list):
        _objects(system, "system")
    for i, message in enumerate(_objects(body.get("messages"), "messages")):
        _need(message.get("role"), f"messages[{i}].role", str, what="a string")
        _content(message.get("content"), f"messages[{i}].content", optional=False)
    _objects(body.get("tools") or [], "tools")


def _responses(body: dict[str, Any]) -> None:
    _need(body.get("instructions"), "instructions", str, None, what="a string")
    items = body.get("input")
    _need(items, "input", str, list, None, what="a string or an array of input items")
    if isinstance(items, list):
        for i, item in enumerate(_objects(items, "input")):
            if item.get("type", "message") == "message":
                _content(item.get("content"), f"input[{i}].content", optional=False)
    _objects(body.get("tools") or [], "tools")


_CHECKS = {"chat_completions": _chat, "anthropic_messages": _anthropic, "responses": _responses}


def shape_problem(api: Api, body: dict[str, Any]) -> str | None:
    """What is wrong with `body` as a request in the `api` format, or None.

    Only what the mock reads is checked (the model, the stream flag, messages, their roles and
    contents, tools): a body of the wrong shape is the client's error, not the mock handler's.
    """
    try:
        _need(body.get("model"), "model", str, None, what="a string")
        _need(body.get("stream"), "stream", bool, None, what="a boolean")
        _CHECKS[api](body)
    except _Wrong as wrong:
        return f"the {_FORMATS[api]} request's {wrong}"
    return None
