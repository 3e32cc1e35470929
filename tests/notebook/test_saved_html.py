"""`save_html`: one self-contained HTML file holding the view's code and every pane a click asks
for (issue 31 item 2); what it holds, how it is escaped, and its size."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.notebook import save_html, view
from sagents_nb.notebook._offline import (
    REF,
    focus_key,
    intern,
    read_saved,
    script_json,
    unintern,
)
from sagents_nb.notebook._panes import TABS

from ._saved_runs import WORDS, delegating_session, finished, thousand_events
from .conftest import XSS, wait_until

LIMIT = 2 * 1024 * 1024
"""Bytes a saved 1,000-event session may take (issue 31 item 2)."""


def saved(path: Path) -> tuple[str, list[dict[str, Any]]]:
    page = path.read_text(encoding="utf-8")
    [data] = read_saved(page)
    return page, data["views"]


def test_a_session_saves_every_tab_of_every_node(tmp_path: Path) -> None:
    session = finished(delegating_session())
    path = session.save_html(tmp_path / "run.html")
    assert path == tmp_path / "run.html"
    page, [shown] = saved(path)
    state = shown["state"]
    nodes = ["coordinator", "coordinator/explore.1", "coordinator/explore.2"]
    assert state["tree"]["id"] == "coordinator"
    assert [c["id"] for c in state["tree"]["children"]] == nodes[1:]
    for node in [None, *nodes]:
        for tab in TABS:
            assert focus_key(node, tab) in state["keys"], (node, tab)
    # each turn of a child's context, with its diff
    child = "coordinator/explore.1"
    turns = [key for key in state["keys"] if key.startswith(child + "\x1fcontext\x1f")]
    assert len(turns) == 1 + 4  # the newest, then each of its 4 turns
    index, path_of = state["keys"][focus_key(child, "context", turn=1)]
    pane = state["panes"][index]
    assert path_of == child and pane["index"] == 1
    assert pane["changes"]["previous"] == 1 and pane["changes"]["turn"] == 2
    assert [item["role"] for item in pane["changes"]["added"]] == ["assistant", "tool"]
    transcript = state["panes"][state["keys"][focus_key(child, "transcript")][0]]
    assert transcript["entries"][0]["text"] == "lis le chapitre 0 — 第0章 📖"
    tools = state["panes"][state["keys"][focus_key(child, "tools")][0]]
    assert [c["name"] for c in tools["cards"]] == ["lookup"] * 3
    assert XSS in tools["cards"][0]["result"]
    timing = state["panes"][state["keys"][focus_key(None, "timing")][0]]
    assert timing["waterfall"] and timing["tokens"]
    assert state["header"]["live"] is False and state["header"]["fork"] is False
    assert len(state["events"]) == len(session.events) == len(state["rows"])
    # the answer in the fallback text, escaped; nowhere as markup
    assert "Réponse finale : tout va bien ✅" in page
    assert "<img src=x" not in page and "<script>window" not in page
    assert page.count("</script>") == 2 and page.count("<script") == 2


def test_a_result_and_a_run_save_their_own_view(tmp_path: Path) -> None:
    session = delegating_session(children=1, turns=1)
    result = session.send("première question — 最初").result()
    second = session.send("deuxième — 二番目 🎌")
    second.wait(timeout=30)
    _, [of_result] = saved(result.save_html(tmp_path / "result.html"))
    assert of_result["state"]["header"]["title"] == "result of run 1"
    entries = of_result["state"]["panes"][
        of_result["state"]["keys"][focus_key(None, "transcript")][0]
    ]
    assert entries["entries"][0]["text"] == "première question — 最初"
    _, [of_run] = saved(save_html(second, tmp_path / "run.html"))
    assert of_run["state"]["header"]["run"]["number"] == 2


def test_a_comparison_saves_its_table_and_each_runs_view(tmp_path: Path) -> None:
    cmp = sn.compare(
        sn.Agent("solo"),
        ["bonjour — こんにちは", "你好 🎉"],
        {"a": {}, "b": {}},
        llm=sn.mock_llm(lambda request: f"réponse à {request.last_user} {XSS}"),
    )
    page, views = saved(cmp.save_html(tmp_path / "cmp.html"))
    assert [v["title"] for v in views] == ["a · item 0", "b · item 0"]  # one item, two prompts
    assert "sn-comparison" in page  # the table, as the fallback
    last = views[-1]["state"]
    assert last["header"]["run"]["text"] == f"réponse à 你好 🎉 {XSS}"
    assert last["tree"]["id"] == "solo" and last["tree"]["status"] == "done"
    assert "<img src=x" not in page


def test_a_views_forks_are_saved_below_it(tmp_path: Path) -> None:
    session = finished(delegating_session(children=1, turns=1, store=":memory:"))
    shown = view(session)
    try:
        fork = session.fork(at=6)
        shown.show_fork(fork, 6)
        _, [state] = saved(save_html(shown, tmp_path / "forked.html"))
    finally:
        shown.close()
    [ref] = state["state"]["header"]["forks"]
    assert ref["model"] == "fork-0" and ref["seq"] == 6
    [forked] = state["state"]["forks"]
    assert forked["tree"]["id"] == "coordinator"
    assert len(forked["events"]) == len(fork.events)


def test_script_json_cannot_end_its_script_and_reads_back() -> None:
    value = {"t": f"{XSS} </script><!-- & \u2028 \u2029 — 日本語 中文 français 🎉 {WORDS}"}
    text = script_json(value)
    for raw in ("<", ">", "&", "\u2028", "\u2029"):
        assert raw not in text
    assert json.loads(text) == value


def test_interning_keeps_repeats_once_and_gives_the_value_back() -> None:
    long = "le même message, répété — 同じメッセージ 🎉" * 3
    value = {
        "a": [long, long, {"x": long, "y": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}],
        "b": {"x": long, "y": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]},
        "c": REF + "12 (text that looks like a reference)",
        "d": ["short", "short", None, True, 1.5],
    }
    packed = intern(value)
    assert json.dumps(packed, ensure_ascii=False).count("répété") == 3  # once in the table
    assert unintern(packed) == value


def test_a_thousand_event_session_is_at_most_two_megabytes(tmp_path: Path) -> None:
    session = thousand_events()
    path = session.save_html(tmp_path / "long.html")
    size = path.stat().st_size
    print(f"\n{len(session.events)} events saved in {size / 1024:.0f} KiB")
    assert size <= LIMIT
    _, [shown] = saved(path)
    state = shown["state"]
    # every page of the event log, back to the first event
    pages = [k for k in state["keys"] if re.match(r"\x1fevents\x1f\x1f\d+\x1f", k)]
    assert focus_key(None, "events", start=0) in state["keys"] and len(pages) >= 10


def test_save_html_refuses_a_path_that_is_not_one(tmp_path: Path) -> None:
    session = finished(delegating_session(children=1, turns=1))
    with pytest.raises(sn.ConfigurationError, match="path"):
        session.save_html(5)  # type: ignore[arg-type]


def test_a_streaming_runs_notebook_output_is_its_text_until_it_stops() -> None:
    """The static output made after each cell holds the viewer's panes only once the run has
    stopped: made while it streams, they held the kernel's main thread (and the clicks) and the
    projector's lock (and the live pushes) for up to seconds, to be stale at once."""
    release = threading.Event()

    async def handler(request: sn.ChatRequest) -> Any:
        if "task" in request.tools:
            if request.last["role"] == "user":
                return sn.reply(tool_calls=[sn.call("task", agent="ouvrier", prompt="lis — 読む")])
            return "fini — 終わり 🎉"
        await asyncio.to_thread(release.wait, 30)  # the loop stays free meanwhile
        return "lu : « bonjour »"

    team = [sn.Agent("ouvrier", does="lit")]
    session = sn.Session(sn.Agent("chef", team=team), llm=sn.mock_llm(handler))
    shown = view(session)
    queued = None
    try:
        run = session.send("délègue")
        later = session.send("encore — もう一度")
        queued = view(later)  # a view of a run waiting behind the streaming one
        wait_until(lambda: "ouvrier" in shown.static_output()["text/plain"])
        static = shown.static_output()
        assert run.status == "running" and later.status == "queued"
        assert "sagents-saved" not in static["text/html"]
        assert "chef [main] running" in static["text/plain"]
        assert "sagents-saved" not in queued.static_output()["text/html"]
        release.set()
        assert run.wait(30) == "done" and later.wait(30) == "done"
        static = shown.static_output()
        assert "sagents-saved" in static["text/html"]
        assert "fini — 終わり 🎉" in static["text/plain"]
        assert "sagents-saved" in queued.static_output()["text/html"]
    finally:
        release.set()
        shown.close()
        if queued is not None:
            queued.close()
