"""`%load_ext sagents_nb` and `%sagents_view`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

import sagents_nb as sn
from sagents_nb.notebook._magics import latest


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sagents_nb")
    yield shell
    shell.user_ns.clear()


def test_sagents_view_shows_the_most_recent_run(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    first = sn.Session(sn.Agent("first"), llm=sn.script("one"))
    second = sn.Session(sn.Agent("second"), llm=sn.script("two"))
    second.send("x").result()
    first.send("y").result()
    shell.user_ns.update(first=first, second=second)
    shell.run_line_magic("sagents_view", "")
    shown = capsys.readouterr().out
    assert "first [main] done" in shown and "[done] one" in shown
    shell.run_line_magic("sagents_view", "second")
    assert "second [main] done" in capsys.readouterr().out


def test_sagents_view_says_what_to_do_without_a_session(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.user_ns.clear()
    shell.run_line_magic("sagents_view", "")
    assert "%sagents_view found no sagents_nb session" in capsys.readouterr().out


def test_latest_picks_what_changed_last() -> None:
    session = sn.Session(sn.Agent("a"), llm=sn.script("one", "two"))
    old = session.send("x").result()
    assert latest([old, "unrelated", 3]) is old
    run = session.send("y")
    run.result()
    assert latest([old, run]) is run
    assert latest([session]) is run
    assert latest([]) is None
