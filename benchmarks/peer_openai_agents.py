"""openai-agents (the Agents SDK) with a fake `Model` returning Responses-API output items.

Tracing is disabled (it would export to the network). The child is a second agent run by
`Runner.run` from the parent's `task` function tool. The fake model decides in O(1): a counter
for the parent, the input's item count for a child.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

from _common import Clock, main
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

set_tracing_disabled(True)
clock = Clock()
state = {"parent": 0, "n": 0, "ids": 0}
MAX_TURNS = 1_000_000


def text_item(text: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=content
    )


def call_item(name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    state["ids"] += 1
    return ResponseFunctionToolCall(
        type="function_call",
        call_id=f"call_{state['ids']}",
        name=name,
        arguments=json.dumps(arguments),
        id=f"fc_{state['ids']}",
        status="completed",
    )


class FakeModel(Model):
    def __init__(self, decide: Any) -> None:
        self.decide = decide

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kw: Any):
        clock.tick()
        decision = self.decide(input)
        item = text_item(decision) if isinstance(decision, str) else call_item(*decision)
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def child_decide(items: Any) -> Any:
    # [user] -> noop; [user, call, output] -> noop; 5 items -> answer
    return ("noop", {"x": 1}) if len(items) < 5 else "child done"


def parent_decide(items: Any) -> Any:
    k = state["parent"]
    state["parent"] += 1
    return ("task", {"agent": "worker", "prompt": f"p{k}"}) if k < state["n"] else "done"


def solo_decide(items: Any) -> Any:
    k = state["parent"]
    state["parent"] += 1
    return ("noop", {"x": 1}) if k < state["n"] else "done"


@function_tool
def noop(x: int) -> str:
    """Trivial tool.

    Args:
        x: a number.
    """
    clock.tools += 1
    return "ok"


worker = Agent(name="worker", model=FakeModel(child_decide), tools=[noop])


@function_tool
async def task(agent: str, prompt: str) -> str:
    """Delegate a subtask to an isolated subagent.

    Args:
        agent: which team member does the subtask.
        prompt: the subtask.
    """
    clock.tools += 1
    result = await Runner.run(worker, prompt, max_turns=MAX_TURNS)
    return str(result.final_output)


parent = Agent(name="parent", model=FakeModel(parent_decide), tools=[task])
solo = Agent(name="solo", model=FakeModel(solo_decide), tools=[noop])


def run_with(top: Agent, n: int) -> Clock:
    state.update(parent=0, n=n)
    clock.begin()
    result = Runner.run_sync(top, "go", max_turns=MAX_TURNS)
    clock.finish()
    assert result.final_output == "done", result.final_output
    return clock


if __name__ == "__main__":
    main(
        "openai-agents",
        version("openai-agents"),
        {"fanout": lambda n: run_with(parent, n), "long": lambda n: run_with(solo, n)},
    )
