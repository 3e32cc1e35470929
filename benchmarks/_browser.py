"""JupyterLab, Jupyter Notebook 7 and marimo on loopback and Debian's chromium driven by
Playwright, for the browser tests (`tests/notebook/conftest.py`, as `benchmarks._browser`) and
`view_browser.py` (as `_browser`, a script's folder being on `sys.path`): start, open a notebook,
run a cell, stop everything.

Each server runs in a session of its own, with its own config, runtime and home folders, on a
free port of 127.0.0.1 behind a random token, and is stopped by its process group; every process
Playwright started (its driver, chromium and chromium's helpers) is gone after `chromium()`.
Stdlib only at import: Playwright and nbformat are imported where they are used.
"""

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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def missing_browser() -> str | None:
    """Why the browser cannot be driven here (None: it can)."""
    missing = [] if Path(CHROMIUM).exists() else [CHROMIUM]
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package")
    if missing:
        return f"browser tests need {' and '.join(missing)} (apt-get install chromium)"
    return None


@dataclass
class Lab:
    """A running JupyterLab (or Notebook 7, `app="notebook"`): where it serves, which directory
    it shows, its process."""

    url: str
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    app: str = "lab"

    def notebook(self, name: str, *cells: str) -> str:
        """Write a notebook of code `cells` into Lab's directory; return its URL."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        # a kernelspec, or Lab asks which kernel to start
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        nbformat.write(nb, self.root / name)
        if self.app == "notebook":
            return f"{self.url}/notebooks/{name}?token={self.token}"
        # `reset`: start from an empty workspace, not with the previous notebooks open
        return f"{self.url}/lab/tree/{name}?reset&token={self.token}"

    def shutdown_kernels(self) -> None:
        """Stop every kernel Lab runs."""
        listed = f"{self.url}/api/kernels?token={self.token}"
        with urllib.request.urlopen(listed, timeout=5) as response:
            kernels = json.load(response)
        for kernel in kernels:
            stop = urllib.request.Request(
                f"{self.url}/api/kernels/{kernel['id']}?token={self.token}", method="DELETE"
            )
            urllib.request.urlopen(stop, timeout=10).close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def jupyter_lab(base: Path, timeout: float = 60.0, app: str = "lab") -> Iterator[Lab]:
    """JupyterLab (`app="notebook"`: Notebook 7) serving `base/root`, its log in
    `base/lab.log`; stopped on exit."""
    root, config, runtime, data = base / "root", base / "config", base / "runtime", base / "data"
    for directory in (root, config, runtime, data):
        directory.mkdir()
    news = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    # no "get notified about Jupyter news?" toast over the views
    (news / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    port, token = free_port(), uuid.uuid4().hex
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTER_DATA_DIR": str(data),
    }
    with (base / "lab.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter",
                app,
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
        lab = Lab(f"http://127.0.0.1:{port}", token, root, process, app)
        try:
            _wait_for(process, f"{lab.url}/api/status?token={token}", timeout, base / "lab.log")
            yield lab
        finally:
            _stop(lab)


@dataclass
class Marimo:
    """A running marimo server: the app file it serves, its page's URL, its process."""

    url: str
    token: str
    app: Path
    process: subprocess.Popen[bytes]


@contextmanager
def marimo(
    base: Path, app: str, *, mode: str = "edit", theme: str = "light", timeout: float = 60.0
) -> Iterator[Marimo]:
    """`marimo edit` (or `marimo run`, `mode="run"`) serving the app `app` (a marimo app file's
    text) from `base`, in the `theme` given in its own config, its log in `base/marimo.log`;
    stopped on exit."""
    home, config = base / "home", base / "home" / ".config"
    (config / "marimo").mkdir(parents=True)
    (config / "marimo" / "marimo.toml").write_text(
        f'[display]\ntheme = "{theme}"\n\n[runtime]\nauto_instantiate = true\n'
        "\n[completion]\ncopilot = false\nactivate_on_typing = false\n"
    )
    path = base / "app.py"
    path.write_text(app, encoding="utf-8")
    port, token = free_port(), uuid.uuid4().hex
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(config),
        "XDG_STATE_HOME": str(home / ".state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".data"),
        "MARIMO_SKIP_UPDATE_CHECK": "1",
    }
    command = [sys.executable, "-m", "marimo", mode, str(path), "--headless", "--no-sandbox"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--token-password", token]
    if mode == "edit":
        command.append("--skip-update-check")  # `marimo run` has no such option: the variable
    with (base / "marimo.log").open("wb") as log:
        process = subprocess.Popen(
            command, cwd=base, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        server = f"http://127.0.0.1:{port}"
        running = Marimo(f"{server}/?access_token={token}", token, path, process)
        try:
            _wait_for(process, f"{server}/health", timeout, base / "marimo.log")
            yield running
        finally:
            _stop_group(process)


def _wait_for(process: subprocess.Popen[bytes], status: str, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while process.poll() is None:
        try:
            urllib.request.urlopen(status, timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{status.partition('?')[0]} did not answer within {timeout:g} s"
                ) from None
            time.sleep(0.1)
    raise RuntimeError(f"the server exited: {log.read_text(errors='replace')[-2000:]}")


def _stop(lab: Lab) -> None:
    """Its kernels (each in a session of its own), then Lab's process group."""
    process = lab.process
    if process.poll() is None:
        try:
            lab.shutdown_kernels()
        except OSError:
            pass  # Lab stops the kernels it still has on SIGTERM
    _stop_group(process)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's chromium, headless, driven by Playwright (its sync API: it keeps an asyncio
    loop marked running on this thread until it stops); every process it started is gone after."""
    from playwright.sync_api import sync_playwright

    before = _children(os.getpid())
    playwright = sync_playwright().start()
    started = _children(os.getpid()) - before  # its driver
    try:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, timeout=30_000
        )
        started |= set().union(*(descendants(pid) for pid in started))
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()
        for pid in started:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def open_notebook(page: Any, url: str, timeout: float = 30_000) -> None:
    """Open a notebook and wait until its kernel is idle (Shift+Enter is dropped before that)."""
    page.goto(url)
    page.locator(".jp-NotebookPanel:visible .jp-Cell").first.wait_for()
    if "/notebooks/" not in url:
        page.get_by_text("| Idle").first.wait_for(timeout=timeout)
        return
    # Notebook 7's indicator says idle before the kernel connects too, then "connecting":
    # wait for the page's websocket to the kernel first
    server, _, query = url.partition("/notebooks/")
    token = query.rpartition("token=")[2]
    deadline = time.monotonic() + timeout / 1000
    while not _connected(f"{server}/api/kernels?token={token}"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no kernel connected to {url} within {timeout / 1000:g} s")
        time.sleep(0.1)
    page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for(timeout=timeout)


def _connected(kernels: str) -> bool:
    with urllib.request.urlopen(kernels, timeout=5) as response:
        listed = json.load(response)
    return any(k["connections"] > 0 and k["execution_state"] == "idle" for k in listed)


def run_cell(page: Any, index: int) -> None:
    """Run the notebook's cell `index` with Shift+Enter."""
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


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


def descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
