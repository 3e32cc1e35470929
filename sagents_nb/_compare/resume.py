"""Picking a sweep up where it left off: each (item, variant) run is a stored session with an id
made from its identity, so a re-run with the same store finds the runs that finished, and
reuses one only when its stored fingerprint is the run's now."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._runtime.restore import stored_events
from ..events import RunFinished
from .fingerprint import PART, changed
from .record import FINAL, RunRecord

if TYPE_CHECKING:
    from .._store.protocol import SessionRows, Store
    from .items import Item


def run_id(item: Item, variant: str) -> str:
    """The session id of the first attempt at (item, variant): the variant's name and a digest
    of it and the item's id (`-2`, `-3`... for later attempts, and for runs of the same pair
    whose configuration or prompts changed)."""
    identity = json.dumps([variant, repr(item.id)], ensure_ascii=False)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9_.]+", "_", variant)[:24].strip("_") or "variant"
    return f"sweep-{slug}-{digest}"


def attempt_id(base: str, attempt: int) -> str:
    """The session id of attempt number `attempt` (from 1)."""
    return base if attempt == 1 else f"{base}-{attempt}"


@dataclass
class Previous:
    """What a store holds of one run: its attempts, the record of one to reuse, or why none."""

    attempts: int
    finished: RunRecord | None
    why: str | None = None
    """Why no stored attempt is reused: what changed since the latest, or how it ended."""


def previous_runs(
    store: Store, wanted: dict[str, tuple[Item, str, dict[str, str]]]
) -> dict[str, Previous]:
    """For each base id in `wanted` (-> its item, variant and fingerprint now), what the store
    holds: the latest attempt that ended for good with the same fingerprint is reused."""
    ids = {s.id for s in store.sessions()}
    found: dict[str, Previous] = {}
    for base, (item, variant, fingerprint) in wanted.items():
        attempts = 0
        while attempt_id(base, attempts + 1) in ids:
            attempts += 1
        if not attempts:
            continue
        why = None
        for attempt in range(attempts, 0, -1):
            rows = store.load(attempt_id(base, attempt))
            stored = _fingerprint(rows)
            differs = changed(stored, fingerprint) if stored is not None else None
            record = None if differs else _finished(rows, item, variant, attempts)
            if record is not None:
                found[base] = Previous(attempts, record)
                break
            if why is None:
                why = _why(rows, differs)
        else:
            found[base] = Previous(attempts, None, why)
    return found


def _fingerprint(rows: SessionRows) -> dict[str, str] | None:
    for row in rows.nodes:
        if row.part == PART:
            found = json.loads(row.body)
            return found if isinstance(found, dict) else None
    return None


def _why(rows: SessionRows, differs: list[str] | None) -> str:
    """Why a stored attempt is not reused."""
    if differs is None:
        return "stored without a fingerprint"
    if differs:
        return "changed: " + ", ".join(differs)
    ends = [e for e in stored_events(rows) if isinstance(e, RunFinished)]
    if ends and ends[-1].status not in FINAL:
        return f"the stored run ended in {ends[-1].status}"
    return "the stored run did not finish"


def _finished(rows: SessionRows, item: Item, variant: str, attempts: int) -> RunRecord | None:
    """The record of a stored run that ended for good (every prompt answered, not an error)."""
    events = stored_events(rows)
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
        session_id=rows.info.id,
        attempts=attempts,
        reused=True,
        meta=dict(item.meta),
    )
    record.events = list(events)
    return record
