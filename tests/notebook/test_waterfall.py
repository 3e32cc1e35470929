"""The Timing tab's fold: spans on one time axis, nested as the run nested them; tokens rolled up
the tree; cost only where a CLI reported one; big runs folded to a bounded number of rows."""

from __future__ import annotations

import json
from typing import Any

import httpx

import sagents_nb as sn
from sagents_nb.events import (
    Event,
    HarnessEventOccurred,
    ModelRequest,
    RunFinished,
    RunStarted,
    StatusChanged,
    TaskFinished,
    TaskSpawned,
    ToolCallStarted,
)
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector
from sagents_nb.notebook._timings import Timings
from sagents_nb.notebook._waterfall import PER_NODE, token_rollup, waterfall

from .conftest import read_file
from .test_projector import fan_out


def fan_out_session() -> sn.Session:
    explore = sn.Agent("explore", does="reads", tools=[read_file])
    review = sn.Agent("review", does="reviews", tools=[read_file])
    return sn.Session(
        sn.Agent("lead", does="leads", team=[explore, review]), llm=sn.mock_llm(fan_out)
    )


def stamped(events: list[Event], step: float = 1.0) -> list[Event]:
    """The events with injected times: event n at n * step seconds after 1000."""
    return [e.model_copy(update={"ts": 1000.0 + e.seq * step}) for e in events]


def fold(events: list[Event]) -> Timings:
    timings = Timings()
    timings.update(events)
    return timings


def test_bars_nest_inside_their_node_and_the_call_that_spawned_a_child() -> None:
    session = fan_out_session()
    session.send("go").result()
    events = stamped(list(session.events))
    rows = waterfall(fold(events).runs[1])["rows"]

    def seq(kind: type[Event], **match: Any) -> int:
        """When the matching event happened, in microseconds after 1000 s (as times are sent)."""
        event = next(
            e
            for e in events
            if type(e) is kind and all(getattr(e, k) == v for k, v in match.items())
        )
        return event.seq * 1_000_000

    # one row per model call, tool call and child, as the events tell them
    kinds = [row["kind"] for row in rows]
    assert kinds.count("model") == sum(type(e) is ModelRequest for e in events)
    assert kinds.count("tool") == sum(type(e) is ToolCallStarted for e in events)
    assert [r["path"] for r in rows if r["kind"] == "node"] == [
        "lead",
        "lead/explore.1",
        "lead/review.1",
    ]
    # times are relative to the run's start, as injected
    lead = rows[0]
    start = seq(RunStarted)
    assert lead["segments"][0][:3] == [0, 0, seq(RunFinished) - start]
    explore = next(r for r in rows if r.get("path") == "lead/explore.1")
    spawned = seq(TaskSpawned, child="lead/explore.1") - start
    finished = seq(TaskFinished, child="lead/explore.1") - start
    running = seq(StatusChanged, path="lead/explore.1", status="running") - start
    assert explore["segments"][0][:4] == [spawned, running, finished, "done"]
    # every bar lies inside the bar of the row it is nested under
    stack: list[dict[str, Any]] = []
    for row in rows:
        while stack and stack[-1]["depth"] >= row["depth"]:
            stack.pop()
        if stack:
            outer = stack[-1]
            low, high = (
                (outer["segments"][0][0], outer["segments"][-1][2])
                if outer["kind"] == "node"
                else (outer["start"], outer["end"])
            )
            inner = (
                (row["segments"][0][0], row["segments"][-1][2])
                if row["kind"] == "node"
                else (row["start"], row["end"])
            )
            assert low <= inner[0] <= inner[1] <= high, (row, outer)
        stack.append(row)
    # a child sits under the `task` call that spawned it, one level deeper
    at = rows.index(explore)
    assert rows[at - 1]["kind"] == "tool" and rows[at - 1]["label"] == "task"
    assert explore["depth"] == rows[at - 1]["depth"] + 1 == 2
    assert len({row["key"] for row in rows}) == len(rows)


