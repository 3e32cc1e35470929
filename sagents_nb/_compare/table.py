"""The comparison table: one row per (item, variant), counted from the run's events."""

from __future__ import annotations

import html
import unicodedata
from collections import Counter
from typing import Any

from ..events import ContextBuilt, RunFinished
from .record import RunRecord

COLUMNS = (
    "item",
    "variant",
    "status",
    "answer",
    "turns",
    "model_calls",
    "tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "compactions",
    "sinks",
    "trims",
    "context_full",
    "peak_context",
    "error",
    "session_id",
)
"""`sinks`: cold sinks of a relevance view; `trims`: window trims; `peak_context`: the largest
view (tokens) any node sent."""


def row(record: RunRecord) -> dict[str, Any]:
    """The table row of one run."""
    counts: Counter[str] = Counter()
    turns = prompt = completion = peak = 0
    for event in record.events:
        counts[event.type] += 1
        if isinstance(event, RunFinished):
            turns += event.turns
            prompt += event.usage.prompt_tokens
            completion += event.usage.completion_tokens
        elif isinstance(event, ContextBuilt):
            peak = max(peak, event.view_tokens)
    return {
        "item": record.item,
        "variant": record.variant,
        "status": record.status,
        "answer": record.answer,
        "turns": turns,
        "model_calls": counts["model_response"],
        "tool_calls": counts["tool_call_finished"],
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "seconds": round(record.seconds, 3),
        "compactions": counts["compaction"],
        "sinks": counts["cold_sink"],
        "trims": counts["window_trim"],
        "context_full": counts["context_full"],
        "peak_context": peak,
        "error": record.error,
        "session_id": record.session_id,
    }


def shown_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The columns worth showing: `item` only when there are several, `error` and
    `session_id` only when some row has one."""
    columns = list(COLUMNS)
    if len({r["item"] for r in rows}) <= 1:
        columns.remove("item")
    for optional in ("error", "session_id"):
        if all(r[optional] is None for r in rows):
            columns.remove(optional)
    return columns


def _cell(value: Any, width: int = 40) -> str:
    text = "" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _width(text: str) -> int:
    """Columns a text takes in a terminal: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _line(values: list[str], widths: list[int]) -> str:
    padded = (v + " " * (w - _width(v)) for v, w in zip(values, widths, strict=True))
    return "  ".join(padded).rstrip()


def text_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned plain-text table."""
    columns = shown_columns(rows)
    cells = [[_cell(r[c]) for c in columns] for r in rows]
    widths = [max([len(c), *(_width(line[i]) for line in cells)]) for i, c in enumerate(columns)]
    return "\n".join([_line(columns, widths), *(_line(line, widths) for line in cells)])


def html_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an escaped HTML table (model text is untrusted)."""
    columns = shown_columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td title="{html.escape(str(r[c]) if r[c] is not None else "")}">'
            f"{html.escape(_cell(r[c]))}</td>"
            for c in columns
        )
        + "</tr>"
        for r in rows
    )
    return f'<table class="sn-compare"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
