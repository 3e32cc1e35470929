"""Codex through `codex app-server` (JSON-RPC over stdio): one thread, one turn, and each of its
approval requests asked of the kernel."""

from __future__ import annotations

import json
from typing import Any

from ._conversation import Ask, Conversation, Received, Verdict
from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessPermissionDenied,
    HarnessReasoning,
    HarnessSession,
    HarnessText,
    HarnessToolCall,
    HarnessUsage,
)
from ._json_lines import list_field, load_object, object_field, text_field, token_count
from ._protocol import HarnessConfig

_INITIALIZE, _THREAD, _TURN = 1, 2, 3
"""The ids of the client's own requests, in the order they are sent."""
_NO_SUCH_METHOD = -32601
_CLIENT_VERSION = "1"
"""The version `initialize` names for this client (Codex puts it in its user agent)."""
COMMAND = "command_execution"
"""The name a command Codex asks to run goes by (as `codex exec --json` calls its items)."""
FILE_CHANGE = "file_change"
"""The name a patch Codex asks to apply goes by."""


class CodexAppServer(Conversation):
    """The client side of one run: `initialize`, `thread/start` (or `thread/resume`), one
    `turn/start`; notifications become events, approval requests become `Ask`s."""

    def __init__(self, config: HarnessConfig, thread: dict[str, Any]) -> None:
        self._config = config
        self._thread = thread
        self._usage = HarnessUsage()
        self._changes: dict[str, list[Any]] = {}
        """The changes of each file-change item seen starting, for the approval that follows."""
        self._turn_started = False

    def opening(self) -> list[str]:
        client = {"name": "sagents_nb", "title": "sagents_nb", "version": _CLIENT_VERSION}
        initialize = {"clientInfo": client, "capabilities": {"experimentalApi": False}}
        thread = {**self._thread, "cwd": self._config.cwd} if self._config.cwd else self._thread
        if self._config.resume:
            start = _request(_THREAD, "thread/resume", {"threadId": self._config.resume, **thread})
        else:
            start = _request(_THREAD, "thread/start", thread)
        return [
            _request(_INITIALIZE, "initialize", initialize),
            _line({"method": "initialized"}),
            start,
        ]

    def receive(self, line: str) -> Received:
        message = load_object(line)
        if message is None:
            return Received()
        method = message.get("method")
        if isinstance(method, str) and "id" in message:
            return self._request(method, message["id"], object_field(message, "params"))
        if isinstance(method, str):
            events = self._notification(method, object_field(message, "params"))
            # One turn per run: once it is over, stdin closes and the app server exits.
            return Received(events, finished=method == "turn/completed")
        if message.get("id") in (_INITIALIZE, _THREAD, _TURN):
            return self._response(message)
        return Received()

    def _response(self, message: dict[str, Any]) -> Received:
        """The answer to one of our requests: the thread's id starts the turn."""
        ours = {_INITIALIZE: "initialize", _THREAD: "thread/start", _TURN: "turn/start"}
        if "error" in message:
            error = message["error"]
            reason = text_field(error, "message") if isinstance(error, dict) else str(error)
            method = ours[message["id"]]
            if method == "thread/start" and self._config.resume:
                method = f"thread/resume of {self._config.resume}"
            failed = HarnessError(message=f"Codex refused {method}: {reason or 'no reason given'}")
            return Received([failed], finished=True)
        if message["id"] != _THREAD or self._turn_started:
            return Received()
        thread = text_field(object_field(object_field(message, "result"), "thread"), "id")
        if not thread:
            failed = HarnessError(message="Codex started a thread without an id")
            return Received([failed], finished=True)
        self._turn_started = True
        prompt = {"type": "text", "text": self._config.prompt, "text_elements": []}
        turn = _request(_TURN, "turn/start", {"threadId": thread, "input": [prompt]})
        return Received([HarnessSession(session_id=thread)], [turn])

    def _request(self, method: str, request_id: Any, params: dict[str, Any]) -> Received:
        """A question from Codex: an approval becomes an `Ask`; any other is refused at once."""
        arguments: dict[str, Any]
        match method:
            case "item/commandExecution/requestApproval":
                arguments = {"command": text_field(params, "command")}
                for key in ("cwd", "reason"):
                    if value := text_field(params, key):
                        arguments[key] = value
                name = COMMAND
            case "item/fileChange/requestApproval":
                arguments = {"changes": self._changes.get(text_field(params, "itemId"), [])}
                if reason := text_field(params, "reason"):
                    arguments["reason"] = reason
                name = FILE_CHANGE
            case _:
                error = {"code": _NO_SUCH_METHOD, "message": f"sagents_nb does not answer {method}"}
                return Received(replies=[_line({"id": request_id, "error": error})])
        call_id = text_field(params, "itemId") or None

        def answer(verdict: Verdict | None) -> Received:
            if isinstance(verdict, dict) and verdict == arguments:
                return Received(replies=[_decision(request_id, "accept")])
            if isinstance(verdict, dict):
                # The approval can only accept or decline the call as Codex proposed it.
                reason = f"Codex cannot run a changed {name}; the call was declined instead"
            else:
                reason = verdict or "no one in the kernel answers Codex's approval requests"
            refused = HarnessPermissionDenied(name=name, reason=reason, id=call_id)
            return Received([refused], [_decision(request_id, "decline")])

        return Received(asks=[Ask(name, arguments, answer)])

    def _notification(self, method: str, params: dict[str, Any]) -> list[HarnessEvent]:
        match method:
            case "item/started":
                return self._started(object_field(params, "item"))
            case "item/completed":
                return _completed(object_field(params, "item"))
            case "thread/tokenUsage/updated":
                last = object_field(object_field(params, "tokenUsage"), "last")
                # OpenAI's `inputTokens` already includes the cached ones.
                self._usage = HarnessUsage(
                    input_tokens=self._usage.input_tokens + token_count(last, "inputTokens"),
                    output_tokens=self._usage.output_tokens + token_count(last, "outputTokens"),
                )
                return []
            case "turn/completed":
                turn = object_field(params, "turn")
                status = text_field(turn, "status")
                if status == "completed":
                    return [HarnessDone(content="", usage=self._usage)]
                reason = text_field(object_field(turn, "error"), "message") or "no details given"
                return [HarnessError(message=f"Codex turn {status or 'ended'}: {reason}")]
            case "error":
                reason = text_field(object_field(params, "error"), "message") or "no details given"
                fatal = params.get("willRetry") is not True
                return [HarnessError(message=f"Codex: {reason}", fatal=fatal)]
            case _:
                return []

    def _started(self, item: dict[str, Any]) -> list[HarnessEvent]:
        """Tool calls, reported when they start (before any approval), so they show meanwhile."""
        call_id = text_field(item, "id") or None
        match item.get("type"):
            case "commandExecution":
                arguments = {"command": text_field(item, "command")}
                return [HarnessToolCall(name=COMMAND, arguments=arguments, id=call_id)]
            case "fileChange":
                changes = [c for c in list_field(item, "changes") if isinstance(c, dict)]
                if call_id:
                    self._changes[call_id] = changes
                return [
                    HarnessToolCall(name=FILE_CHANGE, arguments={"changes": changes}, id=call_id)
                ]
            case "mcpToolCall" if name := mcp_tool_name(item):
                arguments = object_field(item, "arguments")
                return [HarnessToolCall(name=name, arguments=arguments, id=call_id)]
            case "webSearch":
                arguments = {"query": text_field(item, "query")}
                return [HarnessToolCall(name="web_search", arguments=arguments, id=call_id)]
            case _:
                return []


