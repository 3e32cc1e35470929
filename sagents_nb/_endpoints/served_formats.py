"""The Anthropic Messages and OpenAI Responses formats, read into chat messages and written from replies."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cached_property
from typing import Any, Literal

from .mock import ChatRequest, Reply, json_bytes, json_text
from .mock import _chunks as _pieces

Api = Literal["chat_completions", "anthropic_messages", "responses"]


class ServedRequest(ChatRequest):
    """A request to a served mock, in any of its formats, as the handler sees it.

    `.body` is the JSON body exactly as sent; `.messages` and `.tools` read it as chat-completions
    messages and tool names whatever its format, so one handler answers every client. `.api`
    names the format.
    """

    def __init__(self, body: dict[str, Any], size: int, api: Api) -> None:
        super().__init__(body, size)
        self.api: Api = api
        """`chat_completions`, `anthropic_messages` or `responses`."""

    @cached_property
    def messages(self) -> list[dict[str, Any]]:  # type: ignore[override]
        """The conversation as chat-completions message dicts (system, user, assistant, tool)."""
        if self.api == "anthropic_messages":
            return _anthropic_messages(self.body)
        if self.api == "responses":
            return _responses_messages(self.body)
        return super().messages

    @cached_property
    def tools(self) -> list[str]:
        """Names of the tools offered."""
        if self.api == "chat_completions":
            return super().tools
        return [name for name, _ in _tool_names(self.body.get("tools"))]

    def __repr__(self) -> str:
        return (
            f"ServedRequest(api={self.api!r}, model={self.model!r}, messages={len(self.messages)})"
        )


def _tool_names(offered: Any) -> list[tuple[str, str | None]]:
    """`(name, namespace)` of each tool offered; a namespace's tools read as `namespace__tool`."""
    names: list[tuple[str, str | None]] = []
    for tool in _dicts(offered):
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        if tool.get("type") == "namespace":
            names += [(f"{name}__{inner}", name) for inner, _ in _tool_names(tool.get("tools"))]
        else:
            names.append((name, None))
    return names


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text_of(content: Any) -> str:
    """The text of a content field: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    parts = []
    for block in _dicts(content):
        text = block.get("text")
        if isinstance(text, str):
            parts.append(text)
        elif block.get("type") in ("tool_result", "function_call_output"):
            parts.append(_text_of(block.get("content")))
    return "".join(parts)


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json_text(arguments if arguments is not None else {})
    return {
        "id": str(call_id),
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _is_reminder(block: dict[str, Any]) -> bool:
    """Claude Code's own context notes (`<system-reminder>...`), sent as user text blocks."""
    text = block.get("text")
    return isinstance(text, str) and text.lstrip().startswith("<system-reminder>")


def _anthropic_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages API `system` + `messages` as chat messages.

    `tool_result` blocks become tool messages; Claude Code's `<system-reminder>` blocks are left out
    (they stay in `.body`), so `last_user` is what the user asked.
    """
    out: list[dict[str, Any]] = []
    if system := _text_of(body.get("system")):
        out.append({"role": "system", "content": system})
    for message in _dicts(body.get("messages")):
        role, content = message.get("role"), message.get("content")
        blocks = _dicts(content) if isinstance(content, list) else []
        if role == "assistant":
            calls = [
                _call(b.get("id"), b.get("name"), b.get("input"))
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": _text_of(content) or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(block.get("tool_use_id")),
                        "content": _text_of(block.get("content")),
                        "is_error": block.get("is_error") is True,
                    }
                )
        if isinstance(content, str):
            text = content
        else:
            said = [b for b in blocks if b.get("type") == "text" and not _is_reminder(b)]
            text = "\n\n".join(_text_of([b]) for b in said)
        if text or not blocks:
            out.append({"role": "system" if role == "system" else "user", "content": text})
    return out


def _responses_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Responses API `instructions` + `input` items as chat messages."""
    out: list[dict[str, Any]] = []
    if isinstance(instructions := body.get("instructions"), str) and instructions:
        out.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in _dicts(items):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            role = "system" if role == "developer" else role
            out.append({"role": role, "content": _text_of(item.get("content"))})
        elif kind == "function_call":
            call = _call(item.get("call_id"), item.get("name"), item.get("arguments"))
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": str(item.get("call_id")),
                    "content": output if isinstance(output, str) else _text_of(output),
                }
            )
    return out


def _tool_calls(answer: Reply, ids: Iterator[int]) -> list[tuple[str, str, str]]:
    """`(id, name, arguments JSON)` of each call in `answer`."""
    return [
        (
            spec.id or f"call_{next(ids)}",
            spec.name,
            answer.raw_arguments.get(i, json_text(spec.arguments)),
        )
        for i, spec in enumerate(answer.tool_calls)
    ]


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return "".join(f"event: {name}\ndata: {json_text(data)}\n\n" for name, data in events).encode()


def anthropic_reply(
    answer: Reply, request: ServedRequest, usage: dict[str, int], ids: Iterator[int]
) -> tuple[str, bytes, Any]:
    """`(content type, body, recorded response)` of `answer` as a Messages API reply."""
    calls = _tool_calls(answer, ids)
    blocks: list[dict[str, Any]] = []
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    for call_id, name, arguments in calls:
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = {}
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": parsed})
    tokens = {
        "input_tokens": usage.get("prompt_tokens", 0),
        "output_tokens": usage.get("completion_tokens", 0),
    }
    message = {
        "id": f"msg_mock_{next(ids)}",
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": blocks,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": tokens,
    }
    if not (request.stream or answer.stream):
        return "application/json", json_bytes(message), message
    started = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**tokens, "output_tokens": 0},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": started})
    ]
    for index, block in enumerate(blocks):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            opening = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": calls[index - bool(answer.text)][2]}
            ]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        for delta in deltas:
            events.append(
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": tokens["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return "text/event-stream", _sse(events), {"events": [data for _, data in events]}


def responses_reply(
    answer: Reply, request: ServedRequest, usage: dict[str, int], ids: Iterator[int]
) -> tuple[str, bytes, Any]:
    """`(content type, body, recorded response)` of `answer` as a Responses API reply."""
    output: list[dict[str, Any]] = []
    if answer.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_mock_{next(ids)}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
        )
    namespaces = dict(_tool_names(request.body.get("tools")))
    for call_id, name, arguments in _tool_calls(answer, ids):
        item = {
            "type": "function_call",
            "id": f"fc_mock_{next(ids)}",
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "status": "completed",
        }
        if namespace := namespaces.get(name):  # `ns__tool` was offered as `tool` inside `ns`
            item.update(name=name.removeprefix(f"{namespace}__"), namespace=namespace)
        output.append(item)
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    response = {
        "id": f"resp_mock_{next(ids)}",
        "object": "response",
        "status": "completed",
        "model": request.model,
        "output": output,
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        },
    }
    if not (request.stream or answer.stream):
        return "application/json", json_bytes(response), response
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(name: str, **data: Any) -> None:
        events.append((name, {"type": name, "sequence_number": len(events), **data}))

    emit("response.created", response={**response, "status": "in_progress", "output": []})
    for index, item in enumerate(output):
        if item["type"] == "message":
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            emit(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
            for piece in _pieces(answer.text or ""):
                emit(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                )
            emit(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=answer.text,
            )
            emit(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        else:
            emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            emit(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            emit(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.completed", response=response)
    return "text/event-stream", _sse(events), {"events": [data for _, data in events]}
