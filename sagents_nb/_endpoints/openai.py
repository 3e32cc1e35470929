"""The OpenAI-compatible chat-completions endpoint, on httpx: requests, replies, streaming, retries."""

from __future__ import annotations

import asyncio
import copy as _copy
import json
import os
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .._base.errors import ConfigurationError, EndpointError, MalformedReply, TransportError
from .._base.messages import Message, ToolCall, Usage

# httpx is imported where a request is made, not at import: `import httpx` also loads its CLI
# (click, rich, pygments when installed), which `import sagents_nb` need not pay for.
if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_MODEL = "gpt-4o-mini"


@dataclass
class Completion:
    """One parsed reply: the assistant message and what the endpoint said about it."""

    message: Message
    usage: Usage | None = None
    finish_reason: str | None = None
    truncated: bool = False
    """A stream ended before `[DONE]`; `message` holds the partial text."""
    malformed_chunks: int = 0


@dataclass
class Exchange:
    """One request/response pair, as kept for the wire view (no secrets)."""

    url: str
    request: dict[str, Any]
    headers: dict[str, str]
    status: int | None = None
    response: Any = None
    duration: float = 0.0
    error: str | None = None
    ts: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {
            "url": self.url,
            "request": self.request,
            "headers": self.headers,
            "status": self.status,
            "response": self.response,
            "duration": self.duration,
            "error": self.error,
            "ts": self.ts,
        }


@dataclass
class RetryNotice:
    """Passed to the retry callback before a transient failure is retried."""

    attempt: int
    status: int | None
    error: str
    delay: float


