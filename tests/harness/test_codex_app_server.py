"""`Codex(gate_builtin_tools=True)`: the client side of `codex app-server`, line by line, and the
runtime writing to a conversing CLI (a small stand-in app server; the real one is in
test_real_codex_app_server.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from sagents_nb.harness import HarnessConfig
from sagents_nb.harness._conversation import Received, conversation_of

PROMPT = "--répare `main()` — 修复 バグ 🐛"


def client(**config: Any):
    driver = sn.harness.Codex(gate_builtin_tools=True, approval_policy=config.pop("policy", None))
    conversation = conversation_of(driver, HarnessConfig(PROMPT, **config))
    assert conversation is not None
    return conversation


def sent(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def line(**message: Any) -> str:
    return json.dumps(message, ensure_ascii=False)


def test_exec_stays_the_default_and_the_app_server_takes_no_prompt_in_argv():
    config = HarnessConfig(PROMPT, model="mock-model", extra_args=["-c", "x=1"])
    assert sn.harness.Codex().args(config)[:2] == ["exec", "--json"]
    assert conversation_of(sn.harness.Codex(), config) is None
    argv = sn.harness.Codex(gate_builtin_tools=True).args(config)
    assert argv[0] == "app-server" and argv[-2:] == ["-c", "x=1"]
    assert PROMPT not in argv and "--" not in argv and "mock-model" not in argv


def test_the_opening_starts_a_thread_with_the_runs_settings():
    conversation = client(model="mock-model", system_prompt="Sois bref. 簡潔に。", cwd="/tmp")
    initialize, initialized, start = sent(conversation.opening())
    assert (initialize["id"], initialize["method"]) == (1, "initialize")
    assert initialize["params"]["clientInfo"]["name"] == "sagents_nb"
    assert initialized == {"method": "initialized"}
    assert start == {
        "id": 2,
        "method": "thread/start",
        "params": {
            "approvalPolicy": "untrusted",
            "model": "mock-model",
            "developerInstructions": "Sois bref. 簡潔に。",
            "cwd": "/tmp",
        },
    }
    resumed = sent(client(resume="thread-7", policy="on-request").opening())[2]
    assert resumed["method"] == "thread/resume"
    assert resumed["params"] == {"threadId": "thread-7", "approvalPolicy": "on-request"}


def test_the_thread_starts_the_turn_with_the_prompt_as_it_is():
    conversation = client()
    received = conversation.receive(line(id=2, result={"thread": {"id": "t-1"}}))
    assert received.events == [sn.harness.HarnessSession(session_id="t-1")]
    (turn,) = sent(received.replies)
    assert turn["method"] == "turn/start" and turn["params"]["threadId"] == "t-1"
    assert turn["params"]["input"] == [{"type": "text", "text": PROMPT, "text_elements": []}]
    assert conversation.receive(line(id=1, result={})) == Received()
    assert conversation.receive("not json — ノイズ") == Received()


def test_a_refused_request_ends_the_run_naming_it():
    received = client(resume="gone").receive(line(id=2, error={"message": "no such thread"}))
    (error,) = received.events
    assert isinstance(error, sn.harness.HarnessError) and error.fatal
    assert error.message == "Codex refused thread/resume of gone: no such thread"
    assert received.finished


def approval(method: str, **params: Any) -> str:
    return line(id=0, method=method, params={"threadId": "t", "turnId": "u", **params})


def test_a_command_approval_is_asked_and_its_answer_is_the_decision():
    conversation = client()
    command = "/bin/bash -lc 'echo « déjà » > 日本.txt'"
    (ask,) = conversation.receive(
        approval(
            "item/commandExecution/requestApproval", itemId="call_1", command=command, cwd="/w"
        )
    ).asks
    assert (ask.name, ask.arguments) == ("command_execution", {"command": command, "cwd": "/w"})
    assert sent(ask.answer(dict(ask.arguments)).replies) == [
        {"id": 0, "result": {"decision": "accept"}}
    ]
    for verdict, reason in [
        ("no shell today 🙅", "no shell today 🙅"),
        ({"command": "rm -rf /"}, "Codex cannot run a changed command_execution"),
        (None, "no one in the kernel answers"),
    ]:
        answered = ask.answer(verdict)
        assert sent(answered.replies) == [{"id": 0, "result": {"decision": "decline"}}]
        (refused,) = answered.events
        assert isinstance(refused, sn.harness.HarnessPermissionDenied)
        assert refused.name == "command_execution" and refused.id == "call_1"
        assert refused.reason.startswith(reason)


def test_a_file_change_approval_carries_the_changes_its_item_started_with():
    conversation = client()
    change = {"path": "é.py", "kind": {"type": "add"}, "diff": "+print('你好')\n"}
    item = {"type": "fileChange", "id": "fc_1", "changes": [change], "status": "inProgress"}
    (call,) = conversation.receive(line(method="item/started", params={"item": item})).events
    assert call == sn.harness.HarnessToolCall(
        name="file_change", arguments={"changes": [change]}, id="fc_1"
    )
    (ask,) = conversation.receive(
        approval("item/fileChange/requestApproval", itemId="fc_1", reason="écrire")
    ).asks
    assert (ask.name, ask.arguments) == ("file_change", {"changes": [change], "reason": "écrire"})


def test_a_question_it_does_not_answer_is_refused_at_once():
    received = client().receive(line(id=9, method="item/tool/requestUserInput", params={}))
    (reply,) = sent(received.replies)
    assert reply["id"] == 9 and reply["error"]["code"] == -32601
    assert received.asks == []


def test_the_turn_ends_with_its_usage_summed_over_its_model_calls():
    conversation = client()
    for tokens in (10, 20):
        usage = {"last": {"inputTokens": tokens, "outputTokens": 1}, "total": {}}
        conversation.receive(line(method="thread/tokenUsage/updated", params={"tokenUsage": usage}))
    text = {"type": "agentMessage", "id": "m", "text": "fini — 完了 ✅"}
    assert conversation.receive(line(method="item/completed", params={"item": text})).events == [
        sn.harness.HarnessText(text="fini — 完了 ✅")
    ]
    (done,) = conversation.receive(
        line(method="turn/completed", params={"turn": {"status": "completed"}})
    ).events
    assert isinstance(done, sn.harness.HarnessDone)
    assert (done.usage.input_tokens, done.usage.output_tokens) == (30, 2)
    failed = {"status": "failed", "error": {"message": "quota"}}
    (error,) = client().receive(line(method="turn/completed", params={"turn": failed})).events
    assert (
        isinstance(error, sn.harness.HarnessError) and error.message == "Codex turn failed: quota"
    )
    retry = {"error": {"message": "Reconnecting... 1/5"}, "willRetry": True}
    (note,) = client().receive(line(method="error", params=retry)).events
    assert isinstance(note, sn.harness.HarnessError) and not note.fatal


APP_SERVER = """
import json, sys

