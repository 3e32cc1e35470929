"""What the view does for hosts other than JupyterLab, without a browser: under marimo `view()`
gives the same open view of the same object again (a cell's re-run keeps it mounted), and the
value `mo.ui.anywidget` reports is the view's state: the run, its pauses, the tree, the pane."""

from __future__ import annotations

import json

import pytest

import sagents_nb as sn
from sagents_nb.notebook import _display, view


@pytest.fixture
def in_marimo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_display, "_in_marimo", lambda: True)


def test_outside_marimo_each_call_is_a_new_view(team_session: sn.Session) -> None:
    first, second = view(team_session), view(team_session)
    try:
        assert first is not second
        assert not _display._in_marimo()  # marimo imported or not, no marimo runtime here
    finally:
        first.close()
        second.close()


@pytest.mark.usefixtures("in_marimo")
def test_under_marimo_a_rerun_gets_the_same_open_view(team_session: sn.Session) -> None:
    shown = view(team_session)
    assert view(team_session) is shown
    faster, other = view(team_session, rate=2.0), view(team_session.send("encore — もう一度"))
    assert faster is not shown and other is not shown
    shown.close()
    again = view(team_session, rate=2.0)
    assert again is faster  # the latest view of it, still open
    faster.close()
    fresh = view(team_session)
    assert fresh is not shown and fresh.comm is not None
    for widget in (other, fresh):
        widget.close()


def test_the_value_marimo_reports_is_the_views_state(team_session: sn.Session) -> None:
    mo = pytest.importorskip("marimo")
    run = team_session.send("Qu’y a-t-il ? 何がある？ 📂", pause_on=("tool",))
    run.wait()
    shown = view(run)
    try:
        value = mo.ui.anywidget(shown).value
        assert sorted(value) == ["found", "header", "pane", "tree"]
        assert value["header"]["run"]["status"] == "paused"
        (pause,) = value["header"]["pending"]
        assert (pause["name"], pause["path"]) == ("read_file", "coordinator/explore.1")
        assert value["tree"]["id"] == "coordinator"
        pane = json.loads(value["pane"])
        # the pane shows the paused child, followed: nobody chose a node yet
        assert (pane["node"], pane["chosen"], pane["tab"]) == (
            "coordinator/explore.1",
            None,
            "transcript",
        )
    finally:
        run.cancel()
        shown.close()
