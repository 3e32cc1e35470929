"""The real Codex through `codex app-server`, offline on the served mock: its approval requests are
pauses of the kernel (`pause_on`, hooks), decided by approve, reject or edit.

The CLI comes from `.ci/cli` (see `.ci/run`); missing, the tests skip, or fail in CI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sagents_nb as sn
from tests.harness.real_cli_support import find_cli, isolated_env, trap  # noqa: F401

pytestmark = [pytest.mark.cli, pytest.mark.timeout(120)]

PROMPT = "écris le marqueur — 日本語 🎉"


def shell_model(marker: Path, seen: list[sn.ChatRequest] | None = None):
    """A Codex model that asks to run one shell command writing `marker`, then reports."""

    def model(req: sn.ChatRequest):
        if seen is not None:
            seen.append(req)
        if not req.tool_results:
            if "exec_command" not in req.tools:  # say so plainly rather than a 500 it retries
                return f"no exec_command among {req.tools}"
            return sn.reply(tool_calls=[sn.call("exec_command", cmd=f"echo 'gardé 🎉' > {marker}")])
        return f"the shell said: {req.tool_results[-1]}"

    return model


def parent(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt=PROMPT)])
    return f"parent got: {req.tool_results[0]}"


def gated_coder(server: sn.MockServer, tmp_path: Path, trap) -> sn.Agent:  # noqa: F811
    driver = sn.harness.Codex(
        executable=find_cli("codex"),
        base_url=server.openai_base_url,
        api_key="sk-test-key",
        gate_builtin_tools=True,
    )
    env = isolated_env(tmp_path / "home", trap)
    kind = sn.kinds.Native(driver, env=env, cwd=str(tmp_path))
    # Outside its catalogue a model gets plain function tools, not Codex's JavaScript mode.
    return sn.Agent("coder", does="runs commands", model="mock-model", kind=kind)


def command_of(marker: Path) -> str:
    return f"/bin/bash -lc 'echo '\"'\"'gardé 🎉'\"'\"' > {marker}'"


@pytest.mark.parametrize("decision", ["approve", "reject", "edit"])
def test_a_codex_command_pauses_the_run_until_the_user_decides(decision, tmp_path, trap):  # noqa: F811
    marker = tmp_path / "ran.txt"
    seen: list[sn.ChatRequest] = []
    with sn.MockServer(sn.mock_llm(shell_model(marker, seen))) as server:
        boss = sn.Agent("boss", team=[gated_coder(server, tmp_path, trap)])
        session = sn.Session(boss, llm=sn.mock_llm(parent))
        run = session.send("go", pause_on={"tool"})
        assert run.wait(60) == "paused"
        (pending,) = run.pending
        assert (pending.path, pending.action, pending.name) == (
            "boss/coder.1",
            "tool",
            "command_execution",
        )
        assert pending.arguments is not None
        assert "gardé 🎉" in pending.arguments["command"]
        assert str(marker) in pending.arguments["command"]
        assert pending.arguments["cwd"] == str(tmp_path)
        assert not marker.exists()  # nothing runs while the user looks
        assert session.node("boss/coder.1").status == "paused"
        if decision == "approve":
            run.approve()
        elif decision == "reject":
            run.reject("pas de shell aujourd'hui")
        else:
            run.edit(arguments={"command": "echo autre chose"})
        result = run.result(timeout=60)
    assert result.status == "done", result.text
    finished = [e for e in result.events if e.type == "tool_call_finished"]
    statuses = [(e.path, e.name, e.status) for e in finished if e.name == "command_execution"]
    harness = [e.event for e in result.events if e.type == "harness_event"]
    refused = [e for e in harness if e["type"] == "permission_denied"]
    if decision == "approve":
        assert marker.read_text(encoding="utf-8").strip() == "gardé 🎉"
        assert statuses == [("boss/coder.1", "command_execution", "ok")]
        assert refused == []
        assert "Process exited with code 0" in result.text
    else:
        assert not marker.exists()  # the command never ran
        assert "rejected by user" in result.text  # what Codex tells its model of a decline
        if decision == "reject":
            assert statuses == [("boss/coder.1", "command_execution", "denied")]
            assert [r["reason"] for r in refused] == [
                "the user rejected this call: pas de shell aujourd'hui"
            ]
        else:
            assert [r["reason"] for r in refused] == [
                "Codex cannot run a changed command_execution; the call was declined instead"
            ]
    calls = [e for e in harness if e["type"] == "tool_call"]
    assert [c["name"] for c in calls] == ["command_execution"]
    assert seen[0].last_user == PROMPT
    done = harness[-1]
    assert done["type"] == "done" and done["session_id"] and done["usage"]["input_tokens"] > 0


def test_a_codex_command_a_hook_denies_never_runs(tmp_path, trap):  # noqa: F811
    marker = tmp_path / "ran.txt"
    asked: list[tuple[str, str]] = []

    class Gate:
        def before_tool(self, call: sn.ToolCallInfo):
            asked.append((call.path, call.name))
            if call.name == "command_execution":
                return sn.Deny("no shell today")
            return None

    with sn.MockServer(sn.mock_llm(shell_model(marker))) as server:
        boss = sn.Agent("boss", team=[gated_coder(server, tmp_path, trap)])
        result = sn.Session(boss, llm=sn.mock_llm(parent), hooks=[Gate()]).send("go").result()
    assert asked == [("boss", "task"), ("boss/coder.1", "command_execution")]
    assert not marker.exists()
    assert result.status == "done" and "rejected by user" in result.text


def test_without_pause_on_the_command_runs_and_the_exec_driver_is_unchanged(tmp_path, trap):  # noqa: F811
    marker = tmp_path / "ran.txt"
    with sn.MockServer(sn.mock_llm(shell_model(marker))) as server:
        boss = sn.Agent("boss", team=[gated_coder(server, tmp_path, trap)])
        result = sn.Session(boss, llm=sn.mock_llm(parent)).send("go").result()
    assert result.status == "done", result.text
    assert marker.read_text(encoding="utf-8").strip() == "gardé 🎉"
    assert sn.harness.Codex().args(sn.harness.HarnessConfig("hi"))[:2] == ["exec", "--json"]
