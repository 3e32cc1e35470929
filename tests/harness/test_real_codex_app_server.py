"""The real Codex through `codex app-server`, offline on the served mock: its approval requests are
pauses of the kernel (`pause_on`, hooks), decided by approve, reject or edit.

The CLI comes from `.ci/cli` (see `.ci/run`); missing, the tests skip, or fail in CI.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
import time
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


def gated_coder(server: sn.MockServer, tmp_path: Path, trap, **options) -> sn.Agent:  # noqa: F811
    driver = sn.harness.Codex(
        executable=find_cli("codex"),
        base_url=server.openai_base_url,
        api_key="sk-test-key",
        gate_builtin_tools=True,
    )
    env = isolated_env(tmp_path / "home", trap)
    kind = sn.kinds.Native(driver, env=env, cwd=str(tmp_path), **options)
    # Outside its catalogue a model gets plain function tools, not Codex's JavaScript mode.
    return sn.Agent("coder", does="runs commands", model="mock-model", kind=kind)


def command_of(marker: Path) -> str:
    return f"/bin/bash -lc 'echo '\"'\"'gardé 🎉'\"'\"' > {marker}'"


@pytest.mark.parametrize("decision", ["approve", "reject", "edit"])
def test_a_codex_command_pauses_the_run_until_the_user_decides(decision, tmp_path, trap):  # noqa: F811
    marker = tmp_path / "ran.txt"
    seen: list[sn.ChatRequest] = []
    # Codex writes nothing while it waits for the answer: that silence is no hang.
    quiet = 5.0
    with sn.MockServer(sn.mock_llm(shell_model(marker, seen))) as server:
        coder = gated_coder(server, tmp_path, trap, inactivity_timeout=quiet)
        boss = sn.Agent("boss", team=[coder])
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
            time.sleep(quiet + 2)
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


SCRIPT = """
import sys
import time
from pathlib import Path

import sagents_nb as sn

DB, MARKER, CODEX, HOME = sys.argv[1:5]


def model(req):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("exec_command", cmd=f"echo 'gardé 🎉' > {MARKER}")])
    return f"the shell said: {req.tool_results[-1]}"


def parent(req):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="marque-le 🖊")])
    return f"parent got: {req.tool_results[0]}"


def boss(base_url, env):
    driver = sn.harness.Codex(
        executable=CODEX, base_url=base_url, api_key="sk-test-key", gate_builtin_tools=True
    )
    kind = sn.kinds.Native(driver, env=env, cwd=str(Path(MARKER).parent))
    coder = sn.Agent("coder", does="runs commands", model="mock-model", kind=kind)
    return sn.Agent("boss", team=[coder])


if __name__ == "__main__":
    import json

    env = json.loads(sys.argv[5])
    with sn.MockServer(sn.mock_llm(model)) as server:
        session = sn.Session(boss(server.openai_base_url, env), llm=sn.mock_llm(parent), store=DB)
        run = session.send("go", pause_on={"tool"})
        run.wait(60)
        print(session.id if run.status == "paused" else f"not paused: {run.status}", flush=True)
        time.sleep(3600)  # paused: the kernel dies while someone looks
