"""Fixtures for the notebook tests: agents on the mock endpoint, JupyterLab and a real browser."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

import sagents_nb as sn

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
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


# JupyterLab and chromium (browser tests)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Lab:
    """A running JupyterLab: where it serves and which directory it shows."""

    url: str
    token: str
    root: Path

    def notebook(self, name: str, *cells: str) -> str:
        """Write a notebook of code `cells` into Lab's directory; return its URL."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(nb, self.root / name)
        # `reset`: start from an empty workspace, not with the previous tests' notebooks open
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"


def _require_chromium() -> None:
    missing = [] if Path(CHROMIUM).exists() else [CHROMIUM]
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package")
    if missing:
        message = f"browser tests need {' and '.join(missing)} (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab on a free loopback port with a token and its own config and runtime dirs."""
    _require_chromium()
    base = tmp_path_factory.mktemp("lab")
    root, config, runtime = base / "root", base / "config", base / "runtime"
    for directory in (root, config, runtime):
        directory.mkdir()
    news = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    # no "get notified about Jupyter news?" toast over the views in screenshots
    (news / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    port, token = _free_port(), uuid.uuid4().hex
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime)}
    log = (base / "lab.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--LabApp.news_url=",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1):
                    return True
            except OSError:
                return process.poll() is not None

        wait_until(ready, timeout=30, what="JupyterLab to answer")
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited: {(base / 'lab.log').read_text()[-2000:]}")
        yield Lab(url, token, root)
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)
        log.close()


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    """Debian's chromium driven by Playwright; every process it started is gone afterwards.

    Module-scoped: Playwright's sync API keeps an asyncio loop marked running on this thread
    until it stops, which would break later tests that call `asyncio.run`.
    """
    from playwright.sync_api import sync_playwright

    before = _children(os.getpid())
    playwright = sync_playwright().start()
    drivers = _children(os.getpid()) - before
    launched = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, timeout=30_000
    )
    started = set().union(*(_descendants(pid) for pid in drivers)) | drivers
    try:
        yield launched
    finally:
        try:
            launched.close()
        finally:
            playwright.stop()
            for pid in started:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Any, lab: Lab, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser page (a full-page screenshot is kept if the test fails); its kernels are
    shut down afterwards."""
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
        _shutdown_kernels(lab)


def _shutdown_kernels(lab: Lab) -> None:
    request = urllib.request.Request(f"{lab.url}/api/kernels?token={lab.token}")
    with urllib.request.urlopen(request, timeout=5) as response:
        kernels = json.load(response)
    for kernel in kernels:
        stop = urllib.request.Request(
            f"{lab.url}/api/kernels/{kernel['id']}?token={lab.token}", method="DELETE"
        )
        urllib.request.urlopen(stop, timeout=10).close()


def open_notebook(page: Any, url: str) -> None:
    """Open a notebook and wait until its kernel is idle (Shift+Enter is dropped before that)."""
    page.goto(url)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").first.wait_for()
    page.get_by_text("| Idle").first.wait_for(timeout=30_000)


def run_cell(page: Any, index: int) -> None:
    """Run the notebook's cell `index` with Shift+Enter."""
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def screenshot(page: Any, name: str) -> Path:
    """Save a screenshot of the first live view as a test artefact."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.locator(".sagents-view").first.screenshot(path=str(path))
    return path
