"""Inline mock endpoints: a handler written in the notebook answers like an OpenAI server."""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import sys
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from msgspec import DecodeError
from msgspec.json import decode as decode_json

from .._base.caller import CALLER, Caller, path_matches
from .._base.checks import check_bool, check_callable, check_items, check_str, refuse
from .._base.errors import ConfigurationError
from .._base.prices import MOCK_MODEL
from .openai import LLM, Served, _client_headers, unescaped_json

# A mock's plain answers need no httpx: it is imported where a response, a stream or a
# transport is made (a first offline run does not pay for httpx and its CLI's packages).
if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class CallSpec:
    """A tool call the mock should make: `sn.call("search", q="cats")`."""

    name: str
    arguments: dict[str, Any]
    id: str | None = None


def call(name: str, /, _id: str | None = None, **arguments: Any) -> CallSpec:
    """A tool call for `sn.reply(tool_calls=[...])`."""
    check_str("name", name, where="sn.call(...)", empty=False)
    check_str("_id", _id, where="sn.call(...)", optional=True)
    return CallSpec(name, arguments, _id)


@dataclass(frozen=True)
class Reply:
    """What a mock answers: text, tool calls, reported usage, and whether to stream."""

    text: str | None = None
    tool_calls: tuple[CallSpec, ...] = ()
    usage: dict[str, int] | None = None
    stream: bool = False
    raw_arguments: dict[int, str] = field(default_factory=dict)
    """Override the JSON text of the i-th call's arguments (to send malformed JSON on purpose)."""


def reply(
    text: str | None = None,
    *,
    tool_calls: Iterable[CallSpec] = (),
    usage: Mapping[str, int] | None = None,
    stream: bool = False,
) -> Reply:
    """Build a mock reply.

    Args:
        text: the assistant text.
        tool_calls: `sn.call(...)` items.
        usage: reported usage, e.g. `{"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40}`.
        stream: answer as server-sent events even if the request did not ask to stream.
    """
    where = "sn.reply(...)"
    check_str("text", text, where=where, optional=True)
    if isinstance(tool_calls, CallSpec):
        tool_calls = [tool_calls]
    calls = check_items(
        "tool_calls",
        tool_calls,
        is_call,
        where=where,
        accepted='a tool call (sn.call("name", ...))',
    )
    if usage is not None and not isinstance(usage, Mapping):
        refuse("usage", usage, "a dict of token counts or None", where=where)
    check_bool("stream", stream, where=where)
    return Reply(text, tuple(calls), dict(usage) if usage else None, stream)


_JSON = {"content-type": "application/json"}


class ChatRequest:
    """A request as the mock handler sees it."""

    api = "chat_completions"
    """The wire format it came in: a served mock (`sn.MockServer`) also takes
    `anthropic_messages` and `responses`, read into the same chat-message shape."""

    def __init__(self, body: dict[str, Any], size: int, caller: Caller | None = None) -> None:
        self.body = body
        """The JSON body exactly as sent."""
        self.size = size
        self.node = caller.node if caller else None
        """The calling node's path (`boss/explore.1`); None for a request from elsewhere
        (a CLI child's own requests to a served mock)."""
        self.agent = caller.agent if caller else None
        """The calling node's agent name."""
        self.turn = caller.turn if caller else None
        """The calling node's turn within its current task, from 1."""

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages") or []

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @cached_property
    def tools(self) -> list[str]:
        """Names of the tools offered."""
        return [t["function"]["name"] for t in self.body.get("tools") or ()]

    @cached_property
    def tool_results(self) -> list[str]:
        """Contents of the `role: "tool"` messages of the current task, in order: those after
        the last user message (a child's task prompt; at the root, the latest message sent), so
        a handler written for one message works for each message of a session."""
        messages = self.messages
        start = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), 0
        )
        return [m.get("content") or "" for m in messages[start:] if m.get("role") == "tool"]

    @cached_property
    def all_tool_results(self) -> list[str]:
        """Contents of every `role: "tool"` message of the request, earlier tasks' too."""
        return [m.get("content") or "" for m in self.messages if m.get("role") == "tool"]

    @property
    def last_user(self) -> str:
        """Text of the last user message."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return message.get("content") or ""
        return ""

    @property
    def last(self) -> dict[str, Any]:
        """The last message of the request."""
        return self.messages[-1] if self.messages else {}

    @property
    def system(self) -> str:
        """Text of the first system message."""
        first = self.messages[0] if self.messages else {}
        return (first.get("content") or "") if first.get("role") == "system" else ""

    def __repr__(self) -> str:
        node = f", node={self.node!r}" if self.node else ""
        return f"ChatRequest(model={self.model!r}{node}, messages={len(self.messages)})"


Handler = Callable[[ChatRequest], Any]

PLAIN = frozenset({str, Reply, type(None)})
"""Types of a handler's answer that are never awaitable (its common answers)."""


