"""What a session's events say to replay for `session.to_test`: messages, decisions, replies."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.caller import path_matches
from .._base.errors import ConfigurationError
from .._base.messages import Message
from ..events import (
    ErrorOccurred,
    MessagePreprocessed,
    ModelRequest,
    ModelResponse,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    TaskSpawned,
    ToolCallFinished,
    ToolCallStarted,
)

if TYPE_CHECKING:
    from .agent import Agent
    from .session import Session

RESUMED_TO_THE_END = "resumed to the end"
"""The reason `run.resume()` gives the other pending pauses it approves (`Run._decide_on_loop`)."""


@dataclass
class Segment:
    """The actions of a run between one `approve` decision and the next: what they show of
    the mode the decision set (`approve`: pause where configured, `step`: before everything,
    `resume`: nowhere), which the events do not name."""

    decision: dict[str, Any] | None
    """The decision that began it (None: the run's start, in the normal mode)."""
    paused_unasked: str | None = None
    """A pause where neither the run's nor the agent's `pause_on` asks for one."""
    paused: bool = False
    unpaused: bool = False
    unpaused_asked: str | None = None
    """An action that went ahead unpaused although `pause_on` asks to pause before it."""
    resumed_others: bool = False
    """Its decision approved the other pending pauses: `run.resume()`."""

    def mode(self) -> str | None:
        """The first mode that explains what happened, or None if none does."""
        if self.resumed_others:
            return "resume" if not self.paused else None
        if self.paused_unasked is None and self.unpaused_asked is None:
            return "approve"
        if not self.unpaused:
            return "step"
        return "resume" if not self.paused else None


@dataclass
class RunRecord:
    number: int
    message: str | None
    pause_on: list[str]
    breakpoints: list[dict[str, Any]] = field(default_factory=list)
    """Its `sn.when(...)` and callable breakpoints as stored (`breakpoints.stored`)."""
    pauses: list[dict[str, Any]] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    status: str | None = None
    answer: str | None = None
    cancelled_at_pause: bool = False


class Recording:
    """What a session's events say to replay: each run's message, `pause_on` and decisions,
    each node's replies, and how it all ended."""

    def __init__(self, session: Session, agent: Agent) -> None:
        self.session = session
        self.pause_on, self.tests = _pause_on_by_name(agent)
        self.runs: dict[int, RunRecord] = {}
        self.replies: dict[str, list[dict[str, Any]]] = {}
        self.agents: dict[str, str] = {}
        """Each node's agent name, by path."""
        self.results: dict[str, list[list[str]]] = {}
        """Each node's tool calls' results: call id, tool name, status, result."""
        self._llm_text: dict[int, str | None] = {}
        self._open: dict[tuple[int, int], dict[str, Any]] = {}
        self._model_gates: dict[str, list[dict[str, Any] | None]] = {}
        """Per node, the model pauses let through whose request is still to come (the edit's
        entry, or None for an approval)."""
        self._gate: dict[str, dict[str, Any] | None] = {}
        self._request: dict[str, ModelRequest] = {}
        """Each node's request still waiting for its reply."""
        self._gated_calls: dict[tuple[str, str | None], dict[str, Any] | None] = {}
        self._root_model: str | None = None
        """The model the top agent's first request named."""

    def data(self) -> dict[str, Any]:
        """The test file's constants."""
        session = self.session
        busy = [r for r in session.runs if r.status in ("queued", "running")]
        if busy:
            raise ConfigurationError(
                f"run {busy[0].number} is {busy[0].status}; wait for it (run.wait()) and decide "
                "its pauses, then call to_test"
            )
        for event in session.events:
            self._read(event)
        if not self.runs:
            raise ConfigurationError(
                "this session has no runs to replay; send a message (and step through it) "
                "before session.to_test(...)"
            )
        runs = [self._finished(record) for record in self.runs.values()]
        plain = sorted(self.replies, key=lambda p: any(c in p for c in "*?"))  # globs last
        model = session.llm.model
        if session.agent.model is None and self._root_model is not None:
            model = self._root_model  # the endpoint's as recorded (a reopened one may differ)
        return {
            "MODEL": model,
            "SESSION": {
                "max_depth": session.max_depth,
                "max_parallel": session.max_parallel,
                "reattach": session.reattach,
                "max_model_calls": session.max_model_calls,
                "max_nodes": session.max_nodes,
                "max_tokens": session.max_tokens,
            },
            "RUNS": runs,
            "REPLIES": {path: self.replies[path] for path in plain},
            "TREE": [[node.id, node.status] for node in session.tree.walk()],
            "TOOL_RESULTS": {path: sorted(calls) for path, calls in self.results.items()},
        }

    # reading the log

    def _read(self, event: Any) -> None:
        if isinstance(event, MessagePreprocessed):
            self._llm_text[event.run] = event.llm.content
        elif isinstance(event, RunStarted):
            self._started(event)
        elif event.run not in self.runs:
            return
        elif isinstance(event, TaskSpawned):
            self.agents[event.child] = event.agent
        elif isinstance(event, Paused):
            self._paused(event)
        elif isinstance(event, Resumed):
            self._resumed(event)
        elif isinstance(event, ModelRequest):
            self._requested(event)
        elif isinstance(event, ModelResponse):
            self._responded(event)
        elif isinstance(event, ToolCallStarted):
            self._call_started(event)
        elif isinstance(event, ToolCallFinished):
            result = [event.call_id, event.name, event.status, event.result]
            self.results.setdefault(event.path, []).append(result)
        elif isinstance(event, ErrorOccurred) and event.path in self._request:
            request = self._request[event.path]
            raise ConfigurationError(
                f"node {event.path!r}'s model request (turn {request.turn}) got no reply "
                f"({event.error_type}: {event.message}); to_test replays replies only, so "
                "record the session again once the endpoint answers"
            )
        elif isinstance(event, RunFinished):
            record = self.runs[event.run]
            record.status, record.answer = event.status, event.text

    def _started(self, event: RunStarted) -> None:
        if event.run in self.runs:
            raise ConfigurationError(
                f"run {event.run} was cut short and resumed (session.resume() after a reopen or "
                "a fork); to_test replays runs that ran in one go: record the session again"
            )
        message = self._llm_text.get(event.run, event.input)
        record = RunRecord(event.run, message, list(event.pause_on), list(event.breakpoints))
        record.segments.append(Segment(None))
        self.runs[event.run] = record
        self.agents[event.path] = event.agent

    def _asked(self, record: RunRecord, path: str, action: str, name: str | None) -> bool:
        """Whether the run's or the node's agent's `pause_on` surely asks to pause before
        `action`: an action name, or an `sn.when(...)` without code whose fields match."""
        agent = self.agents.get(path, "")
        if action in record.pause_on or action in self.pause_on.get(agent, ()):
            return True
        return any(
            not row["code"] and _fields_match(row, path, action, name) for row in record.breakpoints
        )

    def _may_pause(self, record: RunRecord, path: str, action: str, name: str | None) -> bool:
        """Whether `pause_on` may ask to pause there: it surely does, or a breakpoint with code
        (the run's, whose fields match, or one of the agent's) may have."""
        if self._asked(record, path, action, name):
            return True
        if self.tests.get(self.agents.get(path, ""), False):
            return True
        return any(
            row["code"] and _fields_match(row, path, action, name) for row in record.breakpoints
        )

    def _paused(self, event: Paused) -> None:
        record = self.runs[event.run]
        entry = {
            "at": {
                "path": event.path,
                "action": event.action,
                "name": event.name,
                "call_id": event.call_id,
                "arguments": event.arguments,
            },
            "decision": "leave",
        }
        self._open[(event.run, event.pause_id)] = entry
        segment = record.segments[-1]
        segment.paused = True
        if segment.paused_unasked is None and not self._may_pause(
            record, event.path, event.action, event.name
        ):
            segment.paused_unasked = f"a pause before {event.action} at {event.path}"

    def _resumed(self, event: Resumed) -> None:
        record = self.runs[event.run]
        entry = self._open.pop((event.run, event.pause_id), None)
        if entry is None:
            return
        at, decision = entry["at"], event.decision
        if decision == "cancelled":
            if not record.cancelled_at_pause:  # one cancel ends every pending pause
                record.cancelled_at_pause = True
                entry["decision"] = "cancel"
                record.pauses.append(entry)
            return
        if decision == "approve" and event.reason == RESUMED_TO_THE_END:
            record.segments[-1].resumed_others = True
        else:
            entry["decision"] = decision
            record.pauses.append(entry)
            if decision == "reject":
                entry["reason"] = event.reason
            elif decision == "edit":
                # a child's answer replaced: what the parent read instead, as the edit stored it
                entry["edit"] = dict(event.changes or {}) if at["action"] == "reply" else None
            elif decision == "approve":
                record.segments.append(Segment(entry))
        if decision == "reject" or at["action"] == "reply":
            return
        gate = entry if decision == "edit" else None
        if at["action"] == "model":
            self._model_gates.setdefault(at["path"], []).append(gate)
        else:
            self._gated_calls[(at["path"], at["call_id"])] = gate

    def _unpaused(self, event: Any, action: str, name: str | None = None) -> None:
        record = self.runs[event.run]
        segment = record.segments[-1]
        segment.unpaused = True
        if segment.unpaused_asked is None and self._asked(record, event.path, action, name):
            segment.unpaused_asked = f"no pause before {action} at {event.path}"

    def _requested(self, event: ModelRequest) -> None:
        waiting = self._request.get(event.path)
        if waiting is not None:
            raise ConfigurationError(
                f"node {event.path!r}'s model request (turn {waiting.turn}) got no reply; "
                "to_test replays replies only, so record the session again"
            )
        self._request[event.path] = event
        if self._root_model is None and event.path == self.session.root.path:
            self._root_model = event.model
        gates = self._model_gates.get(event.path)
        if gates:
            self._gate[event.path] = gates.pop(0)
        else:
            self._gate[event.path] = None
            self._unpaused(event, "model")

    def _responded(self, event: ModelResponse) -> None:
        if event.truncated:
            raise ConfigurationError(
                f"node {event.path!r}'s reply at turn {event.turn} was cut short (its stream "
                "ended early); to_test replays whole replies only, so record the session again"
            )
        request = self._request.pop(event.path, None)
        edit = self._gate.pop(event.path, None)
        # an edit's reply is no endpoint's: it reports neither usage nor why it finished
        if edit is not None and event.usage is None and event.finish_reason is None:
            edit["edit"] = {"reply": _message(event.message)}
            return
        if edit is not None and request is not None:
            edit["edit"] = {"messages": [_message(m) for m in request.messages]}
        message = event.message
        self.replies.setdefault(event.path, []).append(
            {
                "text": message.content,
                "tool_calls": [
                    {"id": call.id, "name": call.name, "arguments": call.arguments}
                    for call in message.tool_calls or ()
                ],
                "usage": event.usage.model_dump() if event.usage is not None else None,
            }
        )

    def _call_started(self, event: ToolCallStarted) -> None:
        key = (event.path, event.call_id)
        if key not in self._gated_calls:
            self._unpaused(event, "task" if event.name == "task" else "tool", event.name)
            return
        edit = self._gated_calls.pop(key)
        if edit is not None:
            try:
                arguments: Any = json.loads(event.arguments)
            except ValueError:
                arguments = event.arguments
            edit["edit"] = {"arguments": arguments}

    # how each run ended

    def _finished(self, record: RunRecord) -> dict[str, Any]:
        number = record.number
        for segment in record.segments:
            mode = segment.mode() if segment.decision is not None else _start_mode(segment)
            if mode is None:
                what = segment.paused_unasked or segment.unpaused_asked
                after = "its start" if segment.decision is None else str(segment.decision["at"])
                raise ConfigurationError(
                    f"run {number}: {what}, after {after}, is what neither pause_on (the run's "
                    "and the agents') nor a decision (approve, step, resume) would do; was "
                    "pause_on changed since, or step() called while it ran? Record it again"
                )
            if segment.decision is not None:
                segment.decision["decision"] = mode
        live = next((r for r in self.session.runs if r.number == number), None)
        open_pauses = [e for (run, _), e in self._open.items() if run == number]
        if record.status is None:
            if live is None or live.status != "paused":
                raise ConfigurationError(
                    f"run {number} did not finish (it was cut short); resume it "
                    "(session.resume()) to its end, then call to_test"
                )
            record.pauses.extend(open_pauses)
            record.status = "paused"
        elif record.status == "cancelled" and not record.cancelled_at_pause:
            raise ConfigurationError(
                f"run {number} was cancelled while it ran, a moment a replay cannot find; "
                "to_test replays cancels made at a pause"
            )
        return {
            "message": record.message,
            "pause_on": record.pause_on,
            "breakpoints": record.breakpoints,
            "pauses": record.pauses,
            "status": record.status,
            "answer": record.answer,
        }


def _start_mode(segment: Segment) -> str | None:
    """A run starts in the normal mode: its first actions pause only where asked."""
    if segment.paused_unasked is not None or segment.unpaused_asked is not None:
        return None
    return "approve"


def _pause_on_by_name(agent: Agent) -> tuple[dict[str, set[str]], dict[str, bool]]:
    """Each agent's own `pause_on` actions in the tree under `agent`, by name, and whether
    it has breakpoints beside them (`sn.when(...)`, callables: the replay runs them too)."""
    found: dict[str, set[str]] = {}
    tests: dict[str, bool] = {}
    todo = [agent]
    while todo:
        current = todo.pop()
        if current.name in found:
            continue
        found[current.name] = {item for item in current.pause_on if isinstance(item, str)}
        tests[current.name] = bool(current.pause_tests)
        todo.extend(current.members())
    return found, tests


def _fields_match(row: dict[str, Any], path: str, action: str, name: str | None) -> bool:
    """Whether a stored breakpoint's declarative fields match an action (as `When` does)."""
    if row["action"] is not None and row["action"] != action:
        return False
    if row["tool"] is not None and (action not in ("tool", "task") or name != row["tool"]):
        return False
    return row["path"] is None or path_matches(row["path"], path)


def _message(message: Message) -> dict[str, Any]:
    data = message.model_dump(mode="json", exclude_none=True)
    if not data.get("meta"):
        data.pop("meta", None)
    return data
