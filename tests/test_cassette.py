"""Cassettes, VCR style: record modes, strict matching, one play per exchange, checked on load."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

import sagents_nb as sn

pytestmark = pytest.mark.timeout(60)


class Server:
    """A stand-in for a real endpoint that counts the requests it answers."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        body = json.loads(request.content)
        text = f"{self.prefix}{body['messages'][-1]['content']} → réponse"
        return httpx.Response(200, json={"choices": [{"message": {"content": text}}]})

    def llm(self) -> sn.LLM:
        return sn.LLM(
            "https://api.example.test/v1",
            api_key="sk-cassette-0000",
            transport=httpx.MockTransport(self),
        )


def ask(llm: sn.LLM, *prompts: str) -> list[sn.Result]:
    session = sn.Session(sn.Agent("a"), llm=llm)
    return [session.send(p).result() for p in prompts]


def entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_once_records_a_missing_cassette_then_replays_it_without_the_endpoint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.jsonl"
    first = Server()
    assert [r.text for r in ask(sn.record(first.llm(), path), "bonjour", "你好")] == [
        "bonjour → réponse",
        "你好 → réponse",
    ]
    recorded = path.read_text()
    assert first.calls == 2 and len(entries(path)) == 2
    assert entries(path)[0]["method"] == "POST"
    assert entries(path)[0]["url"] == "https://api.example.test/v1/chat/completions"

    again = Server(prefix="NEW ")
    results = ask(sn.record(again.llm(), path), "bonjour", "你好")
    assert [r.text for r in results] == ["bonjour → réponse", "你好 → réponse"]
    assert again.calls == 0 and path.read_text() == recorded  # never truncated


def test_a_request_nothing_recorded_answers_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    ask(sn.record(Server().llm(), path), "bonjour")
    session = sn.Session(sn.Agent("a"), llm=sn.replay(path))
    result = session.send("au revoir").result()
    assert result.status == "error"
    assert "has no unplayed exchange for POST https://api.example.test/v1/chat/completions" in (
        result.text
    )
    assert "the last from 'user': 'au revoir'" in result.text
    assert "differs in the body at messages[0].content: recorded 'bonjour', sent 'au revoir'" in (
        result.text
    )
    assert "mode='new_episodes'" in result.text
    assert any(e.type == "error" and e.error_type == "CassetteMismatch" for e in result.events)
    session.llm = sn.script("still usable")
    assert session.send("x").result().text == "still usable"


def test_each_recorded_exchange_is_played_once(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    ask(sn.record(Server().llm(), path), "ping")
    llm = sn.replay(path)
    body = {"model": llm.model, "messages": [{"role": "user", "content": "ping"}]}

    async def twice() -> None:
        assert (await llm.complete(body)).message.content == "ping → réponse"
        with pytest.raises(sn.CassetteMismatch, match="exchange 1 matches but was already played"):
            await llm.complete(body)

    asyncio.run(twice())


def test_new_episodes_replays_what_matches_and_appends_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    ask(sn.record(Server().llm(), path), "one")
    server = Server(prefix="live ")
    llm = sn.record(server.llm(), path, mode="new_episodes")
    assert [r.text for r in ask(llm, "one")] == ["one → réponse"]
    assert [r.text for r in ask(llm, "two")] == ["live two → réponse"]
    assert server.calls == 1 and len(entries(path)) == 2
    assert [r.text for r in ask(sn.replay(path), "two")] == ["live two → réponse"]


def test_all_records_again_and_replaces_the_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    ask(sn.record(Server().llm(), path), "old", "older")
    before = path.read_text()
    server = Server(prefix="fresh ")
    llm = sn.record(server.llm(), path, mode="all")
    assert path.read_text() == before  # nothing changes until something is recorded
    assert [r.text for r in ask(llm, "old")] == ["fresh old → réponse"]
    assert server.calls == 1
    assert [e["request"]["messages"][-1]["content"] for e in entries(path)] == ["old"]
    assert "fresh" in path.read_text()


def test_none_replays_only(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with pytest.raises(sn.ConfigurationError, match=r"no cassette at .* to replay"):
        sn.record(Server().llm(), path, mode="none")
    ask(sn.record(Server().llm(), path), "a")
    server = Server()
    result = ask(sn.record(server.llm(), path, mode="none"), "b")[0]
    assert result.status == "error" and "mode 'none'" in result.text and server.calls == 0


def test_matching_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    ask(sn.record(Server().llm(), path), "recorded question")
    loose = sn.replay(path, match_on=("method", "path"))
    assert [r.text for r in ask(loose, "another question")] == ["recorded question → réponse"]
    with pytest.raises(
        sn.ConfigurationError,
        match=r"requests on \['headers'\]; match_on takes some of method, url, path",
    ):
        sn.replay(path, match_on=("method", "headers"))
    with pytest.raises(sn.ConfigurationError, match="unknown cassette mode 'sometimes'"):
        sn.record(Server().llm(), path, mode="sometimes")


HEADER = json.dumps({"format": "sagents_nb-cassette/2", "model": "m"})
GOOD = {
    "method": "POST",
    "url": "https://api.example.test/v1/chat/completions",
    "request": {"model": "m", "messages": []},
    "status": 200,
    "content_type": "application/json",
    "body": "{}",
}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            json.dumps({**GOOD, "status": "200"}),
            "'status' must be an HTTP status number, not '200'",
        ),
        (json.dumps({**GOOD, "status": 9000}), "'status' must be an HTTP status number"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "body"}), "'body' must be a string"),
        (json.dumps({**GOOD, "content_type": None}), "'content_type' must be a string"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "request"}), "has no 'request'"),
        (json.dumps({**GOOD, "url": 5}), "'url' must be an http(s) URL"),
        (json.dumps([GOOD]), "an exchange is a JSON object, not list"),
        ('{"status": 200, "body": "{', "is not JSON"),
    ],
)
def test_a_hand_edited_cassette_is_checked_on_load(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = tmp_path / "edited.jsonl"
    path.write_text(f"{HEADER}\n{json.dumps(GOOD)}\n{line}\n")
    with pytest.raises(sn.ConfigurationError) as error:
        sn.replay(path)
    assert f"{path} line 3" in str(error.value) and expected in str(error.value)
    assert "mode='all'" in str(error.value)


def test_a_version_1_cassette_still_replays(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reply = {"choices": [{"message": {"content": "hello from v1"}}]}
    entry = {"request": request, "status": 200, "content_type": "application/json"}
    path.write_text(
        json.dumps({"format": "sagents_nb-cassette/1", "model": "m"})
        + "\n"
        + json.dumps({**entry, "body": json.dumps(reply)})
        + "\n"
    )
    assert ask(sn.replay(path), "hi")[0].text == "hello from v1"
