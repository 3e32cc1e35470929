"""What a run is given at its doors: pause points as one name or several (typos refused alike at
`Agent(...)` and `send(...)`), session ids as text, and a start that cannot be recorded ending the
run as an error rather than leaving it running."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

import sagents_nb as sn
from tests.conftest import add as pay

pytestmark = pytest.mark.timeout(30)


def pay_then_answer(req: sn.ChatRequest) -> sn.Reply | str:
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("add", a=2, b=3)])
    return f"fini: {req.tool_results[-1]} €"


@pytest.mark.parametrize("typo", [{"tools"}, ["tool", "modle"], "tools"])
def test_a_typo_in_the_agents_pause_on_is_refused_as_send_refuses_it(typo: object) -> None:
    with pytest.raises(sn.ConfigurationError, match=r"pause_on of Agent\('a'\) accepts"):
        sn.Agent("a", tools=[pay], pause_on=typo)  # type: ignore[arg-type]
    session = sn.Session(sn.Agent("a", tools=[pay]), llm=sn.mock_llm(pay_then_answer))
    with pytest.raises(sn.ConfigurationError, match=r"pause_on of send\(\) accepts"):
        session.send("x", pause_on=typo)  # type: ignore[arg-type]
    assert session.runs == []


def test_a_typo_swapped_into_an_agents_pause_on_later_is_refused_and_changes_nothing() -> None:
    agent = sn.Agent("a", tools=[pay], pause_on="tool")
    with pytest.raises(sn.ConfigurationError, match=r"not \['tools'\]"):
        agent.pause_on = {"tools"}
    assert agent.pause_on == {"tool"}
    agent.pause_on = ["model", "tool"]
    assert agent.pause_on == {"model", "tool"}


def test_pause_on_that_is_no_collection_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match=r"pause_on of Agent.* not int"):
        sn.Agent("a", pause_on=5)  # type: ignore[arg-type]


def test_one_action_name_is_one_pause_point_at_the_agent_and_at_send() -> None:
    agent = sn.Agent("a", tools=[pay], pause_on="tool")
    assert agent.pause_on == {"tool"}
    run = sn.Session(agent, llm=sn.mock_llm(pay_then_answer)).send("payer ?")
    assert run.wait(10) == "paused" and run.paused_at.name == "add"
    run.approve()
    assert run.result(timeout=10).text == "fini: 5 €"
    session = sn.Session(sn.Agent("a", tools=[pay]), llm=sn.mock_llm(pay_then_answer))
    run = session.send("payer ?", pause_on="tool")
    assert run.pause_on == {"tool"} and run.wait(10) == "paused"
    run.resume()
    assert run.result(timeout=10).status == "done"


@pytest.mark.parametrize("bad", [5, 5.0, b"5"])
def test_a_session_id_that_is_not_text_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(TypeError, match="session_id must be a str"):
        sn.Session(sn.Agent("a"), llm=sn.script("x"), session_id=bad)  # type: ignore[arg-type]
    stored = sn.Session(sn.Agent("a"), llm=sn.script("x"), store=tmp_path / "s.db", session_id="5")
    stored.send("un").result(timeout=10)
    stored.store.close()
    with pytest.raises(TypeError, match="session_id must be a str"):
        sn.Session.open(tmp_path / "s.db", bad, agent=sn.Agent("a"))  # type: ignore[arg-type]
    again = sn.Session.open(tmp_path / "s.db", "5", agent=sn.Agent("a"))
    assert again.id == "5" and [s.id for s in sn.Session.list_stored(again.store)] == ["5"]
    again.store.close()


def unrecordable(**fields: object) -> sn.events.RunStarted:
    """A `run_started` event that cannot be made (events are not validated when made: the
    failure is put in its place)."""
    raise ValueError("run_started: this start cannot be recorded")


@pytest.mark.parametrize("stored", [False, True], ids=["memory only", "sqlite file"])
def test_a_run_whose_start_cannot_be_recorded_ends_as_an_error(
    tmp_path: Path, stored: bool
) -> None:
    session = sn.Session(
        sn.Agent("a"),
        llm=sn.mock_llm(lambda req: f"écho: {req.last_user}"),
        store=tmp_path / "s.db" if stored else None,
    )
    with mock.patch("sagents_nb._runtime.session.RunStarted", side_effect=unrecordable):
        run = session.send("bonjour")
        assert run.wait(10) == "error"
    errors = [e for e in run.events if e.type == "error"]
    assert len(errors) == 1 and errors[0].error_type == "ValueError"
    assert [e.status for e in session.events if e.type == "run_finished"] == ["error"]
    assert session.send("encore").result(timeout=10).text == "écho: encore"
    if stored:
        session.store.close()
