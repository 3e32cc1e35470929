"""A run's view shows and controls that run only; a session's view follows its latest run."""

from __future__ import annotations

import json

import sagents_nb as sn
from sagents_nb.notebook import LiveView, view
from sagents_nb.notebook._projector import Projector

from .conftest import wait_until
from .test_view import click


def texts(widget: LiveView) -> str:
    """Every transcript line of the root, as one text."""
    widget.flush()
    return json.dumps(widget.current_pane().get("entries", []), ensure_ascii=False)


def test_a_runs_view_does_not_show_or_steer_the_next_runs_pause(forecaster: sn.Session) -> None:
    first = forecaster.send("Météo à Zürich ? 天気は？")
    first.result()
    first_view = view(first)
    second = forecaster.send("Encore une fois — もう一度 🌦", pause_on=("tool",))
    assert second.wait() == "paused"
    session_view = view(forecaster)
    first_view.flush()
    header = first_view.header
    assert header["run"]["number"] == 1 and header["run"]["status"] == "done"
    assert header["pending"] == []
    assert header["later"]["text"] == "run 2 is paused: view(session) follows it"
    assert "もう一度" not in texts(first_view)
    assert "天気は" in texts(first_view)
    assert first_view.projector.runs.keys() == {1}
    assert {event.run for event in first_view.projector.events} == {1}
    static = first_view._repr_mimebundle_()[0]
    for text in (static["text/plain"], static["text/html"]):
        assert "run 2 is paused: view(session) follows it" in text and "もう一度" not in text
    click(first_view, action="focus", tab="timing")
    wait_until(lambda: first_view.current_pane()["tab"] == "timing")
    assert first_view.current_pane()["runs"] == [1]
    click(first_view, action="focus", tab="decisions")
    wait_until(lambda: first_view.current_pane()["tab"] == "decisions")
    assert "get_weather" not in json.dumps(first_view.current_pane())  # run 2's pause
    click(first_view, action="focus", tab="transcript")
    # a click on a stale page answers without touching run 2
    click(first_view, action="approve")
    wait_until(lambda: "run 1 is not paused" in first_view.header["notice"]["text"])
    assert second.status == "paused"

    assert session_view.header["later"] is None
    pause = session_view.header["pending"][0]
    assert session_view.header["run"]["number"] == 2 and pause["name"] == "get_weather"
    assert "もう一度" in texts(session_view)
    click(session_view, action="approve", pause_id=pause["pause_id"])
    assert second.result().text == "it is sunny in Paris"
    wait_until(lambda: first_view.header["later"]["status"] == "done")
    assert first_view.header["later"]["text"] == "run 2 is done: view(session) shows it"
    assert "もう一度" not in texts(first_view)
    first_view.close()
    session_view.close()


def test_a_runs_view_attached_before_the_next_run_keeps_its_own_decisions(
    forecaster: sn.Session,
) -> None:
    first = forecaster.send("Météo ?", pause_on=("tool",))
    first_view = view(first)
    assert first.wait() == "paused"
    click(first_view, action="approve", pause_id=first_view.header["pending"][0]["pause_id"])
    first.result()
    second = forecaster.send("Café ?", pause_on=("tool",))
    assert second.wait() == "paused"
    first_view.flush()
    assert first_view.header["pending"] == []
    assert len(first_view.projector.decisions.entries) == 1
    assert first_view.header["later"]["number"] == 2
    second.cancel()
    second.wait()
    first_view.close()


def test_the_projector_folds_only_its_runs_events_and_names_later_runs() -> None:
    session = sn.Session(sn.Agent("écho"), llm=sn.mock_llm(lambda r: "répondu ✓"))
    session.send("un").result()
    session.send("deux — 二").result()
    scoped, whole = Projector(scope=1), Projector()
    for event in session.events:
        scoped.fold(event)
        whole.fold(event)
    assert scoped.later == {2: "done"} and whole.later == {}
    assert set(scoped.runs) == {1} and set(whole.runs) == {1, 2}
    assert all(event.run <= 1 for event in scoped.events)
    scoped.apply_tree(session.tree)  # the session's tree now: not the state as of run 1
    assert scoped.nodes["écho"].turns == 1
