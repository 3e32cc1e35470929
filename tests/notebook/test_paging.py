"""Pages of the view's long lists and the context chart's decimation (issue 21, item 10)."""

from __future__ import annotations

import itertools
from typing import Any

import sagents_nb as sn
from sagents_nb.notebook._controls import handle_message
from sagents_nb.notebook._paging import (
    CHART_MARKERS,
    CHART_POINTS,
    PAGE,
    buckets,
    merged_markers,
    page_of,
)
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector


@sn.tool
def tick(n: int) -> str:
    """Count one.

    Args:
        n: which tick.
    """
    return f"tick {n} · 計数 ✓ 🎉"


def long_run(turns: int) -> Projector:
    """A finished run of `turns` tool-calling turns on Main with a small view (a sink a turn)."""
    count = itertools.count()

    def handler(request: sn.ChatRequest) -> Any:
        done = next(count)
        if done >= turns:
            return "fini — 終わり"
        return sn.reply(tool_calls=[sn.call("tick", n=done)])

    kind = sn.kinds.Main(top_k=4, recent=2, max_turns=turns + 10)
    session = sn.Session(sn.Agent("counter", tools=[tick], kind=kind), llm=sn.mock_llm(handler))
    assert session.send("compte — 数えて").result().status == "done"
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    return projector


def test_a_page_starts_where_asked_and_the_newest_follows() -> None:
    items = list(range(250))
    rows, page = page_of(items, None)
    assert list(rows) == items[-PAGE:]
    assert page == {"start": 150, "total": 250, "size": PAGE, "following": True}
    rows, page = page_of(items, 0)
    assert list(rows) == items[:PAGE] and not page["following"]
    rows, page = page_of(items, 240)  # past the end: the last full page
    assert page["start"] == 150 and len(rows) == PAGE
    assert page_of([], None)[1]["total"] == 0


def test_buckets_cover_the_range_once_and_are_bounded() -> None:
    for first, last in [(0, 0), (0, 9), (0, 999), (17, 851), (0, 100_000)]:
        cuts = buckets(first, last)
        assert len(cuts) <= CHART_POINTS
        covered = [i for start, end in cuts for i in range(start, end + 1)]
        assert covered == list(range(first, last + 1))


def test_dense_markers_merge_per_type_and_count_what_they_stand_for() -> None:
    markers = [{"at": i, "type": "cold_sink", "title": "sunk", "seq": 10 + i} for i in range(771)]
    markers += [{"at": 5, "type": "compaction", "title": "compacted", "seq": 9}]
    merged = merged_markers(markers, 0, 850, 4)
    assert len(merged) <= 851 // 4 + 2
    assert sum(m["count"] for m in merged) == len(markers)
    assert {m["type"] for m in merged} == {"cold_sink", "compaction"}
    assert merged_markers(markers, 100, 109, 1)[0]["at"] == 100


def test_every_list_pane_reaches_its_oldest_rows() -> None:
    projector = long_run(300)
    focus = Focus(node="counter")
    newest = pane_state(projector, focus, [], {})
    assert len(newest["entries"]) == PAGE and newest["page"]["following"]
    assert newest["page"]["total"] == len(projector.nodes["counter"].transcript)
    focus.start = 0
    oldest = pane_state(projector, focus, [], {})
    assert oldest["entries"][0]["text"] == "compte — 数えて"
    for tab, rows in [("tools", "cards"), ("compaction", "entries"), ("events", "rows")]:
        focus.tab = tab
        pane = pane_state(projector, focus, [], {})
        assert len(pane[rows]) == PAGE and pane["page"]["start"] == 0, tab
    assert pane["rows"][0]["seq"] == projector.events[0].seq


def test_a_filtered_event_log_pages_and_counts_its_matches() -> None:
    projector = long_run(150)
    focus = Focus(node="counter", tab="events", types=["tool_call_finished"])
    pane = pane_state(projector, focus, [], {})
    assert pane["page"]["total"] == 150 and len(pane["rows"]) == PAGE
    assert {row["type"] for row in pane["rows"]} == {"tool_call_finished"}
    focus.start = 0
    first = pane_state(projector, focus, [], {})["rows"][0]
    assert "tick 0 " in first["headline"]
    focus.node_only, focus.start = True, None
    assert pane_state(projector, focus, [], {})["page"]["total"] == 150