def test_tokens_roll_up_the_tree_and_match_the_result() -> None:
    session = fan_out_session()
    result = session.send("go").result()
    rows = token_rollup(fold(list(session.events)).runs[1])
    by_path = {row.path: row for row in rows}
    assert [row.path for row in rows] == ["lead", "lead/explore.1", "lead/review.1"]
    for row in rows:
        own = [
            e.usage
            for e in session.events
            if e.type == "model_response" and e.path == row.path and e.usage
        ]
        assert row.prompt_tokens == sum(u.prompt_tokens for u in own) > 0
        assert row.completion_tokens == sum(u.completion_tokens for u in own) > 0
        node = result.tree.find(row.path)
        assert node is not None
        assert row.subtree_prompt_tokens == node.usage.prompt_tokens
        assert row.subtree_completion_tokens == node.usage.completion_tokens
    lead = by_path["lead"]
    assert lead.subtree_prompt_tokens == lead.prompt_tokens + sum(
        by_path[p].subtree_prompt_tokens for p in ("lead/explore.1", "lead/review.1")
    )
    assert lead.subtree_prompt_tokens == result.usage.prompt_tokens
    assert lead.subtree_completion_tokens == result.usage.completion_tokens
    # an OpenAI-compatible endpoint reports usage, not cost: none is shown, none invented
    assert all(row.cost_usd is None and row.subtree_cost_usd is None for row in rows)
    assert lead.priced == 0 and lead.spent == 3


def test_cost_shows_only_where_a_cli_reported_it() -> None:
    session = fan_out_session()
    session.send("go").result()
    events = list(session.events)
    done = HarnessEventOccurred(
        path="lead/review.1",
        seq=events[-1].seq,
        run=1,
        ts=events[-1].ts,
        event={
            "type": "done",
            "content": "ok",
            "cost_usd": 0.0123,
            "usage": {"input_tokens": 1000, "output_tokens": 50},
        },
    )
    rows = {row.path: row for row in token_rollup(fold([*events[:-1], done, events[-1]]).runs[1])}
    review, explore, lead = rows["lead/review.1"], rows["lead/explore.1"], rows["lead"]
    assert review.cost_usd == review.subtree_cost_usd == 0.0123
    assert explore.cost_usd is None and explore.subtree_cost_usd is None
    assert lead.cost_usd is None and lead.subtree_cost_usd == 0.0123
    assert (lead.priced, lead.spent) == (1, 3)  # partial: two nodes spent without a price
    assert review.prompt_tokens >= 1000 and review.completion_tokens >= 50


def test_a_reply_without_usage_counts_as_unreported_with_its_estimate() -> None:
    def handler(request: sn.ChatRequest) -> Any:
        body = {
            "id": "x",
            "object": "chat.completion",
            "model": request.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "bonjour 你好 🎉"},
                    "finish_reason": "stop",
                }
            ],
        }
        return httpx.Response(200, content=json.dumps(body).encode())

    session = sn.Session(sn.Agent("solo", does="answers"), llm=sn.mock_llm(handler))
    session.send("Dis bonjour, s'il te plaît — 日本語でも").result()
    (row,) = token_rollup(fold(list(session.events)).runs[1])
    built = next(e for e in session.events if e.type == "context_built")
    assert (row.prompt_tokens, row.completion_tokens) == (0, 0)
    assert row.unreported == row.subtree_unreported == 1
    assert row.estimated_prompt_tokens == built.view_tokens > 0
    (model,) = [
        r for r in waterfall(fold(list(session.events)).runs[1])["rows"] if r["kind"] == "model"
    ]
    assert "no usage reported" in model["title"] and "estimated" in model["title"]


def synthetic_fan_out(children: int, calls: int) -> list[Event]:
    """A root that spawns `children` children, each making `calls` model calls, at 1 s steps."""
    events: list[Event] = []

    def add(event: Event) -> None:
        events.append(event.model_copy(update={"seq": len(events) + 1, "ts": float(len(events))}))

    add(RunStarted(path="root", agent="root", input="go", run=1))
    for i in range(1, children + 1):
        child = f"root/w.{i}"
        add(
            TaskSpawned(
                path="root", child=child, agent="w", prompt=f"job {i}", kind="worker", run=1
            )
        )
        add(StatusChanged(path=child, status="running", run=1))
        for turn in range(1, calls + 1):
            add(ModelRequest(path=child, turn=turn, model="m", messages=[], run=1))
            add(
                sn.events.ModelResponse(
                    path=child,
                    turn=turn,
                    message=sn.Message(role="assistant", content="ok"),
                    usage=sn.Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12),
                    run=1,
                )
            )
        add(TaskFinished(path="root", child=child, agent="w", status="done", text="ok", run=1))
    add(RunFinished(path="root", status="done", text="ok", turns=1, run=1))
    return events


