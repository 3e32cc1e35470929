"""Arize Phoenix as a real OTLP receiver for the tests: its own virtual env, started on loopback.

Phoenix is heavy (hundreds of packages), so it lives in `.venv-phoenix`, away from the test
venv: `python3 -m tests.phoenix install` builds it at the pinned version (`.ci/run` does). The
server is started by `LAUNCHER` in that venv, which binds Phoenix's gRPC receiver to 127.0.0.1
(Phoenix binds it to every interface, whatever `PHOENIX_HOST` says), and stopped by its PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PINNED = "arize-phoenix==20.26.1"
ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-phoenix"
PYTHON = VENV / "bin" / "python"
INSTALL = f"python3 -m venv .venv-phoenix && .venv-phoenix/bin/python -m pip install '{PINNED}'"
"""The command that installs it, from the project's folder (also `python3 -m tests.phoenix install`)."""

LAUNCHER = """
import sys

import grpc.aio

serve = grpc.aio.server


def loopback_server(*args, **kwargs):
    server = serve(*args, **kwargs)
    add = server.add_insecure_port
    server.add_insecure_port = lambda address: add("127.0.0.1:" + address.rpartition(":")[2])
    return server


grpc.aio.server = loopback_server
sys.argv = ["phoenix", "serve"]
from phoenix.server.main import main

main()
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Phoenix:
    """A Phoenix server started for a test."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    @property
    def traces(self) -> str:
        """Its OTLP/HTTP receiver."""
        return f"{self.url}/v1/traces"

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span the project holds, from Phoenix's REST API."""
        import httpx

        found: list[dict[str, Any]] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
            response = httpx.get(f"{self.url}/v1/projects/{project}/spans", params=params)
            if response.status_code == 404:  # no span received yet: no project either
                return []
            response.raise_for_status()
            body = response.json()
            found += body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return found

    def wait_for_spans(self, project: str, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        """The project's spans once it holds `count` (Phoenix inserts them in batches)."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.spans(project)
            if len(spans) >= count or time.monotonic() > deadline:
                return spans
            time.sleep(0.5)

    def listening(self) -> list[str]:
        """The local addresses its process listens on (TCP), from `ss -ltnp`."""
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
        mine = f"pid={self.process.pid},"
        return [line.split()[3] for line in out.splitlines() if mine in line]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start(workdir: Path, timeout: float = 120) -> Phoenix:
    """Start Phoenix on 127.0.0.1 with its state in `workdir`; wait until it answers."""
    import httpx  # the test venv's (this module also runs under a bare python3, to install)

    port, grpc_port = free_port(), free_port()
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(workdir / "phoenix"),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    log = workdir / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(PYTHON), "-c", LAUNCHER], env=env, stdout=out, stderr=subprocess.STDOUT
        )
    phoenix = Phoenix(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Phoenix exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{phoenix.url}/healthz", timeout=2).status_code == 200:
                return phoenix
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    phoenix.stop()
    raise RuntimeError(f"Phoenix did not answer in {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def install() -> None:
    """Build `.venv-phoenix` at the pinned version (nothing to do when it is there)."""
    name, _, version = PINNED.partition("==")
    if PYTHON.exists():
        shown = [str(PYTHON), "-m", "pip", "show", name]
        if f"Version: {version}" in subprocess.run(shown, capture_output=True, text=True).stdout:
            return
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", PINNED], check=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["install"]:
        sys.exit("usage: python3 -m tests.phoenix install")
    install()
