"""`sn.kinds.Native`: a CLI child in a delegation tree, end to end through the fake CLI."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

import sagents_nb as sn
from tests.conftest import add

pytestmark = pytest.mark.timeout(60)


def delegate_once(req: sn.ChatRequest):
    if not req.tool_results:
        return sn.reply(tool_calls=[sn.call("task", agent="coder", prompt="-rf: add 2 and 3")])
    return f"parent got: {req.tool_results[0]}"


def coder(fake_cli, mode: str, **options) -> sn.Agent:
    driver = sn.harness.ClaudeCode(executable=fake_cli.path)
    return sn.Agent(
        "coder",
        does="writes code",
        tools=[add],
        kind=sn.kinds.Native(driver, env=fake_cli.env(mode), **options),
    )


def test_a_cli_child_answers_its_parent_and_streams_events(fake_cli) -> None:
    boss = sn.Agent("boss", team=[coder(fake_cli, "happy")])
    result = boss.run_sync("go", llm=sn.mock_llm(delegate_once))
    assert result.text == "parent got: Hello from the fake CLI."
    (child,) = result.tree.children
    assert (child.id, child.kind, child.status) == ("boss/coder.1", "native", "done")
    harness = [e for e in result.events if e.type == "harness_event"]
    assert harness and all(e.path == "boss/coder.1" for e in harness)
    assert harness[-1].event["type"] == "done"


def test_cli_tool_calls_run_here_through_hooks_and_show_in_the_tree(fake_cli) -> None:
    seen: list[str] = []

    class Audit:
        def before_tool(self, call: sn.ToolCallInfo):
            if call.path != "boss":
                seen.append(f"{call.path}:{call.name}")

    session = sn.Session(
        sn.Agent("boss", team=[coder(fake_cli, "mcp")]),
        hooks=[Audit()],
        llm=sn.mock_llm(delegate_once),
    )
    result = session.send("go").result()
    assert "add=5" in result.text and "tools=['add']" in result.text
    assert seen == ["boss/coder.1:add"]
    calls = [
        e for e in result.events if e.type == "tool_call_finished" and e.path == "boss/coder.1"
    ]
    assert [(c.name, json.loads(c.arguments), c.result) for c in calls] == [
        ("add", {"a": 2, "b": 3}, "5")
    ]


def test_a_crashing_cli_is_an_error_child_and_the_parent_goes_on(fake_cli) -> None:
    boss = sn.Agent("boss", team=[coder(fake_cli, "crash")])
    result = boss.run_sync("go", llm=sn.mock_llm(delegate_once))
    assert result.status == "done"
    assert result.text.startswith("parent got: [error]") and "exit" in result.text
    assert "Invalid API key" in result.text
    assert result.tree.children[0].status == "error"


def test_a_missing_cli_is_a_clear_error(fake_cli) -> None:
    driver = sn.harness.ClaudeCode(executable="definitely-not-installed-cli")
    agent = sn.Agent("coder", does="x", kind=sn.kinds.Native(driver))
    result = sn.Agent("boss", team=[agent]).run_sync("go", llm=sn.mock_llm(delegate_once))
    assert "cannot find the" in result.text and "definitely-not-installed-cli" in result.text


def test_cancelling_the_run_stops_the_cli_process_group(fake_cli, tmp_path) -> None:
    pids = tmp_path / "pids"
    driver = sn.harness.ClaudeCode(executable=fake_cli.path)
    kind = sn.kinds.Native(driver, env=fake_cli.env("grandchild", FAKE_CLI_PIDS=str(pids)))
    boss = sn.Agent("boss", team=[sn.Agent("coder", does="x", kind=kind)])
    session = sn.Session(boss, llm=sn.mock_llm(delegate_once))
    run = session.send("go")
    deadline = time.monotonic() + 10
    while not (pids.exists() and pids.read_text().strip()):
        assert time.monotonic() < deadline, "the fake CLI never started"
        time.sleep(0.05)
    running = [int(p) for p in pids.read_text().split()]
    assert running and all(_alive(pid) for pid in running)
    run.cancel()
    assert run.wait(10) == "cancelled"
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in running):
        assert time.monotonic() < deadline, "the CLI's processes outlived the run"
        time.sleep(0.05)
    assert session.tree.children[0].status == "cancelled"
    session.llm = sn.mock_llm(lambda req: "encore là")  # delegate_once would delegate again
    assert session.send("again").result().status == "done"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_native_is_a_child_kind() -> None:
    kind = sn.kinds.Native(sn.harness.Grok())
    assert isinstance(kind, sn.kinds.ChildKind) and kind.name == "native"
    assert asyncio.iscoroutinefunction(kind.run_task)


def test_the_clis_run_facts_reach_the_tree_and_the_transcript(fake_cli) -> None:
    from sagents_nb.notebook._panes import Focus, pane_state
    from sagents_nb.notebook._projector import Projector

    session = sn.Session(
        sn.Agent("boss", team=[coder(fake_cli, "happy")]), llm=sn.mock_llm(delegate_once)
    )
    result = session.send("go").result()
    (child,) = result.tree.children
    assert child.cost_usd == 0.0123 and result.tree.cost_usd is None
    assert "boss/coder.1 [native] done · 1 turn" in result.tree.render()
    assert "$0.0123 reported" in result.tree.render()
    assert result.tree.to_dict()["children"][0]["cost_usd"] == 0.0123
    projector = Projector()
    for event in session.events:
        projector.fold(event)
    entries = pane_state(projector, Focus("boss/coder.1"), None, {})["entries"]
    (done,) = [e for e in entries if e.get("name") == "done"]
    assert done["facts"] == (
        "1 turn · 2.6 s · $0.0123 at list price · session 5f0c9a63-2b1e-4c1e-9a57-7d0c1b6f2e11"
    )


def test_a_crashed_clis_stderr_tail_appears_once_in_the_childs_error(fake_cli) -> None:
    boss = sn.Agent("boss", team=[coder(fake_cli, "crash")])
    result = boss.run_sync("go", llm=sn.mock_llm(delegate_once))
    assert result.tree.children[0].status == "error"
    assert result.text.count("Invalid API key") == 1
    assert "exited with code 3" in result.text


def test_a_pause_on_a_cli_tool_call_is_not_the_clis_inactivity(fake_cli) -> None:
    # The CLI prints nothing while it waits for a tool's answer (a slow tool, or a person at a
    # pause); that wait must not count as the CLI hanging.
    driver = sn.harness.ClaudeCode(executable=fake_cli.path)
    kind = sn.kinds.Native(driver, env=fake_cli.env("mcp"), inactivity_timeout=6)
    slow = sn.Agent("coder", does="writes code", tools=[add], kind=kind)
    session = sn.Session(sn.Agent("boss", team=[slow]), llm=sn.mock_llm(delegate_once))
    run = session.send("go", pause_on={"tool"})
    run.wait()
    assert run.status == "paused", [e.event for e in run.events if e.type == "harness_event"]
    assert run.paused_at.name == "add"
    time.sleep(7)  # a person reading the pending call, longer than the CLI's inactivity limit
    run.resume()
    result = run.result()
    assert "add=5" in result.text, result.text


def test_the_clis_reported_cost_survives_a_reopen_and_a_fork(fake_cli, tmp_path) -> None:
    boss = sn.Agent("boss", team=[coder(fake_cli, "happy")])
    session = sn.Session(boss, llm=sn.mock_llm(delegate_once), store=tmp_path / "runs.db")
    session.send("go").result()
    (done,) = [e for e in session.events if e.type == "harness_event" and e.event["type"] == "done"]
    reopened = sn.Session.open(tmp_path / "runs.db", session.id, agent=boss)
    at_done, before = session.fork(at=done.seq), session.fork(at=done.seq - 1)
    for opened, cost in ((session, 0.0123), (reopened, 0.0123), (at_done, 0.0123), (before, None)):
        node = opened.root.find("boss/coder.1")
        assert node is not None and node.cost_usd == cost, opened
        assert opened.tree.to_dict()["children"][0]["cost_usd"] == cost
    for opened in (session, reopened, at_done, before):
        opened.store.close()