"""


def codex_processes(home: Path) -> list[int]:
    """Live processes started with this test's Codex home in their environment."""
    found = []
    wanted = f"CODEX_HOME={home / '.codex'}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_codex_approval_survives_a_kill_of_the_kernel(decision, tmp_path, trap):  # noqa: F811
    script, db, marker = tmp_path / "codex_pause.py", tmp_path / "runs.db", tmp_path / "ran.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    home = tmp_path / "home"
    env = isolated_env(home, trap)
    argv = [str(db), str(marker), find_cli("codex"), str(env["HOME"]), json.dumps(env)]
    kernel = subprocess.Popen(
        [sys.executable, str(script), *argv], stdout=subprocess.PIPE, text=True
    )
    try:
        assert kernel.stdout is not None
        session_id = kernel.stdout.readline().strip()
    finally:
        if kernel.poll() is None:
            os.kill(kernel.pid, signal.SIGKILL)
        kernel.wait(10)
    assert session_id and not session_id.startswith("not paused"), session_id
    # Its stdin closed with the kernel, the app server exits: no Codex is left running.
    for _ in range(100):
        if not codex_processes(home):
            break
        time.sleep(0.1)
    assert codex_processes(home) == []
    assert not marker.exists()

    old_argv, sys.argv = sys.argv, ["codex_pause.py", *argv]
    try:
        defined = runpy.run_path(str(script), run_name="definitions")
    finally:
        sys.argv = old_argv
    llm = sn.mock_llm(defined["model"])
    with sn.MockServer(llm) as server:
        boss = defined["boss"](server.openai_base_url, env)
        session = sn.Session.open(db, session_id, agent=boss, llm=sn.mock_llm(defined["parent"]))
        waiting = ("boss/coder.1", "tool", "command_execution")
        assert [(p.path, p.action, p.name) for p in session.pending] == [waiting]
        assert session.node("boss/coder.1").status == "paused"
        run = session.resume()
        # The CLI starts its task again; its same approval request is the same pause, asked again.
        assert run.wait(60) == "paused"
        assert [(p.path, p.action, p.name) for p in run.pending] == [waiting]
        assert str(marker) in run.pending[0].arguments["command"]
        assert not marker.exists()
        if decision == "approve":
            run.approve()
        else:
            run.reject("non, merci")
        result = run.result(timeout=60)
        session.store.close()
    assert result.status == "done", result.text
    if decision == "approve":
        assert marker.read_text(encoding="utf-8").strip() == "gardé 🎉"
    else:
        assert not marker.exists() and "rejected by user" in result.text


@sn.tool
def lookup(key: str) -> str:
    """Look a key up in the kernel's table."""
    return f"value of {key}: 42"


def test_the_kernels_tools_reach_codex_over_mcp_in_app_server_mode(tmp_path, trap):  # noqa: F811
    def model(req: sn.ChatRequest):
        if not req.tool_results:
            names = [t for t in req.tools if t.endswith("lookup")]
            if not names:
                return f"no lookup tool among {req.tools}"
            return sn.reply(tool_calls=[sn.call(names[0], key="clé 鍵")])
        return f"the tool said: {req.tool_results[-1]}"

    with sn.MockServer(sn.mock_llm(model)) as server:
        coder = gated_coder(server, tmp_path, trap)
        coder = sn.Agent(
            "coder", does=coder.does, model=coder.model, kind=coder.kind, tools=[lookup]
        )
        boss = sn.Agent("boss", team=[coder])
        run = sn.Session(boss, llm=sn.mock_llm(parent)).send("go", pause_on={"tool"})
        assert run.wait(60) == "paused"
        assert [(p.path, p.name) for p in run.pending] == [("boss/coder.1", "lookup")]
        run.approve()
        answer = run.result(timeout=60)
    assert answer.text.startswith("parent got: the tool said:")
    assert answer.text.endswith("value of clé 鍵: 42")
    calls = [e.event for e in answer.events if e.type == "harness_event"]
    assert [c["name"] for c in calls if c["type"] == "tool_call"] == ["sagents/lookup"]


def test_a_second_task_resumes_the_codex_thread_over_the_app_server(tmp_path, trap):  # noqa: F811
    seen: list[sn.ChatRequest] = []

    def model(req: sn.ChatRequest):
        seen.append(req)
        return f"answer {len(seen)}"

    def boss_model(req: sn.ChatRequest):
        if len(req.tool_results) == 0:
            return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="retiens : kiwi 🥝")])
        if len(req.tool_results) == 1:
            return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="quel fruit ?")])
        return "ok"

    with sn.MockServer(sn.mock_llm(model)) as server:
        coder = gated_coder(server, tmp_path, trap, resume=True)
        result = sn.Agent("boss", team=[coder]).run_sync("go", llm=sn.mock_llm(boss_model))
    assert result.status == "done", result.text
    assert [c.id for c in result.tree.children] == ["boss/coder.1"]
    said = [m["content"] for m in seen[-1].messages if m["role"] in ("user", "assistant")]
    assert seen[-1].last_user == "quel fruit ?"
    assert "retiens : kiwi 🥝" in said and "answer 1" in said
