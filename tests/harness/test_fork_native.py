"""A fork of a run with a `Native` (CLI) grandchild equals the origin as of the cut, like the
other built-in kinds' (tests/test_fork_faithful.py): its kind, built with a driver and an `env`
(not stored: it may hold a key), is the very object it ran with, in a fork and in a reopen in
this process. A new process builds such a kind again from its driver's class and fields, or,
when its arguments were not stored, shows it as the kind it ran as, marked "(not rebuilt)"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sagents_nb as sn

from ..test_fork_faithful import check_random_cuts, recorded_run

pytestmark = pytest.mark.timeout(120)


def test_a_fork_with_a_native_grandchild_equals_the_origin_as_of_the_cut(
    tmp_path: Path, fake_cli
) -> None:
    native = sn.kinds.Native(
        sn.harness.ClaudeCode(executable=fake_cli.path), env=fake_cli.env("happy")
    )
    session, states = recorded_run(tmp_path, sn.kinds.Worker(), sn.kinds.Resident(), aide=native)
    assert {e.new for e in session.events if e.type == "kind_swapped"} >= {"resident"}
    check_random_cuts(session, states, "native")
    fork = session.fork(at=next(e.seq for e in session.events if e.type == "run_finished"))
    assert fork.node("chef/lead.1/aide.1").kind is native  # type: ignore[union-attr]


REOPEN = """
import json, sys
import sagents_nb as sn

coder = sn.Agent("coder", does="writes code")  # their kinds now: a Worker, as code says today
tester = sn.Agent("tester", does="tests code")
boss = sn.Agent("boss", team=[coder, tester])
session = sn.Session.open(sys.argv[1], sys.argv[2], agent=boss)
print(json.dumps({
    child.id: [child.kind, repr(session.node(child.id).kind)] for child in session.tree.children
}))
driver = session.node("boss/coder.1").kind.driver
print(json.dumps([type(driver).__name__, driver.executable, driver.api_key]))
"""


def test_a_reopen_in_a_new_process_rebuilds_a_cli_kind_or_shows_it_as_it_ran(
    tmp_path: Path, fake_cli
) -> None:
    """A `Native` built with a driver (a dataclass) and JSON settings is built again in a new
    process; one whose arguments were not stored (an `env`, which may hold a key) shows as the
    kind it ran as, marked, never as its agent's kind now."""
    coder = sn.Agent(
        "coder",
        does="writes code",
        kind=sn.kinds.Native(
            sn.harness.ClaudeCode(executable=fake_cli.path), pass_env=["PATH"], extra_args=["-v"]
        ),
    )
    tester = sn.Agent(
        "tester",
        does="tests code",
        kind=sn.kinds.Native(
            sn.harness.ClaudeCode(executable=fake_cli.path), env={"API_TOKEN": "sk-secret-4f9a8b7c"}
        ),
    )

    def boss_model(req: sn.ChatRequest) -> sn.Reply | str:
        if len(req.tool_results) < 2:
            member = ["coder", "tester"][len(req.tool_results)]
            return sn.reply(tool_calls=[sn.call("task", agent=member, prompt="écris — 書く 🐍")])
        return "fini"

    boss = sn.Agent("boss", team=[coder, tester])
    db = tmp_path / "runs.db"
    session = sn.Session(boss, llm=sn.mock_llm(boss_model), store=db)
    assert session.send("go").result(timeout=30).text == "fini"
    assert "sk-secret" not in db.read_bytes().decode("utf-8", "replace")
    script = tmp_path / "reopen.py"
    script.write_text(REOPEN, encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(script), str(db), session.id],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    tree, driver = map(json.loads, done.stdout.splitlines())
    assert tree["boss/coder.1"][0] == "native"
    assert tree["boss/coder.1"][1].startswith("Native(")
    assert driver == ["ClaudeCode", fake_cli.path, None]
    kind, shown = tree["boss/tester.1"]
    assert kind == "native (not rebuilt)"
    assert "sagents_nb.kinds._native:Native" in shown and "not stored" in shown
