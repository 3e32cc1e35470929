"""The real Claude Code and Codex CLIs from npm, found, isolated and kept on loopback for tests."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CLI_BIN = ROOT / ".ci" / "cli" / "node_modules" / ".bin"
"""Where `.ci/run` installs the pinned CLIs (`npm ci --prefix .ci/cli`)."""


def find_cli(name: str) -> str:
    """The CLI's path: `$SAGENTS_CLI_BIN`, then `.ci/cli`, then PATH.

    Missing, it skips the test, except in CI (`CI=true`), where it fails: there the CLIs are part
    of what is tested.
    """
    for directory in (os.environ.get("SAGENTS_CLI_BIN"), str(CLI_BIN)):
        if directory and os.access(candidate := os.path.join(directory, name), os.X_OK):
            return candidate
    if found := shutil.which(name):
        return found
    message = f"the {name} CLI is not installed; run: npm ci --prefix .ci/cli"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class TrapProxy:
    """A proxy on 127.0.0.1 that refuses every request and remembers it.

    The CLIs get it as their HTTP(S) proxy, with loopback exempt: any request for a host beyond
    loopback (telemetry, updates, plugins) lands here instead of leaving the machine.
    """

    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                try:
                    first = connection.recv(4096).split(b"\r\n", 1)[0]
                    self.seen.append(first.decode("latin-1"))
                    connection.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        self._listener.close()
        self._thread.join(timeout=5)

    def env(self) -> dict[str, str]:
        proxy = {name: self.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
        proxy |= {name.lower(): value for name, value in proxy.items()}
        return {**proxy, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


@pytest.fixture
def trap():
    """A `TrapProxy`; the test fails if anything tried to leave loopback through it."""
    proxy = TrapProxy()
    yield proxy
    proxy.close()
    assert proxy.seen == [], f"a CLI tried to reach beyond loopback: {proxy.seen}"


def isolated_env(home: Path, trap: TrapProxy, **extra: str) -> dict[str, str]:
    """A fresh home and config dirs, so no user configuration or login is read or written."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        **trap.env(),
        **extra,
    }