def test_a_200_child_run_is_folded_to_a_bounded_number_of_rows() -> None:
    run = fold(synthetic_fan_out(200, 3)).runs[1]
    shown = waterfall(run, budget=200)
    rows = shown["rows"]
    assert len(rows) <= 200
    more = rows[-1]
    assert more["kind"] == "more" and more["label"].endswith("more children")
    nodes = sum(r["kind"] == "node" for r in rows)
    assert nodes + int(more["label"].split()[0]) == 201
    assert shown["folded"] == 201 - nodes
    # the tokens still sum over every child, shown or not
    (top, *below) = token_rollup(run)
    assert len(below) == 200
    assert top.subtree_prompt_tokens == 200 * 3 * 10
    # a child selected on its own gets its calls, one row each
    alone = waterfall(run, "root/w.150")["rows"]
    assert [r["kind"] for r in alone] == ["node", "model", "model", "model"]


def test_a_node_with_many_calls_merges_them_into_a_bounded_number_of_rows() -> None:
    run = fold(synthetic_fan_out(1, 10 * PER_NODE)).runs[1]
    rows = waterfall(run, "root/w.1")["rows"]
    assert len(rows) == 1 + PER_NODE
    groups = rows[1:]
    assert all(r["kind"] == "group" for r in groups)
    assert sum(int(r["label"].split()[0]) for r in groups) == 10 * PER_NODE
    assert groups[0]["start"] < groups[0]["end"] <= groups[1]["start"]


def test_the_fold_runs_only_when_the_timing_tab_is_drawn_and_once_per_event() -> None:
    session = fan_out_session()
    session.send("go").result()
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    pane_state(projector, Focus(tab="transcript"), None, {})
    assert projector.timings.seen == 0
    pane = pane_state(projector, Focus(tab="timing"), None, {})
    assert projector.timings.seen == len(projector.events)
    assert pane["tab"] == "timing" and pane["node"] == "lead" and pane["runs"] == [1]
    assert pane["waterfall"]["rows"][0]["path"] == "lead"
    assert [row["path"] for row in pane["tokens"]] == ["lead", "lead/explore.1", "lead/review.1"]
    # a second run: the tab shows the newest run unless one is chosen
    session.send("again").result()
    for event in session.events[len(projector.events) :]:
        projector.fold(event)
    assert pane_state(projector, Focus(tab="timing"), None, {})["waterfall"]["run"] == 2
    chosen = pane_state(projector, Focus(tab="timing", run=1), None, {})
    assert chosen["waterfall"]["run"] == 1 and chosen["runs"] == [1, 2]
    child = pane_state(projector, Focus(node="lead/review.1", tab="timing", run=1), None, {})
    assert child["node"] == "lead/review.1"
    assert child["waterfall"]["rows"][0]["path"] == "lead/review.1"


def test_a_live_run_has_open_bars_up_to_its_newest_event() -> None:
    events = synthetic_fan_out(2, 1)
    running = events[: events.index(next(e for e in events if e.type == "model_request")) + 1]
    shown = waterfall(fold(running).runs[1])
    rows = {r["key"]: r for r in shown["rows"]}
    assert shown["status"] == "running"
    assert shown["span"] == (running[-1].ts - running[0].ts) * 1_000_000
    assert rows["root"]["segments"][0][2] is None
    (model,) = [r for r in shown["rows"] if r["kind"] == "model"]
    assert model["end"] is None and model["status"] == "running"


def test_token_rollup_from_python_takes_a_result_run_session_or_events() -> None:
    from sagents_nb.notebook import NodeTokens, token_rollup

    session = fan_out_session()
    first = session.send("go")
    result = first.result()
    session.send("again").result()
    rows = token_rollup(result)
    assert all(isinstance(row, NodeTokens) for row in rows)
    assert rows == token_rollup(first) == token_rollup(session, run=1)
    assert rows == token_rollup(list(session.events), run=1)
    assert token_rollup(session) == token_rollup(session, run=2) != rows
    assert [r.path for r in token_rollup(result, node="lead/review.1")] == ["lead/review.1"]
    assert rows[0].to_dict()["subtree_prompt_tokens"] == result.usage.prompt_tokens
    assert token_rollup([]) == []
    try:
        token_rollup(session, run=7)
    except ValueError as exc:
        assert "no run 7" in str(exc) and "runs: 1, 2" in str(exc)
    else:
        raise AssertionError("run=7 was accepted")


def test_the_result_tree_tells_a_nodes_own_usage_and_its_subtrees_cost() -> None:
    session = fan_out_session()
    result = session.send("go").result()
    lead = result.tree
    own = [e.usage for e in result.events if e.type == "model_response" and e.path == "lead"]
    assert lead.own_usage.prompt_tokens == sum(u.prompt_tokens for u in own if u)
    assert lead.own_usage.completion_tokens == sum(u.completion_tokens for u in own if u)
    assert lead.own_usage.total_tokens + sum(c.usage.total_tokens for c in lead.children) == (
        lead.usage.total_tokens
    )
    assert lead.subtree_cost_usd is None  # the mock endpoint reports usage, not cost


