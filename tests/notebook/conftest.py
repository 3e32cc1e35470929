"""Fixtures for the notebook tests: agents on the mock endpoint, JupyterLab and a real browser."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from benchmarks._browser import Lab, chromium, jupyter_lab, missing_browser
from sagents_nb._base import prices

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
XSS = "<img src=x onerror=window.__xss=1> <script>window.__xss=2</script>"


def wait_until(check: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """Poll `check` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


@sn.tool
def read_file(path: str) -> str:
    """Read a (pretend) file.

    Args:
        path: which file.
    """
    return {"README.md": "# demo project"}.get(path, "no such file")


def delegating_handler(request: sn.ChatRequest) -> Any:
    """The coordinator delegates once, then answers; children read one file, then answer."""
    if "task" in request.tools:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("task", agent="explore", prompt=request.last_user)])
        return f"Summary: {request.tool_results[-1]}"
    if request.last["role"] == "user":
        return sn.reply(tool_calls=[sn.call("read_file", path="README.md")])
    return f"found {request.tool_results[-1]}"


@pytest.fixture
def team_session() -> sn.Session:
    """A coordinator that delegates to an `explore` child, on the mock endpoint."""
    explore = sn.Agent("explore", does="reads files", tools=[read_file])
    coordinator = sn.Agent("coordinator", does="delegates", team=[explore])
    return sn.Session(coordinator, llm=sn.mock_llm(delegating_handler))


@pytest.fixture
def forecaster() -> sn.Session:
    """One agent that asks for the weather in Paris, then answers with it."""

    @sn.tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: the city.
        """
        return f"sunny in {city}"

    def forecast(request: sn.ChatRequest) -> Any:
        if request.last["role"] == "user":
            return sn.reply(tool_calls=[sn.call("get_weather", city="Paris")])
        return f"it is {request.tool_results[-1]}"

    return sn.Session(sn.Agent("forecaster", tools=[get_weather]), llm=sn.mock_llm(forecast))


# JupyterLab and chromium (browser tests), set up by the module the browser benchmark uses too


def _require_chromium() -> None:
    missing = missing_browser()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on a free loopback port with a token and its own config and runtime dirs."""
    _require_chromium()
    with jupyter_lab(tmp_path_factory.mktemp("lab"), timeout=30) as running:
        yield running


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    """Debian's chromium driven by Playwright; every process it started is gone afterwards.

    Module-scoped: Playwright's sync API keeps an asyncio loop marked running on this thread
    until it stops, which would break later tests that call `asyncio.run`.
    """
    with chromium() as launched:
        yield launched


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@contextmanager
def fresh_page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser page (a full-page screenshot is kept if the test fails)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(20_000)
    tab = context.new_page()
    try:
        yield tab
    finally:
        if request.node.stash.get(FAILED, False):
            ARTIFACTS.mkdir(exist_ok=True)
            tab.screenshot(path=str(ARTIFACTS / f"failed-{request.node.name}.png"))
        context.close()


@pytest.fixture
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser page (a full-page screenshot is kept if the test fails); its kernels are
    shut down afterwards."""
    with fresh_page(browser, request) as tab:
        try:
            yield tab
        finally:
            lab.shutdown_kernels()


def screenshot(page: Any, name: str) -> Path:
    """Save a screenshot of the first live view as a test artefact."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.locator(".sagents-view").first.screenshot(path=str(path))
    return path


@pytest.fixture
def table_loaded() -> None:
    """genai-prices' table loaded by `prices.warm()`, as a view finds it once its thread is
    done (a view's costs say `pricing…` until then)."""
    prices.warm()
    prices._WARMER.join(60)