def is_response(value: object) -> bool:
    """Whether `value` is an `httpx.Response` (none can exist before httpx is imported)."""
    httpx = sys.modules.get("httpx")
    return httpx is not None and isinstance(value, httpx.Response)


def _transport_for(mock: MockLLM) -> httpx.MockTransport:
    """The transport calling `mock`'s handler (what `sn.record` wraps). It reaches `mock` by a
    weak reference, so that the endpoint and its transport are no reference cycle (freed
    without the cycle collector)."""
    import httpx

    endpoint = weakref.ref(mock)

    async def serve(request: httpx.Request) -> httpx.Response:
        mock = endpoint()
        if mock is None:
            raise RuntimeError("the mock endpoint of this transport was dropped")
        return await mock._serve(request)

    return httpx.MockTransport(serve)


class MockLLM(LLM):
    """An `sn.LLM` whose transport is an `httpx.MockTransport` calling a Python handler.

    Its own requests skip the transport: the handler gets the same JSON bytes and a plain
    answer comes back as the JSON bytes a server would send (`_send`), with no httpx request
    or response made for it. The transport is made (and httpx loaded) when first asked for:
    by `sn.record`, a handler's own `httpx.Response`, or a stream.
    """

    def __init__(self, handler: Handler, *, model: str = MOCK_MODEL, **options: Any) -> None:
        self.handler = handler
        self._ids = itertools.count(1)
        super().__init__("http://mock.local/v1", api_key="", model=model, **options)

    @property
    def _transport(self) -> httpx.AsyncBaseTransport:
        """The transport answering: one set in its place (`sn.record`), or its own."""
        transport = self.__dict__.get("_transport")
        if transport is None:
            transport = self.__dict__["_transport"] = self._own_transport
        return transport

    @_transport.setter
    def _transport(self, transport: httpx.AsyncBaseTransport | None) -> None:
        self.__dict__["_transport"] = transport

    @cached_property
    def _own_transport(self) -> httpx.MockTransport:
        return _transport_for(self)

    @cached_property
    def _headers(self) -> httpx.Headers:  # type: ignore[override]
        """Its requests' headers (an `httpx.AsyncClient`'s: a mock has no key)."""
        return _client_headers()

    def _replaced(self) -> bool:
        """Whether another transport answers in its own's place."""
        transport = self.__dict__.get("_transport")
        return transport is not None and transport is not self.__dict__.get("_own_transport")

    def __getstate__(self) -> dict[str, Any]:
        """An endpoint's state (`LLM.__getstate__`) without its own transport, which a copy
        makes again for itself: the transport's handler is a weak reference."""
        state = super().__getstate__()
        for made in ("_transport", "_own_transport"):
            state.pop(made, None)
        return state

    def _connect(self) -> None:
        """Nothing: no HTTP client, and headers made when a request needs them (`_headers`)."""

    def fresh(self) -> MockLLM:
        """A copy with its own handler: a deep copy, so an `sn.script` starts from its first
        reply again (one that has answered already too). A handler function is not copied (Python shares functions): one that keeps
        state of its own should be made anew by a factory (`llm=lambda: sn.mock_llm(make())`).
        """
        try:
            handler = (
                self.handler.restarted()
                if isinstance(self.handler, _Script)
                else copy.deepcopy(self.handler)
            )
        except Exception as exc:
            raise ConfigurationError(
                f"cannot copy the mock handler {self.label} ({type(exc).__name__}: {exc}); pass "
                "llm= a function that makes a new endpoint, e.g. lambda: sn.mock_llm(make())"
            ) from exc
        fresh = super().fresh()
        assert isinstance(fresh, MockLLM)
        if not self._replaced():  # its own transport calls this endpoint: the copy makes its own
            for made in ("_transport", "_own_transport"):
                fresh.__dict__.pop(made, None)
        fresh.handler = handler
        fresh._ids = itertools.count(1)
        return fresh

    @property
    def label(self) -> str:
        return f"mock:{getattr(self.handler, '__name__', type(self.handler).__name__)}"

    async def _send(
        self, client: httpx.AsyncClient | None, content: bytes
    ) -> httpx.Response | Served:
        """The handler's answer, with no transport between (unless another one was set)."""
        if self._replaced():  # another one set: it answers
            return await super()._send(client, content)
        answer = await self._answer(content)
        if isinstance(answer, bytes):
            return Served(answer)
        answer.request = self._request(content)  # as after the transport
        return answer

    async def _serve(self, request: httpx.Request) -> httpx.Response:
        return _response(await self._answer(await request.aread()))

    async def _answer(self, raw: bytes) -> bytes | httpx.Response:
        """The handler's answer to the request body `raw`: a completion's JSON body, or the
        response to send as it is (the handler's own, a stream, an error)."""
        chat = ChatRequest(parsed_body(raw), len(raw), CALLER.get())
        answer = self.handler(chat)
        if type(answer) not in PLAIN and inspect.isawaitable(answer):
            answer = await answer
        if is_response(answer):
            return answer
        if answer is None or isinstance(answer, str):
            answer = Reply(answer or "")
        if not isinstance(answer, Reply):
            import httpx

            return httpx.Response(
                500,
                json={
                    "error": {
                        "message": f"mock handler returned {type(answer).__name__}; "
                        "return a str, sn.reply(...) or an httpx.Response"
                    }
                },
            )
        return self._reply(answer, chat)

    def respond(self, answer: Reply, chat: ChatRequest) -> httpx.Response:
        """The HTTP response a real server would give for `answer`."""
        return _response(self._reply(answer, chat))

    def _reply(self, answer: Reply, chat: ChatRequest) -> bytes | httpx.Response:
        """A completion's JSON body for `answer`, or the response streaming it."""
        calls = [
            {
                "id": spec.id or f"call_{next(self._ids)}",
                "type": "function",
                "function": {
                    "name": spec.name,
                    "arguments": answer.raw_arguments.get(i, json_text(spec.arguments)),
                },
            }
            for i, spec in enumerate(answer.tool_calls)
        ]
        usage = dict(answer.usage or _estimated_usage(chat.size, answer.text or ""))
        usage.setdefault(
            "total_tokens", usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        )
        if chat.stream or answer.stream:
            import httpx

            return httpx.Response(
                200,
                content=_sse_body(answer.text, calls, usage),
                headers={"content-type": "text/event-stream"},
            )
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if calls:
            message["tool_calls"] = calls
        body = {
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "model": chat.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": usage,
        }
        return json_bytes(body)


