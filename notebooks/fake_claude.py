#!/usr/bin/env python3
"""A tiny stand-in for Claude Code's `-p ... --output-format stream-json` mode, for notebook 06.

Like the real CLI it asks the Messages API at `ANTHROPIC_BASE_URL` (the notebook's served mock),
offers the model the injected `sagents` MCP server's tools, calls them when the model asks, and
prints the same JSON lines: `init` with a session id, `assistant` and `user` messages, and a
`result` line with the answer, the usage the API reported, the turns, the time taken and the
cost at list price.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

PRICE_PER_MILLION = {"input": 3.00, "output": 15.00}
"""Claude Sonnet's list price in US dollars, as Claude Code prices a run it reports."""


def say(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def option(args: list[str], name: str) -> str | None:
    """A `--name=value` or `--name value` option, before the `--` that ends them."""
    args = args[: args.index("--")] if "--" in args else args
    for index, arg in enumerate(args):
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
        if arg == name and index + 1 < len(args):
            return args[index + 1]
    return None


async def run(prompt: str, model: str, config_path: str | None, session_id: str) -> dict[str, Any]:
    """The agent loop: ask the model, run the MCP tools it calls, until it answers."""
    import httpx2

    base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/")
    headers = {
        "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
        "anthropic-version": "2023-06-01",
    }
    server = {"url": None, "headers": {}}
    if config_path:
        with open(config_path) as file:
            server = json.load(file)["mcpServers"]["sagents"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    used = {"input_tokens": 0, "output_tokens": 0}
    turns, answer = 0, ""
    tools: list[dict[str, Any]] = []
    async with (
        httpx2.AsyncClient(timeout=60) as api,
        httpx2.AsyncClient(headers=server["headers"]) as http,
    ):
        async with injected_tools(server, http) as session:
            if session is not None:
                listed = await session.list_tools()
                tools = [
                    {
                        "name": f"mcp__sagents__{t.name}",
                        "description": t.description or "",
                        "input_schema": t.input_schema,
                    }
                    for t in listed.tools
                ]
            while True:
                turns += 1
                body = {"model": model, "max_tokens": 1024, "messages": messages, "tools": tools}
                reply = (await api.post(f"{base}/v1/messages", json=body, headers=headers)).json()
                for key in used:
                    used[key] += int(reply.get("usage", {}).get(key, 0))
                blocks = reply.get("content", [])
                say(
                    {
                        "type": "assistant",
                        "session_id": session_id,
                        "message": {"role": "assistant", "model": model, "content": blocks},
                    }
                )
                messages.append({"role": "assistant", "content": blocks})
                calls = [b for b in blocks if b.get("type") == "tool_use"]
                if not calls or session is None:
                    answer = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                    break
                results = []
                for call in calls:
                    name = call["name"].removeprefix("mcp__sagents__")
                    out = await session.call_tool(name, call.get("input") or {})
                    text = "".join(getattr(part, "text", "") for part in out.content)
                    results.append(
                        {"type": "tool_result", "tool_use_id": call["id"], "content": text}
                    )
                say(
                    {
                        "type": "user",
                        "session_id": session_id,
                        "message": {"role": "user", "content": results},
                    }
                )
                messages.append({"role": "user", "content": results})
    return {"answer": answer, "usage": used, "turns": turns}


@asynccontextmanager
async def injected_tools(server: dict[str, Any], http: Any) -> AsyncIterator[Any]:
    """The injected MCP server's client session, or None when the CLI was given none."""
    if not server["url"]:
        yield None
        return
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(server["url"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def main() -> None:
    args = sys.argv[1:]
    prompt = args[args.index("--") + 1] if "--" in args else ""
    model = option(args, "--model") or "claude-sonnet-4-5"
    session_id = str(uuid.uuid4())
    started = time.monotonic()
    say(
        {
            "type": "system",
            "subtype": "init",
            "session_id": session_id,
            "model": model,
            "tools": ["mcp__sagents"],
        }
    )
    done = asyncio.run(run(prompt, model, option(args, "--mcp-config"), session_id))
    used = done["usage"]
    cost = (
        used["input_tokens"] * PRICE_PER_MILLION["input"]
        + used["output_tokens"] * PRICE_PER_MILLION["output"]
    ) / 1e6
    say(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": done["answer"],
            "session_id": session_id,
            "num_turns": done["turns"],
            "duration_ms": int((time.monotonic() - started) * 1000),
            "total_cost_usd": cost,
            "usage": used,
            "permission_denials": [],
        }
    )


if __name__ == "__main__":
    main()
