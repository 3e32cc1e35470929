"""The context pane's sizes compare like with like: the view and its storage are both estimated
by the session's token counter; the endpoint's reported prompt tokens are shown apart, as
measured."""

from __future__ import annotations

import pytest

import sagents_nb as sn
from sagents_nb.events import ContextBuilt
from sagents_nb.notebook._context_pane import context_pane
from sagents_nb.notebook._projector import Projector

TEXTS = [
    "lis le fichier « été » 📄",
    "ファイルを読んでください",
    "读一下这个文件",
    "print('ok')  # 🐍",
]


@sn.tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: which file.
    """
    return f"contenu de {path} : « rien à signaler » ✅ " * 20


def _tool_then_answer(request: sn.ChatRequest) -> object:
    if len(request.tool_results) < 3:
        return sn.reply(
            tool_calls=[sn.call("read_file", path=f"notes-{len(request.tool_results)}.md")]
        )
    return "fini ✅"


@pytest.mark.parametrize("text", TEXTS, ids=["fr", "ja", "zh", "code"])
def test_storage_is_never_above_the_view_while_everything_is_in_view(text: str) -> None:
    agent = sn.Agent("lead", instructions="Tu lis des fichiers.", tools=[read_file])
    session = sn.Session(agent, llm=sn.mock_llm(_tool_then_answer))  # it reports usage
    session.send(text).result()
    built = [e for e in session.events if isinstance(e, ContextBuilt)]
    assert len(built) == 4 and all(e.hidden == 0 for e in built)
    # the storage is the view less its system prompt, counted the same way
    assert all(0 < e.storage_tokens < e.view_tokens for e in built)
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    pane = context_pane(projector.nodes["lead"], None)
    assert all(p["storage_tokens"] < p["view_tokens"] for p in pane["chart"])
    # the endpoint's own figure is there too, apart, for each point and the chosen turn
    assert all(p["prompt_tokens"] and p["prompt_tokens"] > 0 for p in pane["chart"])
    assert pane["detail"]["prompt_tokens"] == pane["chart"][-1]["prompt_tokens"]


def test_a_plugged_in_counter_counts_storage_as_it_counts_the_view() -> None:
    counter = lambda message: len(message.content or "")  # noqa: E731
    agent = sn.Agent("lead", instructions="", tools=[read_file])
    session = sn.Session(agent, llm=sn.mock_llm(_tool_then_answer), token_counter=counter)
    session.send("« bonjour » 🌍").result()
    for event in session.events:
        if isinstance(event, ContextBuilt):
            assert event.storage_tokens <= event.view_tokens