def _response(reply: bytes | httpx.Response) -> httpx.Response:
    """A reply as an HTTP response: a completion's JSON body as a server sends it."""
    import httpx

    return httpx.Response(200, content=reply, headers=_JSON) if isinstance(reply, bytes) else reply


def parsed_body(raw: bytes) -> Any:
    """A request's JSON body read by msgspec (twice as fast as `json` on a long history); what
    msgspec refuses (an escaped lone surrogate, NaN, a number out of range, bytes that are not
    UTF-8) is read, or refused, by `json` as before, so a handler sees the same values."""
    try:
        return decode_json(raw)
    except DecodeError:
        return json.loads(raw.decode())


def json_text(value: Any) -> str:
    """JSON as a real server sends it, "é" and "東京" as themselves (UTF-8 on the wire). A lone
    surrogate has no UTF-8 form: a value holding one is written with `\\u` escapes, still valid."""
    text = unescaped_json(value)
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(value)
    return text


def json_bytes(value: Any) -> bytes:
    """`json_text(value)` in UTF-8, as sent."""
    try:
        return unescaped_json(value).encode()
    except UnicodeEncodeError:
        return json.dumps(value).encode()


def _estimated_usage(request_size: int, text: str) -> dict[str, int]:
    prompt, completion = request_size // 4, len(text) // 4 + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _sse_body(text: str | None, calls: list[dict[str, Any]], usage: dict[str, int]) -> bytes:
    def event(delta: dict[str, Any], finish: str | None = None) -> str:
        chunk = {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json_text(chunk)}\n\n"

    parts = [event({"role": "assistant"})]
    for piece in _chunks(text or ""):
        parts.append(event({"content": piece}))
    for index, c in enumerate(calls):
        fn = c["function"]
        parts.append(
            event(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": fn["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        parts.append(
            event({"tool_calls": [{"index": index, "function": {"arguments": fn["arguments"]}}]})
        )
    parts.append(event({}, "tool_calls" if calls else "stop"))
    parts.append(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n")
    parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


def _chunks(text: str) -> list[str]:
    """Split text into word-sized pieces, keeping the spaces, as a real stream would."""
    pieces, start = [], 0
    for i, ch in enumerate(text):
        if ch == " " and i > start:
            pieces.append(text[start:i])
            start = i
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def mock_llm(
    handler: Handler | Mapping[str, Handler], *, model: str = MOCK_MODEL, **options: Any
) -> MockLLM:
    """An inline mock endpoint: `handler(request: sn.ChatRequest)` returns the reply.

    The handler (sync or async) returns a `str`, an `sn.reply(...)` or an `httpx.Response`.
    A dict routes by the calling node's path: `{"boss": h1, "boss/*/explore.*": h2}` (globs
    over node paths, `*` within a segment, `**` across; the first match wins; a path no
    pattern matches is an error naming it and the patterns). Every exchange is recorded in
    `.exchanges`.
    """
    if isinstance(handler, Mapping):
        handler = Routes(handler)
    check_callable(
        "handler", handler, where="sn.mock_llm(...)", accepted=HANDLER + " or a dict of them"
    )
    check_str("model", model, where="sn.mock_llm(...)")
    return MockLLM(handler, model=model, **options)


class Routes:
    """A handler per node-path glob (`sn.mock_llm({...})`): the first pattern matching the
    calling node's path answers."""

    __name__ = "routes"

    def __init__(self, routes: Mapping[str, Handler]) -> None:
        for pattern, handler in routes.items():
            if not isinstance(pattern, str) or not callable(handler):
                raise ConfigurationError(
                    "sn.mock_llm({...}) maps node-path globs (str) to handlers (callables), not "
                    f"{type(pattern).__name__} to {type(handler).__name__}"
                )
        if not routes:
            raise ConfigurationError("sn.mock_llm({}) has no routes: give it a pattern or two")
        self.routes = dict(routes)

    def __call__(self, request: ChatRequest) -> Any:
        for pattern, handler in self.routes.items():
            if request.node is not None and path_matches(pattern, request.node):
                return handler(request)
        patterns = ", ".join(map(repr, self.routes))
        who = f"node {request.node!r}" if request.node else "a request from no node (served?)"
        raise ConfigurationError(
            f"sn.mock_llm routes have no handler for {who}; the patterns: {patterns} (add one, "
            "e.g. '**' last for every other node)"
        )


class _Script:
    """Answers with the given replies in order (per model name, if given a dict)."""

    __name__ = "script"

    def __init__(self, replies: tuple[Any, ...] | Mapping[str, Iterable[Any]]) -> None:
        if isinstance(replies, Mapping):
            self.queues = {name: list(items) for name, items in replies.items()}
        else:
            self.queues = {"": list(replies)}
        self.positions = dict.fromkeys(self.queues, 0)

    def restarted(self) -> _Script:
        """A copy that answers from the first reply again, however far this one got."""
        again = copy.deepcopy(self)
        again.positions = dict.fromkeys(again.queues, 0)
        return again

    def __call__(self, request: ChatRequest) -> Any:
        key = request.model if request.model in self.queues else ""
        if key not in self.queues:
            return _script_error(
                f"sn.script has no replies for model {request.model!r} "
                f"(it has: {', '.join(sorted(self.queues))})"
            )
        queue, position = self.queues[key], self.positions[key]
        if position >= len(queue):
            return _script_error(
                f"sn.script ran out of replies after {len(queue)}"
                f"{f' for model {key!r}' if key else ''}; add more replies to the script"
            )
        self.positions[key] = position + 1
        answer = queue[position]
        return answer(request) if callable(answer) else answer


def _script_error(message: str) -> httpx.Response:
    import httpx

    return httpx.Response(400, json={"error": {"message": message, "type": "script_exhausted"}})


def script(*replies: Any, **options: Any) -> MockLLM:
    """A mock endpoint answering with `replies` in order.

    Each reply is a `str`, an `sn.reply(...)`, an `httpx.Response` or a callable taking the request.
    Pass a single dict `{model_name: [replies...]}` to script several models.
    """
    if len(replies) == 1 and isinstance(replies[0], Mapping):
        for model, items in replies[0].items():
            check_str("model names", model, where="sn.script({...})")
            check_items(
                f"replies[{model!r}]", items, is_reply, where="sn.script({...})", accepted=REPLY
            )
        return MockLLM(_Script(replies[0]), **options)
    check_items("replies", replies, is_reply, where="sn.script(...)", accepted=REPLY)
    return MockLLM(_Script(replies), **options)


REPLY = "a reply (a str, sn.reply(...), an httpx.Response or a function of the request)"
HANDLER = "a handler (a function of the sn.ChatRequest)"


def is_reply(value: object) -> bool:
    """Whether `value` is something `sn.script` can answer with."""
    return isinstance(value, str | Reply) or is_response(value) or callable(value)


def is_call(value: object) -> bool:
    """Whether `value` is a tool call made by `sn.call`."""
    return isinstance(value, CallSpec)
