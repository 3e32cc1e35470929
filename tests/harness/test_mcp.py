"""serve_tools and tool injection: the config file, the token guard, and a CLI's round trip."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import tempfile
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

import sagents_nb as sn
from sagents_nb.harness import (
    ClaudeCode,
    HarnessConfig,
    HarnessText,
    HarnessToolCall,
    run_harness,
    serve_tools,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]


@sn.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@sn.tool
def broken(a: int, b: int) -> int:
    """Always fails."""
    raise RuntimeError("the disk is on fire")


TOOLS = {t.name: t for t in (add, broken)}


async def call_tool(name: str, arguments: dict[str, Any]) -> str:
    """Runs a call the way the kernel does: through the tool's own validation."""
    return await TOOLS[name].invoke(arguments)


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


async def test_the_config_file_is_private_and_removed_on_exit():
    async with serve_tools([add], call_tool) as injection:
        directory = os.path.dirname(injection.config_path)
        assert os.stat(directory).st_mode & 0o777 == 0o700
        assert os.stat(injection.config_path).st_mode & 0o777 == 0o600
        with open(injection.config_path) as file:
            config = json.load(file)
        assert config == {
            "mcpServers": {
                "sagents": {
                    "type": "http",
                    "url": injection.url,
                    "headers": {"Authorization": f"Bearer {injection.token}"},
                }
            }
        }
        assert injection.url.startswith("http://127.0.0.1:") and injection.url.endswith("/mcp")
        assert injection.token not in repr(injection)
    assert not os.path.exists(directory)
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.post(injection.url, json=INITIALIZE)


async def test_requests_without_the_right_token_get_401():
    async with serve_tools([add], call_tool) as injection, httpx.AsyncClient() as client:
        accept = {"Accept": "application/json, text/event-stream"}
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": injection.token}):
            refused = await client.post(injection.url, json=INITIALIZE, headers={**accept, **auth})
            assert refused.status_code == 401
            assert refused.headers["WWW-Authenticate"] == "Bearer"
        bearer = {"Authorization": f"Bearer {injection.token}"}
        accepted = await client.post(injection.url, json=INITIALIZE, headers={**accept, **bearer})
        assert accepted.status_code == 200
        assert accepted.json()["result"]["serverInfo"]["name"] == "sagents"


async def test_tools_are_listed_and_called_and_failures_come_back_as_tool_errors():
    async with (
        serve_tools([add, broken], call_tool) as injection,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {injection.token}"}) as http,
        streamable_http_client(injection.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert [(t.name, t.description) for t in listed.tools] == [
            ("add", "Add two integers."),
            ("broken", "Always fails."),
        ]
        assert listed.tools[0].input_schema == add.parameters
        added = await session.call_tool("add", {"a": 40, "b": 2})
        assert not added.is_error and added.content[0].text == "42"
        failed = await session.call_tool("broken", {"a": 1, "b": 1})
        assert failed.is_error
        assert failed.content[0].text == "broken failed: RuntimeError: the disk is on fire"
        unknown = await session.call_tool("nope", {})
        assert unknown.is_error and "offers add, broken" in unknown.content[0].text


@pytest.mark.parametrize(
    ("mode", "revision"),
    [("legacy", "2025-11-25"), ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28")],
)
async def test_the_official_client_round_trips_the_tools_on_both_revisions(mode, revision):
    """`initialize` (2025-11-25) or `server/discover` (2026-07-28, no session), as the client
    asks; the server side records which it spoke, and the new revision's `tools/list` carries
    its cache fields."""
    from mcp.client.client import Client

    async with (
        serve_tools([add], call_tool) as injection,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {injection.token}"}) as http,
        Client(streamable_http_client(injection.url, http_client=http), mode=mode) as client,
    ):
        listed = await client.list_tools()
        added = await client.call_tool("add", {"a": 40, "b": 2})
        assert client.protocol_version == revision
    assert [t.name for t in listed.tools] == ["add"]
    assert not added.is_error and added.content[0].text == "42"
    if mode == "auto":  # the probe is answered on 2026-07-28 and every tool request follows it
        assert injection.revisions == ["2026-07-28"]
    else:
        assert injection.revisions[-1:] == [revision]
    if revision == "2026-07-28":
        assert (listed.ttl_ms, listed.cache_scope) == (3_600_000, "private")


async def test_a_cli_calls_the_injected_tools_end_to_end(fake_cli):
    calls = []

    async def recording_call_tool(name: str, arguments: dict[str, Any]) -> str:
        calls.append((name, arguments))
        return await call_tool(name, arguments)

    events = []
    outcome = await run_harness(
        ClaudeCode(executable=fake_cli.path),
        HarnessConfig("add 2 and 3"),
        tools=[add],
        call_tool=recording_call_tool,
        env=fake_cli.env("mcp"),
        on_event=events.append,
    )
    assert outcome.status == "done", outcome.error
    assert outcome.text == "tools=['add'] add=5 nope_error=True"
    assert calls == [("add", {"a": 2, "b": 3})]
    assert HarnessToolCall(name="mcp__sagents__add", arguments={}, id="toolu_02") in events
    details = json.loads(next(e.text for e in events if isinstance(e, HarnessText)))
    assert details["dir_mode"] == "0o700" and details["file_mode"] == "0o600"
    assert details["token_in_env"] and not details["token_in_argv"]
    assert not os.path.exists(details["config_path"])


async def test_cancelling_a_run_with_tools_stops_the_server_and_removes_its_files(
    fake_cli, tmp_path
):
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), f"sagents-mcp-{os.getpid()}[.-]*")))
    ready = asyncio.Event()
    task = asyncio.create_task(
        run_harness(
            ClaudeCode(executable=fake_cli.path),
            HarnessConfig("hi"),
            tools=[add],
            call_tool=call_tool,
            env=fake_cli.env("grandchild", FAKE_CLI_PIDS=str(tmp_path / "pids")),
            on_event=lambda event: ready.set(),
        )
    )
    await asyncio.wait_for(ready.wait(), 5)
    during = (
        set(glob.glob(os.path.join(tempfile.gettempdir(), f"sagents-mcp-{os.getpid()}[.-]*")))
        - before
    )
    assert len(during) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not any(os.path.exists(path) for path in during)


