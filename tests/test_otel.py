"""`sn.otel`: spans by the GenAI conventions from a session's events, live and after the fact,
checked in OpenTelemetry's in-memory exporter (the real receiver: tests/test_otel_phoenix.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import sagents_nb as sn

pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'sagents_nb[otel]'")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

KEY = "sk-planted-otel-9c4e7a1f3b"
USAGE = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}


@sn.tool
def météo(ville: str) -> str:
    """La météo d'une ville."""
    if ville == "Atlantis":
        raise ValueError("ville inconnue 🌊")
    return f"{ville} : ☀️ 晴天"


def handler(req: sn.ChatRequest) -> Any:
    if req.node == "boss":
        if not req.tool_results:
            call = sn.call("task", agent="explore", prompt="Cherche 北京 🌏")
            return sn.reply(tool_calls=[call], usage=USAGE)
        return sn.reply("Fini ✅ 完成", usage=USAGE)
    if not req.tool_results:
        calls = [sn.call("météo", ville="Paris"), sn.call("météo", ville="Atlantis")]
        return sn.reply(tool_calls=calls, usage=USAGE)
    return sn.reply("Il fait beau à Paris 🌞", usage=USAGE)


def team() -> sn.Agent:
    return sn.Agent("boss", team=[sn.Agent("explore", does="explores", tools=[météo])])


def provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider, exporter


def tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[str, str | None]]:
    """Each span's name and its parent's, in start order."""
    names = {s.context.span_id: s.name for s in spans}
    ordered = sorted(spans, key=lambda s: (s.start_time or 0, s.name))
    return [(s.name, names.get(s.parent.span_id) if s.parent else None) for s in ordered]


EXPECTED = [
    ("invoke_agent boss", None),
    ("chat mock", "invoke_agent boss"),
    ("execute_tool task", "invoke_agent boss"),
    ("invoke_agent explore", "execute_tool task"),
    ("chat mock", "invoke_agent explore"),
    ("execute_tool météo", "invoke_agent explore"),
    ("execute_tool météo", "invoke_agent explore"),
    ("chat mock", "invoke_agent explore"),
    ("chat mock", "invoke_agent boss"),
]


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def test_live_spans_nest_by_delegation_and_carry_the_conventions_attributes() -> None:
    tracer_provider, exporter = provider()
    session = sn.otel.instrument(
        sn.Session(team(), llm=sn.mock_llm(handler)), tracer_provider=tracer_provider
    )
    assert sn.otel.instrument(session, tracer_provider=tracer_provider) is session  # once
    session.send("Bonjour, 你好 👋").result()
    spans = exporter.get_finished_spans()
    assert sorted(tree(spans)) == sorted(EXPECTED)
    assert len({s.context.trace_id for s in spans}) == 1
    assert {s.attributes["gen_ai.conversation.id"] for s in spans} == {session.id}
    root = by_name(spans, "invoke_agent boss")[0]
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "boss"
    assert root.attributes["openinference.span.kind"] == "AGENT"
    chats = by_name(spans, "chat mock")
    assert {c.attributes["gen_ai.operation.name"] for c in chats} == {"chat"}
    assert {c.attributes["openinference.span.kind"] for c in chats} == {"LLM"}
    assert [c.attributes["gen_ai.usage.input_tokens"] for c in chats] == [11] * 4
    assert [c.attributes["gen_ai.usage.output_tokens"] for c in chats] == [3] * 4
    assert {c.attributes["gen_ai.request.model"] for c in chats} == {"mock"}
    tools = by_name(spans, "execute_tool météo")
    assert {t.attributes["gen_ai.tool.name"] for t in tools} == {"météo"}
    assert {t.attributes["openinference.span.kind"] for t in tools} == {"TOOL"}
    failed = [t for t in tools if t.status.status_code is StatusCode.ERROR]
    assert len(failed) == 1 and failed[0].attributes["error.type"] == "error"
    # no content unless asked
    every = json.dumps([dict(s.attributes or {}) for s in spans], ensure_ascii=False)
    assert "Paris" not in every and "北京" not in every and "input.value" not in every
    # each span starts and ends at its events' times
    events = session.events
    started = next(e for e in events if e.type == "tool_call_started" and e.name == "task")
    finished = next(e for e in events if e.type == "tool_call_finished" and e.name == "task")
    task = by_name(spans, "execute_tool task")[0]
    assert (task.start_time, task.end_time) == (int(started.ts * 1e9), int(finished.ts * 1e9))
    sn.otel.uninstrument(session)
    session.send("encore").result()
    assert len(exporter.get_finished_spans()) == len(spans)


