"""pydantic-ai (pydantic-ai-slim) with `FunctionModel`: the fake model is a plain function.

Delegation is pydantic-ai's own pattern: a `task` tool on the parent awaits the child agent's
`run`. The fake model decides in O(1): a counter for the parent, the message count for a child.
"""

from __future__ import annotations

from importlib.metadata import version

from _common import Clock, main
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

clock = Clock()
state = {"parent": 0, "n": 0}
UNLIMITED = UsageLimits(request_limit=None)


def child_model(messages: list, info: AgentInfo) -> ModelResponse:
    clock.tick()
    # [request] -> noop; [request, response, tool return] -> noop; 5 messages -> answer
    if len(messages) < 5:
        return ModelResponse(parts=[ToolCallPart("noop", {"x": 1})])
    return ModelResponse(parts=[TextPart("child done")])


def parent_model(messages: list, info: AgentInfo) -> ModelResponse:
    clock.tick()
    k = state["parent"]
    state["parent"] += 1
    if k < state["n"]:
        call = ToolCallPart("task", {"agent": "worker", "prompt": f"p{k}"})
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart("done")])


def noop(x: int) -> str:
    """Trivial tool.

    Args:
        x: a number.
    """
    clock.tools += 1
    return "ok"


worker = Agent(FunctionModel(child_model), tools=[noop])
parent = Agent(FunctionModel(parent_model))


@parent.tool
async def task(ctx: RunContext[None], agent: str, prompt: str) -> str:
    """Delegate a subtask to an isolated subagent.

    Args:
        agent: which team member does the subtask.
        prompt: the subtask.
    """
    clock.tools += 1
    result = await worker.run(prompt, usage=ctx.usage, usage_limits=UNLIMITED)
    return result.output


def solo_model(messages: list, info: AgentInfo) -> ModelResponse:
    clock.tick()
    k = state["parent"]
    state["parent"] += 1
    if k < state["n"]:
        return ModelResponse(parts=[ToolCallPart("noop", {"x": 1})])
    return ModelResponse(parts=[TextPart("done")])


solo = Agent(FunctionModel(solo_model), tools=[noop])


def run_with(agent: Agent, n: int) -> Clock:
    state.update(parent=0, n=n)
    clock.begin()
    result = agent.run_sync("go", usage_limits=UNLIMITED)
    clock.finish()
    assert result.output == "done", result.output
    return clock


if __name__ == "__main__":
    main(
        "pydantic-ai",
        version("pydantic-ai-slim"),
        {"fanout": lambda n: run_with(parent, n), "long": lambda n: run_with(solo, n)},
    )
