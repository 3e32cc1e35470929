"""An inline mock endpoint served over HTTP on 127.0.0.1, for programs that cannot take a transport."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import httpx

from .mock import Handler, MockLLM, Reply, _estimated_usage, mock_llm
from .openai import Exchange
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
_SECRET_HEADERS = ("authorization", "x-api-key", "api-key", "openai-api-key")


class MockServer:
    """A mock endpoint's handler served on 127.0.0.1 over HTTP, in three wire formats.

    `POST /v1/chat/completions` (OpenAI chat completions), `POST /v1/messages` (Anthropic
    Messages, with `/v1/messages/count_tokens`) and `POST /v1/responses` (OpenAI Responses) all
    reach the same handler, which sees an `sn.ChatRequest` whatever the format (`.api` names it)
    and answers as it would in-process; an `httpx.Response` it returns is sent as it is (an error
    status, say). Streamed requests get server-sent events. Every exchange is recorded in the
    mock's `.exchanges`, keys removed. Serving starts at once; use it as a context manager or
    call `close()`.

    Args:
        llm: An `sn.mock_llm(...)` or `sn.script(...)` endpoint, or a bare handler.
        port: The port to bind on 127.0.0.1; 0 picks a free one.

    Example:
        `with sn.MockServer(sn.mock_llm(handler)) as server:`, then point a CLI at
        `server.base_url` (Anthropic clients) or `server.openai_base_url` (OpenAI clients).
    """

    def __init__(self, llm: MockLLM | Handler, *, port: int = 0) -> None:
        self.llm: MockLLM = llm if isinstance(llm, MockLLM) else mock_llm(llm)
        """The mock whose handler answers; a bare handler given is wrapped by `sn.mock_llm`."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _RequestHandler)
        self._httpd.daemon_threads = True
        self._httpd.mock = self  # type: ignore[attr-defined]
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
        """Stop serving and release the port; requests still being answered are dropped."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

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
    except ValueError:
        return text


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the CLIs' HTTP clients expect
    server_version = "sagents_nb-mock"

    def do_POST(self) -> None:
        mock: MockServer = self.server.mock  # type: ignore[attr-defined]
        path = self.path.split("?", 1)[0].rstrip("/")
        size = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        exchange = Exchange(
            url=mock.base_url + path,
            request=body
            if isinstance(body, dict)
            else {"unparsed": raw[:2000].decode("utf-8", "replace")},
            headers={k.lower(): "***" for k in self.headers if k.lower() in _SECRET_HEADERS},
        )
        mock.exchanges.append(exchange)
        started = time.perf_counter()
        if not isinstance(body, dict):
            status, kind, content, recorded = _error(400, "the request body is not a JSON object")
        elif path.endswith("/messages/count_tokens"):
            recorded = {"input_tokens": _estimated_usage(size, "")["prompt_tokens"]}
            status, kind, content = 200, "application/json", json.dumps(recorded).encode()
        elif path in _ROUTES:
            try:
                status, kind, content, recorded = asyncio.run(
                    mock.answer(_ROUTES[path], body, size)
                )
            except Exception as exc:  # the handler's bug: the client gets a 500 that names it
                status, kind, content, recorded = _error(
                    500, f"the mock handler raised {type(exc).__name__}: {exc}"
                )
                exchange.error = f"{type(exc).__name__}: {exc}"
        else:
            status, kind, content, recorded = _error(
                404, f"no mock route {path}; use {', '.join(sorted(set(_ROUTES)))}"
            )
        exchange.status, exchange.response = status, recorded
        exchange.duration = time.perf_counter() - started
        self._send(status, kind, content)

    def do_GET(self) -> None:
        status, kind, content, _ = _error(404, "the mock endpoint answers POST requests only")
        self._send(status, kind, content)

    def _send(self, status: int, kind: str, content: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (a cancelled run)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a notebook cell is no place for an access log."""


def _error(status: int, message: str) -> tuple[int, str, bytes, Any]:
    error = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return status, "application/json", json.dumps(error).encode(), error
