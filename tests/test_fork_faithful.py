"""A fork looks like the state it was cut from: at random cuts of a depth-3 run with a kind swap,
a preprocessor swap and an endpoint swap on a grandchild's agent in it, the fork's tree, each
node's kind (class and arguments), the preprocessor and endpoint, each node's endpoint and the
pending pauses are the origin's as of the cut."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._runtime.turns import agent_choice, node_choice, resolved
from sagents_nb.kinds import Main, Realtime, Resident, Worker

from .test_store_fork import Shouting

pytestmark = pytest.mark.timeout(120)

CUTS = 20

KINDS: dict[str, tuple[Any, Any]] = {
    # the lead's kind before and after the swap made between the two messages
    "worker": (Worker(max_turns=7), Resident(window_tokens=3000)),
    "resident": (Resident(window_tokens=4000, keep_recent=2), Worker()),
    "realtime": (Realtime(window=3), Worker(max_turns=9)),
    "main": (Main(top_k=8, recent=4), Realtime(window=2)),
}


def model(req: sn.ChatRequest) -> sn.Reply | str:
    """Each node delegates once to its member, then answers with what came back."""
    if "task" in req.tools and not req.tool_results:
        member = {"chef": "lead", "lead": "aide"}[req.agent or ""]
        return sn.reply(
            tool_calls=[sn.call("task", agent=member, prompt=f"cherche « {req.last_user} » 猫")]
        )
    if req.agent == "aide" and not req.tool_results:
        return sn.reply(tool_calls=[sn.call("note", text="trouvé 🐈")])
    return f"{req.agent}: {req.tool_results[-1] if req.tool_results else 'rien'}"


@sn.tool
def note(text: str) -> str:
    """Keep a note.

    Args:
        text: the note.
    """
    return f"noté : {text}"


def kind_of(kind: Any) -> tuple[type, Any]:
    return type(kind), kind._given


def state_of(session: sn.Session, *, forked: bool = False) -> dict[str, Any]:
    """What a fork at this point must show: tree, kinds, parts in force, pending pauses, and
    the endpoint each node is on: the one of its last request (else the one its agents chose
    when it was spawned); in a fork, the one its next request goes to (`node_choice`)."""
    nodes = list(session.root.walk())

    def endpoint(node: Any) -> Any:
        if forked:
            return resolved(node, node_choice(node))[0]
        return resolved(node, node.choice or agent_choice(node))[0]

    return {
        "endpoints": {n.path: endpoint(n) for n in nodes},
        "tree": [(n.path, n.parent.path if n.parent else None) for n in nodes],
        "kinds": {n.path: kind_of(n.kind) for n in nodes},
        "preprocessor": session.preprocessor,
        "llm": session.llm,
        "pending": session.pending,
        "paused": sorted(n.path for n in nodes if n.status == "paused"),
    }


def recorded_run(
    tmp_path: Path, before: Any, after: Any, aide: Any = None
) -> tuple[sn.Session, dict[int, Any]]:
    """Two messages; the lead's and aide's kinds (the aide's `aide` if given) and the
    preprocessor and endpoint swapped between them; the origin's state as of each event."""
    aide = sn.Agent("aide", does="helps", tools=[note], kind=aide or before)
    lead = sn.Agent("lead", does="leads the search", team=[aide], kind=before)
    chef = sn.Agent("chef", team=[lead])
    session = sn.Session(chef, llm=sn.mock_llm(model), store=tmp_path / "runs.db")
    states: dict[int, Any] = {}
    # on the loop, as each event is emitted: the origin's state as of that event
    session.bus.subscribe(lambda event: states.__setitem__(event.seq, state_of(session)))
    run = session.send("un", pause_on={"tool"})
    while run.wait(timeout=20) == "paused":
        run.approve()
    lead.kind = aide.kind = after  # a kind swap, and a preprocessor swap, between the messages
    session.preprocessor = Shouting()
    session.llm = sn.mock_llm(model)
    aide.model = sn.mock_llm(model)  # and the grandchild's own endpoint: the agents are shared
    run = session.send("deux — 二", pause_on={"model"})
    while run.wait(timeout=20) == "paused":
        run.approve()
    assert run.status == "done"
    session.flush()
    return session, states


def pause_openings(events: list[sn.Event]) -> set[int]:
    """The status changes that open a pause (the node's `paused`, its parents' `waiting`): they
    come just before the `paused` event that records it, so a cut among them is before it."""
    opening: set[int] = set()
    for index, event in enumerate(events):
        if event.type == "paused":
            back = index - 1
            while back >= 0 and events[back].type == "status_changed":
                opening.add(events[back].seq)
                back -= 1
    return opening


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_fork_at_random_cuts_equals_the_origin_as_of_the_cut(tmp_path: Path, name: str) -> None:
    before, after = KINDS[name]
    check_random_cuts(*recorded_run(tmp_path, before, after), name)


def check_random_cuts(session: sn.Session, states: dict[int, Any], name: str) -> None:
    """Fork at `CUTS` random events (and every pause and swap): each equals the origin then;
    and so does its reopen (in this process: a kind whose arguments are not stored, as a
    Native's `env`, is the very object it ran with)."""
    assert any(e.type == "kind_swapped" for e in session.events)
    assert any(e.type == "preprocessor_swapped" for e in session.events)
    opening = pause_openings(list(session.events))
    cuts = random.Random(name).sample(sorted(states.keys() - opening), CUTS)
    # the pauses (and the swaps) are the cuts the debugger is used at: always among them
    cuts += [e.seq for e in session.events if e.type in ("paused", "preprocessor_swapped")]
    for seq in sorted(set(cuts)):
        fork = session.fork(at=seq)
        want, got = states[seq], state_of(fork, forked=True)
        assert got["preprocessor"] is want["preprocessor"], seq
        assert got["llm"] is want["llm"], seq
        assert got["pending"] == want["pending"], seq
        # a node reads paused where a decision waits (not in the instant after one was taken)
        assert got["paused"] == sorted({p.path for p in want["pending"]}), seq
        # a node spawned after the cut's last committed step is not in it yet
        assert got["tree"] == want["tree"][: len(got["tree"])], seq
        assert got["kinds"] == {p: want["kinds"][p] for p in got["kinds"]}, seq
        assert got["endpoints"] == {p: want["endpoints"][p] for p in got["endpoints"]}, seq
        again = sn.Session.open(session.store, fork.id, agent=session.agent)
        assert state_of(again)["kinds"] == got["kinds"], seq


def what_if_model(req: sn.ChatRequest) -> sn.Reply | str:
    """The chef asks the lead twice, one after the other; each lead asks its aide, which notes."""
    done = len(req.tool_results)
    if req.agent == "chef":
        if done < 2:
            topic = ["alpha", "bêta — ベータ"][done]
            return sn.reply(tool_calls=[sn.call("task", agent="lead", prompt=topic)])
        return "chef: " + " | ".join(req.tool_results)
    if req.agent == "lead":
        if not done:
            return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt=req.last_user)])
        return f"lead: {req.tool_results[-1]}"
    if not done:
        return sn.reply(tool_calls=[sn.call("note", text=req.last_user)])
    return f"aide: {req.tool_results[-1]}"


