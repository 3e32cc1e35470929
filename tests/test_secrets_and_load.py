"""Secret hygiene (a planted key appears nowhere) and load (many runs and sessions at once)."""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from pathlib import Path

import httpx
import pytest

import sagents_nb as sn

KEY = "sk-planted-KEY-7f3a9c1e"


def leaky_server(request: httpx.Request) -> httpx.Response:
    """A server that echoes the key back in error bodies, as real ones do."""
    body = json.loads(request.content)
    last = body["messages"][-1]["content"] or ""
    if "fail" in last:
        return httpx.Response(401, json={"error": {"message": f"Incorrect API key: {KEY}"}})
    return httpx.Response(200, json={"choices": [{"message": {"content": "fine"}}]})


def test_a_planted_key_appears_nowhere(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    llm = sn.LLM(
        "https://api.example.test/v1",
        api_key=KEY,
        retries=0,
        transport=httpx.MockTransport(leaky_server),
    )
    cassette = tmp_path / "c.jsonl"
    session = sn.Session(sn.Agent("a"), llm=sn.record(llm, cassette))
    ok = session.send("hello").result()
    failed = session.send("please fail").result()
    assert failed.status == "error" and "***" in failed.text
    with pytest.raises(sn.ConfigurationError) as no_endpoint:
        sn.Session(sn.Agent("a"), llm=None)
    places = [
        repr(llm),
        repr(session),
        repr(session.llm),
        repr(ok),
        repr(failed),
        repr(session.runs),
        str(session._repr_mimebundle_()),
        failed.text,
        str(no_endpoint.value),
        cassette.read_text(),
        caplog.text,
        *(e.model_dump_json() for e in session.events),
        *(json.dumps(x.to_dict()) for x in session.llm.exchanges),
    ]
    places += _widget_states(session)
    leaks = [p[:80] for p in places if KEY in p]
    assert leaks == []


def _widget_states(session: sn.Session) -> list[str]:
    """Every pane of a live view of `session`, as the front end would receive it."""
    from sagents_nb.notebook import view
    from sagents_nb.notebook._panes import TABS

    widget = view(session)
    states = []
    for tab in TABS:
        widget.focus.node, widget.focus.tab = session.root.path, tab
        widget._push()
        assert widget.current_pane()
        states.append(json.dumps([widget.header, widget.tree, widget.pane]))
    assert "Bearer ***" in states[TABS.index("wire")]
    widget.close()
    return states


def test_two_hundred_concurrent_runs_account_for_every_event() -> None:
    async def handler(req: sn.ChatRequest):
        await asyncio.sleep(0.001)
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("echo", text=req.last_user)])
        return f"done {req.tool_results[0]}"

    @sn.tool
    def echo(text: str) -> str:
        return text

    async def main() -> list[sn.Result]:
        agent = sn.Agent("a", tools=[echo])
        return await asyncio.gather(
            *(agent.run(f"job {i}", llm=sn.mock_llm(handler)) for i in range(200))
        )

    results = asyncio.run(main())
    assert [r.text for r in results] == [f"done job {i}" for i in range(200)]
    for result in results:
        seqs = [e.seq for e in result.events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        assert sum(e.type == "model_request" for e in result.events) == 2


def test_twenty_sessions_of_fifty_turns_do_not_cross_talk() -> None:
    def make_handler(name: str):
        return lambda req: f"{name}: {req.last_user}"

    sessions = [
        sn.Session(sn.Agent(f"agent{i}"), llm=sn.mock_llm(make_handler(f"s{i}"))) for i in range(20)
    ]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for turn in range(50):
        runs = [s.send(f"turn {turn}") for s in sessions]
        for i, run in enumerate(runs):
            assert run.result().text == f"s{i}: turn {turn}"
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(f"\n20 sessions x 50 turns: peak RSS grew {grown_mb:.1f} MB")
    assert grown_mb < 200
    for i, session in enumerate(sessions):
        assert len(session.display_messages) == 100
        assert all(
            m.content.startswith(f"s{i}:") for m in session.llm_messages if m.role == "assistant"
        )
        assert {e.path for e in session.events} == {f"agent{i}"}
