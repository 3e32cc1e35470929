"""The source of the pytest file `session.to_test(...)` writes: recorded data as Python literals."""

from __future__ import annotations

import math
from string import Template
from typing import Any

WIDTH = 88
"""Lines of data are folded past this many characters, as formatters do (a long text stays on
one line)."""


def literal(value: Any, indent: int = 0, lead: int = 0) -> str:
    """`value` (JSON-like data: dicts with str keys, lists, str, numbers, bools, None) as a
    Python literal that evaluates back to it, for a line indented by `indent` where `lead`
    characters come before it. Every text goes through `repr`, so no text the model, a tool or
    a user wrote can end the literal and become code."""
    if isinstance(value, str):
        text = repr(value)
        # double quotes, as formatters write them, when the text holds no quote of either kind
        # (a text with a ' and no " has them already)
        return f'"{text[1:-1]}"' if text[0] == "'" and '"' not in value else text
    if value is None or isinstance(value, bool | int):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"a key of recorded data is {type(key).__name__}, not str")
        items = []
        for key, item in value.items():
            name = literal(key)
            items.append(f"{name}: {literal(item, indent + 4, len(name) + 2)}")
        return _folded("{", items, "}", indent, lead)
    if isinstance(value, list | tuple):
        return _folded("[", [literal(v, indent + 4) for v in value], "]", indent, lead)
    raise TypeError(f"recorded data holds a {type(value).__name__}, which has no literal form")


def _folded(opening: str, items: list[str], closing: str, indent: int, lead: int) -> str:
    line = opening + ", ".join(items) + closing
    if indent + lead + len(line) + 1 <= WIDTH and "\n" not in line:  # + its comma
        return line
    inner = " " * (indent + 4)
    return opening + "\n" + "".join(f"{inner}{item},\n" for item in items) + " " * indent + closing


def render(*, module: str, attribute: str, data: dict[str, Any]) -> str:
    """The test file's source: `module` and `attribute` are checked identifiers (dotted), every
    other value is data written by `literal`."""
    first, _, rest = attribute.partition(".")
    imported = f"from {module} import {first} as AGENT"
    if rest:
        imported = f"from {module} import {first} as _configured\n\nAGENT = _configured.{rest}"
    constants = "\n\n".join(
        f"{name} = {literal(value, 0, len(name) + 3)}" for name, value in data.items()
    )
    return TEMPLATE.substitute(
        spec=f"{module}:{attribute}",
        module=module,
        top=module.partition(".")[0],
        imported=imported,
        constants=constants,
    )


