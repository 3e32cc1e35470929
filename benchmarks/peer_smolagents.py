"""smolagents `ToolCallingAgent` with a fake `Model` returning tool calls.

An agent answers through smolagents' own `final_answer` tool (a model call, not counted as a tool
call). The child is a second agent run (`reset=True`) from the parent's `task` tool. The fake model
decides in O(1): a counter for the parent, the message count for a child.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from _common import Clock, main
from smolagents import LogLevel, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

clock = Clock()
state = {"parent": 0, "n": 0, "ids": 0}
MAX_STEPS = 1_000_000


class FakeModel(Model):
    def __init__(self, decide: Any) -> None:
        super().__init__(model_id="fake")
        self.decide = decide

    def generate(self, messages: Any, stop_sequences: Any = None, **kwargs: Any) -> ChatMessage:
        clock.tick()
        name, arguments = self.decide(messages)
        state["ids"] += 1
        function = ChatMessageToolCallFunction(name=name, arguments=arguments)
        call = ChatMessageToolCall(function=function, id=f"call_{state['ids']}", type="function")
        return ChatMessage(role=MessageRole.ASSISTANT, content=None, tool_calls=[call])


def child_decide(messages: Any) -> Any:
    # system, task, then an (assistant call, tool response) pair per step
    if len(messages) < 6:
        return "noop", {"x": 1}
    return "final_answer", {"answer": "child done"}


def parent_decide(messages: Any) -> Any:
    k = state["parent"]
    state["parent"] += 1
    if k < state["n"]:
        return "task", {"agent": "worker", "prompt": f"p{k}"}
    return "final_answer", {"answer": "done"}


def solo_decide(messages: Any) -> Any:
    k = state["parent"]
    state["parent"] += 1
    return ("noop", {"x": 1}) if k < state["n"] else ("final_answer", {"answer": "done"})


@tool
def noop(x: int) -> str:
    """Trivial tool.

    Args:
        x: a number.
    """
    clock.tools += 1
    return "ok"


def agent(tools: list[Any], decide: Any) -> ToolCallingAgent:
    return ToolCallingAgent(
        tools=tools, model=FakeModel(decide), max_steps=MAX_STEPS, verbosity_level=LogLevel.OFF
    )


worker = agent([noop], child_decide)


@tool
def task(agent: str, prompt: str) -> str:
    """Delegate a subtask to an isolated subagent.

    Args:
        agent: which team member does the subtask.
        prompt: the subtask.
    """
    clock.tools += 1
    return str(worker.run(prompt, reset=True))


parent = agent([task], parent_decide)
solo = agent([noop], solo_decide)


def run_with(top: ToolCallingAgent, n: int) -> Clock:
    state.update(parent=0, n=n)
    clock.begin()
    out = top.run("go", reset=True)
    clock.finish()
    assert str(out) == "done", out
    return clock


if __name__ == "__main__":
    main(
        "smolagents",
        version("smolagents"),
        {"fanout": lambda n: run_with(parent, n), "long": lambda n: run_with(solo, n)},
    )
