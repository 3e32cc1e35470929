"""`sn.MockServer(llm)`: the inline mock over real HTTP on 127.0.0.1, in three wire formats."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

import sagents_nb as sn

pytestmark = pytest.mark.timeout(30)


def events(response: httpx.Response) -> list[dict]:
    """The `data:` payloads of a server-sent-events body."""
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


def lookup_then_answer(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("lookup", key="été 東京 🎉")])
    return f"got {req.tool_results[-1]} for {req.last_user}"


def test_a_real_client_runs_an_agent_against_the_served_chat_completions() -> None:
    @sn.tool
    def lookup(key: str) -> str:
        """Look up."""
        return f"<{key}>"

    mock = sn.mock_llm(lookup_then_answer)
    with sn.MockServer(mock) as server:
        agent = sn.Agent("a", tools=[lookup])
        result = agent.run_sync("résumé", llm=sn.LLM(server.openai_base_url, api_key="sk-x"))
    assert result.text == "got <été 東京 🎉> for résumé"
    assert [e.url for e in mock.exchanges] == [server.base_url + "/v1/chat/completions"] * 2
    assert mock.exchanges[0].headers == {"authorization": "***"}


def test_anthropic_messages_stream_tool_use_blocks_and_read_tool_results() -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        seen.append(req)
        return lookup_then_answer(req)

    with sn.MockServer(sn.mock_llm(handler)) as server:
        body = {
            "model": "claude-x",
            "system": [{"type": "text", "text": "be brief"}],
            "stream": True,
            "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>noise</system-reminder>"},
                    {"type": "text", "text": "find it"}]},
            ],
        }  # fmt: skip
        first = httpx.post(server.base_url + "/v1/messages", json=body, headers={"x-api-key": "k"})
        assert first.headers["content-type"] == "text/event-stream"
        stream = events(first)
        assert stream[0]["type"] == "message_start"
        (start,) = [e for e in stream if e["type"] == "content_block_start"]
        assert start["content_block"]["type"] == "tool_use"
        assert start["content_block"]["name"] == "lookup"
        partial = [e["delta"]["partial_json"] for e in stream if e["type"] == "content_block_delta"]
        assert json.loads("".join(partial)) == {"key": "été 東京 🎉"}
        (stop,) = [e for e in stream if e["type"] == "message_delta"]
        assert stop["delta"]["stop_reason"] == "tool_use"
        call_id = start["content_block"]["id"]
        body["stream"] = False
        body["messages"] += [
            {"role": "assistant", "content": [start["content_block"]]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "is_error": True,
                 "content": [{"type": "text", "text": "boom"}]}]},
        ]  # fmt: skip
        second = httpx.post(server.base_url + "/v1/messages", json=body).json()
    assert second["content"] == [{"type": "text", "text": "got boom for find it"}]
    assert second["stop_reason"] == "end_turn"
    request = seen[-1]
    assert request.api == "anthropic_messages" and request.tools == ["lookup"]
    assert request.system == "be brief" and request.last_user == "find it"
    assert request.messages[-1] == {
        "role": "tool", "tool_call_id": call_id, "content": "boom", "is_error": True,
    }  # fmt: skip
    assert request.body["messages"][0]["content"][0]["text"].startswith("<system-reminder>")


def test_responses_stream_function_calls_in_namespaces_and_read_their_outputs() -> None:
    seen: list[sn.ChatRequest] = []

    def handler(req: sn.ChatRequest):
        seen.append(req)
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("mcp__srv__lookup", key="k")])
        return "done"

    tools = [{"type": "namespace", "name": "mcp__srv", "tools": [{"type": "function",
              "name": "lookup", "parameters": {}}]}, {"type": "function", "name": "shell"}]  # fmt: skip
    with sn.MockServer(sn.mock_llm(handler)) as server:
        url = server.openai_base_url + "/responses"
        body = {"model": "m", "instructions": "sys", "stream": True, "tools": tools,
                "input": [{"type": "message", "role": "user",
                           "content": [{"type": "input_text", "text": "go"}]}]}  # fmt: skip
        stream = events(httpx.post(url, json=body))
        assert stream[0]["type"] == "response.created"
        assert stream[-1]["type"] == "response.completed"
        (item,) = [e["item"] for e in stream if e["type"] == "response.output_item.done"]
        assert (item["type"], item["name"], item["namespace"]) == (
            "function_call",
            "lookup",
            "mcp__srv",
        )
        body["input"] += [item, {"type": "function_call_output", "call_id": item["call_id"],
                                 "output": "the value"}]  # fmt: skip
        stream = events(httpx.post(url, json=body))
    texts = [e["delta"] for e in stream if e["type"] == "response.output_text.delta"]
    assert "".join(texts) == "done"
    assert seen[0].tools == ["mcp__srv__lookup", "shell"] and seen[0].system == "sys"
    assert seen[1].tool_results == ["the value"] and seen[1].last_user == "go"


def test_errors_pass_through_and_every_exchange_is_recorded_without_keys() -> None:
    def handler(req: sn.ChatRequest):
        if req.last_user == "401":
            return httpx.Response(401, json={"error": {"message": "bad key"}})
        if req.last_user == "raise":
            raise RuntimeError("handler bug")
        return 42

    mock = sn.mock_llm(handler)
    with sn.MockServer(mock) as server:
        post = lambda text: httpx.post(  # noqa: E731
            server.base_url + "/v1/messages",
            json={"model": "m", "messages": [{"role": "user", "content": text}]},
            headers={"x-api-key": "sk-ant-secret-value"},
        )
        assert post("401").status_code == 401
        crashed = post("raise")
        assert crashed.status_code == 500 and "RuntimeError: handler bug" in crashed.text
        wrong = post("other")
        assert wrong.status_code == 500 and "return a str" in wrong.text
        missing = httpx.post(server.base_url + "/v2/nothing", json={})
        assert missing.status_code == 404 and "/v1/messages" in missing.text
        garbage = httpx.post(server.base_url + "/v1/messages", content=b"{not json")
        assert garbage.status_code == 400
    assert [e.status for e in mock.exchanges] == [401, 500, 500, 404, 400]
    dumped = json.dumps([e.to_dict() for e in mock.exchanges])
    assert "sk-ant-secret" not in dumped and mock.exchanges[0].headers == {"x-api-key": "***"}


def test_the_server_binds_loopback_only_and_frees_its_port_on_close() -> None:
    server = sn.MockServer(sn.mock_llm(lambda req: "hi"))
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server._httpd.server_address[0] == "127.0.0.1"
    assert "127.0.0.1" in repr(server)
    server.close()
    server.close()  # idempotent
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), timeout=1):
        pass
    assert "closed" in repr(server)


def test_a_bare_handler_is_served_too() -> None:
    with sn.MockServer(lambda req: f"{req.api}: {req.last_user}") as server:
        reply = httpx.post(
            server.openai_base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "salut"}]},
        ).json()
        assert reply["choices"][0]["message"]["content"] == "chat_completions: salut"
        assert len(server.exchanges) == 1


def test_an_in_process_request_names_its_format_too() -> None:
    llm = sn.mock_llm(lambda req: req.api)
    assert sn.Agent("a").run_sync("hi", llm=llm).text == "chat_completions"
