"""`sn.otel` against a real receiver: Arize Phoenix, started on loopback in its own venv
(tests/phoenix.py), receives a 50-node run three delegations deep, live and after the fact, and
its API gives back the same nesting, names and token counts."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn

from . import phoenix

pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install 'sagents_nb[otel]'")

LEADS, TEAMS_PER_LEAD, WORKERS = 3, 2, (7, 7, 7, 7, 6, 6)
NODES = 1 + LEADS + LEADS * TEAMS_PER_LEAD + sum(WORKERS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[phoenix.Phoenix]:
    if not phoenix.PYTHON.exists():
        message = (
            f"Phoenix is not installed for the tests; from the project's folder: {phoenix.INSTALL}"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    started = phoenix.start(tmp_path_factory.mktemp("phoenix"))
    try:
        yield started
    finally:
        started.stop()


@sn.tool
def mesure(quoi: str) -> str:
    """Mesure quelque chose."""
    return f"{quoi} : 42 📏 米"


def big_run() -> sn.Session:
    """A boss, three leads, six teams and forty workers: 50 nodes, three delegations deep."""
    teams: dict[str, int] = {}

    def handler(req: sn.ChatRequest) -> Any:
        path = req.node or ""
        usage = {"prompt_tokens": 10 + len(path), "completion_tokens": 1 + (req.turn or 0)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if req.tool_results:
            return sn.reply(f"fait ✅ {path}", usage=usage)
        if req.agent == "boss":
            calls = [sn.call("task", agent="lead", prompt=f"piste {i} 🔎") for i in range(LEADS)]
        elif req.agent == "lead":
            calls = [
                sn.call("task", agent="team", prompt=f"équipe {i}") for i in range(TEAMS_PER_LEAD)
            ]
        elif req.agent == "team":
            count = WORKERS[teams.setdefault(path, len(teams))]
            calls = [
                sn.call("task", agent="worker", prompt=f"tâche {i} 任务") for i in range(count)
            ]
        else:
            calls = [sn.call("mesure", quoi="la tour")]
        return sn.reply(tool_calls=calls, usage=usage)

    worker = sn.Agent("worker", does="works", tools=[mesure])
    team = sn.Agent("team", does="splits work", team=[worker])
    lead = sn.Agent("lead", does="leads", team=[team])
    boss = sn.Agent("boss", team=[lead])
    return sn.Session(boss, llm=sn.mock_llm(handler), max_parallel=8, max_depth=3)


def flat(attributes: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Phoenix's attributes (nested by their dotted names) flattened back."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def check(spans: list[dict[str, Any]], session: sn.Session) -> None:
    """Phoenix's spans have the run's nesting, names and token counts."""
    by_id = {s["context"]["span_id"]: s for s in spans}
    attrs = {s["context"]["span_id"]: flat(s["attributes"]) for s in spans}
    agents = {
        a["sagents_nb.path"]: i
        for i, a in attrs.items()
        if a["gen_ai.operation.name"] == "invoke_agent"
    }
    paths = {e.path for e in session.events if e.type == "model_request"}
    assert set(agents) == paths and len(agents) == NODES
    assert max(p.count("/") for p in agents) == 3
    for path, span_id in agents.items():
        span = by_id[span_id]
        assert span["name"] == f"invoke_agent {path.rpartition('/')[2].partition('.')[0]}"
        assert span["span_kind"] == "AGENT"  # Phoenix reads OpenInference's kind into its own
        assert attrs[span_id]["gen_ai.conversation.id"] == session.id
        if "/" not in path:
            assert span["parent_id"] is None
            continue
        task = by_id[span["parent_id"]]  # the parent's task call, under the parent's span
        assert task["name"] == "execute_tool task"
        assert task["parent_id"] == agents[path.rpartition("/")[0]]
    names = Counter(s["name"] for s in spans)
    assert {s["span_kind"] for s in spans if s["name"].startswith("execute_tool ")} == {"TOOL"}
    expected_names = Counter(
        f"execute_tool {e.name}" for e in session.events if e.type == "tool_call_finished"
    )
    expected_names.update(f"chat {e.model}" for e in session.events if e.type == "model_request")
    expected_names.update(f"invoke_agent {p.rpartition('/')[2].partition('.')[0]}" for p in paths)
    assert names == expected_names
    tokens: Counter[str] = Counter()
    for span_id, a in attrs.items():
        if a["gen_ai.operation.name"] == "chat":
            assert by_id[span_id]["span_kind"] == "LLM"
            assert by_id[by_id[span_id]["parent_id"]]["name"].startswith("invoke_agent ")
            tokens[a["sagents_nb.path"] + " in"] += a["gen_ai.usage.input_tokens"]
            tokens[a["sagents_nb.path"] + " out"] += a["llm.token_count.completion"]
    expected: Counter[str] = Counter()
    for e in session.events:
        if e.type == "model_response":
            expected[e.path + " in"] += e.usage.prompt_tokens
            expected[e.path + " out"] += e.usage.completion_tokens
    assert tokens == expected


def test_phoenix_receives_a_50_node_run_live_and_after_the_fact(
    server: phoenix.Phoenix, tmp_path: Path
) -> None:
    listening = server.listening()
    assert listening and all(
        address.rpartition(":")[0] in {"127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"}
        for address in listening
    ), listening
    session = sn.otel.instrument(big_run(), endpoint=server.traces)
    result = session.send("Lance l'enquête 🚀").result()
    assert result.status == "done"
    sn.otel.uninstrument(session)  # sends the last batch
    count = sum(1 for e in session.events if e.type in ("model_request", "tool_call_started"))
    count += NODES
    check(server.wait_for_spans("default", count), session)

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"openinference.project.name": "after"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=server.traces)))
    sn.otel.export(session, tracer_provider=provider)
    provider.shutdown()
    check(server.wait_for_spans("after", count), session)