def test_the_chart_of_1000_turns_draws_a_bounded_number_of_marks_and_zooms() -> None:
    projector = long_run(1000)
    focus = Focus(node="counter", tab="context")
    pane = pane_state(projector, focus, [], {})
    assert pane["range"] == {"first": 0, "last": 1000, "turns": 1001, "zoomed": False}
    assert len(pane["chart"]) <= CHART_POINTS
    assert len(pane["markers"]) <= CHART_MARKERS + 1  # one type: cold_sink
    sinks = sum(1 for m in projector.nodes["counter"].timeline if m.type == "cold_sink")
    assert sum(m["count"] for m in pane["markers"]) == sinks > 900
    focus.zoom = (300, 349)
    zoomed = pane_state(projector, focus, [], {})
    assert [p["index"] for p in zoomed["chart"]] == list(range(300, 350))
    assert all(300 <= m["at"] <= 350 and m["count"] == 1 for m in zoomed["markers"])
    focus.zoom = (277, 389)  # 113 turns: a sink at each, two turns a marker
    dense = pane_state(projector, focus, [], {})["markers"]
    assert len(dense) <= 113 // 2 + 2 and max(m["count"] for m in dense) == 2


class FakeView:
    """What `handle_message`'s focus action reads and calls on a view."""

    def __init__(self) -> None:
        self.focus = Focus(node="counter")
        self.projector = Projector()
        self.refreshed = 0

    def refresh(self, *, now: bool = False) -> None:
        self.refreshed += 1


def test_focus_messages_set_the_page_and_zoom_and_another_node_resets_them() -> None:
    view: Any = FakeView()
    handle_message(view, {"action": "focus", "start": 200})
    handle_message(view, {"action": "focus", "zoom": [90, 10]})
    assert (view.focus.start, view.focus.zoom) == (200, (10, 90))
    handle_message(view, {"action": "focus", "turn": 3})
    assert (view.focus.start, view.focus.zoom) == (200, (10, 90))
    handle_message(view, {"action": "focus", "tab": "events"})
    assert view.focus.start is None and view.focus.zoom == (10, 90)
    handle_message(view, {"action": "focus", "zoom": "all of it", "start": -4})
    assert view.focus.zoom is None and view.focus.start is None
    handle_message(view, {"action": "focus", "zoom": [1, 2]})
    handle_message(view, {"action": "focus", "node": "counter/other.1"})
    assert view.focus.zoom is None


def test_the_chart_of_1000_resident_turns_shares_its_markers_and_lists_only_their_types() -> None:
    count = itertools.count()

    def handler(request: sn.ChatRequest) -> Any:
        if request.system.startswith("You compress"):
            return "résumé des comptes — 要約 📝"
        done = next(count)
        return "fini" if done >= 1000 else sn.reply(tool_calls=[sn.call("tick", n=done)])

    kind = sn.kinds.Resident(400, keep_recent=1, max_turns=1100)
    session = sn.Session(sn.Agent("counter", tools=[tick], kind=kind), llm=sn.mock_llm(handler))
    assert session.send("compte jusqu'à mille 🔢").result().status == "done"
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    focus = Focus(node="counter", tab="context")
    pane = pane_state(projector, focus, [], {})
    occurred = {m.type for m in projector.nodes["counter"].timeline}
    assert len(occurred) >= 3  # compactions, context full, left out: every few turns
    # all types together stay within the bound, each type its share
    assert len(pane["markers"]) <= CHART_MARKERS
    assert {m["type"] for m in pane["markers"]} == occurred
    assert sum(m["count"] for m in pane["markers"]) == len(projector.nodes["counter"].timeline)
    # the legend lists the types that occur, not every type a chart could show
    assert {kind for kind, _ in pane["legend"]} == occurred
    focus.zoom = (500, 503)  # a few turns: only what happened there
    zoomed = pane_state(projector, focus, [], {})
    assert {kind for kind, _ in zoomed["legend"]} == {m["type"] for m in zoomed["markers"]}
    assert {kind for kind, _ in zoomed["legend"]} <= occurred


def test_the_event_log_counts_what_its_filter_matches_as_its_pager_does() -> None:
    projector = long_run(150)
    all_events = len(projector.events)
    focus = Focus(node="counter", tab="events", types=["tool_call_finished"])
    for start, node_only in [(None, False), (0, False), (None, True), (40, True)]:
        focus.start, focus.node_only = start, node_only
        pane = pane_state(projector, focus, [], {})
        matching = sum(1 for e in projector.events if e.type == "tool_call_finished")
        assert pane["page"]["total"] == matching == 150
        assert (
            pane["showing"]
            == f"showing {len(pane['rows'])} of 150 matching events ({all_events} in all)"
        )
    focus.types, focus.node_only, focus.start = [], False, None
    pane = pane_state(projector, focus, [], {})
    assert pane["showing"] == f"showing {PAGE} of {all_events} events"
    focus.types = ["run_started"]
    assert pane_state(projector, focus, [], {})["showing"] == (
        f"showing 1 of 1 matching event ({all_events} in all)"
    )
