"""Secret hygiene (a planted key appears nowhere) and load (many runs and sessions at once)."""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import traceback
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
    places += _saved_files(session, ok, tmp_path)
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


def _saved_files(session: sn.Session, result: sn.Result, tmp_path: Path) -> list[str]:
    """The files `save_html` writes of the session and of a result, as written and unpacked
    (their saved panes are compressed), and a view's static output in a notebook."""
    from sagents_nb.notebook import view
    from sagents_nb.notebook._offline import read_saved

    pages = [
        session.save_html(tmp_path / "session.html").read_text(encoding="utf-8"),
        result.save_html(tmp_path / "result.html").read_text(encoding="utf-8"),
    ]
    widget = view(session)
    pages.append(widget.static_output()["text/html"])
    widget.close()
    unpacked = [json.dumps(data, ensure_ascii=False) for page in pages for data in read_saved(page)]
    assert len(unpacked) == 3 and all("Bearer ***" in text for text in unpacked[::2])
    return pages + unpacked


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


PLANTED = "sk-proj-Zq8vN3kLm2Xw9Rt5Yb7Hc4Jd6Fg1"


BUSY_ONCE: set[str] = set()


def echoing_server(request: httpx.Request) -> httpx.Response:
    """Echoes the key it was sent, placed where each excerpt is cut (300, 160, 120 characters)."""
    key = request.headers["authorization"].removeprefix("Bearer ")
    body = json.loads(request.content)
    last = body["messages"][-1]["content"] or ""
    if "401" in last:
        return httpx.Response(401, text="x" * 290 + f" bad key {key}")
    if "html" in last:
        return httpx.Response(
            200, text="<p>" + "y" * 110 + key, headers={"content-type": "text/html"}
        )
    if "tool_calls" in last:
        return httpx.Response(200, json={"choices": [{"message": {"tool_calls": 7}, "k": key}]})
    if "chunk" in last:
        chunk = json.dumps({"choices": 5, "pad": "z" * 100, "k": key})
        return httpx.Response(
            200, text=f"data: {chunk}\n\n", headers={"content-type": "text/event-stream"}
        )
    if "stream" in last:  # the model spells the key over several chunks
        pieces = [f"key is {key[:14]}", key[14:26], f"{key[26:]} ok"]
        text = "".join(
            f"data: {json.dumps({'choices': [{'delta': {'content': p}}]})}\n\n" for p in pieces
        )
        return httpx.Response(
            200, text=text + "data: [DONE]\n\n", headers={"content-type": "text/event-stream"}
        )
    if "busy" in last and last not in BUSY_ONCE:
        BUSY_ONCE.add(last)
        return httpx.Response(503, text=f"overloaded for {key}", headers={"retry-after": "0"})
    return httpx.Response(200, json={"choices": [{"message": {"content": f"echo {key}"}}]})


def test_a_planted_key_survives_no_error_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    texts: list[str] = []

    for bad in (PLANTED + "\n", " " + PLANTED, PLANTED[:10] + "\t" + PLANTED[10:]):
        with pytest.raises(sn.ConfigurationError, match=r"API key from sn\.LLM") as refused:
            sn.LLM("https://api.example.test/v1", api_key=bad)
        texts += [str(refused.value), "".join(traceback.format_exception(refused.value))]
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED + "\r\n")
    with pytest.raises(sn.ConfigurationError, match="from OPENAI_API_KEY contains a line break"):
        sn.LLM("https://api.example.test/v1")
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)

    def endpoint() -> sn.LLM:  # the key comes from OPENAI_API_KEY
        return sn.LLM("https://api.example.test/v1", transport=httpx.MockTransport(echoing_server))

    store = tmp_path / "s.db"
    cassette = tmp_path / "c.jsonl"
    plain = sn.Session(sn.Agent("a"), llm=sn.record(endpoint(), cassette), store=store)
    streaming = sn.Session(
        sn.Agent("s", kind=sn.kinds.Realtime()), llm=endpoint(), store=sn.SQLiteStore(store)
    )
    results = [plain.send(t).result() for t in ("hello", "401", "html", "tool_calls", "busy")]
    results += [streaming.send(t).result() for t in ("chunk", "stream")]
    statuses = ["done", "error", "error", "error", "done", "error", "done"]
    assert [r.status for r in results] == statuses
    assert results[-1].text == "key is *** ok"
    deltas = [e.text for e in streaming.events if e.type == "text_delta"]
    assert "".join(deltas) == "key is *** ok"
    assert [e.status for e in plain.events if e.type == "retry"] == [503]

    async def direct() -> BaseException:
        try:
            await endpoint().complete(
                {"model": "m", "messages": [{"role": "user", "content": "401"}]}
            )
        except sn.EndpointError as exc:
            return exc
        raise AssertionError("no error")

    raised = asyncio.run(direct())
    texts += ["".join(traceback.format_exception(raised)), raised.excerpt]

    for session in (plain, streaming):
        texts += [repr(session), str(session._repr_mimebundle_()), repr(session.runs)]
        texts += [e.model_dump_json() for e in session.events]
        texts += [json.dumps(x.to_dict(), ensure_ascii=False) for x in session.llm.exchanges]
        texts += [m.model_dump_json() for m in session.llm_messages + session.display_messages]
        texts += _widget_states(session)
        texts.append(session.export_jsonl(tmp_path / f"{session.id}.jsonl").read_text())
    texts += [r.text for r in results] + [repr(r) for r in results]
    texts += [cassette.read_text(), caplog.text]
    plain.flush()
    stored = [p.read_bytes() for p in tmp_path.glob("s.db*")]
    assert any(p.name == "s.db-wal" for p in tmp_path.glob("s.db*"))
    for needle in (PLANTED, PLANTED[:12]):
        assert [t[:80] for t in texts if needle in t] == [], needle
        assert [len(b) for b in stored if needle.encode() in b] == [], needle


@pytest.mark.parametrize(
    ("key", "what"),
    [
        (PLANTED + "\n", "a line break (at character 37 of 37)"),
        (PLANTED[:20] + " " + PLANTED[20:], "whitespace (at character 21"),
        (PLANTED + "\x00", "a control character"),
        (PLANTED + "é", "a non-ASCII character"),
        ("\u00a0" + PLANTED, "whitespace (at character 1"),
    ],
)
def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it(key: str, what: str) -> None:
    with pytest.raises(sn.ConfigurationError) as refused:
        sn.LLM("https://api.example.test/v1", api_key=key)
    message = str(refused.value)
    assert what in message and "strip it" in message
    assert PLANTED[:8] not in message


def test_redaction_cuts_after_masking_and_masks_pieces_of_the_key() -> None:
    from sagents_nb._endpoints.secrets import Redactor

    redact = Redactor(PLANTED)
    cut = redact.excerpt("x" * 290 + PLANTED, 300)
    assert PLANTED[:4] not in cut and cut.endswith("***")
    half_masked = f"Incorrect API key provided: {PLANTED[:12]}****************{PLANTED[-4:]}."
    assert redact.scrub(half_masked) == f"Incorrect API key provided: ***{'*' * 16}{PLANTED[-4:]}."
    assert redact.open_tail("the key is " + PLANTED[:5]) == 5
    assert redact.open_tail("nothing here") == 0
    assert Redactor("").scrub("anything") == "anything"
