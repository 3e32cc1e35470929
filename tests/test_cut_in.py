"""A busy child whose kind takes interrupts is cut into (issue 30 item 6): a second `task` call
for a working Resident or Realtime child joins the task it works on at its next turn boundary
(Realtime keeps only the newest one waiting), live and after a reopen."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import sagents_nb as sn
from tests.test_custom_kind import skim

pytestmark = pytest.mark.timeout(60)


def parallel(agent: str, prompts: list[str], requests: list[sn.ChatRequest]) -> Callable:
    """The parent calls `agent` once per prompt in one reply; the child skims its first input,
    then answers every input it has seen since."""

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        if "task" in req.tools:
            if req.last["role"] == "user":
                return sn.reply(
                    tool_calls=[sn.call("task", agent=agent, prompt=p) for p in prompts]
                )
            return " | ".join(req.tool_results)
        requests.append(req)
        asked = [m["content"] for m in req.messages if m["role"] == "user"]
        if len(asked) == 1:
            return sn.reply(tool_calls=[sn.call("skim", what=asked[0])])
        return "à la fois : " + " + ".join(asked)

    return handler


def test_a_second_task_for_a_busy_resident_cuts_into_its_work() -> None:
    prompts = ["Quelle heure est-il à Paris ? 🕐", "東京は何時ですか？"]
    requests: list[sn.ChatRequest] = []
    keeper = sn.Agent("keeper", does="answers", tools=[skim], kind=sn.kinds.Resident())
    session = sn.Session(
        sn.Agent("boss", team=[keeper]), llm=sn.mock_llm(parallel("keeper", prompts, requests))
    )
    result = session.send("go").result()
    both = "à la fois : " + " + ".join(prompts)
    assert result.text == f"{both} | {both}"  # one answer for the task and the input that cut in
    assert len(requests) == 2  # skimmed the first, then answered both: no third task
    second = requests[1].messages
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "user"]
    child = session.node("boss/keeper.1")
    assert child is not None and not child.inbox and not child.joined
    notes = [e.detail for e in result.events if e.type == "status_changed" and e.path == child.path]
    assert f"an input cut in: {prompts[1]}" in notes


def test_a_busy_realtime_child_keeps_the_newest_input_and_is_cut_into_by_it() -> None:
    prompts = ["un 🎧", "二つ目", "trois 🎶"]
    requests: list[sn.ChatRequest] = []
    live = sn.Agent("live", does="streams", tools=[skim], kind=sn.kinds.Realtime())
    session = sn.Session(
        sn.Agent("boss", team=[live]), llm=sn.mock_llm(parallel("live", prompts, requests))
    )
    first, second, third = session.send("go").result().text.split(" | ")
    assert first == third == "à la fois : un 🎧 + trois 🎶"
    assert second.startswith("[incomplete]") and "took a newer input" in second
    assert len(requests) == 2


def test_an_input_waiting_for_a_paused_resident_is_kept_by_the_store(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    prompts = ["Résume le chapitre 1 📖", "第二章も要約して"]

    def team() -> sn.Agent:
        keeper = sn.Agent(
            "keeper", does="answers", tools=[skim], kind=sn.kinds.Resident(), pause_on={"tool"}
        )
        return sn.Agent("boss", team=[keeper])

    requests: list[sn.ChatRequest] = []
    session = sn.Session(team(), llm=sn.mock_llm(parallel("keeper", prompts, requests)), store=db)
    run = session.send("go")
    assert run.wait() == "paused"  # the keeper waits at its skim call for the first prompt
    keeper = session.node("boss/keeper.1")
    assert keeper is not None and [i.prompt for i in keeper.inbox] == [prompts[1]]
    copy = tmp_path / "restarted.db"  # the store as a restarted kernel finds it
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    run.cancel()  # the first kernel's run ends here, in its own store
    assert run.wait() == "cancelled"

    again = sn.Session.open(
        copy, session.id, agent=team(), llm=sn.mock_llm(parallel("keeper", prompts, requests))
    )
    resumed = again.resume()
    while resumed.wait() == "paused":
        resumed.approve()
    both = "à la fois : " + " + ".join(prompts)
    assert resumed.result().text == f"{both} | {both}"
    child = again.node("boss/keeper.1")
    assert child is not None
    assert [m.content for m in child.history if m.role == "user"] == prompts