def _completed(item: dict[str, Any]) -> list[HarnessEvent]:
    """Messages, reasoning, and failed MCP calls."""
    match item.get("type"):
        case "agentMessage" if text := text_field(item, "text"):
            return [HarnessText(text=text)]
        case "reasoning":
            parts = [p for p in (*list_field(item, "summary"), *list_field(item, "content"))]
            text = "\n".join(p for p in parts if isinstance(p, str) and p)
            return [HarnessReasoning(text=text)] if text else []
        case "mcpToolCall" if text_field(item, "status") == "failed":
            reason = text_field(object_field(item, "error"), "message") or "no details given"
            message = f"Codex: the call to {mcp_tool_name(item) or 'an MCP tool'} failed: {reason}"
            return [HarnessError(message=message, fatal=False)]
        case _:
            return []


def mcp_tool_name(item: dict[str, Any]) -> str:
    """`server/tool`, so an injected tool reads as `sagents/lookup` (Claude: `mcp__sagents__lookup`)."""
    tool, server = text_field(item, "tool"), text_field(item, "server")
    return f"{server}/{tool}" if tool and server else tool


def _decision(request_id: Any, decision: str) -> str:
    return _line({"id": request_id, "result": {"decision": decision}})


def _request(request_id: int, method: str, params: dict[str, Any]) -> str:
    return _line({"id": request_id, "method": method, "params": params})


def _line(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)
