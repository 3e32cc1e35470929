"""Pages of a pane's long lists (transcript, events, tool calls, compaction, wire), and the
context chart cut down to a bounded number of points and markers, over a zoomable range."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

Item = TypeVar("Item")

PAGE = 100
"""Rows one page of a list holds."""
CHART_POINTS = 240
"""Points the context chart draws at most; a longer range is merged into buckets of turns."""
CHART_MARKERS = 60
"""Markers the chart draws at most across its range, all types together (each type that occurs
there an equal share): denser ones merge, so a sink at every turn stays a row of separate lines,
not a solid block."""


def page_of(
    items: Sequence[Item], start: int | None, size: int = PAGE
) -> tuple[Sequence[Item], dict[str, Any]]:
    """The page of `items` beginning at `start` (None: the newest page, following new rows),
    and what the front end's pager shows: where it starts, how many there are, page size."""
    total = len(items)
    if start is None or start < 0:
        first = max(0, total - size)
    else:
        first = min(start, max(0, total - size))
    rows = items[first : first + size]
    info = {"start": first, "total": total, "size": size, "following": start is None}
    return rows, info


def zoom_range(count: int, zoom: tuple[int, int] | None) -> tuple[int, int]:
    """The turn indices `[first, last]` the chart shows: the zoomed range, clamped, or all."""
    if count == 0:
        return 0, -1
    if zoom is None:
        return 0, count - 1
    first = max(0, min(zoom[0], count - 1))
    last = max(first, min(zoom[1], count - 1))
    return first, last


def buckets(first: int, last: int, points: int = CHART_POINTS) -> list[tuple[int, int]]:
    """`[first, last]` cut into at most `points` consecutive `(start, end)` index ranges."""
    count = last - first + 1
    if count <= 0:
        return []
    if count <= points:
        return [(i, i) for i in range(first, last + 1)]
    edges = [first + (count * k) // points for k in range(points + 1)]
    return [(edges[k], edges[k + 1] - 1) for k in range(points)]


def merged_markers(
    markers: Sequence[dict[str, Any]], first: int, last: int, size: int
) -> list[dict[str, Any]]:
    """Chart markers in the turn range `[first, last]` (a marker's `at` counts the turns done
    when it happened), merged per type when they fall within `size` turns of each other: one
    marker per type and bucket, counting what it stands for."""
    width = max(1, size)
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for mark in markers:
        at = mark["at"]
        if not first <= at <= last + 1:
            continue
        key = (mark["type"], (at - first) // width)
        kept = merged.get(key)
        if kept is None:
            merged[key] = {**mark, "count": 1}
        else:
            kept["count"] += 1
            kept["last_seq"] = mark["seq"]
    return sorted(merged.values(), key=lambda m: (m["at"], m["seq"]))
