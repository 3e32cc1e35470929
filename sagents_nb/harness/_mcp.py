"""Offers a child's tools to a native CLI through a private MCP server on loopback."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._base.checks import check_callable, check_items
from ._protocol import MCP_SERVER_NAME
from ._tool_answer import ToolAnswer

CallTool = Callable[[str, dict[str, Any]], Awaitable[str | ToolAnswer]]
"""Runs one tool call from the CLI; returns its text, or a `ToolAnswer` to mark an error."""


SERVED = "a tool (with name, description and parameters, as an sn.tool has)"


def is_served(value: object) -> bool:
    """Whether `value` has what `serve_tools` lists of a tool."""
    return all(hasattr(value, name) for name in ("name", "description", "parameters"))


class ServedTool(Protocol):
    """What `serve_tools` needs to know about a tool (an `sn.tool` has it)."""

    @property
    def name(self) -> str:
        """The tool's name."""

    @property
    def description(self) -> str:
        """What the tool does, for the model."""

    @property
    def parameters(self) -> dict[str, Any]:
        """JSON schema of the tool's arguments."""


@dataclass(frozen=True)
class McpInjection:
    """A running tool server and the config file that points a CLI at it."""

    config_path: str
    """Claude-Code-style MCP config (`{"mcpServers": {...}}`), mode 0600 in a 0700 directory."""
    url: str
    """The server's streamable-HTTP endpoint on 127.0.0.1."""
    token: str = field(repr=False)
    """The bearer token every request must carry; others get HTTP 401. Kept out of `repr`."""
    revisions: list[str] = field(default_factory=list, compare=False)
    """The MCP revisions the client's tool requests (`tools/list`, `tools/call`) spoke, in
    order, each change once: `2025-11-25` (or older) after an `initialize` handshake,
    `2026-07-28` after `server/discover`."""


@asynccontextmanager
async def serve_tools(
    tools: Sequence[ServedTool], call_tool: CallTool
) -> AsyncIterator[McpInjection]:
    """Serve `tools` over MCP for as long as the block runs.

    The server (streamable HTTP, on a free port of 127.0.0.1, inside the running event loop)
    speaks the MCP revision each client asks for (2025-11-25 through `initialize`, 2026-07-28
    through `server/discover`, with no sessions; `McpInjection.revisions` says which it spoke),
    answers only requests bearing a fresh random token, and runs each call through `call_tool`;
    an exception there becomes an error result for the CLI. On exit the server stops and its
    config directory is removed.

    Args:
        tools: The tools to list.
        call_tool: Runs a call: `await call_tool(name, arguments) -> str | ToolAnswer`.

    Raises:
        ImportError: The `mcp` or `uvicorn` package is missing.
    """
    check_items("tools", tools, is_served, where="serve_tools(...)", accepted=SERVED)
    check_callable("call_tool", call_tool, where="serve_tools(...)")
    # Imported on first use: the MCP SDK is an optional extra and takes about half a second.
    try:
        from ._mcp_server import running_tool_server
    except ImportError as exc:
        raise ImportError(
            f"serving tools to a native CLI needs the MCP SDK and uvicorn ({exc}); "
            "install them with: pip install 'sagents_nb[harness]'"
        ) from exc
    token = secrets.token_urlsafe(32)
    remove_stale_configs()
    directory = tempfile.mkdtemp(prefix=f"{CONFIG_PREFIX}{_process_tag(os.getpid())}-")  # 0700
    try:
        revisions: list[str] = []
        async with running_tool_server(tools, call_tool, token, revisions) as url:
            config_path = _write_config(directory, url, token)
            yield McpInjection(config_path=config_path, url=url, token=token, revisions=revisions)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


CONFIG_PREFIX = "sagents-mcp-"
"""Config directories are named `sagents-mcp-<pid>.<start>-<random>` after the process serving
them (`<start>`: its start time where `/proc` tells it, so a later process given the same pid is
not taken for it)."""


def remove_stale_configs() -> None:
    """Remove the config directories (each holds a token) that a process killed while it
    served tools left behind: ours, named after a process that no longer runs."""
    folder = tempfile.gettempdir()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid, _, started = name.removeprefix(CONFIG_PREFIX).partition("-")[0].partition(".")
        if not name.startswith(CONFIG_PREFIX) or not pid.isdigit() or _running(int(pid), started):
            continue
        path = os.path.join(folder, name)
        try:
            if os.lstat(path).st_uid != os.getuid() or not os.path.isdir(path):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)


def _running(pid: int, started: str) -> bool:
    """Whether the process that made a directory still runs: `pid` is alive, no zombie (killed,
    not yet reaped), and started when the name says (where it says)."""
    if pid != os.getpid():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's process: /proc tells whether it is the one
            pass
    state = _proc_stat(pid)
    if state is None:
        return True
    return state[0] != "Z" and started in ("", state[1])


def _process_tag(pid: int) -> str:
    """`<pid>.<start>` (`<pid>` alone where `/proc` is missing)."""
    state = _proc_stat(pid)
    return f"{pid}.{state[1]}" if state is not None else str(pid)


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """The process's state letter and start time (clock ticks after boot), from `/proc`."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return fields[0], fields[19]
    except (OSError, IndexError):
        return None


def _write_config(directory: str, url: str, token: str) -> str:
    path = os.path.join(directory, "mcp.json")
    server = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    # Created 0600 from the start: the file holds the token.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump({"mcpServers": {MCP_SERVER_NAME: server}}, file)
    return path
