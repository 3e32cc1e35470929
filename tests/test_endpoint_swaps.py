"""Every swap recorded: an endpoint set on a child's agent mid-run emits `llm_swapped` at that
node's path (at its next request), and the Wire tab shows that endpoint's exchanges."""

from __future__ import annotations

import pytest

import sagents_nb as sn
from sagents_nb.notebook import view

from .notebook.conftest import wait_until
from .notebook.test_view import click

pytestmark = pytest.mark.timeout(30)


def test_an_endpoint_set_on_a_childs_agent_mid_run_is_recorded_and_on_the_wire() -> None:
    aide = sn.Agent("aide", does="helps")
    chef = sn.Agent("chef", team=[aide])
    swapped = sn.mock_llm(lambda req: f"nouveau modèle — 新しい {req.turn}")

    @sn.tool
    def swap(why: str) -> str:
        """Swap the aide's model.

        Args:
            why: why.
        """
        aide.model = swapped
        return f"swapped: {why}"

    aide.tools = [swap]

    def model(req: sn.ChatRequest) -> sn.Reply | str:
        if req.agent == "chef":
            if not req.tool_results:
                return sn.reply(tool_calls=[sn.call("task", agent="aide", prompt="va 🚀")])
            return f"chef: {req.tool_results[-1]}"
        return sn.reply(tool_calls=[sn.call("swap", why="plus rapide")])

    session_llm = sn.mock_llm(model)
    session = sn.Session(chef, llm=session_llm, store=":memory:")
    result = session.send("go").result(timeout=10)
    assert result.text == "chef: nouveau modèle — 新しい 2"
    events = [e for e in session.events if e.type == "llm_swapped"]
    assert [(e.path, e.old, e.new) for e in events] == [
        ("chef/aide.1", session_llm.label, swapped.label)
    ]
    request = next(e for e in session.events if e.type == "model_request" and e.seq > events[0].seq)
    assert request.path == "chef/aide.1"  # recorded before the request it changed

    widget = view(session)
    click(widget, action="focus", node="chef/aide.1", tab="wire")
    wait_until(lambda: widget.current_pane().get("tab") == "wire", what="the wire pane")
    pane = widget.current_pane()
    assert len(pane["exchanges"]) == 2  # one from each endpoint, both the aide's
    assert "新しい" in pane["exchanges"][-1]["response"]
    assert widget.header["llm"] == session_llm.label  # the session's endpoint did not change
    widget.close()
