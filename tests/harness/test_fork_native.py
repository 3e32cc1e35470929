"""A fork of a run with a `Native` (CLI) grandchild equals the origin as of the cut, like the
other built-in kinds' (tests/test_fork_faithful.py): its kind, built with a driver (not JSON),
is the very object it ran with (a reopen in a new process cannot rebuild it: it shows the
agent's kind now)."""

from __future__ import annotations

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
    check_random_cuts(session, states, "native", reopened=False)
    fork = session.fork(at=next(e.seq for e in session.events if e.type == "run_finished"))
    assert fork.node("chef/lead.1/aide.1").kind is native  # type: ignore[union-attr]
