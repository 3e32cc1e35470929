"""Recognising an endpoint's "the request is longer than my context window" answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._base.errors import EndpointError, LLMError

WORDINGS = (
    "context_length_exceeded",  # OpenAI's error code (also Groq, DeepSeek, Azure)
    "maximum context length",  # OpenAI's and vLLM's message, OpenRouter, Mistral
    "prompt is too long",  # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    "is too long to fit into the model",  # vLLM: "The prompt (total length N) is too long..."
    "exceeds the available context size",  # llama.cpp's server
    "exceed_context_size_error",  # llama.cpp's error type
    "exceeds the context length",  # Ollama: "the input length exceeds the context length"
    "context length exceeded",
    "context window exceeded",
)
"""How servers say a request does not fit their context window (matched case-insensitively)."""

_WINDOW = (
    re.compile(r"maximum context length is (\d[\d,]*)"),
    re.compile(r"> ?(\d[\d,]*) maximum"),
    re.compile(r"available context size \((\d[\d,]*) tokens?\)"),
    re.compile(r"context length (?:of |is )?\(?(\d[\d,]*)\)?"),
    re.compile(r"(\d[\d,]*) maximum context length"),
)
"""Where each wording states the window's size in tokens."""


@dataclass(frozen=True)
class Overflow:
    """An endpoint refused a request as longer than its context window."""

    said: str
    """The endpoint's words (its error excerpt)."""
    window: int | None
    """The window's size in the endpoint's tokens, when it said."""


def context_overflow(error: LLMError) -> Overflow | None:
    """The overflow `error` reports, or None when it reports something else."""
    if not isinstance(error, EndpointError) or error.status not in (400, 413, 422):
        return None
    said = error.excerpt.lower()
    if not any(wording in said for wording in WORDINGS):
        return None
    for pattern in _WINDOW:
        found = pattern.search(said)
        if found:
            return Overflow(error.excerpt, int(found.group(1).replace(",", "")))
    return Overflow(error.excerpt, None)
