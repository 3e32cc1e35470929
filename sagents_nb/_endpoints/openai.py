"""The OpenAI-compatible chat-completions endpoint, on httpx: requests, replies, streaming, retries."""

from __future__ import annotations

import asyncio
import copy as _copy
import json
import math
import os
import random
import re
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from msgspec.json import encode as encode_json

from .._base.checks import check_int, check_number, check_str, refuse
from .._base.errors import (
    ConfigurationError,
    EndpointError,
    LLMError,
    MalformedReply,
    TransportError,
)
from .._base.messages import Message, ToolCall, Usage
from .deadline import Deadlines
from .foreign_formats import foreign_format, foreign_reply
from .secrets import Redactor, checked_key, shown_url

# httpx is imported where a request is made, not at import: `import httpx` also loads its CLI
# (click, rich, pygments when installed), which `import sagents_nb` need not pay for.
if TYPE_CHECKING:
    import httpx

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_MODEL = "gpt-4o-mini"
WHERE = "sn.LLM(...)"
EXCERPT = 300
"""Characters of a bad reply quoted in an error."""
STREAM_HEAD, STREAM_TAIL = 32, 8
"""Parsed chunks of a streamed reply the wire log keeps: the first ones and the last ones."""


@dataclass
class Completion:
    """One parsed reply: the assistant message and what the endpoint said about it."""

    message: Message
    usage: Usage | None = None
    finish_reason: str | None = None
    truncated: bool = False
    """A stream ended before `[DONE]`; `message` holds the partial text."""
    cut: str = "the stream ended before [DONE]"
    """Why a truncated stream ended."""
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


KEPT_TEXT, KEPT_CHARS = 1000, 64_000
"""Characters the wire log keeps of one long string (its start and end), and of a whole body."""


def kept(value: Any) -> Any:
    """A large JSON body cut down the way the wire log keeps a long stream: of a long array or
    object its first `STREAM_HEAD` and last `STREAM_TAIL` items, of a long string its start and
    end, and a note of what was left out; at most about `KEPT_CHARS` characters in all."""
    budget = [KEPT_CHARS]

    def cut(value: Any, depth: int) -> Any:
        if budget[0] <= 0 or depth > 32:
            return "…"
        if isinstance(value, str):
            if len(value) > KEPT_TEXT:
                end = KEPT_TEXT // 5
                out = len(value) - KEPT_TEXT
                value = f"{value[: KEPT_TEXT - end]}… [{out} characters left out] …{value[-end:]}"
            budget[0] -= len(value)
            return value
        if isinstance(value, list):
            if len(value) <= STREAM_HEAD + STREAM_TAIL:
                return [cut(v, depth + 1) for v in value]
            note = f"… [{len(value) - STREAM_HEAD - STREAM_TAIL} items left out] …"
            return [
                *(cut(v, depth + 1) for v in value[:STREAM_HEAD]),
                note,
                *(cut(v, depth + 1) for v in value[-STREAM_TAIL:]),
            ]
        if isinstance(value, dict):
            items = list(value.items())
            if len(items) > STREAM_HEAD + STREAM_TAIL:
                marker = ("…", f"[{len(items) - STREAM_HEAD - STREAM_TAIL} keys left out]")
                items = [*items[:STREAM_HEAD], marker, *items[-STREAM_TAIL:]]
            budget[0] -= sum(len(k) for k, _ in items)
            return {k: cut(v, depth + 1) for k, v in items}
        return value

    return cut(value, 0)


