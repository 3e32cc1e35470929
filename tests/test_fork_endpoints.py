"""A fork gives each node the endpoint in force at its cut, though the agents are shared: an
`agent.model = ...` made on a child's agent after the cut (in the origin) is not the fork's,
and the origin's agent is never touched. A reopen in this process does the same; one that
cannot have the object (another process) says so with an `llm_swapped` at the next request."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn

from .test_fork_faithful import note

pytestmark = pytest.mark.timeout(60)

CALLS: dict[str, Counter[str]] = {}


def answer(req: sn.ChatRequest) -> sn.Reply | str:
    """The chef delegates once; the aide swaps its own model, notes, then answers."""
    done = len(req.tool_results)
    if req.agent == "chef":
        if not done:
            return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt="cherche 猫 🐈")])
        return f"chef: {req.tool_results[-1]}"
    if done < 2:
        return sn.reply(tool_calls=[sn.call(["swap", "note"][done], text="é — 二")])
    return f"aide: {req.tool_results[-1]}"


def endpoint(name: str) -> Any:
    """A mock answering `answer`, counting its calls by the calling node's path."""

    def handler(req: sn.ChatRequest) -> sn.Reply | str:
        CALLS.setdefault(name, Counter())[req.node or ""] += 1
        return answer(req)

    handler.__name__ = name
    return sn.mock_llm(handler)


def tree(first: Any, second: Any) -> tuple[sn.Agent, sn.Agent]:
    """The chef and its aide on `first`, whose `swap` tool sets its model to `second`."""
    aide = sn.Agent("aide", does="helps", model=first)

    @sn.tool
    def swap(text: str) -> str:
        """Swap the aide's model.

        Args:
            text: why.
        """
        aide.model = second
        return f"swapped: {text}"

    aide.tools = [swap, note]
    return sn.Agent("chef", team=[aide]), aide


@pytest.fixture
def origin(tmp_path: Path) -> tuple[sn.Session, sn.Agent, Any, Any, int]:
    first, second = endpoint("first"), endpoint("second")
    chef, aide = tree(first, second)
    session = sn.Session(chef, llm=endpoint("boss"), store=tmp_path / "runs.db")
    assert session.send("go").result(timeout=20).text == "chef: aide: noté : é — 二"
    swapped = [e for e in session.events if e.type == "llm_swapped"]
    assert [(e.path, e.old, e.new) for e in swapped] == [("chef/aide.1", first.label, second.label)]
    CALLS.clear()
    return session, aide, first, second, swapped[0].seq


def resumed(fork: sn.Session) -> dict[str, Counter[str]]:
    """Which endpoint answered which node when `fork` was resumed (its pauses approved)."""
    CALLS.clear()
    run = fork.resume()
    while run.wait(timeout=20) == "paused":
        run.approve()
    assert run.result().text == "chef: aide: noté : é — 二"
    return dict(CALLS)


def test_a_fork_before_a_childs_model_swap_runs_it_on_the_endpoint_it_had(
    origin: tuple[sn.Session, sn.Agent, Any, Any, int],
) -> None:
    session, aide, _, second, swap = origin
    choices = list(session.endpoint_choices)
    before = session.fork(at=swap - 1)
    # the aide's two requests after the swap tool ran: on its first endpoint, as at the cut
    assert resumed(before) == {"first": Counter({"chef/aide.1": 2}), "boss": Counter({"chef": 1})}
    assert not [e for e in before.events if e.type == "llm_swapped" and e.seq >= swap]
    after = session.fork(at=swap)
    assert resumed(after) == {"second": Counter({"chef/aide.1": 2}), "boss": Counter({"chef": 1})}
    # the origin is untouched: its agent keeps the model set last, its node is not pinned
    assert aide.model is second
    assert session.node("chef/aide.1").pinned_endpoint is None  # type: ignore[union-attr]
    assert session.endpoint_choices == choices


def test_a_fork_at_a_model_pause_after_the_swap_sends_that_request_where_it_was_built(
    tmp_path: Path,
) -> None:
    first, second = endpoint("first"), endpoint("second")
    chef, aide = tree(first, second)
    session = sn.Session(chef, llm=endpoint("boss"), store=tmp_path / "runs.db")
    run = session.send("go", pause_on={"model"})
    pauses = []
    while run.wait(timeout=20) == "paused":
        assert run.paused_at is not None
        pauses.append((run.paused_at.path, run.paused_at.request.endpoint))  # type: ignore[union-attr]
        run.approve()
    # the request after the swap is shown at its pause with the endpoint it goes to
    assert pauses[2:4] == [("chef/aide.1", second.label), ("chef/aide.1", second.label)]
    paused = [e.seq for e in session.events if e.type == "paused"]
    aide.model = first  # changed in the origin after the cut: not the fork's
    fork = session.fork(at=paused[2])
    assert [(p.path, p.action) for p in fork.pending] == [("chef/aide.1", "model")]
    assert resumed(fork) == {"second": Counter({"chef/aide.1": 2}), "boss": Counter({"chef": 1})}
    aide.model = endpoint("third")  # given after the fork: the fork follows its agent again
    fork = session.fork(at=paused[2])
    aide.model = third = endpoint("third")
    assert resumed(fork) == {"third": Counter({"chef/aide.1": 2}), "boss": Counter({"chef": 1})}
    assert [e.new for e in fork.events if e.type == "llm_swapped"][-1] == third.label


def test_a_reopen_in_this_process_keeps_the_endpoint_in_force_at_its_cut(
    origin: tuple[sn.Session, sn.Agent, Any, Any, int],
) -> None:
    session, _, _, _, swap = origin
    fork = session.fork(at=swap - 1)
    reopened = sn.Session.open(session.store, fork.id, agent=session.agent, llm=endpoint("boss"))
    assert resumed(reopened) == {"first": Counter({"chef/aide.1": 2}), "boss": Counter({"chef": 1})}


def test_a_reopen_without_the_endpoint_object_records_the_swap_it_makes(
    origin: tuple[sn.Session, sn.Agent, Any, Any, int],
) -> None:
    """As in a new process: the agents are built again from code, so the aide is back on an
    endpoint like its first; the stored events say it was on `second` at the cut, so its next
    request records the change instead of making it silently."""
    session, _, _, second, swap = origin
    fork = session.fork(at=swap)
    chef, _ = tree(endpoint("first"), endpoint("second"))
    reopened = sn.Session.open(session.store, fork.id, agent=chef, llm=endpoint("boss"))
    assert resumed(reopened) == {"first": Counter({"chef/aide.1": 2}), "boss": Counter({"chef": 1})}
    swapped = [(e.path, e.old, e.new) for e in reopened.events if e.type == "llm_swapped"]
    assert swapped[-1] == ("chef/aide.1", second.label, "mock:first")
    # built again on an endpoint of the same label: nothing to record
    chef, _ = tree(endpoint("second"), endpoint("second"))
    fork = session.fork(at=swap)
    reopened = sn.Session.open(session.store, fork.id, agent=chef, llm=endpoint("boss"))
    assert resumed(reopened) == {
        "second": Counter({"chef/aide.1": 2}),
        "boss": Counter({"chef": 1}),
    }
    assert len([e for e in reopened.events if e.type == "llm_swapped"]) == 1
