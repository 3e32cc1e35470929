"""serve_tools and tool injection: the config file, the token guard, and a CLI's round trip."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from sagents_nb.harness import (
    ClaudeCode,
    HarnessConfig,
    HarnessText,
    HarnessToolCall,
    run_harness,
    serve_tools,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(20)]


@dataclass
class _Tool:
    name: str
    description: str
    parameters: dict[str, Any] = field(
        default_factory=lambda: {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        }
    )


ADD = _Tool("add", "Add two integers.")
BROKEN = _Tool("broken", "Always fails.")

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


async def _add(name: str, arguments: dict[str, Any]) -> str:
    if name == "broken":
        raise RuntimeError("the disk is on fire")
    return str(arguments["a"] + arguments["b"])


async def test_the_config_file_is_private_and_removed_on_exit():
    async with serve_tools([ADD], _add) as injection:
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
    assert not os.path.exists(directory)
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.post(injection.url, json=INITIALIZE)


async def test_requests_without_the_right_token_get_401():
    async with serve_tools([ADD], _add) as injection, httpx.AsyncClient() as client:
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
        serve_tools([ADD, BROKEN], _add) as injection,
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
        assert listed.tools[0].input_schema == ADD.parameters
        added = await session.call_tool("add", {"a": 40, "b": 2})
        assert not added.is_error and added.content[0].text == "42"
        broken = await session.call_tool("broken", {"a": 1, "b": 1})
        assert broken.is_error
        assert broken.content[0].text == "broken failed: RuntimeError: the disk is on fire"
        unknown = await session.call_tool("nope", {})
        assert unknown.is_error and "offers add, broken" in unknown.content[0].text


async def test_a_cli_calls_the_injected_tools_end_to_end(fake_cli):
    calls = []

    async def call_tool(name: str, arguments: dict[str, Any]) -> str:
        calls.append((name, arguments))
        return await _add(name, arguments)

    events = []
    outcome = await run_harness(
        ClaudeCode(executable=fake_cli.path),
        HarnessConfig("add 2 and 3"),
        tools=[ADD],
        call_tool=call_tool,
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