class Served:
    """A 200 JSON reply made in this process (`sn.mock_llm`'s plain answers): what `_attempt`
    reads of an `httpx.Response`, without httpx's request, response and stream objects."""

    __slots__ = ("content",)
    status_code = 200
    headers: Mapping[str, str] = MappingProxyType({"content-type": "application/json"})

    def __init__(self, content: bytes) -> None:
        self.content = content

    @property
    def text(self) -> str:
        """The body decoded as `httpx.Response.text` decodes a JSON reply without a charset."""
        return self.content.decode("utf-8", "replace")

    async def aread(self) -> bytes:
        return self.content

    async def aclose(self) -> None:
        """Nothing to release: the body is in memory."""


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
        base_url: e.g. `https://api.openai.com/v1`; defaults to `OPENAI_BASE_URL`. A key in its
            userinfo (`http://user:KEY@host/v1`) is used but never shown: `.base_url`, reprs,
            labels, errors and the wire log read `http://***@host/v1`.
        api_key: defaults to `OPENAI_API_KEY`; never shown in reprs, events or cassettes. A key
            with whitespace or control characters (a newline pasted from a file) is refused.
        model: the default model name for agents that name none.
        transport: an httpx transport (e.g. `httpx.MockTransport`) instead of the network.
        timeout: the most seconds one attempt may take in all, from connecting to the last byte
            of the reply, a stream included: a server that keeps a stream open with keep-alive
            comments, or trickles bytes, is cut off here. Each retry has its own.
        read_timeout: the longest silence: seconds to connect, to send, or to wait for the next
            bytes of the reply (never more than `timeout`).
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
        timeout: float = 300.0,
        read_timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        max_retry_time: float = 30.0,
        keep_exchanges: int = 2000,
    ) -> None:
        check_str("base_url", base_url, where=WHERE, optional=True)
        check_str("api_key", api_key, where=WHERE, optional=True, secret=True)
        check_str("model", model, where=WHERE, optional=True)
        if transport is not None:
            import httpx  # a transport given: httpx is loaded already

            if not isinstance(transport, httpx.AsyncBaseTransport):
                refuse("transport", transport, "an httpx.AsyncBaseTransport or None", where=WHERE)
        check_number("timeout", timeout, where=WHERE, positive=True)
        check_number("read_timeout", read_timeout, where=WHERE, positive=True)
        check_int("retries", retries, where=WHERE, minimum=0)
        check_number("backoff", backoff, where=WHERE)
        check_number("max_retry_time", max_retry_time, where=WHERE)
        check_int("keep_exchanges", keep_exchanges, where=WHERE, minimum=0)
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if api_key is not None:
            checked_key(api_key, "sn.LLM(api_key=...)")
        else:
            api_key = checked_key(os.environ.get("OPENAI_API_KEY") or "", "OPENAI_API_KEY")
        if not base_url and transport is None:
            if not api_key:
                raise ConfigurationError(
                    "no model endpoint: pass llm=sn.mock_llm(handler) (or sn.script(...)) to run "
                    "offline, or set OPENAI_BASE_URL / OPENAI_API_KEY, or pass sn.LLM(base_url=..., "
                    "api_key=...)"
                )
            base_url = "https://api.openai.com/v1"
        self._root = (base_url or "http://mock.invalid/v1").rstrip("/")
        # what is shown (reprs, labels, errors, the wire log): a key in the URL's userinfo masked
        self.base_url, in_url = shown_url(self._root)
        self._api_key = api_key or ""
        self._redact = Redactor(self._api_key, *in_url)
        self.model = model or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
        self.timeout = timeout
        self.read_timeout = read_timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_time = max_retry_time
        self.exchanges: deque[Exchange] = deque(maxlen=keep_exchanges)
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        """Made at first use when there is no transport of this endpoint's own (`_open`)."""
        self._client_loop: asyncio.AbstractEventLoop | None = None
        """The loop the endpoint was opened on (`_open`); None: not open (`aclose`)."""
        self._deadlines: Deadlines
        self._headers: httpx.Headers
        """With a transport of its own: its requests' headers (an `httpx.AsyncClient`'s)."""
        self._url = self._root + "/chat/completions"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def _http_url(self) -> httpx.URL:
        """`_url` parsed (httpx parses a str URL again on every request): once a process, but
        for a URL with userinfo (a key there is kept by its endpoint alone)."""
        if "@" in self._url:
            import httpx

            return httpx.URL(self._url)
        return _parsed_url(self._url)

    @property
    def label(self) -> str:
        """A short name for views and events."""
        return self.base_url

    def redact(self, text: str) -> str:
        """`text` with the API key (if any) replaced by `***`."""
        return self._redact(text)

    def _open(self) -> httpx.AsyncClient | None:
        """Ready for requests on the running loop (again on another loop, or after `aclose`):
        its deadlines there and its headers, and an HTTP client unless it has a transport of
        its own, which `_send` calls directly. The client, or None."""
        loop = asyncio.get_running_loop()
        if self._client_loop is not loop:
            self._connect()
            self._client_loop = loop
            self._deadlines = Deadlines(loop)
        return self._client

    def _connect(self) -> None:
        """Its HTTP client, or (with a transport of its own) its requests' headers."""
        import httpx

        own = {"Content-Type": "application/json"}
        if self._api_key:
            own["Authorization"] = f"Bearer {self._api_key}"
        if self._transport is None:
            timeout = min(self.read_timeout, self.timeout)
            self._client = httpx.AsyncClient(timeout=timeout, headers=own)
        elif self._api_key:
            self._headers = _client_headers().copy()
            self._headers.update(own)
        else:
            self._headers = _client_headers()  # read only (a request copies it)

    def __getstate__(self) -> dict[str, Any]:
        """Its state without what its use made (its HTTP client, the loop it was opened on and
        that loop's timers, its headers): a copy, deep or pickled (for Ray), opens its own."""
        state = dict(self.__dict__)
        state["_client"] = state["_client_loop"] = None
        for used in ("_deadlines", "_headers"):
            state.pop(used, None)
        return state

    def fresh(self) -> LLM:
        """A copy that answers as this endpoint did before its first request: its own HTTP
        client and wire log, and (for mocks and cassettes) its own position in the script.

        `sn.compare` gives each variant one, so every variant meets the same model behaviour.
        """
        copy = _copy.copy(self)  # without what its use made (`__getstate__`)
        copy.exchanges = deque(maxlen=self.exchanges.maxlen)
        # read from the instance: a mock makes its own transport only when it is asked for
        fresh_transport = getattr(self.__dict__.get("_transport"), "fresh", None)
        if fresh_transport is not None:
            copy._transport = fresh_transport()
        return copy

    async def aclose(self) -> None:
        """Close the HTTP client, or the endpoint's own transport, if used since the last
        close (the endpoint opens again on next use)."""
        if self._client_loop is None:
            return
        self._client_loop = None
        self._deadlines.close()
        # read from the instance: a mock's own transport, never asked for, was never made
        transport = self.__dict__.get("_transport")
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        elif transport is not None:
            await transport.aclose()

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

    async def _send(
        self, client: httpx.AsyncClient | None, content: bytes
    ) -> httpx.Response | Served:
        """POST `content`; the response is returned unread (so a stream can be followed)."""
        if client is not None:
            request = client.build_request("POST", self._http_url, content=content)
            return await client.send(request, stream=True)
        # An explicit transport (a mock, a recorder) is called directly: a client's cookie,
        # redirect and auth machinery has nothing to do there and costs a third of a mock turn.
        assert self._transport is not None, "an endpoint without a transport has a client"
        request = self._request(content)
        response = await self._transport.handle_async_request(request)
        response.request = request
        return response

    def _request(self, content: bytes) -> httpx.Request:
        """The request for an endpoint's own transport: a client's headers and timeout, as
        `build_request` would make it."""
        import httpx

        return httpx.Request(
            "POST",
            self._http_url,
            content=content,
            headers=self._headers,
            extensions={"timeout": _timeout(min(self.read_timeout, self.timeout))},
        )

    def _untouched(self) -> bool:
        """Whether a body comes here from the runtime untouched: no override of `complete` or
        `_attempt` stood between (one may change a message's dict in place, which its written
        parts would not show)."""
        kind = type(self)
        return kind.complete is LLM.complete and kind._attempt is LLM._attempt

    async def _attempt(
        self, body: dict[str, Any], on_delta: Callable[[str], None] | None
    ) -> Completion:
        client = self._open()
        headers = {"Authorization": "Bearer ***"} if self._api_key else {}
        exchange = Exchange(url=self.base_url + "/chat/completions", request=body, headers=headers)
        self.exchanges.append(exchange)
        started = time.perf_counter()
        # httpx bounds each read; this deadline bounds the whole attempt, stream included.
        deadline = self._deadlines.loop.time() + self.timeout
        response: httpx.Response | Served | None = None
        assembler: StreamAssembler | None = None
        try:
            content = joined_json(body, self._untouched())
            try:
                async with self._deadlines.at(deadline):
                    response = await self._send(client, content)
                    exchange.status = response.status_code
                    # servers may answer a stream request with one JSON completion
                    if (
                        body.get("stream")
                        and response.status_code < 400
                        and "json" not in response.headers.get("content-type", "")
                    ):
                        assert not isinstance(response, Served), "a Served reply is JSON"
                        assembler = StreamAssembler(
                            on_delta, base_url=self.base_url, redactor=self._redact
                        )
                        await _fold_stream(response, assembler)
                    else:
                        await response.aread()
            except TimeoutError:
                if assembler is None or not assembler.has_content:
                    raise
                assembler.cut = (
                    f"the stream did not finish within {self.timeout} s (sn.LLM(timeout=...))"
                )
            assert response is not None  # a stream had begun, or the timeout was raised
            if response.status_code >= 400:
                raise self._status_error(response)
            if assembler is not None:
                completion, exchange.response = _stream_result(assembler)
                return completion
            data = self._json_body(response)
            exchange.response = data
            completion = parse_completion(data, self.base_url)
            if on_delta is not None and completion.message.content:
                on_delta(completion.message.content)
            return completion
        except TimeoutError:
            exchange.error = f"no complete answer within {self.timeout} s"
            raise TransportError(
                f"endpoint {self.base_url} did not finish answering within {self.timeout} s "
                "(sn.LLM(timeout=...) bounds a whole request, a stream included; raise it or "
                "check the server)",
                base_url=self.base_url,
            ) from None
        except _httpx().TimeoutException as exc:  # httpx is loaded when one was raised
            exchange.error = self._redact(f"timeout: {type(exc).__name__}")
            raise TransportError(
                f"endpoint {self.base_url} went silent for {min(self.read_timeout, self.timeout)} s"
                f" ({type(exc).__name__}; raise sn.LLM(read_timeout=...) or check the server)",
                base_url=self.base_url,
            ) from None
        except _httpx().TransportError as exc:
            reason = self._redact(str(exc)) or type(exc).__name__
            exchange.error = f"{type(exc).__name__}: {reason}"
            raise TransportError(
                f"could not reach {self.base_url}: {reason} "
                "(check base_url and that the server is running)",
                base_url=self.base_url,
            ) from None
        except LLMError as exc:
            # the message is redacted whole, after formatting; its excerpt was redacted before
            # it was cut (see `Redactor`)
            exc.args = (self._redact(str(exc)),)
            exchange.error = str(exc)
            raise
        finally:
            if response is not None:
                await response.aclose()
            exchange.duration = time.perf_counter() - started

    def _json_body(self, response: httpx.Response | Served) -> dict[str, Any]:
        # The body is redacted before it is parsed: every excerpt, field and message made from it
        # is then free of the key, wherever it is cut.
        raw: str | bytes = self._redact(response.text) if self._redact.forms else response.content
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            kind = response.headers.get("content-type", "unknown content type")
            text = self._redact.excerpt(response.text, 120)
            raise MalformedReply(
                f"endpoint {self.base_url} answered with {kind}, not JSON: {text!r} "
                "(is base_url the API root, e.g. .../v1?)",
                base_url=self.base_url,
            ) from None
        if not isinstance(data, dict):
            raise MalformedReply(
                f"endpoint {self.base_url} answered a JSON {type(data).__name__}, "
                "not a chat completion object",
                base_url=self.base_url,
            )
        return data

    def _status_error(self, response: httpx.Response | Served) -> EndpointError:
        return EndpointError(
            response.status_code,
            self._redact.excerpt(response.text, EXCERPT),
            base_url=self.base_url,
            retry_after=retry_after_seconds(response.headers.get("retry-after"), time.time()),
        )


