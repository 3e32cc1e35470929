"""The Decisions tab, the transcript's mark on an edited call, and the static timeline: the
decision log (`_decisions.DecisionLog`) as the front end and exported notebooks show it."""

from __future__ import annotations

import json
from typing import Any

from .._base.messages import Message
from ._decisions import SHOWN, DecisionEntry, DecisionLog
from ._render import ROWS, clip


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def arguments_diff(before: dict[str, Any], after: dict[str, Any] | str) -> list[list[str]]:
    """`[key, change, before, after]` for each argument an edit added, removed or changed
    (values as JSON); an edit to arguments that are not a JSON object is one `replaced` row."""
    if not isinstance(after, dict):
        return [["(all)", "replaced", clip(_dumps(before), 2000), clip(after, 2000)]]
    rows = []
    for key in [*before, *(k for k in after if k not in before)]:
        if key not in after:
            rows.append([key, "removed", clip(_dumps(before[key]), 2000), ""])
        elif key not in before:
            rows.append([key, "added", "", clip(_dumps(after[key]), 2000)])
        elif before[key] != after[key]:
            old, new = _dumps(before[key]), _dumps(after[key])
            rows.append([key, "changed", clip(old, 2000), clip(new, 2000)])
    return rows


def messages_diff(before: list[Message], after: list[Message]) -> list[list[str]]:
    """`[message, change, before, after]` for each message an edit of a model request changed,
    added or removed, by position (`#2`)."""
    rows = []
    for at in range(max(len(before), len(after))):
        old = before[at] if at < len(before) else None
        new = after[at] if at < len(after) else None
        if old is not None and new is not None and _message_text(old) == _message_text(new):
            continue
        change = "added" if old is None else "removed" if new is None else "changed"
        rows.append(
            [
                f"#{at + 1}",
                change,
                "" if old is None else clip(_message_text(old), 2000),
                "" if new is None else clip(_message_text(new), 2000),
            ]
        )
    return rows


def _message_text(message: Message) -> str:
    calls = "".join(f"\n→ {c.name}({c.arguments})" for c in message.tool_calls or ())
    return f"{message.role}: {message.content or ''}{calls}"


def what(entry: DecisionEntry) -> str:
    """The paused action in words."""
    if entry.action == "model":
        return f"model request from {entry.path}"
    return f"{entry.action} call {entry.name} from {entry.path}"


def entry_state(entry: DecisionEntry) -> dict[str, Any]:
    """One timeline entry for the front end (every text clipped; lit-html escapes it)."""
    state: dict[str, Any] = {
        "pause_id": entry.pause_id,
        "run": entry.run,
        "seq": entry.seq,
        "path": entry.path,
        "action": entry.action,
        "what": clip(what(entry), 1000),
        "decision": SHOWN.get(entry.decision, entry.decision),
        "reason": None if entry.reason is None else clip(entry.reason, 2000),
        "arguments": None,
        "edited": None,
        "diff": [],
        "reply": None if entry.reply is None else clip(entry.reply),
        "messages_diff": None,
    }
    if entry.sent is not None:
        state["messages_diff"] = messages_diff(entry.proposed or [], entry.sent)
    if entry.arguments is not None:
        state["arguments"] = clip(
            json.dumps(entry.arguments, indent=1, ensure_ascii=False, default=str), 8000
        )
    if entry.edited is not None:
        edited = entry.edited
        text = (
            edited
            if isinstance(edited, str)
            else json.dumps(edited, indent=1, ensure_ascii=False, default=str)
        )
        state["edited"] = clip(text, 8000)
        state["diff"] = arguments_diff(entry.arguments or {}, edited)
    return state


def decisions_pane(log: DecisionLog) -> dict[str, Any]:
    """The Decisions tab: the newest pauses of the whole session and how each ended."""
    entries = log.entries
    return {
        "decisions": [entry_state(entry) for entry in entries[-ROWS:]],
        "earlier": max(0, len(entries) - ROWS),
    }


def transcript_decision(log: DecisionLog, call_id: str) -> dict[str, Any] | None:
    """What was decided at the pause before a tool call, for its transcript line (an edit
    with its diff: the model's arguments against those the call ran with)."""
    entry = log.by_call.get(call_id)
    if entry is None:
        return None
    state = entry_state(entry)
    return {key: state[key] for key in ("decision", "reason", "arguments", "edited", "diff")}


def decision_lines(log: DecisionLog) -> list[str]:
    """The timeline as plain text lines (for the static rendering)."""
    lines = []
    for entry in log.entries:
        line = f"run {entry.run} · event {entry.seq} · {what(entry)}: "
        line += SHOWN.get(entry.decision, entry.decision)
        if entry.reason:
            line += f" ({entry.reason})"
        if entry.edited is not None:
            changes = arguments_diff(entry.arguments or {}, entry.edited)
            line += " · " + "; ".join(_change(row) for row in changes)
        elif entry.arguments is not None:
            line += f" · arguments {clip(_dumps(entry.arguments), 1000)}"
        if entry.reply is not None:
            line += f" · reply used: {entry.reply}"
        if entry.sent is not None:
            rows = messages_diff(entry.proposed or [], entry.sent)
            line += " · messages sent instead: " + (
                "; ".join(f"{row[0]} {row[1]}" for row in rows) or "the same"
            )
        lines.append(clip(line, 4000))
    return lines


def _change(row: list[str]) -> str:
    key, change, before, after = row
    if change == "added":
        return f"{key} added: {after}"
    if change == "removed":
        return f"{key} removed (was {before})"
    return f"{key}: {before} → {after}"