def test_after_the_fact_gives_the_same_spans_at_the_events_times_with_content_when_asked() -> None:
    tracer_provider, live = provider()
    session = sn.otel.instrument(
        sn.Session(team(), llm=sn.mock_llm(handler)), tracer_provider=tracer_provider
    )
    session.send("Bonjour, 你好 👋").result()
    sn.otel.uninstrument(session)
    later_provider, later = provider()
    assert sn.otel.export(session, tracer_provider=later_provider, capture_content=True) == len(
        session.events
    )
    spans, live_spans = later.get_finished_spans(), live.get_finished_spans()
    assert tree(spans) == tree(live_spans)
    times = sorted((s.name, s.start_time, s.end_time) for s in spans)
    assert times == sorted((s.name, s.start_time, s.end_time) for s in live_spans)
    child = by_name(spans, "invoke_agent explore")[0]
    assert child.attributes["input.value"] == "Cherche 北京 🌏"
    assert child.attributes["output.value"] == "Il fait beau à Paris 🌞"
    first_chat = min(by_name(spans, "chat mock"), key=lambda s: s.start_time or 0)
    messages = json.loads(str(first_chat.attributes["gen_ai.input.messages"]))
    assert {"type": "text", "content": "Bonjour, 你好 👋"} in messages[-1]["parts"]
    tool = next(
        s
        for s in by_name(spans, "execute_tool météo")
        if s.status.status_code is StatusCode.OK or s.status.status_code is StatusCode.UNSET
    )
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"ville": "Paris"}
    assert tool.attributes["gen_ai.tool.call.result"] == "Paris : ☀️ 晴天"


def test_a_paused_run_exported_ends_its_open_spans_marked_unfinished() -> None:
    session = sn.Session(team(), llm=sn.mock_llm(handler))
    run = session.send("Bonjour", pause_on="tool")
    run.wait()
    tracer_provider, exporter = provider()
    sn.otel.export(session, tracer_provider=tracer_provider)
    spans = exporter.get_finished_spans()
    open_ones = {s.name for s in spans if s.attributes.get("sagents_nb.unfinished")}
    assert "invoke_agent boss" in open_ones and "invoke_agent explore" in open_ones
    while run.status == "paused":
        run.approve()
        run.wait()
    assert run.result().status == "done"


def leaky(request: httpx.Request) -> httpx.Response:
    """A model that repeats the key it was given, in its text and in a tool call's arguments."""
    body = json.loads(request.content)
    if any(m["role"] == "tool" for m in body["messages"]):
        message: dict[str, Any] = {"role": "assistant", "content": f"la clé est {KEY} 🔑"}
    else:
        arguments = json.dumps({"ville": f"Paris {KEY}"})
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "météo", "arguments": arguments},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return httpx.Response(200, json={"choices": [{"message": message}], "usage": USAGE})


def test_a_planted_key_appears_in_no_span_even_with_content() -> None:
    llm = sn.LLM("https://api.example.test/v1", api_key=KEY, transport=httpx.MockTransport(leaky))
    session = sn.Session(sn.Agent("a", tools=[météo]), llm=llm)
    tracer_provider, exporter = provider()
    sn.otel.instrument(session, tracer_provider=tracer_provider, capture_content=True)
    session.send(f"voici {KEY}").result()
    sn.otel.export(session, tracer_provider=tracer_provider, capture_content=True)
    spans = exporter.get_finished_spans()
    assert spans
    dumped = [s.to_json() for s in spans]
    assert [d for d in dumped if KEY in d or KEY[:12] in d] == []
    assert any("***" in d for d in dumped)


