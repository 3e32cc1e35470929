"""An inline mock endpoint served over HTTP on 127.0.0.1, for programs that cannot take a transport."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import httpx

from .._base.checks import check_callable, check_int, check_number
from .mock import HANDLER, Handler, MockLLM, Reply, _estimated_usage, mock_llm
from .openai import Exchange, kept
from .request_body import BadBody, read_body
from .request_shapes import shape_problem
from .secrets import MASK, Redactor, masked_path
from .served_formats import Api, ServedRequest, anthropic_reply, responses_reply

if TYPE_CHECKING:
    from collections import deque

_ROUTES: dict[str, Api] = {
    "/v1/chat/completions": "chat_completions",
    "/chat/completions": "chat_completions",
    "/v1/messages": "anthropic_messages",
    "/v1/responses": "responses",
    "/responses": "responses",
}
_COUNT_TOKENS = "/messages/count_tokens"
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "openai-api-key")
MAX_BODY = 64 * 2**20
"""The largest request body a served mock takes by default (`sn.MockServer(max_body=...)`)."""
KEPT_BODY = 2**20
"""Bytes of a body past which its exchange keeps it cut down (`sn.LLM`'s wire log way)."""
CLOSE_WAIT = 5.0
"""Seconds `close()` waits for handlers still answering."""


class MockServer:
    """A mock endpoint's handler served on 127.0.0.1 over HTTP, in three wire formats.

    `POST /v1/chat/completions` (OpenAI chat completions), `POST /v1/messages` (Anthropic
    Messages, with `/v1/messages/count_tokens`) and `POST /v1/responses` (OpenAI Responses) all
    reach the same handler, which sees an `sn.ChatRequest` whatever the format (`.api` names it)
    and answers as it would in-process; an `httpx.Response` it returns is sent as it is (an error
    status, say). Streamed requests get server-sent events. Every exchange is recorded in the
    mock's `.exchanges`, keys removed (from headers, the URL and the body), a body larger than
    `KEPT_BODY` bytes cut down as the wire log keeps a long stream. Serving starts at once; use
    it as a context manager or call `close()`.

    A request the mock cannot take is answered 400 with the reason (a body that is not JSON,
    nested too deep, of the wrong shape for its format, a Content-Length that is not a size), 413
    when larger than `max_body`. A handler that raises, `SystemExit`, `KeyboardInterrupt` and any
    other `BaseException` included, is answered 500 naming the exception: the handler runs on a
    connection's thread, where a real Ctrl-C never lands, so such an exception is the handler's.

    Args:
        llm: An `sn.mock_llm(...)` or `sn.script(...)` endpoint, or a bare handler.
        port: The port to bind on 127.0.0.1; 0 picks a free one.
        max_body: The largest request body taken, in bytes.
        read_timeout: Seconds a connection may stay silent (idle between requests, or stalled
            in one) before the server closes it.

    Example:
        `with sn.MockServer(sn.mock_llm(handler)) as server:`, then point a CLI at
        `server.base_url` (Anthropic clients) or `server.openai_base_url` (OpenAI clients).
    """

    def __init__(
        self,
        llm: MockLLM | Handler,
        *,
        port: int = 0,
        max_body: int = MAX_BODY,
        read_timeout: float = 60.0,
    ) -> None:
        where = "sn.MockServer(...)"
        if not isinstance(llm, MockLLM):
            check_callable("llm", llm, where=where, accepted="an sn.mock_llm(...) or " + HANDLER)
        check_int("port", port, where=where, minimum=0)
        check_int("max_body", max_body, where=where, minimum=1)
        check_number("read_timeout", read_timeout, where=where, positive=True)
        self.llm: MockLLM = llm if isinstance(llm, MockLLM) else mock_llm(llm)
        """The mock whose handler answers; a bare handler given is wrapped by `sn.mock_llm`."""
        self.max_body = max_body
        self.read_timeout = read_timeout
        self._httpd = _Server(("127.0.0.1", port), self)
        self.port: int = self._httpd.server_address[1]
        """The port bound on 127.0.0.1."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"sagents_nb-mock-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    @property
    def base_url(self) -> str:
        """The server's root, e.g. `http://127.0.0.1:PORT` (Anthropic clients take this)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The root OpenAI clients take: `base_url` + `/v1`."""
        return self.base_url + "/v1"

    @property
    def exchanges(self) -> deque[Exchange]:
        """The mock's recorded exchanges, served ones included (the same list as `llm.exchanges`)."""
        return self.llm.exchanges

    def close(self) -> None:
        """Stop serving, release the port and end every connection: requests still being read
        or answered are dropped. A handler still running is waited for up to `CLOSE_WAIT` s."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        self._httpd.end_connections(CLOSE_WAIT)

    def __enter__(self) -> MockServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else self.base_url
        return f"MockServer({self.llm.label}, {state})"

    async def answer(
        self, api: Api, body: dict[str, Any], size: int
    ) -> tuple[int, str, bytes, Any]:
        """`(status, content type, body, recorded response)` for one request."""
        request = ServedRequest(body, size, api)
        answer = self.llm.handler(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, httpx.Response):
            content = await answer.aread()
            kind = answer.headers.get("content-type", "application/json")
            return answer.status_code, kind, content, _decoded(content)
        if answer is None or isinstance(answer, str):
            answer = Reply(answer or "")
        if not isinstance(answer, Reply):
            error = {
                "error": {
                    "type": "mock_handler_error",
                    "message": f"mock handler returned {type(answer).__name__}; "
                    "return a str, sn.reply(...) or an httpx.Response",
                }
            }
            return 500, "application/json", json.dumps(error).encode(), error
        if api == "chat_completions":
            response = self.llm.respond(answer, request)
            content = await response.aread()
            return 200, response.headers["content-type"], content, _decoded(content)
        usage = dict(answer.usage or _estimated_usage(size, answer.text or ""))
        render = anthropic_reply if api == "anthropic_messages" else responses_reply
        kind, content, recorded = render(answer, request, usage, self.llm._ids)
        return 200, kind, content, recorded


def _decoded(content: bytes) -> Any:
    """A response body as recorded: its JSON, else its text."""
    text = content.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


class _Server(ThreadingHTTPServer):
    """Serves each connection on a thread of its own, and can end them all (`end_connections`)."""

    block_on_close = False  # `end_connections` waits, within a bound

    def __init__(self, address: tuple[str, int], mock: MockServer) -> None:
        self.mock = mock
        self.connections: dict[socket.socket, threading.Thread] = {}
        self.threads: list[threading.Thread] = []
        """Every connection's thread still alive when the last one started: a thread leaves
        `connections` as its connection closes, a little before it ends."""
        self.lock = threading.Lock()
        super().__init__(address, _RequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"sagents_nb-mock-connection-{self.server_address[1]}",
            daemon=True,
        )
        with self.lock:
            self.connections[request] = thread
            self.threads = [*(t for t in self.threads if t.is_alive()), thread]
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self.lock:
            self.connections.pop(request, None)
        super().shutdown_request(request)

    def end_connections(self, wait: float) -> None:
        """Cut every open connection (a read or write on it fails at once) and wait up to `wait`
        seconds for their threads; a handler still running keeps its thread until it returns."""
        with self.lock:
            open_now, threads = list(self.connections), list(self.threads)
        for connection in open_now:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + wait
        for thread in threads:
            if thread is not threading.current_thread():  # a handler may close its server
                thread.join(max(0.0, deadline - time.monotonic()))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (or was cut off by `close()`) is no error to print."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the CLIs' HTTP clients expect
    server_version = "sagents_nb-mock"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.mock.read_timeout)  # silent ones are closed

    def do_POST(self) -> None:
        mock = self.server.mock
        started = time.perf_counter()
        keys = [v for k, v in self.headers.items() if k.lower() in _SECRET_HEADERS]
        redact = Redactor(*keys, *(key.partition(" ")[2] for key in keys))
        path = self.path.split("?", 1)[0].rstrip("/")
        shown = redact(masked_path(path))  # a key in the path (no route holds one) masked
        exchange = Exchange(
            url=mock.base_url + shown,
            request={},
            headers={k.lower(): MASK for k in self.headers if k.lower() in _SECRET_HEADERS},
        )
        mock.exchanges.append(exchange)
        bad: BadBody | None = None
        try:
            raw = read_body(self.headers, self.rfile, mock.max_body)
        except BadBody as refused:
            bad = refused
        except TimeoutError:
            bad = _stalled(mock.read_timeout)
        except OSError as exc:  # the client went away, or close() cut it off: no one to answer
            self.close_connection = True
            exchange.error = f"the connection ended before the body was read ({exc})"
            return
        if bad is not None:
            self.close_connection = True  # the rest of the body is left unread
            exchange.request = {"unread": bad.reason}
            status, kind, content, recorded = _error(bad.status, bad.reason)
        else:
            status, kind, content, recorded = self._answer(mock, path, shown, raw, exchange)
            exchange.request = _kept(exchange.request, len(raw), redact, raw)
        exchange.status = status
        exchange.response = _kept(recorded, len(content), redact, content)
        exchange.error = redact(exchange.error) if exchange.error else None
        exchange.duration = time.perf_counter() - started
        self._send(status, kind, content)

    def _answer(
        self, mock: MockServer, path: str, shown: str, raw: bytes, exchange: Exchange
    ) -> tuple[int, str, bytes, Any]:
        try:
            body = json.loads(raw or b"{}")
        except RecursionError:
            return _error(400, "the request body is JSON nested too deeply to read")
        except ValueError as exc:
            exchange.request = {"unparsed": raw[:2000].decode("utf-8", "replace")}
            return _error(400, f"the request body is not JSON ({exc})")
        if not isinstance(body, dict):
            exchange.request = {"unparsed": raw[:2000].decode("utf-8", "replace")}
            return _error(400, f"the request body is a JSON {type(body).__name__}, not an object")
        exchange.request = body
        if path.endswith(_COUNT_TOKENS):
            recorded = {"input_tokens": _estimated_usage(len(raw), "")["prompt_tokens"]}
            return 200, "application/json", json.dumps(recorded).encode(), recorded
        api = _ROUTES.get(path)
        if api is None:
            return _error(404, f"no mock route {shown}; use {', '.join(sorted(set(_ROUTES)))}")
        if problem := shape_problem(api, body):
            return _error(400, problem)
        try:
            return asyncio.run(mock.answer(api, body, len(raw)))
        except BaseException as exc:  # the handler's, whatever it is: a 500 that names it
            exchange.error = f"{type(exc).__name__}: {exc}"
            return _error(500, f"the mock handler raised {exchange.error}")

    def do_GET(self) -> None:
        status, kind, content, _ = _error(404, "the mock endpoint answers POST requests only")
        self._send(status, kind, content)

    def _send(self, status: int, kind: str, content: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(content)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(content)
        except OSError:
            self.close_connection = True  # the client gave up (a cancelled run), or close()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a notebook cell is no place for an access log."""


def _kept(value: Any, size: int, redact: Redactor, raw: bytes) -> Any:
    """`value` (a parsed body of `size` bytes, `raw`) as the exchange keeps it: keys out (before
    any cut, so no piece of one is left), cut down when large."""
    if any(form.encode() in raw for form in redact.forms):
        value = redact.scrub_values(value)
    return kept(value) if size > KEPT_BODY else value


def _stalled(read_timeout: float) -> BadBody:
    return BadBody(
        408,
        f"the request body stopped arriving: nothing for {read_timeout} s "
        "(sn.MockServer(read_timeout=...))",
    )


def _error(status: int, message: str) -> tuple[int, str, bytes, Any]:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return status, "application/json", json.dumps(error).encode(), error