def test_a_fork_at_a_grandchilds_model_call_reruns_only_that_subtree(tmp_path: Path) -> None:
    aide = sn.Agent("aide", does="helps", tools=[note])
    lead = sn.Agent("lead", does="leads the search", team=[aide])
    chef = sn.Agent("chef", team=[lead])
    session = sn.Session(chef, llm=sn.mock_llm(what_if_model), store=tmp_path / "runs.db")
    origin = session.send("go").result(timeout=20)
    assert origin.text.count("noté") == 2
    grandchild = "chef/lead.2/aide.1"
    cut = [e for e in session.events if e.type == "model_request" and e.path == grandchild][-1]
    aide.kind = sn.kinds.Resident()  # changed since it ran: the fork still shows it as it ran

    fork = session.fork(at=cut.seq)
    assert fork.node(grandchild).kind.name == "worker"  # type: ignore[union-attr]
    calls: dict[str | None, int] = {}

    def counting(req: sn.ChatRequest) -> sn.Reply | str:
        calls[req.node] = calls.get(req.node, 0) + 1
        return what_if_model(req)

    fork.llm = sn.mock_llm(counting)
    run = fork.resume(pause_on={"model"})
    assert run.wait(timeout=20) == "paused"
    assert [(p.path, p.action) for p in fork.pending] == [(grandchild, "model")]
    assert run.paused_at is not None and run.paused_at.path == grandchild
    run.edit(reply="édité 🎯")
    while run.wait(timeout=20) == "paused":
        run.approve()
    assert run.result().text == "chef: lead: aide: noté : alpha | lead: édité 🎯"
    # only the grandchild's subtree upwards from that turn ran again: its parent's answer and
    # the chef's last turn; the edited call itself went to no model
    assert calls == {"chef/lead.2": 1, "chef": 1}