async def _fold_stream(response: httpx.Response, assembler: StreamAssembler) -> None:
    import httpx

    from .sse import SSEDecoder  # only a stream needs it: loaded with the first one

    decoder = SSEDecoder()
    try:
        async for data in response.aiter_bytes():
            for event in decoder.feed(data):
                assembler.feed(event.data)
                if assembler.done:
                    return
    except httpx.TransportError:
        pass  # a cut stream keeps its partial text; `truncated` reports it


def _stream_result(assembler: StreamAssembler) -> tuple[Completion, dict[str, Any]]:
    completion = assembler.completion()
    if not assembler.chunk_count and assembler.malformed:
        raise MalformedReply(
            f"the stream carried {assembler.malformed} malformed chunk(s) and nothing usable",
            base_url=assembler.base_url,
        )
    return completion, assembler.wire_summary(completion.truncated)


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """Seconds to wait from a `Retry-After` header (a number of seconds or an HTTP date), or None.

    `now` is the wall clock (`time.time()`) the date is measured from.
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # only a date needs it; not worth loading with the package

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # "-0000": UTC, says RFC 5322
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - now
    return max(0.0, seconds) if math.isfinite(seconds) else None


NO_KEY = Redactor("")


def _same(value: Any) -> Any:
    return value


def _excerpt(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def parse_completion(data: dict[str, Any], base_url: str = "") -> Completion:
    """Parse a (non-streamed) chat-completions JSON object."""
    choices = data.get("choices")
    if choices is None and (found := foreign_format(data)):
        raise foreign_reply(base_url, found, "its reply")
    if not isinstance(choices, list) or not choices:
        raise MalformedReply(
            f"endpoint {base_url} answered without choices: {_excerpt(data)}", base_url=base_url
        )
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedReply(
            f"endpoint {base_url} answered a choice without a message: {_excerpt(choice)}",
            base_url=base_url,
        )
    finish_reason = choice.get("finish_reason")
    raw_calls = message.get("tool_calls")
    if finish_reason is not None and not isinstance(finish_reason, str):
        wrong = f"a finish_reason that is {_type_name(finish_reason)}, not a string"
    elif raw_calls is not None and not isinstance(raw_calls, list):
        wrong = f"tool_calls that are {_type_name(raw_calls)}, not a list"
    else:
        wrong = ""
    if wrong:
        raise MalformedReply(
            f"endpoint {base_url} answered {wrong}: {_excerpt(choice)}", base_url=base_url
        )
    calls = []
    for i, raw in enumerate(raw_calls or ()):
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise MalformedReply(
                f"endpoint {base_url} sent a tool call without a function name: {_excerpt(raw)}",
                base_url=base_url,
            )
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{i}"),
                name=function["name"],
                arguments=arguments,
            )
        )
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = _content_text(content)
    return Completion(
        message=Message(role="assistant", content=content, tool_calls=tuple(calls) or None),
        usage=_usage(data.get("usage")),
        finish_reason=finish_reason,
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
    """Folds the events of a streamed chat completion (their `data`) into one `Completion`.

    A chunk that is not JSON is counted and skipped; one that is JSON of the wrong shape (`choices`
    not a list, a tool-call `index` not a number...) is a `MalformedReply`: folding it would make
    a wrong reply.
    """

    def __init__(
        self,
        on_delta: Callable[[str], None] | None = None,
        *,
        base_url: str = "",
        redactor: Redactor = NO_KEY,
    ) -> None:
        self.on_delta = on_delta
        self.base_url = base_url
        self.redactor = redactor
        self.held = ""
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.done = False
        self.malformed = 0
        self.cut = Completion.cut
        self.chunk_count = 0
        self.head: list[Any] = []
        self.tail: deque[Any] = deque(maxlen=STREAM_TAIL)

    @property
    def has_content(self) -> bool:
        """Some text or a tool call has arrived."""
        return bool(self.text or self.calls)

    def feed(self, data: str) -> None:
        """Take the data of one event."""
        if self.done:
            return
        payload = self.redactor(data).strip()
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
        if not self.chunk_count and (found := foreign_format(chunk)):
            raise foreign_reply(self.base_url, found, "its first streamed event")
        self.chunk_count += 1
        if len(self.head) < STREAM_HEAD:
            self.head.append(chunk)
        else:
            self.tail.append(chunk)
        self.usage = _usage(chunk.get("usage")) or self.usage
        choices = chunk.get("choices")
        if choices is not None and not isinstance(choices, list):
            self._wrong(f"choices is {_type_name(choices)}, not a list", chunk)
        for choice in choices or ():
            if not isinstance(choice, dict):
                self._wrong(f"a choice is {_type_name(choice)}, not an object", chunk)
            self._feed_choice(choice, chunk)

    def _wrong(self, what: str, chunk: Any) -> None:
        raise MalformedReply(
            f"endpoint {self.base_url} streamed a chunk whose {what}: {_excerpt(chunk)}",
            base_url=self.base_url,
        )

    def _feed_choice(self, choice: dict[str, Any], chunk: Any) -> None:
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None and not isinstance(finish_reason, str):
            self._wrong(f"finish_reason is {_type_name(finish_reason)}, not a string", chunk)
        if finish_reason:
            self.finish_reason = finish_reason
        delta = choice.get("delta")
        if delta is None:
            return
        if not isinstance(delta, dict):
            self._wrong(f"delta is {_type_name(delta)}, not an object", chunk)
        piece = delta.get("content")
        if piece is not None and not isinstance(piece, str):
            self._wrong(f"delta.content is {_type_name(piece)}, not a string", chunk)
        if piece:
            self.text.append(piece)
            self._emit(piece)
        raw_calls = delta.get("tool_calls")
        if raw_calls is not None and not isinstance(raw_calls, list):
            self._wrong(f"delta.tool_calls is {_type_name(raw_calls)}, not a list", chunk)
        for raw in raw_calls or ():
            self._feed_call(raw, chunk)

    def _emit(self, piece: str) -> None:
        if self.on_delta is None:
            return
        if not self.redactor.forms:
            self.on_delta(piece)
            return
        # the end of the text that could begin a key waits for the next piece
        pending = self.redactor(self.held + piece)
        held = self.redactor.open_tail(pending)
        self.held = pending[len(pending) - held :]
        if len(pending) > held:
            self.on_delta(pending[: len(pending) - held])

    def _feed_call(self, raw: Any, chunk: Any) -> None:
        if not isinstance(raw, dict):
            self._wrong(f"a tool call is {_type_name(raw)}, not an object", chunk)
        index = raw.get("index", len(self.calls))
        if not isinstance(index, int) or isinstance(index, bool):
            self._wrong(f"tool-call index is {_type_name(index)}, not an integer", chunk)
        function = raw.get("function")
        if function is None:
            function = {}
        elif not isinstance(function, dict):
            self._wrong(f"tool-call function is {_type_name(function)}, not an object", chunk)
        for name, value in (
            ("id", raw.get("id")),
            ("function.name", function.get("name")),
            ("function.arguments", function.get("arguments")),
        ):
            if value is not None and not isinstance(value, str):
                self._wrong(f"tool-call {name} is {_type_name(value)}, not a string", chunk)
        slot = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        slot["id"] = raw.get("id") or slot["id"]
        slot["name"] += function.get("name") or ""
        slot["arguments"] += function.get("arguments") or ""

    def completion(self) -> Completion:
        """The assembled reply; `truncated` when no `[DONE]` arrived."""
        calls = tuple(
            ToolCall(id=slot["id"] or f"call_{i}", name=slot["name"], arguments=slot["arguments"])
            for i, slot in sorted(self.calls.items())
            if slot["name"]
        )
        # joined, then redacted again: a key the model spelled over several chunks
        text = self.redactor("".join(self.text))
        if self.held and self.on_delta is not None:
            self.on_delta(self.held)
            self.held = ""
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
            cut=self.cut,
            malformed_chunks=self.malformed,
        )

    def wire_summary(self, truncated: bool) -> dict[str, Any]:
        """What the wire log keeps of the stream: the first and last chunks, and a count."""
        scrub = self.redactor.scrub_values if self.redactor.forms else _same
        summary: dict[str, Any] = {"chunks": scrub(self.head)}
        if self.tail:
            omitted = self.chunk_count - len(self.head) - len(self.tail)
            if omitted:
                summary["omitted_chunks"] = omitted
            summary["last_chunks"] = scrub(list(self.tail))
        summary["chunk_count"] = self.chunk_count
        summary["truncated"] = truncated
        return summary


def _httpx() -> Any:
    """The httpx module, imported at first need (an `except` clause names its errors only
    once an exception reaches it)."""
    import httpx

    return httpx


@lru_cache(maxsize=64)
def _parsed_url(url: str) -> httpx.URL:
    """An endpoint's URL parsed once in the process (each run of a sweep has its own endpoint)."""
    import httpx

    return httpx.URL(url)


