"""A mock's tool-call arguments are UTF-8 JSON text, as a real server sends them: "é", "東京" and
"🚀" reach the tool, the events, the stored transcript and the view as themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import sagents_nb as sn
from sagents_nb.notebook._panes import Focus, pane_state
from sagents_nb.notebook._projector import Projector

pytestmark = pytest.mark.timeout(60)

ARGUMENTS: dict[str, Any] = {
    "fr": "déjà vu, garçon — « œuvre »",
    "zh": "东京的天气怎么样？",
    "ja": "東京の天気を教えて。",
    "emoji": "🚀✨👩‍💻",
    "code": "def f(x):\n\treturn \"a\\\\b\" + 'q'  # 注释\r\n",
    "line_separator": "a\u2028b",
    "nested": {"ville": "Zürich", "tags": ["東京", "🎉"]},
}
SENT = json.dumps(ARGUMENTS, ensure_ascii=False)
"""The arguments as a real OpenAI-compatible server would send them."""


def echo_tool(received: list[dict[str, Any]]) -> sn.Tool:
    @sn.tool
    def echo(fr: str, zh: str, ja: str, emoji: str, code: str, line_separator: str, nested: dict):
        """Echo the arguments back."""
        received.append(
            dict(fr=fr, zh=zh, ja=ja, emoji=emoji, code=code, line_separator=line_separator)
            | {"nested": nested}
        )
        return "ok"

    return echo


def call_then_answer(req: sn.ChatRequest) -> Any:
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("echo", **ARGUMENTS)])
    return "done"


def agent(received: list[dict[str, Any]], stream: bool) -> sn.Agent:
    """A `Realtime` agent asks for a stream (server-sent events), the default for one JSON reply."""
    if stream:
        return sn.Agent("a", tools=[echo_tool(received)], kind=sn.kinds.Realtime())
    return sn.Agent("a", tools=[echo_tool(received)])


def assert_as_sent(session: sn.Session, received: list[dict[str, Any]]) -> None:
    assert received == [ARGUMENTS]
    started = [e for e in session.events if e.type == "tool_call_started"]
    finished = [e for e in session.events if e.type == "tool_call_finished"]
    assert [e.arguments for e in started + finished] == [SENT, SENT]
    (call,) = [c for m in session.llm_messages for c in m.tool_calls or ()]
    assert call.arguments == SENT
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    (card,) = pane_state(projector, Focus(node="a", tab="tools"), None, {})["cards"]
    assert "東京" in json.dumps(card, ensure_ascii=False) and "\\u" not in card["arguments"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_an_in_process_mock_sends_arguments_as_utf8_json(stream: bool) -> None:
    received: list[dict[str, Any]] = []
    llm = sn.mock_llm(call_then_answer)
    session = sn.Session(agent(received, stream), llm=llm)
    assert session.send("vas-y").result().text == "done"
    assert_as_sent(session, received)
    assert llm.exchanges[1].request["messages"][1]["tool_calls"][0]["function"]["arguments"] == SENT


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_served_mock_sends_utf8_bodies_a_real_client_reads(stream: bool, tmp_path: Path) -> None:
    received: list[dict[str, Any]] = []
    with sn.MockServer(sn.mock_llm(call_then_answer)) as server:
        llm = sn.LLM(server.openai_base_url, api_key="sk-x")
        session = sn.Session(agent(received, stream), llm=llm, store=tmp_path / "runs.db")
        assert session.send("vas-y").result().text == "done"
        wire = httpx.post(
            server.openai_base_url + "/chat/completions",
            json={"model": "m", "stream": stream, "messages": [{"role": "user", "content": "go"}]},
        )
    assert_as_sent(session, received)
    assert "東京".encode() in wire.content and b"\\u" not in wire.content  # UTF-8 on the wire
    stored = sn.Session.open(tmp_path / "runs.db", session.id, agent=agent([], stream))
    (call,) = [c for m in stored.llm_messages for c in m.tool_calls or ()]
    assert call.arguments == SENT


def test_the_anthropic_format_streams_utf8_partial_json_and_reads_inputs_back() -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        seen.append(req)
        return sn.reply(tool_calls=[sn.call("echo", **ARGUMENTS)])

    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": ARGUMENTS}
    body = {"model": "claude-x", "max_tokens": 100, "messages": [
        {"role": "user", "content": "vas-y"},
        {"role": "assistant", "content": [tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "ok"}]},
    ]}  # fmt: skip
    with sn.MockServer(sn.mock_llm(handler)) as server:
        url = server.base_url + "/v1/messages"
        plain = httpx.post(url, json=body)
        streamed = httpx.post(url, json=body | {"stream": True})
    assert plain.json()["content"][0]["input"] == ARGUMENTS
    assert "東京".encode() in plain.content and b"\\u" not in plain.content
    data = [json.loads(line[5:]) for line in streamed.text.split("\n") if line.startswith("data:")]
    (partial,) = [e["delta"]["partial_json"] for e in data if e["type"] == "content_block_delta"]
    assert partial == SENT
    assert seen[0].messages[1]["tool_calls"][0]["function"]["arguments"] == SENT


def test_the_responses_format_sends_utf8_arguments() -> None:
    llm = sn.mock_llm(lambda req: sn.reply(tool_calls=[sn.call("echo", **ARGUMENTS)]))
    body = {"model": "m", "input": "vas-y"}
    with sn.MockServer(llm) as server:
        url = server.openai_base_url + "/responses"
        plain = httpx.post(url, json=body)
        streamed = httpx.post(url, json=body | {"stream": True})
    (item,) = plain.json()["output"]
    assert item["arguments"] == SENT
    assert "東京".encode() in plain.content and b"\\u" not in plain.content
    data = [json.loads(line[5:]) for line in streamed.text.split("\n") if line.startswith("data:")]
    deltas = [e["delta"] for e in data if e["type"] == "response.function_call_arguments.delta"]
    assert deltas == [SENT]


def test_a_lone_surrogate_still_makes_a_valid_body() -> None:
    received: list[str] = []

    @sn.tool
    def keep(text: str) -> str:
        """Keep it."""
        received.append(text)
        return "ok"

    for kind in (None, sn.kinds.Realtime()):
        llm = sn.script(sn.reply(tool_calls=[sn.call("keep", text="a\udcff東京")]), "done")
        assert sn.Agent("a", tools=[keep], kind=kind).run_sync("x", llm=llm).text == "done"
    assert received == ["a\udcff東京"] * 2


def test_arguments_a_server_sends_as_an_object_are_kept_as_utf8_text() -> None:
    """Some servers send `arguments` as a JSON object, not text: the client writes it UTF-8 too."""
    received: list[dict[str, Any]] = []

    def server(request: httpx.Request) -> httpx.Response:
        if b'"role":"tool"' in request.content.replace(b" ", b""):
            return httpx.Response(200, json={"choices": [{"message": {"content": "done"}}]})
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "echo", "arguments": ARGUMENTS},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return httpx.Response(200, json={"choices": [{"message": message}]})

    llm = sn.LLM("http://odd.test/v1", api_key="", transport=httpx.MockTransport(server))
    session = sn.Session(agent(received, stream=False), llm=llm)
    assert session.send("vas-y").result().text == "done"
    assert_as_sent(session, received)


def test_a_cassette_replays_text_holding_a_unicode_line_separator(tmp_path: Path) -> None:
    """U+2028 is written as itself in a UTF-8 cassette line; it does not end the line."""
    cassette = tmp_path / "run.jsonl"
    for endpoint in (
        lambda: sn.record(sn.mock_llm(call_then_answer), cassette),
        lambda: sn.replay(cassette),
    ):
        received: list[dict[str, Any]] = []
        session = sn.Session(agent(received, stream=False), llm=endpoint())
        assert session.send("vas-y").result().text == "done"
        assert_as_sent(session, received)
    assert "\u2028" in cassette.read_text(encoding="utf-8")


RECORD_AND_REPLAY = """
import json, sys
import sagents_nb as sn
from tests.test_mock_arguments import ARGUMENTS, SENT, agent, call_then_answer

path = sys.argv[1]
for endpoint in (lambda: sn.record(sn.mock_llm(call_then_answer), path), lambda: sn.replay(path)):
    received = []
    session = sn.Session(agent(received, stream=False), llm=endpoint())
    assert session.send("vas-y").result().text == "done", session.events[-1]
    assert received == [ARGUMENTS]
    assert [e.arguments for e in session.events if e.type == "tool_call_started"] == [SENT]
print("ok")
"""


def test_a_cassette_keeps_utf8_arguments_whatever_the_locale(tmp_path: Path) -> None:
    """Recorded in an ASCII locale (as cp1252 on Windows), where `open()` defaults to ASCII."""
    import os
    import subprocess
    import sys

    env = os.environ | {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    cassette = tmp_path / "run.jsonl"
    done = subprocess.run(
        [sys.executable, "-X", "utf8=0", "-c", RECORD_AND_REPLAY, str(cassette)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=Path(__file__).parent.parent,
        timeout=60,
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
    assert "東京" in cassette.read_text(encoding="utf-8")
