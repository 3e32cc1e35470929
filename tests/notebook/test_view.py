"""The live view widget: following runs, throttled pushes, controls, and text kept as text."""

from __future__ import annotations

import gc
import itertools
import re
import threading
import time
import weakref
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.notebook import LiveView, view

from .conftest import XSS, delegating_handler, read_file, wait_until


def run_status(widget: LiveView) -> str | None:
    """The status of the run the view shows, once it has one."""
    run = widget.header["run"]
    return run["status"] if run else None


def notice(widget: LiveView) -> str:
    return str(widget.header["notice"]["text"])


def click(widget: LiveView, **content: Any) -> None:
    """Deliver a front-end message to the widget the way the kernel's comm does."""
    widget.comm.handle_msg(
        {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
    )


def test_a_view_attached_before_a_run_follows_it_live(team_session: sn.Session) -> None:
    widget = view(team_session)
    assert widget.tree["id"] == "coordinator" and widget.header["run"] is None
    run = team_session.send("What is in README.md?", pause_on=("task",))
    assert run.wait() == "paused"
    wait_until(lambda: widget.header["pending"], what="the pause to reach the view")
    [pending] = widget.header["pending"]
    assert (pending["action"], pending["name"], pending["path"]) == (
        "task",
        "task",
        "coordinator",
    )
    assert '"agent": "explore"' in pending["arguments"]
    assert run_status(widget) == "paused"
    assert widget.tree["status"] == "paused"
    click(widget, action="step", pause_id=pending["pause_id"])
    assert run.wait() == "paused"
    wait_until(lambda: widget.tree["children"], what="the child in the tree")
    child = widget.tree["children"][0]
    assert (child["id"], child["kind"], child["status"]) == (
        "coordinator/explore.1",
        "worker",
        "paused",
    )
    [pending] = widget.header["pending"]
    assert (pending["action"], pending["path"]) == ("model", "coordinator/explore.1")
    click(widget, action="resume")
    assert run.wait() == "done"
    wait_until(lambda: run_status(widget) == "done", what="the end of the run")
    assert widget.header["run"]["text"] == "Summary: found # demo project"
    assert widget.header["pending"] == []
    assert widget.tree["children"][0]["status"] == "done"
    assert widget.header["seq"] == team_session.events[-1].seq
    widget.close()


def test_a_view_attached_late_shows_the_same_state(team_session: sn.Session) -> None:
    early = view(team_session)
    team_session.send("What is in README.md?").result()
    late = view(team_session)
    wait_until(lambda: early.header["seq"] == late.header["seq"] == team_session.events[-1].seq)
    assert early.tree == late.tree
    assert early.current_pane() == late.current_pane()
    for widget in (early, late):
        widget.close()


def test_updates_are_throttled_and_the_last_state_always_arrives() -> None:
    calls = iter(range(200))

    def handler(request: sn.ChatRequest) -> Any:
        time.sleep(0.004)  # a run that lasts about a second
        n = next(calls, None)
        if n is None:
            return "finished"
        return sn.reply(tool_calls=[sn.call("read_file", path=f"{n}.md")])

    agent = sn.Agent("busy", tools=[read_file], max_turns=250)
    session = sn.Session(agent, llm=sn.mock_llm(handler))
    widget = view(session, rate=10)
    pushes: list[float] = []
    threads: set[str] = set()

    def count(change: Any) -> None:
        pushes.append(widget._throttle._last)  # when this push started (renders vary in length)
        threads.add(threading.current_thread().name)

    widget.observe(count, names=["header"])
    run = session.send("work")
    assert run.wait() == "done"
    assert run_status(widget) == "done"  # the run's end went out as it happened
    events = len(session.events)
    assert events > 900
    assert len(pushes) < events / 10  # coalesced (the spacing itself: test_throttle.py)
    # while the run streamed: the interval apart; its end at once, whatever the interval
    gaps = [b - a for a, b in itertools.pairwise(pushes[:-1])]
    assert min(gaps) >= 0.1 - 1e-6
    assert threads == {"sagents_nb-loop"}
    assert widget.header["events"] == events
    assert widget.tree["turns"] == 201
    widget.close()


def test_flush_pushes_the_final_state_at_once(team_session: sn.Session) -> None:
    widget = view(team_session, rate=0.01)  # the throttle alone would wait 100 s
    team_session.send("What is in README.md?").result()
    widget.flush()
    assert widget.header["seq"] == team_session.events[-1].seq
    assert run_status(widget) == "done"
    widget.close()


def test_a_runs_end_is_in_the_view_when_its_result_returns(team_session: sn.Session) -> None:
    widget = view(team_session, rate=0.01)  # the throttle alone would wait 100 s
    pushes: list[str | None] = []
    widget.observe(lambda _: pushes.append(run_status(widget)), names=["header"])
    team_session.send("What is in README.md?").result()
    assert run_status(widget) == "done"
    assert widget.header["seq"] == team_session.events[-1].seq
    assert "done" in widget.tree["status"]
    widget.flush()  # nothing asked for since: no second push
    assert pushes == ["done"]
    click(widget, action="focus", node="coordinator/explore.1")
    widget.flush()  # a click since: pushed
    assert widget.current_pane()["node"] == "coordinator/explore.1"
    widget.close()


def test_the_front_end_gets_the_updates_ipywidgets_would_send(team_session: sn.Session) -> None:
    from ipywidgets.widgets.widget import _remove_buffers

    widget = view(team_session, rate=0.01)
    sent: list[dict[str, Any]] = []
    widget.comm.send = lambda data=None, buffers=None, **_: sent.append({**data, "n": buffers})
    team_session.send("Résumé du README — 東京 ☕").result()
    [update] = sent
    state, paths, buffers = _remove_buffers(widget.get_state(list(update["state"])))
    assert update == {"method": "update", "state": state, "buffer_paths": paths, "n": buffers}
    assert set(state) == {"header", "tree", "pane"} and "東京" in state["pane"]
    widget.close()


def test_a_push_tells_observers_each_changed_trait_once(team_session: sn.Session) -> None:
    widget = view(team_session, rate=0.01)
    before = {name: getattr(widget, name) for name in ("header", "tree", "pane", "found")}
    changes: list[Any] = []
    widget.observe(changes.append, names=["header", "tree", "pane", "found"])
    team_session.send("Résumé du README — 東京 ☕").result()
    assert [change.name for change in changes] == ["header", "tree", "pane"]  # found: unchanged
    for change in changes:
        assert change.type == "change" and change.owner is widget
        assert change.old == before[change.name] and change.new == getattr(widget, change.name)
    assert "東京" in widget.pane and widget.header["run"]["status"] == "done"
    widget.close()


def test_a_closed_view_is_freed_with_its_layout(team_session: sn.Session) -> None:
    widget = view(team_session)
    team_session.send("What is in README.md?").result()
    layout, freed = widget.layout, weakref.ref(widget)
    widget.close()
    del widget
    assert layout.comm is None  # closed: out of ipywidgets' registry of open widgets
    # a pending throttled update holds the view until its timer fires (1/rate s at most)
    wait_until(lambda: gc.collect() >= 0 and freed() is None, what="the closed view to be freed")


def test_payloads_stay_text_in_state_and_are_escaped_in_the_fallback() -> None:
    @sn.tool
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: where.
        """
        return XSS

    def handler(request: sn.ChatRequest) -> Any:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("fetch", url=XSS)])
        return "page: " + request.tool_results[-1]

    session = sn.Session(sn.Agent("reader", tools=[fetch]), llm=sn.mock_llm(handler))
    result = session.send(XSS).result()
    widget = view(session)
    assert widget.header["run"]["text"] == "page: " + XSS
    assert widget.current_pane()["entries"][0]["text"] == XSS
    click(widget, action="focus", tab="tools")
    wait_until(lambda: widget.current_pane()["tab"] == "tools")
    assert widget.current_pane()["cards"][0]["result"] == XSS
    assert XSS in widget.current_pane()["cards"][0]["arguments"]
    data, _ = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    for bundle in (data, result._repr_mimebundle_(), session._repr_mimebundle_()):
        # the view's own two scripts (its saved state, packed, and its code) and nothing else
        markup = re.sub(
            r'<script type="(?:application/json|module)"( class="sagents-data")?>.*?</script>',
            "",
            bundle["text/html"],
            flags=re.S,
        )
        assert "<img" not in markup and "<script" not in markup
        assert "&lt;img src=x onerror=window.__xss=1&gt;" in markup
    assert data["text/html"].count("<script") == 2
    widget.close()


def test_decisions_at_a_pause(forecaster: sn.Session) -> None:
    run = forecaster.send("Weather?", pause_on=("tool",))
    widget = view(run)
    assert run.wait() == "paused"
    pause = widget.header["pending"][0]
    assert pause["arguments"] == '{\n "city": "Paris"\n}'
    click(widget, action="edit", pause_id=pause["pause_id"], text="{not json")
    wait_until(lambda: widget.header["notice"]["error"])
    assert "Edit needs the arguments as a JSON object" in widget.header["notice"]["text"]
    assert run.status == "paused"
    click(widget, action="approve", pause_id=pause["pause_id"] + 1)
    wait_until(lambda: "already decided" in widget.header["notice"]["text"])
    assert run.status == "paused"
    click(widget, action="edit", pause_id=pause["pause_id"], text='{"city": "Oslo"}')
    assert run.result().text == "it is sunny in Oslo"
    wait_until(lambda: run_status(widget) == "done")
    click(widget, action="resume")
    wait_until(lambda: "already finished" in widget.header["notice"]["text"])

    second = forecaster.send("Again?", pause_on=("tool",))
    widget = view(forecaster)
    assert second.wait() == "paused"
    click(widget, action="reject", pause_id=widget.header["pending"][0]["pause_id"], reason="no")
    assert second.result().text == "it is the user rejected this call: no"
    wait_until(lambda: widget.header["run"]["number"] == 2)
    click(widget, action="focus", tab="tools")
    wait_until(lambda: widget.current_pane()["tab"] == "tools")
    denied = widget.current_pane()["cards"][-1]
    assert denied["status"] == "denied"
    assert denied["notes"] == ["reject at a pause: no"]


def test_cancel_and_step_from_the_view(forecaster: sn.Session) -> None:
    run = forecaster.send("Weather?", pause_on=("model",))
    widget = view(forecaster)
    assert run.wait() == "paused"
    click(widget, action="step")
    assert run.wait() == "paused" and run.paused_at.action == "tool"
    click(widget, action="cancel")
    wait_until(lambda: run.done, what="the cancelled run to finish")
    assert run.status == "cancelled"
    wait_until(lambda: run_status(widget) == "cancelled")


def test_kind_and_preprocessor_selectors_hot_swap(team_session: sn.Session) -> None:
    mentions = sn.Mentions({"readme": "README TEXT"})
    widget = view(team_session, preprocessors={"mentions": mentions})
    assert widget.header["kinds"] == sorted(sn.kinds.registry())
    assert widget.header["agent_kinds"] == {"coordinator": "main", "explore": "worker"}
    assert widget.header["preprocessors"] == ["none", "mentions"]
    team_session.send("first").result()
    click(widget, action="kind", agent="explore", kind="resident")
    wait_until(lambda: widget.header["agent_kinds"]["explore"] == "resident")
    assert "explore uses kind resident from its next task" in widget.header["notice"]["text"]
    click(widget, action="preprocessor", name="mentions")
    assert team_session.preprocessor is mentions
    wait_until(lambda: widget.header["preprocessor"] == "mentions")
    result = team_session.send("read @readme").result()
    assert [(n.id, n.kind) for n in result.tree.children] == [
        ("coordinator/explore.1", "worker"),
        ("coordinator/explore.2", "resident"),
    ]
    wait_until(lambda: len(widget.tree["children"]) == 2)
    assert widget.tree["children"][1]["kind"] == "resident"
    types = [e.type for e in team_session.events]
    assert "kind_swapped" in types and "preprocessor_swapped" in types
    click(widget, action="kind", agent="explore", kind="nonsense")
    wait_until(lambda: widget.header["notice"]["error"])
    assert "cannot set kind 'nonsense'" in widget.header["notice"]["text"]


def test_fork_here_branches_a_durable_session() -> None:
    explore = sn.Agent("explore", does="reads files", tools=[read_file])
    coordinator = sn.Agent("coordinator", does="delegates", team=[explore])
    session = sn.Session(coordinator, llm=sn.mock_llm(delegating_handler), store=":memory:")
    session.send("What is in README.md?").result()
    widget = view(session)
    assert widget.header["fork"] is True
    click(widget, action="fork", seq=3)
    [forked] = widget.forks
    assert isinstance(forked, sn.Session) and forked.id != session.id
    assert [e.seq for e in forked.events] == [1, 2, 3]
    wait_until(lambda: f"forked at event 3: session {forked.id}, shown below" in notice(widget))
    assert "this view's .forks[0]" in notice(widget)


def test_fork_here_explains_what_a_session_without_a_store_needs(
    team_session: sn.Session,
) -> None:
    team_session.send("first").result()
    widget = view(team_session)
    assert widget.header["fork"] is False
    click(widget, action="fork", seq=3)
    wait_until(lambda: widget.header["notice"]["error"])
    assert "needs a durable session" in notice(widget)
    assert widget.forks == []


def test_a_result_view_has_no_controls(team_session: sn.Session) -> None:
    result = team_session.send("What is in README.md?").result()
    widget = view(result)
    assert widget.header["live"] is False and widget.header["kinds"] == []
    assert run_status(widget) == "done"
    assert widget.tree["children"][0]["id"] == "coordinator/explore.1"
    assert widget.tree["tokens"] == result.usage.total_tokens
    click(widget, action="focus", tab="wire")
    wait_until(lambda: widget.current_pane()["tab"] == "wire")
    assert [row["index"] for row in widget.current_pane()["exchanges"]] == [1, 4]
    click(widget, action="resume")
    wait_until(lambda: widget.header["notice"]["error"])


def test_a_result_keeps_its_own_runs_exchanges_and_its_view_shows_them() -> None:
    explore = sn.Agent("explore", does="reads files", tools=[read_file])
    coordinator = sn.Agent("coordinator", does="delegates", team=[explore])
    llm = sn.mock_llm(delegating_handler, keep_exchanges=6)
    session = sn.Session(coordinator, llm=llm)
    first = session.send("Qu'y a-t-il dans README.md ? 📄").result()
    second = session.send("Et maintenant ? 今は？").result()
    assert len(first.exchanges) == len(second.exchanges) == 4
    assert not {id(x) for x in first.exchanges} & {id(x) for x in second.exchanges}
    assert second.exchanges[0].request["messages"][-1]["content"] == "Et maintenant ? 今は？"
    # bounded as the endpoint's log is: a run longer than it keeps its newest exchanges
    short = sn.mock_llm(delegating_handler, keep_exchanges=3)
    third = sn.Session(coordinator, llm=short).send("Encore — もう一度 🔁").result()
    assert list(third.exchanges) == list(short.exchanges) and len(third.exchanges) == 3
    widget = view(second)
    click(widget, action="focus", tab="wire")
    wait_until(lambda: widget.current_pane()["tab"] == "wire")
    rows = widget.current_pane()["exchanges"]
    assert [row["index"] for row in rows] == [1, 4]
    assert "Et maintenant ? 今は？" in rows[0]["request"]
    assert "Bearer" not in rows[0]["headers"] or "***" in rows[0]["headers"]


def test_the_wire_pane_shows_each_nodes_exchanges(team_session: sn.Session) -> None:
    widget = view(team_session)
    team_session.send("What is in README.md?").result()
    click(widget, action="focus", tab="wire")
    wait_until(lambda: len(widget.current_pane().get("exchanges", ())) == 2)
    first, second = widget.current_pane()["exchanges"]
    assert (first["index"], second["index"]) == (1, 4)
    assert first["status"] == 200 and first["model"] == "mock"
    assert '"content": "What is in README.md?"' in first["request"]
    assert '"finish_reason": "tool_calls"' in first["response"]
    assert '"content": "Summary: found # demo project"' in second["response"]
    assert (
        widget.current_pane()["note"]
        == "2 more exchanges belong to other nodes: select them in the tree"
    )
    click(widget, action="focus", node="coordinator/explore.1")
    wait_until(lambda: widget.current_pane()["node"] == "coordinator/explore.1")
    child = widget.current_pane()["exchanges"]
    assert [row["index"] for row in child] == [2, 3]
    assert '"name": "read_file"' in child[0]["request"]


def test_a_saved_views_wire_panes_are_the_live_ones(team_session: sn.Session) -> None:
    from sagents_nb.notebook._log_panes import Wire
    from sagents_nb.notebook._panes import Focus, pane_state

    widget = view(team_session)
    team_session.send("What is in README.md?").result()
    projector, exchanges = widget.projector, widget.target.exchanges()
    wire = Wire(exchanges)  # keyed once for every node, as a saved view does
    with projector.lock:
        projector.catch_up()
        for path in projector.nodes:
            live = pane_state(projector, Focus(path, "wire"), exchanges, {})
            assert pane_state(projector, Focus(path, "wire"), wire, {}) == live
            assert live["exchanges"]
    widget.close()


def test_view_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match=r"shows a sn\.Session, sn\.Run or sn\.Result, not str"):
        view("session")  # type: ignore[arg-type]


def test_the_static_fallback_shows_the_tree_escaped() -> None:
    def handler(request: sn.ChatRequest) -> Any:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="<b>ghost</b>", prompt="boo")])
        return "gave up"

    helper = sn.Agent("helper", does="helps")
    session = sn.Session(sn.Agent("lead", team=[helper]), llm=sn.mock_llm(handler))
    session.send("go").result()
    data, _ = view(session)._repr_mimebundle_()
    assert "lead [main] done" in data["text/plain"] and "refused 1" in data["text/plain"]
    assert "refused: agent &quot;&lt;b&gt;ghost&lt;/b&gt;&quot; is not in" in data["text/html"]
    assert "<b>ghost" not in data["text/html"]
    assert "[done] gave up" in data["text/html"]


def test_a_native_child_switched_to_worker_can_switch_back_and_the_top_agent_too() -> None:
    native = sn.kinds.Native(sn.harness.ClaudeCode())
    coder = sn.Agent("coder", does="codes", kind=native)
    lead = sn.Agent("lead", does="leads", team=[coder])
    widget = view(sn.Session(lead, llm=sn.mock_llm(lambda request: "ok")))
    options = widget.header["kind_options"]
    assert "native" in options["coder"] and "native" not in options["lead"]
    assert set(sn.kinds.registry()) <= set(options["lead"])
    click(widget, action="kind", agent="coder", kind="worker")
    wait_until(lambda: widget.header["agent_kinds"]["coder"] == "worker")
    assert "native" in widget.header["kind_options"]["coder"]
    click(widget, action="kind", agent="coder", kind="native")
    wait_until(lambda: widget.header["agent_kinds"]["coder"] == "native")
    assert coder.kind is native
    click(widget, action="kind", agent="lead", kind="realtime")
    wait_until(lambda: widget.header["agent_kinds"]["lead"] == "realtime")