@lru_cache(maxsize=1)
def _client_headers() -> httpx.Headers:
    """The headers an endpoint's `httpx.AsyncClient` sends but its key: httpx's own (its user
    agent, accepted encodings) and the JSON content type."""
    import httpx

    sends_json = {"Content-Type": "application/json"}
    return httpx.AsyncClient(transport=httpx.AsyncBaseTransport(), headers=sends_json).headers


@lru_cache(maxsize=16)
def _timeouts(seconds: float) -> tuple[tuple[str, float | None], ...]:
    import httpx

    return tuple(httpx.Timeout(seconds).as_dict().items())


def _timeout(seconds: float) -> dict[str, float | None]:
    """A request's `timeout` extension, as an `httpx.AsyncClient(timeout=seconds)` sets it."""
    return dict(_timeouts(seconds))


unescaped_json: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False).encode
"""`json.dumps(value, ensure_ascii=False)`, by one encoder made once (`dumps` makes one a call)."""

_SURROGATE = "[\ud800-\udfff]"
"""A lone surrogate; compiled (and cached by `re`) with the first body that holds one."""


def request_json(body: Any) -> bytes:
    """A request body as compact UTF-8 JSON, by msgspec (several times faster than `json` on a
    long history), "é" and "東京" as themselves. A lone surrogate (e.g. in a tool's output
    decoded with `surrogateescape`) has no UTF-8 form and is sent as U+FFFD rather than failing
    the turn; a float that is not finite is sent as `null` (JSON has no NaN)."""
    try:
        return encode_json(body)
    except UnicodeEncodeError:
        return encode_json(json.loads(re.sub(_SURROGATE, "\ufffd", unescaped_json(body))))