def test_bad_arguments_say_what_to_pass() -> None:
    session = sn.Session(team(), llm=sn.mock_llm(handler))
    with pytest.raises(sn.ConfigurationError, match="not both"):
        sn.otel.export(
            session, tracer_provider=provider()[0], endpoint="http://127.0.0.1:1/v1/traces"
        )
    with pytest.raises(sn.ConfigurationError, match="OTLP/HTTP URL"):
        sn.otel.export(session, endpoint="127.0.0.1:4318")
    with pytest.raises(sn.ConfigurationError, match=r"sn\.Session or an sn\.Agent"):
        sn.otel.instrument("boss")  # type: ignore[arg-type]
    with pytest.raises(sn.ConfigurationError, match=r"pass the sn\.Agent"):
        sn.otel.instrument(session, llm=sn.script("x"))


def test_an_agent_gets_a_new_instrumented_session() -> None:
    tracer_provider, exporter = provider()
    session = sn.otel.instrument(team(), tracer_provider=tracer_provider, llm=sn.mock_llm(handler))
    assert isinstance(session, sn.Session)
    session.send("Salut").result()
    assert sorted(tree(exporter.get_finished_spans())) == sorted(EXPECTED)


def test_import_sagents_nb_loads_no_opentelemetry() -> None:
    import subprocess
    import sys

    code = "import sys, sagents_nb as sn; sn.Agent; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_reopened_session_exports_the_same_spans(tmp_path: Any) -> None:
    db = tmp_path / "runs.db"
    session = sn.Session(team(), llm=sn.mock_llm(handler), store=db)
    session.send("Bonjour, 你好 👋").result()
    first, first_spans = provider()
    sn.otel.export(session, tracer_provider=first)
    again = sn.Session.open(db, session.id, agent=team(), llm=sn.mock_llm(handler))
    second, second_spans = provider()
    sn.otel.export(again, tracer_provider=second)
    spans = second_spans.get_finished_spans()
    assert tree(spans) == tree(first_spans.get_finished_spans())
    assert {s.attributes["gen_ai.conversation.id"] for s in spans} == {session.id}


class NoAtlantis:
    def before_tool(self, call: sn.ToolCallInfo) -> Any:
        return sn.Deny("pas d'Atlantide 🚫") if "Atlantis" in json.dumps(call.arguments) else None

    def after_tool(self, call: sn.ToolCallInfo, result: Any) -> None:
        return None


def test_a_denied_tool_and_a_failed_model_call_are_errors_with_their_type() -> None:
    def failing(req: sn.ChatRequest) -> Any:
        if req.node != "boss":
            return handler(req)
        if not req.tool_results:
            return handler(req)
        return httpx.Response(500, json={"error": {"message": "panne 💥"}})

    llm = sn.mock_llm(failing, retries=0)
    session = sn.Session(team(), llm=llm, hooks=[NoAtlantis()])
    tracer_provider, exporter = provider()
    sn.otel.instrument(session, tracer_provider=tracer_provider)
    assert session.send("Bonjour").result().status == "error"
    spans = exporter.get_finished_spans()
    denied = [
        s for s in by_name(spans, "execute_tool météo") if s.status.status_code is StatusCode.ERROR
    ]
    assert [s.attributes["error.type"] for s in denied] == ["denied"]
    failed_chat = [
        s for s in by_name(spans, "chat mock") if s.status.status_code is StatusCode.ERROR
    ]
    assert len(failed_chat) == 1 and failed_chat[0].attributes["error.type"]
    root = by_name(spans, "invoke_agent boss")[0]
    assert root.status.status_code is StatusCode.ERROR
    assert sorted(tree(spans)) == sorted(EXPECTED)


def test_without_the_extra_sn_otel_says_what_to_install() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import sagents_nb as sn\n"
        "try:\n    sn.otel\nexcept ImportError as exc:\n    print(exc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'sagents_nb[otel]'" in out.stdout