def test_a_kinds_arguments_that_may_hold_a_secret_are_not_stored() -> None:
    from sagents_nb._runtime.snapshot import kind_spec

    class Keyed(sn.kinds.BaseKind):
        name = "keyed"

        def __init__(self, api_key: str = "", window: int = 3) -> None:
            self.api_key, self.window = api_key, window

    assert kind_spec(Keyed(window=5))["given"] == [[], {"window": 5}]
    assert kind_spec(Keyed(api_key="x"))["given"] is None
    assert kind_spec(Keyed("sk-proj-4f9a8b7c6d5e4f3a2b1c"))["given"] is None
    # a CLI driver is stored by its class and fields, unless a field holds a key
    driver = sn.harness.ClaudeCode(executable="/opt/bin/claude-2026-12")
    given = kind_spec(sn.kinds.Native(driver, pass_env=["PATH"]))["given"]
    assert given[0][0]["dataclass"] == "sagents_nb.harness._claude_code:ClaudeCode"
    assert given[0][0]["fields"]["executable"] == "/opt/bin/claude-2026-12"
    keyed = sn.harness.ClaudeCode(api_key="sk-ant-4f9a8b7c6d5e4f3a2b1c")
    assert kind_spec(sn.kinds.Native(keyed))["given"] is None
    assert kind_spec(sn.kinds.Native(driver, env={"HOME": "/home/é"}))["given"] is None


def test_a_reopened_tree_shows_the_kind_each_node_ran_as_and_swaps_with_an_event(
    tmp_path: Path,
) -> None:
    aide = sn.Agent("aide", does="helps", tools=[note])
    lead = sn.Agent("lead", does="leads the search", team=[aide], kind=Worker(max_turns=6))
    chef = sn.Agent("chef", team=[lead])
    session = sn.Session(chef, llm=sn.mock_llm(what_if_model), store=tmp_path / "runs.db")
    session.send("go").result(timeout=20)
    lead.kind = Resident(window_tokens=2000)
    reopened = sn.Session.open(
        tmp_path / "runs.db", session.id, agent=chef, llm=sn.mock_llm(what_if_model)
    )
    kinds = {child.id: child.kind for child in reopened.tree.children}
    assert kinds == {"chef/lead.1": "worker", "chef/lead.2": "worker"}
    assert reopened.node("chef/lead.1").kind._given == ((), {"max_turns": 6})  # type: ignore[union-attr]
    reopened.send("encore — もう一度").result(timeout=20)
    swapped = [e for e in reopened.events if e.type == "kind_swapped"]
    assert [(e.agent, e.old, e.new) for e in swapped] == [("lead", "worker", "resident")]
