"""Breakpoints: `sn.when(...)` predicates over pending actions, how they are tested at a gate,
and how they are stored with a run (code cannot be: see `restored`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.caller import path_pattern
from .._base.checks import check_callable, check_str
from .._base.errors import ConfigurationError

if TYPE_CHECKING:
    from .pending import PendingAction

log = logging.getLogger("sagents_nb")

ACTIONS = ("model", "tool", "task", "reply")
"""What a run can pause at: before a model request, a tool call, a `task` call, and after a
child's answer (before its parent reads it)."""

Breakpoint = Callable[["PendingAction"], bool]


@dataclass(frozen=True, repr=False)  # its own `__repr__`: none made to be dropped
class When:
    """A breakpoint: pause at a pending action matching every field given (`sn.when(...)`).

    `path` is a glob over node paths (`*` within a segment, `**` across), `action` one of
    `ACTIONS`, `tool` the name of a tool (or `task`) call, `args` a test of the call's
    arguments (for a `reply`: `{"reply": text, "status": status}`). `restored` marks one read
    back from a store without its `args` test or code: it pauses wherever it could have matched.
    """

    path: str | None = None
    action: str | None = None
    tool: str | None = None
    args: Callable[[dict[str, Any]], bool] | None = None
    restored: bool = False
    _path_match: Callable[[str], re.Match[str] | None] | None = field(
        default=None, init=False, compare=False
    )
    """`path` compiled once (see `path_pattern`): a gate only runs the pattern."""

    def __post_init__(self) -> None:
        if self.path is not None:
            object.__setattr__(self, "_path_match", path_pattern(self.path).match)

    def __call__(self, pending: PendingAction) -> bool:
        if not self.could_match(pending.action, pending.path, pending.name):
            return False
        if self.args is not None:
            return pending.arguments is not None and bool(self.args(pending.arguments))
        return True

    def could_match(self, action: str, path: str, name: str | None = None) -> bool:
        """Whether a pending `action` at `path` (a call of `name`) could match, before any
        `args` test: a gate that none could match builds no `PendingAction`."""
        if self.action is not None and action != self.action:
            return False
        if self.tool is not None and (action not in ("tool", "task") or name != self.tool):
            return False
        return self._path_match is None or self._path_match(path) is not None

    def acts_at(self, action: str) -> bool:
        """Whether its `action` and `tool` allow a pending `action` (wherever, whatever call):
        `could_match`'s first test, which that repeats inline (it runs at every gate)."""
        if self.action is not None and action != self.action:
            return False
        return self.tool is None or action in ("tool", "task")

    def __repr__(self) -> str:
        given = [f"{k}={getattr(self, k)!r}" for k in ("path", "action", "tool")]
        fields = [g for g in given if not g.endswith("=None")]
        if self.args is not None:
            fields.append("args=...")
        note = " (restored: pauses wherever it could match)" if self.restored else ""
        return f"sn.when({', '.join(fields)}){note}"


def when(
    path: str | None = None,
    *,
    action: str | None = None,
    tool: str | None = None,
    args: Callable[[dict[str, Any]], bool] | None = None,
) -> When:
    """A breakpoint for `pause_on=`: pause at an action matching every field given.

    Args:
        path: a glob over node paths (`"boss/*/audit.*"`; `*` within a segment, `**` across).
        action: `"model"`, `"tool"`, `"task"` or `"reply"`.
        tool: the name of the tool called (`"task"` for delegation).
        args: a test of the call's arguments, e.g. `lambda a: a["amount"] > 100` (a test that
            raises pauses, to be safe). It cannot be stored: a run reopened from a store pauses
            wherever the other fields match, unless `resume(pause_on=...)` passes it again.

    Raises:
        ConfigurationError: an unknown action, or a field of the wrong type.
    """
    where = "sn.when(...)"
    check_str("path", path, where=where, optional=True)
    check_str("tool", tool, where=where, optional=True)
    check_callable("args", args, where=where, optional=True)
    if action is not None:
        check_str("action", action, where=where)
        if action not in ACTIONS:
            raise ConfigurationError(f"sn.when(action={action!r}): the actions are {list(ACTIONS)}")
    return When(path, action, tool, args)


def split(breakpoints: Iterable[Any]) -> tuple[frozenset[str], tuple[Breakpoint, ...]]:
    """The action names and the predicates of a checked `pause_on`."""
    actions, tests = set(), []
    for item in breakpoints:
        if isinstance(item, str):
            actions.add(item)
        else:
            tests.append(item)
    return frozenset(actions), tuple(tests)


def by_action(tests: tuple[Breakpoint, ...]) -> Mapping[str, tuple[Breakpoint, ...]]:
    """For each action, the `tests` that could fire at it, in their order: a gate with none
    answers at once (a `When` of `action="tool"` is never looked at by a model gate)."""
    if not tests:
        return NO_TESTS
    return {
        action: tuple(t for t in tests if not isinstance(t, When) or t.acts_at(action))
        for action in ACTIONS
    }


NO_TESTS: Mapping[str, tuple[Breakpoint, ...]] = {action: () for action in ACTIONS}
"""`by_action` of no tests (shared: never changed)."""


def could_fire(test: Breakpoint, action: str, path: str, name: str | None = None) -> bool:
    """Whether `test` could match an `action` at `path`: a `When` by its declarative fields,
    any other callable always (it is asked with the whole `PendingAction`)."""
    return not isinstance(test, When) or test.could_match(action, path, name)


def fires(test: Breakpoint, pending: PendingAction) -> bool:
    """Whether `test` matches `pending`; a test that raises pauses (and the log says why)."""
    try:
        return bool(test(pending))
    except Exception as exc:
        log.warning(
            "sagents_nb: breakpoint %r raised %s: %s at %s; paused there to be safe",
            test,
            type(exc).__name__,
            exc,
            pending,
        )
        return True


def stored(tests: Iterable[Breakpoint]) -> list[dict[str, Any]]:
    """The predicates as a store keeps them: a `When`'s declarative fields, and whether it had
    code (`args`, or a callable of the user's) that cannot be stored."""
    rows = []
    for test in tests:
        if isinstance(test, When):
            row: dict[str, Any] = {"path": test.path, "action": test.action, "tool": test.tool}
            rows.append({**row, "code": test.args is not None or test.restored})
        else:
            rows.append({"path": None, "action": None, "tool": None, "code": True})
    return rows


def restored(rows: Iterable[dict[str, Any]], given: Iterable[Any] = ()) -> list[When]:
    """Stored predicates back as breakpoints. One that had code pauses conservatively, wherever
    its declarative fields match (a bare callable: at every action), unless predicates are
    `given` again (`resume(pause_on=...)`): those then take the place of every one with code."""
    replaced = any(not isinstance(item, str) for item in given)
    return [
        When(row["path"], row["action"], row["tool"], restored=row["code"])
        for row in rows
        if not (row["code"] and replaced)
    ]
