"""Recovery from a context overflow (issue 30 item 8): an endpoint that answers "context length
exceeded" gets a smaller view (the kind's own way) and the request again, twice at most, at the
root and in a child; a real HTTP server on loopback says it in each common server's words."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb._base.errors import EndpointError
from sagents_nb._endpoints.overflow import context_overflow
from tests.loopback import Answer, LoopbackServer

pytestmark = pytest.mark.timeout(60)

WINDOW = 700
"""The server's context window, in its tokens (a quarter of the request body's bytes)."""

WORDINGS = {
    "openai": {
        "error": {
            "message": f"This model's maximum context length is {WINDOW} tokens. However, your "
            "messages resulted in 1012 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "anthropic": {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"prompt is too long: 1012 tokens > {WINDOW} maximum",
        },
    },
    "vllm": {
        "object": "error",
        "message": f"This model's maximum context length is {WINDOW} tokens. However, you "
        "requested 1012 tokens (1000 in the messages, 12 in the completion). Please reduce the "
        "length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "llama.cpp": {
        "error": {
            "code": 400,
            "message": f"request (1012 tokens) exceeds the available context size ({WINDOW} "
            "tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 1012,
            "n_ctx": WINDOW,
        }
    },
    "ollama": {"error": {"message": "the input length exceeds the context length"}},
}

PAGE = "Chapitre : la Seine traverse Paris 🌉。セーヌ川はパリを流れる。塞纳河流经巴黎。" * 3


@sn.tool
def lire(page: int) -> str:
    """Read a page of the book.

    Args:
        page: which page.
    """
    return f"page {page} — {PAGE}"


class Model:
    """The server's model: over its window it answers 400 in `wording`; under it, the root
    delegates to `reader` (when it has a team) and whoever reads calls `lire` `pages` times
    (counted by the server), then answers."""

    def __init__(self, wording: str, pages: int, window: int = WINDOW) -> None:
        self.refusal = json.dumps(WORDINGS[wording], ensure_ascii=False).encode()
        self.pages, self.window = pages, window
        self.issued = 0
        self.bodies: list[dict[str, Any]] = []
        self.refused = 0
        self.lock = threading.Lock()

    def respond(self, raw: bytes, answer: Answer) -> None:
        body = json.loads(raw)
        with self.lock:
            self.bodies.append(body)
            if len(raw) // 4 > self.window:
                self.refused += 1
                self.send(answer, 400, self.refusal)
                return
            self.send(answer, 200, json.dumps(self.reply(body), ensure_ascii=False).encode())

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        message: dict[str, Any]
        if "task" in tools:
            if messages[-1]["role"] == "user":
                call = {"agent": "reader", "prompt": "Lis le livre 📖 et résume-le"}
                message = tool_call("task", call, "t1")
            else:
                message = {"role": "assistant", "content": "lead : " + messages[-1]["content"]}
        elif self.issued < self.pages:
            self.issued += 1
            message = tool_call("lire", {"page": self.issued}, f"c{self.issued}")
        else:
            seen = sum(1 for m in messages if m["role"] == "tool")
            message = {"role": "assistant", "content": f"résumé prêt ✓ ({seen} pages en vue)"}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        return {"choices": [{"message": message, "finish_reason": "stop"}], "usage": usage}

    @staticmethod
    def send(answer: Answer, status: int, data: bytes) -> None:
        length = str(len(data))
        answer.head(
            status,
            {"content-type": "application/json", "content-length": length, "connection": "close"},
        )
        answer.write(data)


def tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def serve(model: Model, run: Callable[[sn.LLM], None]) -> None:
    with LoopbackServer(model.respond) as server:
        run(sn.LLM(server.url, api_key="sk-loop", model="m", retries=0))


@pytest.mark.parametrize("wording", sorted(WORDINGS))
def test_each_servers_wording_is_recognised_and_its_window_read(wording: str) -> None:
    said = json.dumps(WORDINGS[wording])
    overflow = context_overflow(EndpointError(400, said, base_url="http://127.0.0.1"))
    assert overflow is not None and overflow.said == said
    assert overflow.window == (None if wording == "ollama" else WINDOW)
    other = EndpointError(400, '{"error": {"message": "model not found: 模型"}}', base_url="")
    assert context_overflow(other) is None
    assert context_overflow(EndpointError(500, said, base_url="")) is None


@pytest.mark.parametrize("wording", sorted(WORDINGS))
def test_the_root_recovers_from_an_overflow_and_the_next_message_works(wording: str) -> None:
    model = Model(wording, pages=6)

    def run(llm: sn.LLM) -> None:
        session = sn.Session(sn.Agent("main", tools=[lire]), llm=llm)
        result = session.send("Lis tout le livre, s'il te plaît 📚").result()
        assert result.status == "done" and result.text.startswith("résumé prêt ✓")
        full = [e for e in result.events if e.type == "context_full"]
        assert 1 <= len(full) <= 2 and full[0].endpoint_said and full[0].tokens > 0
        assert model.refused == len(full)  # each refusal shrank the view once
        sinks = [e for e in result.events if e.type == "cold_sink"]
        assert sinks and sinks[0].reason == "overflow"
        notes = [
            m["content"]
            for body in model.bodies
            for m in body["messages"]
            if m["role"] == "system" and "no longer fits its context window" in m["content"]
        ]
        assert notes and all("moved to cold storage" in note for note in notes)
        refused = model.refused
        follow_up = session.send("Et la page 1 ? 一页目は？").result()
        assert follow_up.status == "done"
        assert model.refused == refused  # the view kept to the size the endpoint allows

    serve(model, run)


@pytest.mark.parametrize("wording", ["openai", "llama.cpp"])
def test_a_child_recovers_by_trimming_its_view(wording: str) -> None:
    model = Model(wording, pages=3, window=420)

    def run(llm: sn.LLM) -> None:
        reader = sn.Agent("reader", does="reads books", tools=[lire])
        session = sn.Session(sn.Agent("lead", team=[reader]), llm=llm)
        result = session.send("Résume le livre 📖").result()
        assert result.status == "done", result.text
        assert result.text.startswith("lead : résumé prêt ✓")
        child = "lead/reader.1"
        full = [e for e in result.events if e.type == "context_full"]
        assert [e.path for e in full] == [child]
        trims = [e for e in result.events if e.type == "window_trim" and e.path == child]
        assert trims and trims[0].dropped_groups >= 1
        last = model.bodies[-2]["messages"]  # what the reader answered from
        assert [m["content"] for m in last if m["role"] == "user"] == [
            "Lis le livre 📖 et résume-le"
        ]
        pages = [m["content"].split(" — ")[0] for m in last if m["role"] == "tool"]
        assert pages[0] == "page 1" and "page 2" not in pages  # the input's group, the newest
        assert "earlier context was set aside" in last[-1]["content"]
        assert model.refused == 1

    serve(model, run)


def test_two_failed_shrinks_end_the_run_in_error_saying_what_to_do() -> None:
    model = Model("anthropic", pages=0, window=0)  # nothing ever fits

    def run(llm: sn.LLM) -> None:
        session = sn.Session(sn.Agent("main"), llm=llm)
        result = session.send("Bonjour 👋 こんにちは").result()
        assert result.status == "error"
        assert "does not fit the endpoint's context window" in result.text
        assert "prompt is too long" in result.text and "Start a new session" in result.text
        assert model.refused == 3  # the request and two retries after shrinking
        assert len([e for e in result.events if e.type == "context_full"]) == 2

    serve(model, run)


def test_another_bad_request_is_not_retried() -> None:
    refusal = b'{"error": {"message": "model \\"m\\" not found", "code": "model_not_found"}}'
    calls: list[bytes] = []

    def respond(raw: bytes, answer: Answer) -> None:
        calls.append(raw)
        Model.send(answer, 400, refusal)

    with LoopbackServer(respond) as server:
        llm = sn.LLM(server.url, api_key="sk-loop", model="m", retries=0)
        result = sn.Session(sn.Agent("main"), llm=llm).send("salut").result()
    assert result.status == "error" and "model_not_found" in result.text
    assert len(calls) == 1
    assert not [e for e in result.events if e.type == "context_full"]


def test_a_resident_child_recovers_by_compacting() -> None:
    model = Model("vllm", pages=3, window=420)

    def run(llm: sn.LLM) -> None:
        reader = sn.Agent("reader", does="reads books", tools=[lire], kind=sn.kinds.Resident())
        session = sn.Session(sn.Agent("lead", team=[reader]), llm=llm)
        result = session.send("Résume le livre 📖").result()
        assert result.status == "done", result.text
        compactions = [e for e in result.events if e.type == "compaction"]
        assert [c.reason for c in compactions] == ["overflow"] and compactions[0].removed
        assert [e.path for e in result.events if e.type == "context_full"] == ["lead/reader.1"]
        assert model.refused == 1

    serve(model, run)


def test_a_realtime_agent_recovers_by_narrowing_its_window() -> None:
    bodies: list[dict[str, Any]] = []

    def respond(raw: bytes, answer: Answer) -> None:
        body = json.loads(raw)
        bodies.append(body)
        if len(raw) // 4 > 260:
            Model.send(answer, 400, json.dumps(WORDINGS["llama.cpp"]).encode())
            return
        text = f"{body['messages'][-1]['content']} : {PAGE}"
        reply = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        Model.send(answer, 200, json.dumps(reply, ensure_ascii=False).encode())

    live = sn.Agent("live", kind=sn.kinds.Realtime(window=4))
    with LoopbackServer(respond) as server:
        llm = sn.LLM(server.url, api_key="sk-loop", model="m", retries=0)
        session = sn.Session(live, llm=llm)
        for text in ("un 🥇", "二", "三 🎌", "quatre", "五 🖐", "six"):
            assert session.send(text).result().status == "done"
    events = session.events
    full = [e for e in events if e.type == "context_full"]
    assert full and {e.run for e in full} == {4}  # one request's shrinks; then the window held
    trims = [e for e in events if e.type == "window_trim"]
    assert trims and trims[-1].kept_groups < 4
    notes = [m["content"] for b in bodies for m in b["messages"] if m["role"] == "system"]
    assert any("the window holds the newest" in note for note in notes)
