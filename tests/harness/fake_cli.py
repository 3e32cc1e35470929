#!/usr/bin/env python3
"""A stand-in for a coding-agent CLI: prints Claude Code stream-json in the mode FAKE_CLI_MODE names."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

SESSION = "5f0c9a63-2b1e-4c1e-9a57-7d0c1b6f2e11"


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def system_init() -> None:
    emit(
        {
            "type": "system",
            "subtype": "init",
            "cwd": os.getcwd(),
            "session_id": SESSION,
            "tools": ["Bash", "Read", "mcp__sagents__add"],
            "mcp_servers": [{"name": "sagents", "status": "connected"}],
            "model": "claude-sonnet-4-5-20250929",
            "permissionMode": "default",
            "apiKeySource": "none",
        }
    )


def assistant(*blocks: dict) -> None:
    emit(
        {
            "type": "assistant",
            "message": {
                "id": "msg_01Fake",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": list(blocks),
                "stop_reason": None,
                "usage": {"input_tokens": 3, "output_tokens": 12},
            },
            "parent_tool_use_id": None,
            "session_id": SESSION,
        }
    )


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def result(value: str, *, subtype: str = "success", is_error: bool = False) -> None:
    emit(
        {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": 2650,
            "num_turns": 1,
            "result": value,
            "session_id": SESSION,
            "total_cost_usd": 0.0123,
            "usage": {
                "input_tokens": 4,
                "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 20,
                "output_tokens": 12,
            },
        }
    )


def hang() -> None:
    time.sleep(60)


def happy() -> None:
    system_init()
    assistant(text("Hello from the fake CLI."))
    result("Hello from the fake CLI.")


def tool_use() -> None:
    system_init()
    call = {"type": "tool_use", "id": "toolu_01A", "name": "Bash", "input": {"command": "ls"}}
    assistant(text("Let me look."), call)
    emit(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"tool_use_id": "toolu_01A", "type": "tool_result", "content": "a.py"}],
            },
            "session_id": SESSION,
        }
    )
    assistant(text("There is one file."))
    result("There is one file.")


def error_result() -> None:
    system_init()
    assistant(text("Working on it."))
    result("", subtype="error_max_turns")
    sys.exit(1)


def crash() -> None:
    system_init()
    print("Error: Invalid API key · Please run /login", file=sys.stderr, flush=True)
    print("exiting", file=sys.stderr, flush=True)
    sys.exit(3)


def no_done() -> None:
    assistant(text("first part, "))
    assistant(text("second part"))


def silent() -> None:
    hang()


def closed_stdout() -> None:
    assistant(text("closing stdout"))
    os.close(1)
    hang()


def killed() -> None:
    print("about to be killed", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def stdin() -> None:
    data = sys.stdin.read()
    result(f"stdin gave {len(data)} bytes")


def noise() -> None:
    print("Loading configuration…", flush=True)
    assistant(text("between the noise"))
    print("{not json at all", flush=True)
    print("[1, 2, 3]", flush=True)
    result("between the noise")


def long_line() -> None:
    assistant(text("x" * 5000))
    assistant(text("short"))
    result("after the long line")


def pieces() -> None:
    line = json.dumps({"type": "assistant", "message": {"content": [text("pieced together")]}})
    data = line + "\n" + json.dumps({"type": "result", "subtype": "success", "result": "ok"})
    for start in range(0, len(data), 7):
        sys.stdout.write(data[start : start + 7])
        sys.stdout.flush()
        time.sleep(0.002)
    sys.stdout.write("\n")


def env() -> None:
    result(os.environ.get("BASH_ENV", "<unset>") + "|" + os.environ.get("PS4", "<unset>"))


def env_names() -> None:
    result(json.dumps(sorted(os.environ)))


def argv() -> None:
    result(json.dumps(sys.argv[1:]))


def double_terminal() -> None:
    result("first")
    result("", subtype="error_during_execution", is_error=True)


def after_done_hang() -> None:
    result("answer before hanging")
    hang()


def sleeper() -> int:
    """Start a grandchild that sleeps (and inherits stdout); returns its pid."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]).pid


