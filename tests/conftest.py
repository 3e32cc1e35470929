"""Shared test helpers: tools and mock endpoints used across the suite."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys

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


ISOLATED = "SAGENTS_ISOLATED_CASE"
"""Set to a case's node id in the process that runs it on its own (see `isolated`)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "isolated(seconds=60): run the case (a test function with all its parameters) in a "
        "process of its own and its own process group, ended after `seconds`, so a case that "
        "hangs or kills its process fails alone",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(ISOLATED):
        return
    outcomes: dict[str, tuple[int, str]] = {}
    for item in items:
        marker = item.get_closest_marker("isolated")
        if marker is not None and isinstance(item, pytest.Function):
            seconds = float(marker.kwargs.get("seconds", marker.args[0] if marker.args else 60))
            item.runtest = functools.partial(_run_isolated, item, seconds, outcomes)  # type: ignore[method-assign]


def _run_isolated(
    item: pytest.Function, seconds: float, outcomes: dict[str, tuple[int, str]]
) -> None:
    """Run `item`'s test function (every parameter of it, once) in a new pytest process; fail
    with its output if it fails or outlives `seconds` (its whole process group is then
    killed)."""
    case = item.nodeid.split("[", 1)[0]
    if case not in outcomes:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", case]
        child = subprocess.Popen(
            command,
            cwd=item.config.rootpath,
            env={**os.environ, ISOLATED: case},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            outcomes[case] = (child.returncode, child.communicate(timeout=seconds)[0])
            outcomes[case] = (child.returncode, outcomes[case][1])
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            outcomes[case] = (-1, child.communicate()[0])
    code, output = outcomes[case]
    if code == -1:
        pytest.fail(
            f"{case} did not end within {seconds:g} s in its own process:\n{output[-3000:]}"
        )
    if code != 0:
        pytest.fail(f"{case} failed in its own process (exit {code}):\n{output[-3000:]}")
