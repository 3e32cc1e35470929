"""The MCP server behind `serve_tools`: lists and calls tools over streamable HTTP, behind a token."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
import uvicorn
from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ._cli_call import CLI_CALL_ID
from ._protocol import MCP_SERVER_NAME
from ._tool_answer import ToolAnswer

if TYPE_CHECKING:
    from ._mcp import CallTool, ServedTool

_STARTUP_POLL = 0.005


@contextlib.asynccontextmanager
async def running_tool_server(
    tools: Sequence[ServedTool], call_tool: CallTool, token: str, revisions: list[str]
) -> AsyncIterator[str]:
    """Serve `tools` on a free port of 127.0.0.1 while the block runs; yields the endpoint URL.

    The SDK answers both MCP revisions, as each client asks: 2025-11-25 (`initialize`, then
    requests naming the version in a header) and 2026-07-28 (`server/discover`, no sessions,
    each request carrying its version; `tools/list` with the cache fields `ttlMs` and
    `cacheScope`). The revision of each tool request is appended to `revisions` when it differs
    from the last one there.
    """
    server = _tool_server(tools, call_tool, revisions)
    # Stateless JSON replies: no session state and no open streams to wait for on shutdown.
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    # Binding first (port 0) picks a free port without a race against other processes.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    web = _QuietServer(
        uvicorn.Config(
            _BearerGuard(app, token),
            lifespan="off",  # the session manager's lifespan is entered below instead
            log_config=None,  # leave the host's logging configuration alone
            access_log=False,
            timeout_graceful_shutdown=1,
        )
    )
    with listener:
        async with server.session_manager.run():
            serving = asyncio.create_task(web.serve(sockets=[listener]))
            try:
                while not web.started:
                    if serving.done():
                        serving.result()  # raises the startup error
                    await asyncio.sleep(_STARTUP_POLL)
                yield f"http://127.0.0.1:{port}/mcp"
            finally:
                web.should_exit = True
                await serving


_CLAUDE_CODE_CALL_ID = "claudecode/toolUseId"
"""Where Claude Code names its own id for an MCP call, in the request's `_meta`."""

_TOOLS_TTL_MS = 3_600_000
"""How long a client may keep the tool list: it never changes while a server runs (one per
CLI process), so an hour; private, as it is answered to one bearer token."""


def _tool_server(
    tools: Sequence[ServedTool], call_tool: CallTool, revisions: list[str]
) -> Server[Any]:
    listed = [
        types.Tool(name=t.name, description=t.description or None, input_schema=t.parameters)
        for t in tools
    ]
    names = [t.name for t in tools]

    def spoken(ctx: ServerRequestContext[Any, Any]) -> None:
        if not revisions or revisions[-1] != ctx.protocol_version:
            revisions.append(ctx.protocol_version)

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        spoken(ctx)
        return types.ListToolsResult(tools=listed)

    async def run_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spoken(ctx)
        if params.name not in names:
            return _error(f"no tool named {params.name!r}; this server offers {', '.join(names)}")
        meta = params.meta if isinstance(params.meta, dict) else {}
        named = meta.get(_CLAUDE_CODE_CALL_ID)
        CLI_CALL_ID.set(named if isinstance(named, str) else None)  # this request's task only
        try:
            answer = await call_tool(params.name, params.arguments or {})
        except Exception as exc:  # the CLI's model sees the failure and may recover
            return _error(f"{params.name} failed: {type(exc).__name__}: {exc}")
        if isinstance(answer, ToolAnswer):
            text = types.TextContent(type="text", text=answer.text)
            return types.CallToolResult(content=[text], is_error=answer.is_error)
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer)])

    return Server(
        MCP_SERVER_NAME,
        on_list_tools=list_tools,
        on_call_tool=run_tool,
        # the 2026-07-28 revision's cache fields of `tools/list` (the SDK fills them in)
        cache_hints={"tools/list": CacheHint(ttl_ms=_TOOLS_TTL_MS, scope="private")},
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


class _BearerGuard:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get a 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            presented = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(presented, self._expected):
                refusal = PlainTextResponse(
                    "missing or wrong bearer token; use the token from the MCP config file",
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await refusal(scope, receive, send)
                return
        await self._app(scope, receive, send)


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signal handlers alone (in a kernel, Ctrl-C is the kernel's)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
