"""A long stored log folded after the view's first paint (`_replay`): until then the tree holds
the stored tree's rows, every pane and the search say the events are being read, the header
counts every event; once folded, the view is what folding at once gives, events emitted
meanwhile included."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base.loop import run_sync
from sagents_nb.notebook import _offline, _target, _widget, save_html, view
from sagents_nb.notebook._controls import handle_message
from sagents_nb.notebook._panes import TABS
from sagents_nb.notebook._widget import LiveView

CHILDREN = 12


@sn.tool
def mesurer(n: int) -> str:
    """Measure one thing.

    Args:
        n: which.
    """
    return f"mesuré {n} — 測定 ✓"


def handler(req: sn.ChatRequest) -> Any:
    if "task" in req.tools:
        if req.last["role"] == "user":
            calls = [
                sn.call("task", agent="ouvrier", prompt=f"tâche {i} 東京 🚀")
                for i in range(CHILDREN)
            ]
            return sn.reply(tool_calls=calls)
        return "fini"
    if req.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("mesurer", n=len(req.last_user or ""))])
    return "fait ✓"


def team() -> sn.Agent:
    worker = sn.Agent("ouvrier", does="mesure", tools=[mesurer])
    return sn.Agent("chef", does="répartit", team=[worker])


def reopened(tmp_path: Path) -> sn.Session:
    path = tmp_path / "runs.db"
    if not path.exists():
        first = sn.Session(team(), llm=sn.mock_llm(handler), store=path, max_nodes=50)
        first.send("go").result()
        first.store.close()
        (tmp_path / "id").write_text(first.id)
    sid = (tmp_path / "id").read_text()
    return sn.Session.open(path, sid, agent=team(), llm=sn.mock_llm(handler), max_nodes=50)


def held_view(session: sn.Session, monkeypatch: pytest.MonkeyPatch) -> tuple[LiveView, list[Any]]:
    """A view that folds its stored log apart, its loop callbacks held until `run_held`."""
    held: list[Callable[[], None]] = []
    monkeypatch.setattr(_target, "FOLD_AT_ONCE", 10)
    monkeypatch.setattr(_widget, "call_soon", held.append)
    shown = view(session)
    monkeypatch.undo()
    return shown, held


def run_held(held: list[Callable[[], None]]) -> None:
    async def run() -> None:
        while held:
            held.pop(0)()

    run_sync(run(), what="the held callbacks")


def rows(state: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    found = {state["id"]: tuple(state[name] for name in fields)}
    for child in state.get("children", ()):
        found.update(rows(child, fields))
    return found


def panes(shown: LiveView, foci: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen = []
    for focus in foci:
        handle_message(shown, {"action": "focus", **focus})
        shown.flush()
        seen.append(shown.current_pane())
    return seen


def test_a_long_stored_log_is_folded_after_the_tree_is_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reopened(tmp_path)
    at_once = view(reopened(tmp_path))
    session = reopened(tmp_path)
    shown, held = held_view(session, monkeypatch)
    try:
        assert held, "the fold waits for the loop"
        events = len(session.events)
        assert events > 10 and shown.projector.loading is not None
        assert (shown.header["events"], shown.header["seq"]) == (events, session.events[-1].seq)
        # the rows before the fold: the stored tree's figures, true already
        fields = ("status", "kind", "turns", "tokens", "descendants")
        assert rows(shown.tree, fields) == rows(at_once.tree, fields)
        assert shown.tree["summary"] == at_once.tree["summary"]
        child = "chef/ouvrier.3"
        for tab in TABS:
            handle_message(shown, {"action": "focus", "node": child, "tab": tab})
            shown.flush()
            pane = shown.current_pane()
            assert (pane["node"], pane["tab"]) == (child, tab)
            assert pane["empty"] == f"reading the {events:,} stored events…"
        handle_message(shown, {"action": "search", "query": "東京"})
        shown.flush()
        assert (
            shown.found["rows"] == []
            and shown.found["note"] == f"reading the {events:,} stored events…"
        )
        static = shown.static_output()  # the tree's text; the offline panes once folded
        assert "ouvrier.3 [worker] done" in static[
            "text/plain"
        ] and "sagents-saved" not in json.dumps(static)
        # a run meanwhile: its events wait, folded after the stored ones
        session.send("encore").result()
        assert len(session.events) > events and not shown.projector.events
        shown.flush()
        assert shown.header["events"] == len(session.events)  # the stored and the waiting
        assert shown.header["seq"] == session.events[-1].seq
        run_held(held)
        assert shown.projector.loading is None and shown.target.replay is None
        assert list(shown.projector.events) == list(session.events)
        shown.flush()
        again = view(session)
        try:
            assert shown.tree == again.tree
            handle_message(shown, {"action": "search", "query": ""})
            foci = [{"node": child, "tab": tab} for tab in TABS] + [{"node": None}]
            assert panes(shown, foci) == panes(again, foci)
            found = {"action": "search", "query": "東京"}
            handle_message(shown, found)
            handle_message(again, found)
            run_held(held)  # the search's indexing
            shown.flush()
            again.flush()
            assert shown.found == again.found and shown.found["rows"]
        finally:
            again.close()
    finally:
        shown.close()
        at_once.close()


def test_saving_a_view_whose_stored_log_is_being_read_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = reopened(tmp_path)
    shown, held = held_view(session, monkeypatch)
    try:
        assert shown.projector.loading is not None and held
        page = save_html(shown, tmp_path / "vue.html").read_text(encoding="utf-8")
        assert shown.projector.loading is None
        assert len(shown.projector.events) == len(session.events)
        assert "stored events…" not in page
        run_held(held)  # the slices still queued find nothing left to fold
        assert shown.target.replay is None
    finally:
        shown.close()


def test_a_long_session_leaves_its_text_in_the_notebook_not_its_panes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = reopened(tmp_path)
    shown = view(session)
    try:
        assert "sagents-saved" in json.dumps(shown.static_output())
    finally:
        shown.close()
    for bound in ("OUTPUT_EVENTS", "OUTPUT_NODES"):
        with monkeypatch.context() as patched:
            patched.setattr(_offline, bound, 10)
            shown = view(session)
            try:
                static = shown.static_output()
                assert "sagents-saved" not in json.dumps(static)
                assert "ouvrier.3 [worker] done" in static["text/plain"]
            finally:
                shown.close()


def test_a_runs_view_folds_its_stored_log_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = reopened(tmp_path)
    session.send("encore").result()
    shown, _ = held_view(session.runs[0], monkeypatch)
    try:  # the tree snapshot is the session's now, not run 1's
        assert shown.projector.loading is None and shown.target.replay is None
        assert shown.projector.later == {2: "done"}
    finally:
        shown.close()