def record_pids(*pids: int) -> None:
    """Write pids to the file FAKE_CLI_PIDS names, for the test to check they are gone later."""
    with open(os.environ["FAKE_CLI_PIDS"], "w") as file:
        file.write(" ".join(map(str, pids)))


def grandchild() -> None:
    record_pids(os.getpid(), sleeper())
    assistant(text("ready"))
    hang()


def stubborn() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    record_pids(os.getpid())
    assistant(text("ready"))
    hang()


def orphan_pipe() -> None:
    # The grandchild holds stdout open, so EOF never comes after this process exits.
    record_pids(sleeper())
    assistant(text("left a grandchild holding stdout"))


def mcp() -> None:
    system_init()  # before the MCP SDK's slow import, as a real CLI reports itself first
    asyncio.run(_mcp_round_trip())


async def _mcp_round_trip() -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    config_path = next(a for a in sys.argv if a.startswith("--mcp-config=")).split("=", 1)[1]
    with open(config_path) as file:
        server = json.load(file)["mcpServers"]["sagents"]
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    details = {
        "config_path": config_path,
        "dir_mode": oct(os.stat(os.path.dirname(config_path)).st_mode & 0o777),
        "file_mode": oct(os.stat(config_path).st_mode & 0o777),
        "token_in_env": os.environ.get("SAGENTS_MCP_TOKEN") == token,
        "token_in_argv": any(token in arg for arg in sys.argv),
    }
    assistant(text(json.dumps(details)))
    async with (
        httpx2.AsyncClient(headers=server["headers"], timeout=60) as http,
        streamable_http_client(server["url"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        names = [tool.name for tool in listed.tools]
        assistant({"type": "tool_use", "id": "toolu_02", "name": "mcp__sagents__add", "input": {}})
        called = await session.call_tool("add", {"a": 2, "b": 3})
        missing = await session.call_tool("nope", {})
    answer = f"tools={names} add={called.content[0].text} nope_error={missing.is_error}"
    assistant(text(answer))
    result(answer)


def replay() -> None:
    """Print the lines of the file FAKE_CLI_REPLAY (a recorded stream); after a line naming a
    tool call that FAKE_CLI_CALLS lists (`{id: [tool, arguments]}`), make that call over MCP with
    its id in `_meta`, as Claude Code does."""
    calls = json.loads(os.environ.get("FAKE_CLI_CALLS", "{}"))
    with open(os.environ["FAKE_CLI_REPLAY"], encoding="utf-8") as file:
        lines = file.read().splitlines()
    for line in lines:
        print(line, flush=True)
        content = json.loads(line).get("message", {}).get("content")
        for block in content if isinstance(content, list) else ():
            if block.get("type") == "tool_use" and block["id"] in calls:
                tool, arguments = calls[block["id"]]
                asyncio.run(_mcp_call(tool, arguments, block["id"]))


async def _mcp_call(tool: str, arguments: dict, call_id: str) -> None:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    config_path = next(a for a in sys.argv if a.startswith("--mcp-config=")).split("=", 1)[1]
    with open(config_path) as file:
        server = json.load(file)["mcpServers"]["sagents"]
    async with (
        httpx2.AsyncClient(headers=server["headers"], timeout=60) as http,
        streamable_http_client(server["url"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool(tool, arguments, meta={"claudecode/toolUseId": call_id})


MODES = {
    mode.__name__: mode
    for mode in (
        happy,
        env_names,
        tool_use,
        error_result,
        crash,
        no_done,
        stdin,
        silent,
        closed_stdout,
        killed,
        noise,
        long_line,
        pieces,
        env,
        argv,
        double_terminal,
        after_done_hang,
        grandchild,
        stubborn,
        orphan_pipe,
        mcp,
        replay,
    )
}

if __name__ == "__main__":
    MODES[os.environ.get("FAKE_CLI_MODE", "happy")]()