class LLM:
    """An OpenAI-compatible chat-completions endpoint.

    Args:
        base_url: e.g. `https://api.openai.com/v1`; defaults to `OPENAI_BASE_URL`.
        api_key: defaults to `OPENAI_API_KEY`; never shown in reprs, events or cassettes.
        model: the default model name for agents that name none.
        transport: an httpx transport (e.g. `httpx.MockTransport`) instead of the network.
        timeout: seconds for one request.
        retries: how many times a transient failure (429, 5xx, connect error, timeout) is retried.
        backoff: the first retry's delay in seconds; doubles each time, with jitter.
        max_retry_time: total seconds retries may add before the error is raised.
        keep_exchanges: how many recent exchanges the wire log keeps.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        model: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        max_retry_time: float = 30.0,
        keep_exchanges: int = 2000,
    ) -> None:
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not base_url and transport is None:
            if not api_key:
                raise ConfigurationError(
                    "no model endpoint: pass llm=sn.mock_llm(handler) (or sn.script(...)) to run "
                    "offline, or set OPENAI_BASE_URL / OPENAI_API_KEY, or pass sn.LLM(base_url=..., "
                    "api_key=...)"
                )
            base_url = "https://api.openai.com/v1"
        self.base_url = (base_url or "http://mock.invalid/v1").rstrip("/")
        self._api_key = api_key or ""
        self.model = model or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_time = max_retry_time
        self.exchanges: deque[Exchange] = deque(maxlen=keep_exchanges)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._url = self.base_url + "/chat/completions"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    @cached_property
    def _http_url(self) -> httpx.URL:
        """`_url` parsed once: httpx parses a str URL again on every request."""
        import httpx

        return httpx.URL(self._url)

    @property
    def label(self) -> str:
        """A short name for views and events."""
        return self.base_url

    def redact(self, text: str) -> str:
        """`text` with the API key (if any) replaced by `***`."""
        return text.replace(self._api_key, "***") if len(self._api_key) >= 4 else text

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            import httpx

            headers = {"Content-Type": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._client = httpx.AsyncClient(
                transport=self._transport, timeout=self.timeout, headers=headers
            )
            self._client_loop = loop
        return self._client

    def fresh(self) -> LLM:
        """A copy that answers as this endpoint did before its first request: its own HTTP
        client and wire log, and (for mocks and cassettes) its own position in the script.

        `sn.compare` gives each variant one, so every variant meets the same model behaviour.
        """
        copy = _copy.copy(self)
        copy._client = copy._client_loop = None
        copy.exchanges = deque(maxlen=self.exchanges.maxlen)
        fresh_transport = getattr(self._transport, "fresh", None)
        if fresh_transport is not None:
            copy._transport = fresh_transport()
        return copy

    async def aclose(self) -> None:
        """Close the HTTP client (a new one is made on next use)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def complete(
        self,
        body: dict[str, Any],
        *,
        on_delta: Callable[[str], None] | None = None,
        on_retry: Callable[[RetryNotice], None] | None = None,
    ) -> Completion:
        """Send one chat-completions request (retrying transient failures) and parse the reply."""
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                return await self._attempt(body, on_delta)
            except (EndpointError, TransportError) as exc:
                status = getattr(exc, "status", None)
                transient = status is None or status in RETRY_STATUSES
                delay = self._retry_delay(attempt, getattr(exc, "retry_after", None))
                spent = time.monotonic() - started
                if not transient or attempt >= self.retries or spent + delay > self.max_retry_time:
                    raise
                attempt += 1
                if on_retry is not None:
                    on_retry(RetryNotice(attempt, status, str(exc), delay))
                await asyncio.sleep(delay)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, retry_after)
        base = self.backoff * (2**attempt)
        return base / 2 + random.random() * base / 2

    async def _send(self, client: httpx.AsyncClient, content: bytes) -> httpx.Response:
        """POST `content`; the response is returned unread (so a stream can be followed)."""
        if self._transport is None:
            request = client.build_request("POST", self._http_url, content=content)
            return await client.send(request, stream=True)
        # An explicit transport (a mock, a recorder) is called directly: the client's cookie,
        # redirect and auth machinery has nothing to do there and costs a third of a mock turn.
        # The request carries the client's headers and timeout, as `build_request` would make it.
        import httpx

        request = httpx.Request(
            "POST",
            self._http_url,
            content=content,
            headers=client.headers,
            extensions={"timeout": client.timeout.as_dict()},
        )
        response = await self._transport.handle_async_request(request)
        response.request = request
        return response

    async def _attempt(
        self, body: dict[str, Any], on_delta: Callable[[str], None] | None
    ) -> Completion:
        import httpx

        client = self._http()
        headers = {"Authorization": "Bearer ***"} if self._api_key else {}
        exchange = Exchange(url=self._url, request=body, headers=headers)
        self.exchanges.append(exchange)
        started = time.perf_counter()
        try:
            content = json.dumps(body, ensure_ascii=False).encode()
            response = await self._send(client, content)
            try:
                exchange.status = response.status_code
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_error(response)
                if body.get("stream"):
                    completion, chunks = await _read_stream(response, on_delta)
                    exchange.response = {"chunks": chunks, "truncated": completion.truncated}
                    return completion
                await response.aread()
                data = _json_body(response, self.base_url)
                exchange.response = data
                return parse_completion(data, self.base_url)
            finally:
                await response.aclose()
        except httpx.TimeoutException as exc:
            exchange.error = f"timeout: {exc}"
            raise TransportError(
                f"endpoint {self.base_url} did not answer within {self.timeout} s "
                "(raise sn.LLM(timeout=...) or check the server)",
                base_url=self.base_url,
            ) from None
        except httpx.TransportError as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise TransportError(
                f"could not reach {self.base_url}: {self.redact(str(exc)) or type(exc).__name__} "
                "(check base_url and that the server is running)",
                base_url=self.base_url,
            ) from None
        except (EndpointError, MalformedReply) as exc:
            exchange.error = str(exc)
            raise
        finally:
            exchange.duration = time.perf_counter() - started

    def _status_error(self, response: httpx.Response) -> EndpointError:
        excerpt = self.redact(response.text[:300])
        retry_after = response.headers.get("retry-after")
        try:
            after = float(retry_after) if retry_after is not None else None
        except ValueError:
            after = None
        return EndpointError(
            response.status_code, excerpt, base_url=self.base_url, retry_after=after
        )


def _json_body(response: httpx.Response, base_url: str) -> dict[str, Any]:
    try:
        data = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        kind = response.headers.get("content-type", "unknown content type")
        raise MalformedReply(
            f"endpoint {base_url} answered with {kind}, not JSON: {response.text[:120]!r} "
            "(is base_url the API root, e.g. .../v1?)",
            base_url=base_url,
        ) from None
    if not isinstance(data, dict):
        raise MalformedReply(
            f"endpoint {base_url} answered a JSON {type(data).__name__}, "
            "not a chat completion object",
            base_url=base_url,
        )
    return data


