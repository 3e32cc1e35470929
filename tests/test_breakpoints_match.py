"""A gate's fast test of `sn.when(...)` (compiled path, predicates filtered by action) gives the
same answers as the general matcher: every field against many node paths and calls."""

from __future__ import annotations

import itertools
from typing import Any

import sagents_nb as sn
from sagents_nb._base.caller import path_matches
from sagents_nb._runtime.breakpoints import ACTIONS, When, by_action, could_fire
from sagents_nb._runtime.pending import PendingAction

PATHS = [
    "lead",
    "lead/worker.1",
    "lead/worker.12/audit.1",
    "x/never/w.1",
    "x/never",
    "x/never/a/b",
    "boss/équipe.2/audit.1",
    "chef/研究者.1",
    "チーム/調査.3/監査.1",
    "🤖/agent.1",
    "a*b/c?d",
]
GLOBS = [
    None,
    "*",
    "**",
    "lead",
    "lead/*",
    "lead/**",
    "**/audit.*",
    "x/never/*",
    "*/worker.?",
    "*/worker.??",
    "chef/研究者.*",
    "チーム/**/監査.1",
    "🤖/*",
    "boss/*/audit.*",
    "a*b/c?d",
]
TOOLS = [None, "noop", "task", "send", "研究"]
NAMES = [None, "noop", "task", "send", "研究"]


def reference(test: When, action: str, path: str, name: str | None) -> bool:
    """The general matcher: every declarative field, the path by `path_matches`."""
    if test.action is not None and action != test.action:
        return False
    if test.tool is not None and (action not in ("tool", "task") or name != test.tool):
        return False
    return test.path is None or path_matches(test.path, path)


def whens() -> list[When]:
    return [
        sn.when(path, action=action, tool=tool)
        for path, action, tool in itertools.product(GLOBS, (None, *ACTIONS), TOOLS)
    ]


def test_a_compiled_when_answers_as_the_general_matcher() -> None:
    for test in whens():
        for action, path, name in itertools.product(ACTIONS, PATHS, NAMES):
            expected = reference(test, action, path, name)
            assert test.could_match(action, path, name) is expected, (test, action, path, name)
            assert could_fire(test, action, path, name) is expected
            pending = PendingAction(0, action, path, name=name, arguments={})
            assert test(pending) is expected, (test, action, path, name)


def test_by_action_leaves_out_only_what_cannot_fire_there_in_order() -> None:
    tests: list[Any] = [*whens(), lambda pending: False]
    at = by_action(tuple(tests))
    for action in ACTIONS:
        kept = [
            t
            for t in tests
            if not isinstance(t, When)
            or reference(When(None, t.action, t.tool), action, "", t.tool)
        ]
        assert list(at[action]) == kept, action
        for t, path, name in itertools.product(tests, PATHS, NAMES):
            assert t in at[action] or not could_fire(t, action, path, name)
    assert by_action(())["model"] == ()


def test_a_when_with_args_or_restored_keeps_its_test_and_equality() -> None:
    big = sn.when("lead/*", action="tool", args=lambda a: a["x"] > 1)
    assert big(PendingAction(0, "tool", "lead/w.1", name="noop", arguments={"x": 2}))
    assert not big(PendingAction(0, "tool", "lead/w.1", name="noop", arguments={"x": 1}))
    assert not big(PendingAction(0, "tool", "other/w.1", name="noop", arguments={"x": 2}))
    assert sn.when("lead/*", action="tool") == When("lead/*", "tool")
    assert hash(sn.when("lead/*", action="tool")) == hash(When("lead/*", "tool"))
    assert When("**/audit.*", restored=True).could_match("model", "a/audit.1")
    assert repr(sn.when("x/*", action="tool")) == "sn.when(path='x/*', action='tool')"


def test_a_never_firing_tool_predicate_is_not_looked_at_by_other_gates() -> None:
    at = by_action((sn.when(path="x/never/*", action="tool"),))
    assert at["model"] == at["task"] == at["reply"] == ()
    assert len(at["tool"]) == 1
    named = by_action((sn.when(tool="send"),))
    assert named["model"] == named["reply"] == ()
    assert len(named["tool"]) == len(named["task"]) == 1
