"""A real HTTP server on 127.0.0.1 whose answers a test writes byte by byte (slow, endless, odd)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


class Answer:
    """The socket side of one request, for a test's `respond` function."""

    def __init__(self, handler: BaseHTTPRequestHandler, stopping: threading.Event) -> None:
        self.handler = handler
        self.stopping = stopping

    def head(self, status: int, headers: dict[str, str]) -> None:
        """The status line and headers."""
        self.handler.send_response(status)
        for name, value in headers.items():
            self.handler.send_header(name, value)
        self.handler.end_headers()
        self.handler.wfile.flush()

    def write(self, data: bytes) -> bool:
        """Send `data` now; False once the client has gone or the server stops."""
        if self.stopping.is_set():
            return False
        try:
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except OSError:  # the client hung up: the behaviour under test
            return False
        return True

    def pause(self, seconds: float) -> bool:
        """Wait, unless the server stops first (then False)."""
        return not self.stopping.wait(seconds)


Respond = Callable[[bytes, Answer], None]


class LoopbackServer:
    """`with LoopbackServer(respond) as server:` serves `server.url` until the block ends.

    Every handler thread ends with the block: `Answer.write` and `Answer.pause` return False.
    """

    def __init__(self, respond: Respond) -> None:
        stopping = self.stopping = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                respond(body, Answer(self, stopping))
                self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
