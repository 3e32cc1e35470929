#!/usr/bin/env python3
"""A tiny stand-in for Claude Code's `-p ... --output-format stream-json` mode, for notebook 06.

It greets, calls the injected `sagents` MCP tool `lookup` when given `--mcp-config`, and ends
with a `result` line, printing the same JSON lines the real CLI prints.
"""

from __future__ import annotations

import asyncio
import json
import sys


def say(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def assistant(*blocks: dict) -> None:
    say({"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}})


async def call_lookup(config_path: str, topic: str) -> str:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with open(config_path) as file:
        server = json.load(file)["mcpServers"]["sagents"]
    async with (
        httpx2.AsyncClient(headers=server["headers"]) as http,
        streamable_http_client(server["url"], http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        reply = await session.call_tool("lookup", {"topic": topic})
        return reply.content[0].text


def main() -> None:
    args = sys.argv[1:]
    prompt = args[args.index("--") + 1] if "--" in args else ""
    config = next((a.split("=", 1)[1] for a in args if a.startswith("--mcp-config=")), None)
    say({"type": "system", "subtype": "init", "model": "fake-claude", "tools": ["mcp__sagents"]})
    assistant({"type": "thinking", "thinking": f"The user asked: {prompt}"})
    answer = f"You asked: {prompt}"
    if config:
        assistant({"type": "tool_use", "id": "toolu_1", "name": "mcp__sagents__lookup",
                   "input": {"topic": prompt}})
        answer += f". The kernel's lookup tool says: {asyncio.run(call_lookup(config, prompt))}"
    assistant({"type": "text", "text": answer})
    say({"type": "result", "subtype": "success", "is_error": False, "result": answer,
         "usage": {"input_tokens": 42, "output_tokens": 7}})


if __name__ == "__main__":
    main()
