"""The real Claude Code CLI, when installed and signed in; skipped otherwise."""

from __future__ import annotations

import shutil

import pytest

from sagents_nb.harness import ClaudeCode, HarnessConfig, run_harness

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("claude") is None, reason="the claude CLI is not installed"),
]


async def test_claude_answers_a_one_word_prompt():
    outcome = await run_harness(
        ClaudeCode(),
        HarnessConfig("Reply with the single word: pong", extra_args=["--max-turns", "1"]),
    )
    assert outcome.status == "done", outcome.error
    assert "pong" in outcome.text.lower()
    assert outcome.usage.output_tokens > 0
