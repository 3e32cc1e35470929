"""The floor: a hand-rolled agent loop over httpx + MockTransport with OpenAI chat-completions JSON.

No framework: the loop builds the JSON body, posts it, the mock transport parses it and answers,
the loop parses the reply, runs the tool and appends the messages. `fanout` / `long` use
`httpx.AsyncClient` (the transport sagents_nb uses, and the ratio's denominator);
`fanout-sync` / `long-sync` use `httpx.Client`, shown for reference.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from _common import Clock, main

URL = "http://mock.local/v1/chat/completions"
NOOP = {
    "type": "function",
    "function": {
        "name": "noop",
        "description": "Trivial tool.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "integer", "description": "a number."}},
            "required": ["x"],
        },
    },
}
TASK = {
    "type": "function",
    "function": {
        "name": "task",
        "description": "Delegate a subtask to an isolated subagent. Available agents — worker",
        "parameters": {
            "type": "object",
            "properties": {"agent": {"type": "string"}, "prompt": {"type": "string"}},
            "required": ["agent", "prompt"],
        },
    },
}


class Server:
    """The mock endpoint: O(1) decisions from counters and the request's message count."""

    def __init__(self, scenario: str, n: int, clock: Clock) -> None:
        self.scenario, self.n, self.clock = scenario, n, clock
        self.parent_turns = 0
        self.ids = 0

    def decide(self, body: dict[str, Any]) -> tuple[str | None, tuple[str, dict[str, Any]] | None]:
        if self.scenario.startswith("long"):
            k = self.parent_turns
            self.parent_turns += 1
            return (None, ("noop", {"x": 1})) if k < self.n else ("done", None)
        if any(t["function"]["name"] == "task" for t in body.get("tools", ())):
            k = self.parent_turns
            self.parent_turns += 1
            if k < self.n:
                return None, ("task", {"agent": "worker", "prompt": f"p{k}"})
            return "done", None
        if len(body["messages"]) < 5:
            return None, ("noop", {"x": 1})
        return "child done", None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.clock.tick()
        body = json.loads(request.content)
        text, call = self.decide(body)
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if call is not None:
            self.ids += 1
            message["tool_calls"] = [
                {
                    "id": f"call_{self.ids}",
                    "type": "function",
                    "function": {"name": call[0], "arguments": json.dumps(call[1])},
                }
            ]
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-floor",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if call else "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )


def run_tool(clock: Clock, name: str, arguments: dict[str, Any]) -> str:
    clock.tools += 1
    return "ok"


async def agent_loop(
    client: httpx.AsyncClient, clock: Clock, messages: list[dict[str, Any]], tools: list[Any]
) -> str:
    while True:
        body = {"model": "mock", "messages": messages, "tools": tools}
        response = await client.post(URL, content=json.dumps(body).encode())
        message = response.json()["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return message["content"] or ""
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            if call["function"]["name"] == "task":
                clock.tools += 1
                user = {"role": "user", "content": arguments["prompt"]}
                output = await agent_loop(client, clock, [user], [NOOP])
            else:
                output = run_tool(clock, call["function"]["name"], arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


def sync_loop(
    client: httpx.Client, clock: Clock, messages: list[dict[str, Any]], tools: list[Any]
) -> str:
    while True:
        body = {"model": "mock", "messages": messages, "tools": tools}
        response = client.post(URL, content=json.dumps(body).encode())
        message = response.json()["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return message["content"] or ""
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            if call["function"]["name"] == "task":
                clock.tools += 1
                user = {"role": "user", "content": arguments["prompt"]}
                output = sync_loop(client, clock, [user], [NOOP])
            else:
                output = run_tool(clock, call["function"]["name"], arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


def scenario(name: str):
    top_tools = [NOOP] if name.startswith("long") else [TASK]

    def run(n: int) -> Clock:
        clock = Clock()
        transport = httpx.MockTransport(Server(name, n, clock))
        first = [{"role": "user", "content": "go"}]
        if name.endswith("-sync"):
            with httpx.Client(transport=transport) as client:
                clock.begin()
                sync_loop(client, clock, first, top_tools)
                clock.finish()
            return clock

        async def go() -> None:
            async with httpx.AsyncClient(transport=transport) as client:
                clock.begin()
                await agent_loop(client, clock, first, top_tools)
                clock.finish()

        asyncio.run(go())
        return clock

    return run


if __name__ == "__main__":
    main(
        "floor",
        f"httpx {httpx.__version__}",
        {name: scenario(name) for name in ("fanout", "long", "fanout-sync", "long-sync")},
    )