def parse_completion(data: dict[str, Any], base_url: str = "") -> Completion:
    """Parse a (non-streamed) chat-completions JSON object."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedReply(
            f"endpoint {base_url} answered without choices: {json.dumps(data)[:160]}",
            base_url=base_url,
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedReply(
            f"endpoint {base_url} answered a choice without a message: {json.dumps(choice)[:160]}",
            base_url=base_url,
        )
    calls = []
    for i, raw in enumerate(message.get("tool_calls") or ()):
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise MalformedReply(
                f"endpoint {base_url} sent a tool call without a function name: {raw!r:.160}",
                base_url=base_url,
            )
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{i}"), name=function["name"], arguments=arguments
            )
        )
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = _content_text(content)
    return Completion(
        message=Message(role="assistant", content=content, tool_calls=tuple(calls) or None),
        usage=_usage(data.get("usage")),
        finish_reason=choice.get("finish_reason"),
    )


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    try:
        prompt = int(raw.get("prompt_tokens") or 0)
        completion = int(raw.get("completion_tokens") or 0)
        total = int(raw.get("total_tokens") or prompt + completion)
    except (TypeError, ValueError):
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


class StreamAssembler:
    """Folds server-sent-event lines of a streamed chat completion into one `Completion`."""

    def __init__(self, on_delta: Callable[[str], None] | None = None) -> None:
        self.on_delta = on_delta
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.done = False
        self.malformed = 0
        self.chunks: list[Any] = []

    def feed_line(self, line: str) -> None:
        """Take one line of the SSE body."""
        if self.done or not line.startswith("data:"):
            return
        payload = line[5:].strip()
        if payload == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except (json.JSONDecodeError, RecursionError):
            self.malformed += 1
            return
        if not isinstance(chunk, dict):
            self.malformed += 1
            return
        self.chunks.append(chunk)
        self.usage = _usage(chunk.get("usage")) or self.usage
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict):
                self._feed_choice(choice)

    def _feed_choice(self, choice: dict[str, Any]) -> None:
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        piece = delta.get("content")
        if isinstance(piece, str) and piece:
            self.text.append(piece)
            if self.on_delta is not None:
                self.on_delta(piece)
        for raw in delta.get("tool_calls") or ():
            if not isinstance(raw, dict):
                self.malformed += 1
                continue
            index = raw.get("index", len(self.calls))
            slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = raw.get("id") or slot["id"]
            function = raw.get("function") or {}
            if isinstance(function, dict):
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""

    def completion(self) -> Completion:
        """The assembled reply; `truncated` when no `[DONE]` arrived."""
        calls = tuple(
            ToolCall(id=slot["id"] or f"call_{i}", name=slot["name"], arguments=slot["arguments"])
            for i, slot in sorted(self.calls.items())
            if slot["name"]
        )
        text = "".join(self.text)
        truncated = not self.done
        return Completion(
            message=Message(
                role="assistant",
                content=text if text or not calls else None,
                tool_calls=None if truncated or not calls else calls,
                meta={"truncated": True} if truncated else {},
            ),
            usage=self.usage,
            finish_reason=self.finish_reason,
            truncated=truncated,
            malformed_chunks=self.malformed,
        )


async def _read_stream(
    response: httpx.Response, on_delta: Callable[[str], None] | None
) -> tuple[Completion, list[Any]]:
    import httpx

    assembler = StreamAssembler(on_delta)
    try:
        async for line in response.aiter_lines():
            assembler.feed_line(line)
            if assembler.done:
                break
    except httpx.TransportError:
        pass  # a cut stream keeps its partial text; `truncated` reports it
    completion = assembler.completion()
    if not assembler.chunks and assembler.malformed:
        raise MalformedReply(
            f"the stream carried {assembler.malformed} malformed chunk(s) and nothing usable",
            base_url=str(response.url),
        )
    return completion, assembler.chunks
