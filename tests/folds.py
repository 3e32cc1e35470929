"""The package's event folds, and the table of event classes by consumer that shows their gaps
(`tests/test_event_folds.py`, `tests/test_event_registry.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sagents_nb._compare import forgetting, record
from sagents_nb._runtime import restore, trace
from sagents_nb.events import Event, Fold
from sagents_nb.notebook import _projector, _timings
from sagents_nb.otel import _spans

FOLDS: tuple[Fold[Any], ...] = (
    _projector.FOLD,
    _timings.FOLD,
    trace.LINES,
    restore.SCAN,
    restore.DECODE,
    forgetting.AGENTS,
    forgetting.TURNS,
    record.COUNTS,
    _spans.FOLD,
)
"""Every consumer in the package that folds events (a new one goes here)."""

HANDLED, IGNORED, GAP, UNREAD = "✓", "·", "✗", ""
LEGEND = (
    f"{HANDLED} handled   {IGNORED} ignored on purpose (the fold's `ignores`)   {GAP} a gap: "
    "the consumer sees every event and neither handles nor ignores this one   blank: not read "
    "(the consumer reads only the events it names)"
)


def cell(fold: Fold[Any], cls: type[Event]) -> str:
    """What `fold` does with event class `cls`, as a mark of the table."""
    if fold.handler(cls) is not None:
        return HANDLED
    if fold.ignored(cls):
        return IGNORED
    return GAP if fold.sees_all else UNREAD


def gaps(classes: Iterable[type[Event]], folds: Iterable[Fold[Any]] = FOLDS) -> list[str]:
    """Each gap of the table, said in words: a consumer that sees every event and does not
    know about one, or an event that no consumer handles."""
    folds = list(folds)
    found = []
    for cls in classes:
        marks = {fold.consumer: cell(fold, cls) for fold in folds}
        found += [f"{consumer}: {cls.__name__}" for consumer, m in marks.items() if m == GAP]
        if HANDLED not in marks.values():
            found.append(f"no consumer handles {cls.__name__}")
    return found


def matrix(classes: Iterable[type[Event]], folds: Iterable[Fold[Any]] = FOLDS) -> str:
    """The table of event classes (rows) by consumer (columns), with its legend."""
    folds = list(folds)
    rows = [["event class", *(fold.consumer for fold in folds)]]
    rows += [[cls.__name__, *(cell(fold, cls) for fold in folds)] for cls in classes]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            text.ljust(width) if i == 0 else text.center(width)
            for i, (text, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    return "\n".join([*lines, "", LEGEND])