KILLED_WHILE_SERVING = """
import asyncio, os, signal, sys
from sagents_nb.harness import serve_tools


async def call(name, arguments):
    return ""


async def main():
    async with serve_tools([], call) as injection:
        sys.stdout.write(injection.config_path + "\\n")
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)


asyncio.run(main())
"""


@pytest.mark.timeout(60)
async def test_a_config_left_by_a_killed_process_is_removed_at_the_next_start(
    tmp_path, monkeypatch
):
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WHILE_SERVING],
        capture_output=True,
        text=True,
        timeout=50,
        env=env,
    )
    assert done.returncode == -9, done.stderr
    left = os.path.dirname(done.stdout.strip())
    assert os.path.dirname(left) == str(tmp_path) and os.path.exists(left)  # the token is there
    someone_elses = tmp_path / "sagents-mcp-notapid-x"
    someone_elses.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    async with serve_tools([add], call_tool) as injection:
        assert not os.path.exists(left)
        assert os.path.exists(injection.config_path)
    assert someone_elses.exists()  # not a name this code gives: left alone


@pytest.mark.timeout(60)
async def test_a_config_left_by_a_killed_process_not_yet_reaped_is_removed(tmp_path, monkeypatch):
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WHILE_SERVING], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        left = os.path.dirname(child.stdout.readline().strip())
        assert os.path.exists(left)
        while open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
            await asyncio.sleep(0.02)  # killed; its parent (this test) has not reaped it yet
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        async with serve_tools([add], call_tool):
            assert not os.path.exists(left)
    finally:
        child.kill()
        child.wait(10)


@pytest.mark.timeout(60)
async def test_a_config_named_after_a_pid_now_given_to_another_process_is_removed(
    tmp_path, monkeypatch
):
    import subprocess
    import sys

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with open(f"/proc/{other.pid}/stat") as stat:
            started = stat.read().rsplit(")", 1)[1].split()[19]
        earlier = tmp_path / f"sagents-mcp-{other.pid}.{int(started) - 1}-abc"  # pid reused
        current = tmp_path / f"sagents-mcp-{other.pid}.{started}-def"
        mine = tmp_path / f"sagents-mcp-{os.getpid()}.1-ghi"  # a past process of this pid
        for folder in (earlier, current, mine):
            folder.mkdir(mode=0o700)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        async with serve_tools([add], call_tool) as injection:
            assert not earlier.exists() and not mine.exists()
            assert current.exists()  # that process still runs: its folder stays
            assert os.path.basename(os.path.dirname(injection.config_path)).startswith(
                f"sagents-mcp-{os.getpid()}."
            )
    finally:
        other.kill()
        other.wait(10)
