"""The pauses a cut run left pending and the decisions it had made, read back from its stored
events, so that a reopened (or forked) run asks again about the one and never about the other."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.errors import ConfigurationError
from .pausing import Decision
from .pending import PendingAction

if TYPE_CHECKING:
    from .._store.protocol import EventRow

PauseKey = tuple[str, str, str | None]
"""(path, action, call id) of a pause; a model request has no call id: a model decision holds
until that node's next request is recorded."""


def pause_key(path: str, action: str, call_id: str | None) -> PauseKey:
    return (path, action, None if action == "model" else call_id)


@dataclass
class StoredPauses:
    """What the last run, unfinished, had pending and had decided (see `stored_pauses`)."""

    run: int
    pending: list[PendingAction] = field(default_factory=list)
    """Pauses no decision ended: `resume()` presents each again at its gate, whatever the
    breakpoints are now."""
    decided: dict[PauseKey, Decision] = field(default_factory=dict)
    """Decisions whose action had not been carried out when the run was cut: applied at the
    gate of the same call, never asked again."""
    mode: str = "normal"
    """The run's mode after its last decision (`step` or `free` survive a cut)."""
    until: list[dict[str, Any]] = field(default_factory=list)
    """The stored breakpoints of a `run.step(pause_on=...)` that had not fired yet."""
    next_id: int = 1
    """The next pause id of the run, so that the resumed run's ids follow its stored ones."""
    ahead: dict[PauseKey, tuple[Decision, str | None]] = field(default_factory=dict)
    """Decisions taken about pending pauses before `resume()` (a view's card of a stored
    pause): `resume()` presents each pause again, records it, and decides it so at once."""

    def decide_ahead(self, pause_id: int, decision: Decision, mode: str | None) -> PendingAction:
        """Decide the pending pause `pause_id` now, to be applied when `resume()` asks it again.

        Raises:
            ConfigurationError: no pending pause has that id (already decided ahead, or none).
        """
        pending = next((p for p in self.pending if p.id == pause_id), None)
        key = pause_key(pending.path, pending.action, pending.call_id) if pending else None
        if pending is None or key is None or key in self.ahead:
            raise ConfigurationError(
                f"stored pause {pause_id} is not waiting for a decision (it was decided "
                "already, or is not this session's); session.pending lists those waiting"
            )
        self.ahead[key] = (decision, mode)
        return pending


def stored_pauses(rows: Sequence[EventRow]) -> StoredPauses | None:
    """The pauses and decisions of the run the stored events end in, if it never finished.

    Read back to front through that run's rows (a run resumed before has all its parts under
    one number); only `paused` and `resumed` rows are parsed."""
    if not rows or rows[-1].type == "run_finished" or not rows[-1].run:
        return None
    number = rows[-1].run
    found = StoredPauses(number)
    decisions: dict[int, tuple[dict[str, Any], bool]] = {}
    requested: set[str] = set()  # nodes with a model request after the row being read
    later_pause = False
    asked: set[PauseKey] = set()  # pauses asked again after the row being read
    mode_known = False
    for row in reversed(rows):
        if row.run != number:
            break
        kind = row.type
        if kind == "model_request":
            requested.add(row.path)
        elif kind == "resumed":
            data = _body(row)
            decisions.setdefault(data["pause_id"], (data, row.path in requested))
            if not mode_known:
                mode_known = True
                found.mode = data.get("mode") or "normal"
                if not later_pause:
                    found.until = list(data.get("until") or ())
        elif kind == "paused":
            later_pause = True
            data = _body(row)
            pause_id = data["pause_id"]
            found.next_id = max(found.next_id, pause_id + 1)
            action, call_id = data["action"], data.get("call_id")
            key = pause_key(row.path, action, call_id)
            decided = decisions.pop(pause_id, None)
            if key in asked:  # a resume before asked this one again
                continue
            asked.add(key)
            if decided is None:
                found.pending.append(
                    PendingAction(
                        pause_id,
                        action,
                        row.path,
                        name=data.get("name"),
                        arguments=data.get("arguments"),
                        call_id=call_id,
                    )
                )
                continue
            resumed, carried_out = decided
            if resumed["decision"] in ("approve", "edit", "reject") and not (
                action == "model" and carried_out
            ):
                found.decided.setdefault(
                    key,
                    Decision.from_stored(
                        resumed["decision"], resumed.get("changes"), resumed.get("reason")
                    ),
                )
    found.pending.reverse()
    return found


def _body(row: EventRow) -> dict[str, Any]:
    body = row.body
    return dict(body) if isinstance(body, dict) else json.loads(body)
