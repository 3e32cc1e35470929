"""The projector: events folded into the tree, transcripts, tool cards and context turns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sagents_nb as sn
from sagents_nb.notebook._context_pane import context_pane
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector
from sagents_nb.notebook._tree import tree_state

from .conftest import read_file, wait_until


def project(session: sn.Session) -> Projector:
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    return projector


def fan_out(request: sn.ChatRequest) -> Any:
    """Fan out to two children, then repeat one call (reattach) and name a stranger (refused)."""
    if "task" not in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("read_file", path="README.md")])
        return f"read {request.tool_results[-1]}"
    done = len(request.tool_results)
    if done == 0:
        return sn.reply(
            tool_calls=[
                sn.call("task", agent="explore", prompt="look"),
                sn.call("task", agent="review", prompt="check"),
            ]
        )
    if done == 2:
        return sn.reply(
            tool_calls=[
                sn.call("task", agent="explore", prompt="look"),
                sn.call("task", agent="deploy", prompt="ship"),
            ]
        )
    return "all done"


def test_tree_shows_children_kinds_reattach_and_refusal() -> None:
    explore = sn.Agent("explore", does="reads", tools=[read_file])
    review = sn.Agent("review", does="reviews", tools=[read_file], kind=sn.kinds.Worker(3))
    session = sn.Session(
        sn.Agent("lead", does="leads", team=[explore, review]), llm=sn.mock_llm(fan_out)
    )
    result = session.send("go").result()
    tree = tree_state(project(session))
    expected = result.tree
    assert tree["id"] == "lead" and tree["kind"] == "main" and tree["status"] == "done"
    assert [c["id"] for c in tree["children"]] == ["lead/explore.1", "lead/review.1"]
    for node, truth in zip([tree, *tree["children"]], [expected, *expected.children], strict=True):
        assert (node["kind"], node["status"], node["turns"]) == (
            truth.kind,
            truth.status,
            truth.turns,
        )
        assert node["tokens"] == truth.usage.total_tokens
    assert tree["reattached"] == 1 and tree["children"][0]["reattached"] == 1
    assert set(tree["calls"].split()) == {"task", "ok", "refused"}  # what its filter matches
    assert tree["refused"] == [
        'agent "deploy" is not in this agent\'s team (available: explore, review)'
    ]


def test_tool_cards_link_children_and_record_refusals() -> None:
    explore = sn.Agent("explore", does="reads", tools=[read_file])
    review = sn.Agent("review", does="reviews", tools=[read_file])
    session = sn.Session(
        sn.Agent("lead", does="leads", team=[explore, review]), llm=sn.mock_llm(fan_out)
    )
    session.send("go").result()
    cards = pane_state(project(session), Focus(node="lead", tab="tools"), None, {})["cards"]
    by_status = {(c["name"], c["status"]) for c in cards}
    assert ("task", "refused") in by_status and ("task", "ok") in by_status
    spawned = [c for c in cards if c["child"] == "lead/explore.1"]
    assert len(spawned) == 2
    assert any("reattached to lead/explore.1 (settled)" in n for c in spawned for n in c["notes"])
    refused = next(c for c in cards if c["status"] == "refused")
    assert refused["notes"] == [
        'refused: agent "deploy" is not in this agent\'s team (available: explore, review)'
    ]
    child_cards = pane_state(project(session), Focus("lead/review.1", "tools"), None, {})["cards"]
    assert child_cards[0]["result"] == "# demo project"
    assert child_cards[0]["duration"] is not None


def test_transcript_keeps_display_text_and_what_the_model_got() -> None:
    session = sn.Session(
        sn.Agent("writer", does="writes"),
        llm=sn.mock_llm(lambda request: "noted"),
        preprocessor=sn.Mentions({"spec": "THE SPEC"}),
    )
    session.send("read @spec").result()
    entries = pane_state(project(session), Focus(), None, {})["entries"]
    assert entries[0]["role"] == "user" and entries[0]["text"] == "read @spec"
    assert "THE SPEC" in entries[0]["sent_as"]
    assert entries[1] == {"role": "assistant", "text": "noted", "seq": entries[1]["seq"]}


def lookups(count: int) -> Any:
    """A handler that reads `count` files, one call a turn, then answers."""
    calls = iter(range(count))

    def handler(request: sn.ChatRequest) -> Any:
        n = next(calls, None)
        if n is None:
            return "done"
        return sn.reply(tool_calls=[sn.call("read_file", path=f"file{n}.md")])

    return handler


def test_main_kind_marks_sunk_items_and_the_chart_shows_the_sink() -> None:
    agent = sn.Agent("lead", tools=[read_file], kind=sn.kinds.Main(top_k=1, recent=1))
    session = sn.Session(agent, llm=sn.mock_llm(lookups(4)))
    session.send("read the files").result()
    node = project(session).nodes["lead"]
    pane = context_pane(node, None)
    assert [row["turn"] for row in pane["chart"]] == [1, 2, 3, 4, 5]
    assert any(m["type"] == "cold_sink" for m in pane["markers"])
    detail = pane["detail"]
    storage = detail["storage"]
    assert len(storage) == 9  # the input, then four calls and their results
    marks = [row["mark"] for row in storage]
    assert marks[:3] == ["in view"] * 3  # the current input (with the call answering it)
    assert marks.count("sunk") == 2 and marks[-4:] == ["in view"] * 4
    unmarked = [{k: v for k, v in row.items() if k != "mark"} for row in detail["view"]]
    sunk = [
        {k: v for k, v in row.items() if k != "mark"} for row in storage if row["mark"] == "sunk"
    ]
    assert sunk and not any(row in unmarked for row in sunk)
    assert detail["left_out"] == {"sunk": 2}
    assert detail["view"][0]["role"] == "system" and detail["view"][0]["mark"] == "view only"


def chat_child(request: sn.ChatRequest) -> Any:
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(
                tool_calls=[
                    sn.call("task", agent="chat", prompt="first question"),
                    sn.call("task", agent="chat", prompt="second question"),
                ]
            )
        return "both answered"
    return f"answer to {request.last_user}"


def test_realtime_child_marks_trimmed_items() -> None:
    chat = sn.Agent("chat", does="chats", kind=sn.kinds.Realtime(window=1))
    session = sn.Session(sn.Agent("lead", team=[chat]), llm=sn.mock_llm(chat_child))
    session.send("ask twice").result()
    node = project(session).nodes["lead/chat.1"]
    pane = context_pane(node, None)
    assert any(m["type"] == "window_trim" for m in pane["markers"])
    marks = [row.get("mark") for row in pane["detail"]["storage"]]
    assert marks == ["trimmed", "trimmed", "in view"]
    assert pane["detail"]["storage"][0]["text"] == "first question"
    first = context_pane(node, 0)["detail"]
    assert [row.get("mark") for row in first["storage"]] == ["in view"]


def resident_child() -> Callable[[sn.ChatRequest], Any]:
    """The keeper reads twice, then answers: the input with the first read is one group, which
    compaction summarises before the third turn."""
    reads: list[str] = []

    def answer(request: sn.ChatRequest) -> Any:
        if request.system.startswith("You compress"):
            return "SUMMARY of the lookups"
        if "task" in request.tools:
            if request.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt="look it up")])
            return "kept"
        if len(reads) < 2:
            reads.append(("README.md", "NOTES.md")[len(reads)])
            return sn.reply(
                tool_calls=[sn.call("read_file", path=reads[-1])],
                usage={"prompt_tokens": 500, "completion_tokens": 10, "total_tokens": 510},
            )
        return "found it"

    return answer


def test_resident_compaction_marks_summarised_items_and_the_timeline() -> None:
    keeper = sn.Agent(
        "keeper", does="remembers", tools=[read_file], kind=sn.kinds.Resident(300, keep_recent=1)
    )
    session = sn.Session(sn.Agent("lead", team=[keeper]), llm=sn.mock_llm(resident_child()))
    session.send("go").result()
    projector = project(session)
    node = projector.nodes["lead/keeper.1"]
    pane = context_pane(node, None)
    assert {m["type"] for m in pane["markers"]} >= {"compaction", "context_full"}
    storage = pane["detail"]["storage"]
    assert [(row["text"], row["mark"]) for row in storage[:4]] == [
        ("look it up", "summarised"),
        ("", "summarised"),
        ("# demo project", "summarised"),
        ("SUMMARY of the lookups", "summary"),
    ]
    assert [row["mark"] for row in storage[4:]] == ["in view", "in view"]
    assert any(row.get("mark") == "summary" for row in pane["detail"]["view"])
    # the count beside the column agrees with its marks; the reply's usage is the reported one
    assert pane["detail"]["left_out"] == {"summarised": 3}
    assert pane["detail"]["storage_items"] == len(storage)
    first = context_pane(node, 0)["detail"]
    assert (first["prompt_tokens"], first["completion_tokens"]) == (500, 10)
    keeper_row = tree_state(projector)["children"][0]
    assert keeper_row["prompt_tokens"] >= 500 and keeper_row["completion_tokens"] >= 10
    assert keeper_row["tokens"] == keeper_row["prompt_tokens"] + keeper_row["completion_tokens"]
    timeline = pane_state(projector, Focus("lead/keeper.1", "compaction"), None, {})["entries"]
    compaction = next(e for e in timeline if e["type"] == "compaction")
    assert compaction["title"] == "compaction by summary"
    assert compaction["text"] == "SUMMARY of the lookups"
    assert ["messages removed", "3"] in compaction["details"]
    transcript = pane_state(projector, Focus("lead/keeper.1"), None, {})["entries"]
    assert "SUMMARY of the lookups" not in [e["text"] for e in transcript]


def test_event_log_filters_by_type_and_node() -> None:
    explore = sn.Agent("explore", does="reads", tools=[read_file])
    review = sn.Agent("review", does="reviews", tools=[read_file])
    session = sn.Session(
        sn.Agent("lead", does="leads", team=[explore, review]), llm=sn.mock_llm(fan_out)
    )
    session.send("go").result()
    projector = project(session)
    focus = Focus("lead/review.1", "events", types=["tool_call_finished"])
    rows = pane_state(projector, focus, None, {})["rows"]
    assert {row["type"] for row in rows} == {"tool_call_finished"}
    assert {row["path"] for row in rows} == {"lead", "lead/explore.1", "lead/review.1"}
    focus.node_only = True
    rows = pane_state(projector, focus, None, {})["rows"]
    assert [row["path"] for row in rows] == ["lead/review.1"]
    assert "name='read_file'" in rows[0]["headline"]
    assert "json" not in rows[0]  # sent for the events the person opens only
    focus.opened = [rows[0]["seq"], 1]
    pane = pane_state(projector, focus, None, {})
    assert '"result": "# demo project"' in pane["rows"][0]["json"]
    # an opened event outside the window (here: another node's) stays, with its JSON
    assert [row["seq"] for row in pane["kept"]] == [1] and '"run_started"' in pane["kept"][0][
        "json"
    ]
    events = pane_state(projector, Focus(tab="events"), None, {})
    assert events["total"] == len(session.events) == sum(events["types"].values())


def test_a_nodes_event_log_follows_the_events_folded_after_it_was_shown() -> None:
    explore = sn.Agent("explore", does="reads", tools=[read_file])
    session = sn.Session(sn.Agent("lead", team=[explore]), llm=sn.mock_llm(fan_out))
    session.send("go").result()
    events = list(session.events)
    child = next(e.path for e in events if e.path != "lead")
    projector = Projector()
    half = len(events) // 2
    for event in events[:half]:
        projector.fold(event)
    focus = Focus(child, "events", node_only=True)
    before = [row["seq"] for row in pane_state(projector, focus, None, {})["rows"]]
    assert before == [e.seq for e in events[:half] if e.path == child]
    for event in events[half:]:
        projector.fold(event)
    after = pane_state(projector, focus, None, {})["rows"]
    assert [row["seq"] for row in after] == [e.seq for e in events if e.path == child]
    focus.types = ["tool_call_finished"]
    typed = pane_state(projector, focus, None, {})["rows"]
    assert [row["seq"] for row in typed] == [
        e.seq for e in events if e.path == child and e.type == "tool_call_finished"
    ]
    assert typed


def test_received_events_fold_in_one_batch_to_the_same_state() -> None:
    explore = sn.Agent("explore", does="reads", tools=[read_file])
    session = sn.Session(sn.Agent("lead", team=[explore]), llm=sn.mock_llm(fan_out))
    session.send("go").result()
    events = list(session.events)
    batched = Projector()
    for event in events[:-1]:
        batched.receive(event)
    assert batched.events == [] and tree_state(batched) == {}
    batched.fold(events[-1])  # after the queued ones, in order
    assert batched.inbox == [] and batched.events == events
    eager = project(session)
    assert tree_state(batched) == tree_state(eager)
    for tab in ("transcript", "context", "tools", "events"):
        focus = Focus("lead/explore.1", tab)
        assert pane_state(batched, focus, None, {}) == pane_state(eager, focus, None, {})


def test_unknown_paths_and_late_events_build_the_tree_on_the_fly() -> None:
    projector = Projector()
    projector.fold(sn.events.StatusChanged(path="a/b.1/c.2", status="running", seq=1))
    tree = tree_state(projector)
    assert tree["id"] == "a"
    assert tree["children"][0]["id"] == "a/b.1" and tree["children"][0]["agent"] == "b"
    assert tree["children"][0]["children"][0]["status"] == "running"


def test_display_text_labels_a_running_task() -> None:
    class Survey(sn.Task):
        task_name = "survey"
        description = "surveys the project"
        instructions = "Survey."
        display_text = "Surveying the project…"

    def handler(request: sn.ChatRequest) -> Any:
        if "task" in request.tools and request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="survey", prompt="go")])
        return "surveyed"

    session = sn.Session(sn.Agent("lead", team=[Survey]), llm=sn.mock_llm(handler))
    run = session.send("start", pause_on=("model",))
    assert run.wait() == "paused" and run.paused_at.path == "lead"
    run.approve()
    assert run.wait() == "paused" and run.paused_at.path == "lead/survey.1"
    child = tree_state(project(session))["children"][0]
    assert (child["status"], child["display_text"]) == ("paused", "Surveying the project…")
    cards = pane_state(project(session), Focus(node="lead", tab="tools"), None, {})["cards"]
    assert cards[0]["display_text"] == "Surveying the project…"
    run.resume()
    assert run.result().text == "surveyed"


def _two_reads(request: sn.ChatRequest) -> Any:
    if not request.tool_results:
        return sn.reply(
            tool_calls=[
                sn.call("read_file", path="README.md"),
                sn.call("read_file", path="ノート.md"),
            ]
        )
    return "read both"


def _paused_twice() -> tuple[sn.Session, sn.Run]:
    session = sn.Session(sn.Agent("reader", tools=[read_file]), llm=sn.mock_llm(_two_reads))
    run = session.send("lis les deux fichiers 📄", pause_on={"tool"})
    assert run.wait(10) == "paused"

    def both_paused() -> bool:
        return sum(1 for e in session.events if e.type == "paused") == 2

    wait_until(both_paused, what="both calls to pause")
    return session, run


def _cards(projector: Projector) -> list[dict[str, Any]]:
    return pane_state(projector, Focus(tab="tools"), None, {})["cards"]  # type: ignore[no-any-return]


def test_cancel_at_a_pause_clears_the_pending_decision_and_the_cards() -> None:
    session, run = _paused_twice()
    assert len(project(session).pending) == 2
    run.cancel()
    assert run.result(timeout=10).status == "cancelled"
    projector = project(session)
    assert projector.pending == {}
    assert [card["status"] for card in _cards(projector)] == ["cancelled", "cancelled"]
    assert projector.runs[1].status == "cancelled"
    session.send("encore").result(timeout=10)
    assert project(session).pending == {}


def test_resume_with_several_pauses_pending_clears_them_all() -> None:
    session, run = _paused_twice()
    run.resume()
    assert run.result(timeout=10).text == "read both"
    projector = project(session)
    assert projector.pending == {}
    assert [card["status"] for card in _cards(projector)] == ["ok", "ok"]


def test_a_log_without_the_ends_of_its_pauses_still_clears_them_when_the_run_ends() -> None:
    session, run = _paused_twice()
    run.cancel()
    run.result(timeout=10)
    projector = Projector()
    for event in session.events:
        if event.type != "resumed":  # as written before every pause's end was an event
            projector.fold(event)
    assert projector.pending == {}
    assert {card["status"] for card in _cards(projector)} == {"cancelled"}


def test_streamed_cli_text_pieces_stay_out_of_the_transcript() -> None:
    from sagents_nb.events import HarnessEventOccurred

    projector = Projector()
    piece = {"type": "text", "text": "Bon", "delta": True}
    whole = {"type": "text", "text": "Bonjour", "delta": False}
    for seq, data in enumerate([piece, whole], 1):
        projector.fold(HarnessEventOccurred(seq=seq, ts=0.0, path="lead", event=data))
    entries = pane_state(projector, Focus("lead"), None, {})["entries"]
    assert [e["text"] for e in entries] == ["Bonjour"]