TEMPLATE = Template('''\
"""A recorded sagents_nb session, replayed offline: it must end as it did when recorded.

Written by `session.to_test(..., agents="$spec")`.

- The agents' configuration is imported from `$spec`: the module `$top` must be importable
  where pytest runs (a `$top.py` beside this file, or on `sys.path`).
- The model is not called. Each node of the tree is answered with the replies it received
  when the session was recorded, in order, by a mock routed by node path (`sn.mock_llm({...})`);
  an agent that brings its own endpoint is pointed at the same replies for the test. A node
  asking the model more or fewer times than it did, or one not recorded, fails the test.
- The agents' own tools run for real (they are part of the imported configuration) and their
  results are checked (`test_tool_results`: delete it if a tool's result may vary).
- The user's messages are sent in order, each with the `pause_on` its run had, and each pause
  is decided as it was (approve, step, resume, reject with its reason, edit, cancel). An
  `sn.when(...)` is replayed by its fields; one whose test is code (`args=`, a callable), which
  cannot be written here, is replayed as a breakpoint at each pause it made when recorded.
- Checked: every pause is met, each run's answer (status and text), the delegation tree
  (paths and statuses) and the tool results.
- Not replayed: the session's preprocessor (each message is sent as the model received it),
  its hooks, token counter and tool context, and swaps made between cells.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
import sagents_nb as sn

$imported

WAIT = 60.0
"""Seconds any one wait of the replay may take."""

$constants


class Replies:
    """The replies one node received, given back in the order it received them."""

    def __init__(self, path: str, replies: list[Any], unrecorded: Unrecorded) -> None:
        self.path, self.replies, self.unrecorded = path, replies, unrecorded
        self.given = 0

    def __call__(self, request: sn.ChatRequest) -> Any:
        if request.node != self.path or self.given >= len(self.replies):
            return self.unrecorded(request)
        recorded = self.replies[self.given]
        self.given += 1
        calls = recorded["tool_calls"]
        reply = sn.reply(
            recorded["text"],
            tool_calls=[sn.call(call["name"], call["id"]) for call in calls],
            usage=recorded["usage"],
        )
        # each call's arguments exactly as the model wrote them
        raw = {i: call["arguments"] for i, call in enumerate(calls)}
        return dataclasses.replace(reply, raw_arguments=raw)


class Unrecorded:
    """Answers a request the recording has no reply for: a problem, and the node's task fails."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.asked: dict[str | None, int] = {}

    def __call__(self, request: sn.ChatRequest) -> Any:
        node = request.node
        had = len(REPLIES.get(node or "", []))
        self.asked[node] = self.asked.get(node, 0) + 1
        problem = (
            f"node {node!r} asked the model for reply {had + self.asked[node]}; "
            f"the recording has {had}"
        )
        self.problems.append(problem)
        raise AssertionError(problem)


def offline(agent: Any, endpoint: Any, patch: pytest.MonkeyPatch, seen: set) -> None:
    """Point each agent of the tree that brings its own endpoint at the replies."""
    if id(agent) in seen:
        return
    seen.add(id(agent))
    if agent.model is not None and not isinstance(agent.model, str):
        patch.setattr(agent, "model", endpoint(agent.model.model))
    for member in agent.team:
        if isinstance(member, type) and issubclass(member, sn.Task):
            override = member.model_override
            if override is not None and not isinstance(override, str):
                patch.setattr(member, "model_override", endpoint(override.model))
            member = member.as_agent()
        offline(member, endpoint, patch, seen)


def met(pending: Any) -> dict[str, Any]:
    fields = ("path", "action", "name", "call_id", "arguments")
    return {field: getattr(pending, field) for field in fields}


def first_pending(run: sn.Run, decided: Any, expected: list[dict[str, Any]]) -> Any:
    """The pause the run waits at now (not the one just decided, on its way out)."""
    deadline = time.monotonic() + WAIT
    while True:
        pending = run.paused_at
        if pending is not None and pending is not decided:
            return pending
        if run.done or time.monotonic() > deadline:
            raise AssertionError(
                f"run {run.number} never paused before {expected[0]}: it is {run.status}"
            )
        time.sleep(0.001)


def left_pending(run: sn.Run, expected: list[dict[str, Any]]) -> None:
    """Wait until the run waits at each pause that was pending when it was recorded."""
    deadline = time.monotonic() + WAIT
    while any(at not in [met(p) for p in run.pending] for at in expected):
        if run.done or time.monotonic() > deadline:
            waiting = [met(pending) for pending in run.pending]
            raise AssertionError(
                f"run {run.number} waits at {waiting}, not at {expected}: it is {run.status}"
            )
        time.sleep(0.01)


def changes(edit: dict[str, Any] | None) -> dict[str, Any]:
    """An edit's recorded changes as `run.edit(...)` takes them."""
    edit = dict(edit or {})
    if isinstance(edit.get("reply"), dict):  # a model's reply (a child's answer is a text)
        edit["reply"] = sn.Message.model_validate(edit["reply"])
    if "messages" in edit:
        edit["messages"] = [sn.Message.model_validate(m) for m in edit["messages"]]
    return edit


def decide(run: sn.Run, pause: dict[str, Any]) -> None:
    """Decide the run's first pending pause as `pause` was decided."""
    decision = pause["decision"]
    if decision == "reject":
        run.reject(pause["reason"])
    elif decision == "edit":
        run.edit(**changes(pause["edit"]))
    else:
        getattr(run, decision)()  # approve, step, resume or cancel


def breakpoints(recorded: dict[str, Any]) -> list[Any]:
    """The run's `pause_on`: its actions, its `sn.when(...)` by their fields and, for one
    with code, a breakpoint at each pause the run made."""
    pause_on: list[Any] = list(recorded["pause_on"])
    coded = False
    for row in recorded["breakpoints"]:
        if row["code"]:
            coded = True
        else:
            pause_on.append(sn.when(row["path"], action=row["action"], tool=row["tool"]))
    if coded:
        made = [pause["at"] for pause in recorded["pauses"]]
        pause_on.append(lambda pending: met(pending) in made)
    return pause_on


def replay_run(session: sn.Session, recorded: dict[str, Any]) -> tuple[sn.Run, dict]:
    if recorded["message"] is None:
        run = session.retry(pause_on=breakpoints(recorded))
    else:
        run = session.send(recorded["message"], pause_on=breakpoints(recorded))
    # pauses met together (parallel children) may come in another order than they did
    todo = [pause for pause in recorded["pauses"] if pause["decision"] != "leave"]
    decided = None
    while todo:
        run.wait(timeout=WAIT)
        pending = first_pending(run, decided, [pause["at"] for pause in todo])
        pause = next((pause for pause in todo if pause["at"] == met(pending)), None)
        if pause is None:
            raise AssertionError(
                f"run {run.number} paused before {met(pending)}, which the recording does "
                f"not have (it waits for {todo[0]['at']} next)"
            )
        todo.remove(pause)
        decide(run, pause)
        decided = pending
    left_pending(run, [p["at"] for p in recorded["pauses"] if p["decision"] == "leave"])
    if recorded["status"] == "paused":
        return run, {"status": run.status, "answer": None}
    if run.wait(timeout=WAIT) == "paused":
        raise AssertionError(
            f"run {run.number} paused before {met(run.paused_at)}, which the recording "
            "does not have (it ended there)"
        )
    result = run.result(timeout=WAIT)
    return run, {"status": result.status, "answer": result.text}


def replay() -> dict[str, Any]:
    """Run the recorded session again on the recorded replies; what it ended with."""
    problems: list[str] = []
    unrecorded = Unrecorded(problems)
    routes: dict[str, Any] = {}
    for path, got in REPLIES.items():
        routes[path] = Replies(path, got, unrecorded)
    routes.setdefault("**", unrecorded)

    def endpoint(model: str) -> Any:
        return sn.mock_llm(routes, model=model)

    with pytest.MonkeyPatch.context() as patch:
        offline(AGENT, endpoint, patch, set())
        session = sn.Session(AGENT, llm=endpoint(MODEL), **SESSION)
        runs, answers = [], []
        for recorded in RUNS:
            run, answer = replay_run(session, recorded)
            runs.append(run)
            answers.append(answer)
        tree = [[node.id, node.status] for node in session.tree.walk()]
        for run in runs:
            if not run.done:  # left paused, as recorded
                run.cancel()
                run.wait(timeout=WAIT)
    for handler in routes.values():
        if isinstance(handler, Replies) and handler.given < len(handler.replies):
            problems.append(
                f"node {handler.path!r} used {handler.given} of its "
                f"{len(handler.replies)} recorded replies"
            )
    results: dict[str, list[list[str]]] = {}
    for event in session.events:
        if event.type == "tool_call_finished":
            results.setdefault(event.path, []).append(
                [event.call_id, event.name, event.status, event.result]
            )
    return {
        "problems": problems,
        "answers": answers,
        "tree": tree,
        "tool_results": {path: sorted(calls) for path, calls in results.items()},
    }


@pytest.fixture(scope="module")
def replayed() -> dict[str, Any]:
    return replay()


def test_every_node_got_the_replies_it_had(replayed: dict[str, Any]) -> None:
    assert replayed["problems"] == []


def test_each_run_answers_as_recorded(replayed: dict[str, Any]) -> None:
    recorded = [{"status": run["status"], "answer": run["answer"]} for run in RUNS]
    assert replayed["answers"] == recorded


def test_the_tree_is_as_recorded(replayed: dict[str, Any]) -> None:
    assert replayed["tree"] == TREE


def test_tool_results(replayed: dict[str, Any]) -> None:
    assert replayed["tool_results"] == TOOL_RESULTS
''')