def test_the_static_rendering_lists_tokens_by_node() -> None:
    from sagents_nb.notebook import token_rollup, view
    from sagents_nb.notebook._export import static_view

    session = fan_out_session()
    result = session.send("go").result()
    shown = view(result)
    try:
        static = static_view(shown)
    finally:
        shown.close()
    lead, explore, _ = token_rollup(result)
    text = static["text/plain"]
    assert "Tokens by node, run 1 (reported; own / with the subtree)" in text
    assert (
        f"lead: {lead.prompt_tokens} prompt + {lead.completion_tokens} completion / "
        f"{lead.subtree_prompt_tokens} + {lead.subtree_completion_tokens}"
    ) in text
    assert f"    lead/explore.1: {explore.prompt_tokens} prompt" in text
    assert "$" not in text  # no cost reported, none shown
    assert f"<td>{lead.subtree_prompt_tokens}</td>" in static["text/html"]


def read_then_answer(request: sn.ChatRequest) -> Any:
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("read_file", path="README.md")])
    return "fini — 完了"


def paused_at_a_tool() -> tuple[sn.Session, sn.Run]:
    session = sn.Session(sn.Agent("solo", tools=[read_file]), llm=sn.mock_llm(read_then_answer))
    run = session.send("lis-le 📖", pause_on=("tool",))
    run.wait()
    return session, run


def test_a_pause_is_a_bar_from_the_pause_to_the_decision() -> None:
    session, run = paused_at_a_tool()
    paused = waterfall(fold(list(session.events)).runs[1])["rows"]
    (pause,) = [r for r in paused if r["kind"] == "pause"]
    assert pause["label"] == "paused before tool read_file" and pause["end"] is None
    run.reject("pas maintenant")
    run.result()
    rows = waterfall(fold(stamped(list(session.events))).runs[1])["rows"]
    (pause,) = [r for r in rows if r["kind"] == "pause"]
    assert pause["status"] == "reject" and pause["title"] == "pas maintenant"
    assert pause["start"] < pause["end"]
    (tool,) = [r for r in rows if r["kind"] == "tool"]
    assert tool["status"] == "denied" and tool["start"] >= pause["end"] - 1_000_000


def test_while_a_run_streams_the_timing_pane_is_rebuilt_at_a_bounded_rate() -> None:
    from sagents_nb.notebook._timing_pane import REBUILD_INTERVAL, TimingStamp

    now = [100.0]
    stamp = TimingStamp(clock=lambda: now[0])
    events = synthetic_fan_out(3, 2)
    projector = Projector()
    projector.fold(events[0])
    first, waiting = stamp(projector)
    assert (first, waiting) == (projector.version, False)
    projector.fold(events[1])
    now[0] += REBUILD_INTERVAL / 2
    assert stamp(projector) == (first, True)  # a newer state waits: ask again later
    now[0] += REBUILD_INTERVAL / 2
    assert stamp(projector) == (projector.version, False)
    assert stamp(projector) == (projector.version, False)  # nothing new: nothing waits
    for event in events[2:]:  # the run finishes: its last state is drawn at once
        projector.fold(event)
    assert stamp(projector) == (projector.version, False)


def test_following_the_run_does_not_rebuild_the_timing_pane() -> None:
    from sagents_nb.notebook import view

    session = fan_out_session()
    session.send("go").result()
    live = view(session)
    try:
        live.projector.fold(StatusChanged(path="lead/review.1", status="running", seq=10**6, run=1))
        assert live.projector.followed() == "lead/review.1"
        live.focus.tab = "timing"
        assert live._pane_node() == "lead"  # the root's waterfall, whichever node is newest
        live.focus.tab = "transcript"
        assert live._pane_node() == "lead/review.1"
    finally:
        live.close()


def test_the_timing_header_says_paused_while_the_run_waits_at_a_pause() -> None:
    session, run = paused_at_a_tool()
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    focus = Focus(node="solo", tab="timing")
    assert pane_state(projector, focus, [], {})["waterfall"]["status"] == "paused"
    run.approve()
    run.wait()
    for event in session.events[len(projector.events) :]:
        projector.fold(event)
    assert pane_state(projector, focus, [], {})["waterfall"]["status"] == "done"