def send(message):
    print(json.dumps(message), flush=True)

for raw in sys.stdin:
    message = json.loads(raw)
    if message.get("method") == "thread/start":
        send({"id": message["id"], "result": {"thread": {"id": "t-1"}}})
    elif message.get("method") == "turn/start":
        send({"method": "item/commandExecution/requestApproval", "id": 0,
              "params": {"itemId": "c1", "command": "touch marker"}})
    elif message.get("id") == 0:
        decision = message["result"]["decision"]
        item = {"type": "agentMessage", "id": "m", "text": f"decision: {decision}"}
        send({"method": "item/completed", "params": {"item": item}})
        send({"method": "turn/completed", "params": {"turn": {"status": "completed"}}})
print("stdin closed", file=sys.stderr)
"""


@pytest.mark.anyio
@pytest.mark.parametrize("verdict", ["approve", "refuse", "nobody"])
async def test_the_runtime_writes_the_kernels_answer_and_closes_stdin_at_the_end(
    verdict: str, tmp_path: Path
):
    server = tmp_path / "app-server"
    server.write_text(f"#!{sys.executable}\n{APP_SERVER}", encoding="utf-8")
    server.chmod(0o755)
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approve(name: str, arguments: dict[str, Any]) -> dict[str, Any] | str:
        asked.append((name, arguments))
        return arguments if verdict == "approve" else "non"

    outcome = await sn.harness.run_harness(
        sn.harness.Codex(executable=str(server), gate_builtin_tools=True),
        HarnessConfig(PROMPT),
        approve_tool=None if verdict == "nobody" else approve,
        inactivity_timeout=20,
    )
    assert outcome.status == "done", outcome.error
    assert outcome.text == f"decision: {'accept' if verdict == 'approve' else 'decline'}"
    assert asked == (
        [] if verdict == "nobody" else [("command_execution", {"command": "touch marker"})]
    )
    assert outcome.exit_code == 0 and outcome.stderr_tail == ["stdin closed"]
