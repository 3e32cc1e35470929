"""Replies in a wire format other than chat completions (Anthropic Messages, OpenAI Responses), named."""

from __future__ import annotations

from typing import Any

from .._base.errors import MalformedReply

ANTHROPIC = "Anthropic Messages"
RESPONSES = "OpenAI Responses"
_ANTHROPIC_EVENTS = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)


def foreign_format(payload: dict[str, Any]) -> tuple[str, str] | None:
    """`(format, evidence)` when `payload` (a reply body, or one streamed event's data) is in
    another format than chat completions; None when it may be a chat completion."""
    if "choices" in payload:
        return None
    kind = payload.get("type")
    if kind in _ANTHROPIC_EVENTS or (kind == "message" and "content" in payload):
        return ANTHROPIC, f'"type": "{kind}"'
    if isinstance(kind, str) and kind.startswith("response."):
        return RESPONSES, f'"type": "{kind}"'
    if payload.get("object") == "response":
        return RESPONSES, '"object": "response"'
    return None


def foreign_reply(base_url: str, found: tuple[str, str], where: str) -> MalformedReply:
    """The error for a reply in another format: which one, and what to do."""
    name, evidence = found
    return MalformedReply(
        f"endpoint {base_url} speaks the {name} format, not OpenAI chat completions ({where} "
        f"holds {evidence}); sn.LLM speaks chat completions only: point base_url at an "
        "OpenAI-compatible chat-completions endpoint (the root that answers POST "
        ".../chat/completions, e.g. https://api.openai.com/v1, or a served mock's "
        "openai_base_url)",
        base_url=base_url,
    )
