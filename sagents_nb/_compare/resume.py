"""Picking a sweep up where it left off: each (item, variant) run is a stored session with an id
made from its identity, so a re-run with the same store finds the runs that finished."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._runtime.restore import stored_events
from ..events import RunFinished
from .record import FINAL, RunRecord

if TYPE_CHECKING:
    from .._store.protocol import Store
    from .items import Item


def run_id(item: Item, variant: str) -> str:
    """The session id of the first attempt at (item, variant): the variant's name and a digest
    of the variant, the item's id and its prompts (`-2`, `-3`... for later attempts)."""
    identity = json.dumps([variant, repr(item.id), item.prompts], ensure_ascii=False)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9_.]+", "_", variant)[:24].strip("_") or "variant"
    return f"sweep-{slug}-{digest}"


def attempt_id(base: str, attempt: int) -> str:
    """The session id of attempt number `attempt` (from 1)."""
    return base if attempt == 1 else f"{base}-{attempt}"


@dataclass
class Previous:
    """What a store holds of one run: its attempts, and the last one's record if it finished."""

    attempts: int
    finished: RunRecord | None


def previous_runs(store: Store, wanted: dict[str, tuple[Item, str]]) -> dict[str, Previous]:
    """For each base id in `wanted` (-> its item and variant), what the store holds."""
    ids = {s.id for s in store.sessions()}
    found: dict[str, Previous] = {}
    for base, (item, variant) in wanted.items():
        attempts = 0
        while attempt_id(base, attempts + 1) in ids:
            attempts += 1
        if not attempts:
            continue
        last = attempt_id(base, attempts)
        found[base] = Previous(attempts, _finished(store, last, item, variant, attempts))
    return found


def _finished(
    store: Store, session_id: str, item: Item, variant: str, attempts: int
) -> RunRecord | None:
    """The record of a stored run that ended for good (every prompt answered, not an error)."""
    events = stored_events(store.load(session_id))
    ends = [e for e in events if isinstance(e, RunFinished)]
    if len(ends) != len(item.prompts) or ends[-1].status not in FINAL:
        return None
    record = RunRecord(
        item.id,
        variant,
        item.prompts,
        ends[-1].status,
        answer=ends[-1].text,
        seconds=events[-1].ts - events[0].ts if events else 0.0,
        session_id=session_id,
        attempts=attempts,
        reused=True,
        meta=dict(item.meta),
    )
    record.events = list(events)
    return record
