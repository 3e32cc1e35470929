"""langgraph `create_react_agent` with a fake chat model (a `BaseChatModel` subclass).

The child is a second compiled react agent, invoked from the parent's `task` tool. The fake model
decides in O(1): a counter for the parent, the message count for a child.
"""

from __future__ import annotations

import warnings
from importlib.metadata import version
from typing import Any

from _common import Clock, main

warnings.filterwarnings("ignore")

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402

clock = Clock()
state = {"parent": 0, "n": 0, "ids": 0}
CONFIG = {"recursion_limit": 1_000_000}


class FakeChat(BaseChatModel):
    """Answers with `decide(messages)`: a text, or a (tool, arguments) pair."""

    decide: Any

    @property
    def _llm_type(self) -> str:
        return "fake"

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeChat:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        clock.tick()
        decision = self.decide(messages)
        if isinstance(decision, str):
            message = AIMessage(content=decision)
        else:
            state["ids"] += 1
            name, arguments = decision
            call = {"name": name, "args": arguments, "id": f"call_{state['ids']}"}
            message = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])


def child_decide(messages: Any) -> Any:
    return ("noop", {"x": 1}) if len(messages) < 5 else "child done"


def parent_decide(messages: Any) -> Any:
    k = state["parent"]
    state["parent"] += 1
    return ("task", {"agent": "worker", "prompt": f"p{k}"}) if k < state["n"] else "done"


def solo_decide(messages: Any) -> Any:
    k = state["parent"]
    state["parent"] += 1
    return ("noop", {"x": 1}) if k < state["n"] else "done"


@tool
def noop(x: int) -> str:
    """Trivial tool.

    Args:
        x: a number.
    """
    clock.tools += 1
    return "ok"


worker = create_react_agent(FakeChat(decide=child_decide), [noop])


@tool
def task(agent: str, prompt: str) -> str:
    """Delegate a subtask to an isolated subagent.

    Args:
        agent: which team member does the subtask.
        prompt: the subtask.
    """
    clock.tools += 1
    out = worker.invoke({"messages": [("user", prompt)]}, CONFIG)
    return str(out["messages"][-1].content)


parent = create_react_agent(FakeChat(decide=parent_decide), [task])
solo = create_react_agent(FakeChat(decide=solo_decide), [noop])


def run_with(graph: Any, n: int) -> Clock:
    state.update(parent=0, n=n)
    clock.begin()
    out = graph.invoke({"messages": [("user", "go")]}, CONFIG)
    clock.finish()
    assert out["messages"][-1].content == "done"
    return clock


if __name__ == "__main__":
    main(
        "langgraph",
        f"langgraph {version('langgraph')}, langchain-core {version('langchain-core')}",
        {"fanout": lambda n: run_with(parent, n), "long": lambda n: run_with(solo, n)},
    )
