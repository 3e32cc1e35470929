"""Shared test helpers: tools and mock endpoints used across the suite."""

from __future__ import annotations

import os

import pytest

import sagents_nb as sn

from .postgres_support import postgres_server  # noqa: F401  (a fixture for every test module)

os.environ.pop("OPENAI_API_KEY", None)
os.environ.pop("OPENAI_BASE_URL", None)


@sn.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


@pytest.fixture
def calc_agent() -> sn.Agent:
    return sn.Agent("calc", does="adds numbers", instructions="You add.", tools=[add])
