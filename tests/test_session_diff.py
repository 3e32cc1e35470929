"""`sn.diff(a, b)`: a fork and its origin (or any two sessions) side by side: the first event
where they part, each node's answer, tokens and turns, as text and as escaped HTML."""

from __future__ import annotations

import pytest

import sagents_nb as sn

from .test_fork_faithful import note, what_if_model

pytestmark = pytest.mark.timeout(30)


def team() -> sn.Agent:
    aide = sn.Agent("aide", does="helps", tools=[note])
    lead = sn.Agent("lead", does="leads the search", team=[aide])
    return sn.Agent("chef", team=[lead])


def test_a_fork_with_an_edited_reply_differs_from_its_origin_from_that_call_on() -> None:
    chef = team()
    origin = sn.Session(chef, llm=sn.mock_llm(what_if_model), store=":memory:")
    origin.send("go").result(timeout=20)
    path = "chef/lead.2/aide.1"
    cut = [e for e in origin.events if e.type == "model_request" and e.path == path][-1]
    fork = origin.fork(at=cut.seq)
    run = fork.resume(pause_on={"model"})
    assert run.wait(timeout=20) == "paused"
    run.edit(reply="<b>édité</b> 🎯 & 中文")
    while run.wait(timeout=20) == "paused":
        run.approve()

    found = sn.diff(origin, fork)
    assert isinstance(found, sn.SessionDiff) and not found.same
    assert found.fork_seq == cut.seq
    assert found.first is not None and found.first >= cut.seq
    assert found.a_event is not None and found.b_event is not None
    by_path = {node.path: node for node in found.nodes}
    assert by_path["chef/lead.1/aide.1"].same  # the sibling subtree is untouched
    changed = by_path[path]
    assert changed.a is not None and changed.b is not None
    assert changed.b.answer == "<b>édité</b> 🎯 & 中文" != changed.a.answer
    assert changed.b.tokens < changed.a.tokens  # the edited call went to no model
    assert by_path["chef"].a.turns == by_path["chef"].b.turns == 3  # type: ignore[union-attr]

    text = str(found)
    assert f"forked at event {cut.seq}" in text and "first diverging event" in text
    assert f"≠ {path}" in text and "édité" in text
    page = found._repr_html_()
    assert "&lt;b&gt;édité&lt;/b&gt; 🎯 &amp; 中文" in page and "<b>édité" not in page

    assert sn.diff(origin, origin).same
    reopened = sn.Session.open(origin.store, origin.id, agent=chef)
    same = sn.diff(origin, reopened)
    assert same.first is None and same.same, str(same)


def test_diff_refuses_what_is_not_a_session() -> None:
    session = sn.Session(team(), llm=sn.mock_llm(what_if_model))
    with pytest.raises(sn.ConfigurationError, match=r"sn\.diff.*b.*an sn\.Session"):
        sn.diff(session, "not a session")  # type: ignore[arg-type]
