"""Ctrl-C as a script gets it (SIGINT to a subprocess): a blocking wait that runs a run cancels it;
a wait for a background run's result only stops waiting."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.timeout(90)

SETUP = """
import asyncio, json, sys, time
import sagents_nb as sn

finished = []

@sn.tool
async def slow() -> str:
    await asyncio.sleep(3)
    finished.append("slow")
    return "slow done"

def handler(req):
    return sn.reply(tool_calls=[sn.call("slow")]) if not req.tool_results else "answered"

llm = sn.mock_llm(handler)

def report(**extra):
    time.sleep(4)  # long enough for the tool and a second model call, had the run gone on
    print(json.dumps({"finished": finished, "model_calls": len(llm.exchanges), **extra}))
"""

SCRIPTS = {
    "agent.run_sync": """
try:
    print("ready", flush=True)
    sn.Agent("a", tools=[slow]).run_sync("x", llm=llm)
except KeyboardInterrupt:
    report()
""",
    "run.wait": """
session = sn.Session(sn.Agent("a", tools=[slow]), llm=llm)
run = session.send("x")
try:
    print("ready", flush=True)
    run.wait()
except KeyboardInterrupt:
    report(status=run.status, tool_messages=[
        m.content for m in session.llm_messages if m.role == "tool"])
""",
    "run.result": """
session = sn.Session(sn.Agent("a", tools=[slow]), llm=llm)
run = session.send("x")
try:
    print("ready", flush=True)
    run.result()
except KeyboardInterrupt:
    status = run.status
    report(status_at_interrupt=status, text=run.result(timeout=10).text)
""",
}


def _interrupt(script: str) -> dict:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SETUP + script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # the run is inside its slow tool call
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_ctrl_c_during_agent_run_sync_cancels_the_run() -> None:
    seen = _interrupt(SCRIPTS["agent.run_sync"])
    assert seen == {"finished": [], "model_calls": 1}


def test_ctrl_c_during_run_wait_cancels_the_run_and_answers_the_dangling_call() -> None:
    seen = _interrupt(SCRIPTS["run.wait"])
    assert seen["finished"] == [] and seen["model_calls"] == 1
    assert seen["status"] == "cancelled"
    assert len(seen["tool_messages"]) == 1 and seen["tool_messages"][0].startswith("[cancelled]")


def test_ctrl_c_during_run_result_only_stops_the_wait() -> None:
    seen = _interrupt(SCRIPTS["run.result"])
    assert seen["status_at_interrupt"] == "running"
    assert seen["finished"] == ["slow"] and seen["model_calls"] == 2
    assert seen["text"] == "answered"