class WireMessages(list):  # type: ignore[type-arg]
    """A request's `messages` (wire dicts) with their JSON written already (`parts`), so that
    the body is written by joining it (`joined_json`): the same bytes as `request_json(body)`,
    JSON's text of a list being its items' texts, comma-joined. A part is the JSON of one
    message (bytes), or of a run of stored ones: a span (start, end) of `source`, the node's
    kept JSON of its storage (`Node.wire_json`). The dicts are the messages' own
    (`Message.to_wire`), never changed: one changed in place (in the wire log) would not be
    sent as changed."""

    __slots__ = ("length", "parts", "source")

    def __init__(self, parts: list[bytes | tuple[int, int]], source: bytearray) -> None:
        super().__init__()
        self.parts: list[bytes | tuple[int, int]] | None = parts
        self.source = source
        self.length = 0
        """How many dicts the parts are the JSON of (set once they are added)."""


def joined_json(body: dict[str, Any], untouched: bool) -> bytes:
    """`request_json(body)`, its `messages` joined from their written parts when they are a
    `WireMessages` `untouched` since it was made (see `LLM._untouched`) and of as many messages;
    the parts are used once (a retry, or the wire log, holds no more than the dicts)."""
    messages = body.get("messages")
    if type(messages) is not WireMessages or messages.parts is None:
        return request_json(body)
    parts, whole = messages.parts, messages.source
    messages.parts = messages.source = None  # type: ignore[assignment]
    if not untouched or messages.length != len(messages):
        return request_json(body)
    pieces: list[bytes | memoryview] = []
    with memoryview(whole) as source:  # released: the node's JSON may grow again
        for key, value in body.items():
            pieces += (b"," if pieces else b"{", request_json(key), b":")
            if value is not messages:
                pieces.append(request_json(value))
                continue
            pieces.append(b"[")
            for i, part in enumerate(parts):
                if i:
                    pieces.append(b",")
                pieces.append(part if type(part) is bytes else source[part[0] : part[1]])
            pieces.append(b"]")
        pieces.append(b"}")
        return b"".join(pieces)
