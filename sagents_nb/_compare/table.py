"""The comparison table: one row per (item, variant), counted from the run's events."""

from __future__ import annotations

import html
import unicodedata
from typing import Any

from .._runtime.costs import priced
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
    "estimated_usd",
    "reported_usd",
    "cost",
    "compactions",
    "sinks",
    "trims",
    "context_full",
    "peak_context",
    "error",
    "session_id",
    "reused",
    "why",
)
"""`sinks`: cold sinks of a relevance view; `trims`: window trims; `peak_context`: the largest
view (tokens) any node sent; `estimated_usd`: the model calls at their prices (genai-prices,
or a variant's `prices=`), None when none was priced; `reported_usd`: what CLI children
reported; `cost`: both in words, with the prices' source and `no price` for a model no table
knows; `reused`: read back from the store; `why`: why a run stored under
the row's id was not (what changed since: `variant`, `agent tree`, `endpoint`, `prompt`; or how
it ended)."""


def row(record: RunRecord) -> dict[str, Any]:
    """The table row of one run."""
    counts = record.counts
    cost = priced([record.spent], record.prices)
    return {
        "item": record.item,
        "variant": record.variant,
        "status": record.status,
        "answer": record.answer,
        "turns": counts.get("turns", 0),
        "model_calls": counts.get("model_response", 0),
        "tool_calls": counts.get("tool_call_finished", 0),
        "prompt_tokens": counts.get("prompt_tokens", 0),
        "completion_tokens": counts.get("completion_tokens", 0),
        "seconds": round(record.seconds, 3),
        "estimated_usd": cost.estimated_usd,
        "reported_usd": cost.reported_usd,
        "cost": str(cost),
        "compactions": counts.get("compaction", 0),
        "sinks": counts.get("cold_sink", 0),
        "trims": counts.get("window_trim", 0),
        "context_full": counts.get("context_full", 0),
        "peak_context": counts.get("peak", 0),
        "error": record.error,
        "session_id": record.session_id,
        "reused": record.reused,
        "why": record.why,
    }


def shown_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The columns worth showing: `item` only when there are several, `error`, `session_id`
    and `why` only when some row has one, `reused` when some row was or has a `why`."""
    columns = list(COLUMNS)
    if len({r["item"] for r in rows}) <= 1:
        columns.remove("item")
    for optional in ("error", "session_id", "why", "reported_usd"):
        if all(r[optional] is None for r in rows):
            columns.remove(optional)
    if not any(r["reused"] or r["why"] for r in rows):
        columns.remove("reused")
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


TEXT_COLUMNS = frozenset({"answer", "error", "why"})
"""Columns of text, which the HTML table wraps instead of cutting at a figure's width."""
TEXT_CELL = 600
"""Characters of a text cell the HTML table shows (the whole text is in its title)."""


def html_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an escaped HTML table (model text is untrusted); text cells wrap."""
    columns = shown_columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td title="{html.escape(str(r[c]) if r[c] is not None else "")}"'
            + (' style="min-width:16em;text-align:left">' if c in TEXT_COLUMNS else ">")
            + f"{html.escape(_cell(r[c], TEXT_CELL if c in TEXT_COLUMNS else 40))}</td>"
            for c in columns
        )
        + "</tr>"
        for r in rows
    )
    return f'<table class="sn-compare"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
