"""Fixtures for the harness tests: fake_cli.py behind a real executable, and process checks."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

FAKE_CLI = Path(__file__).with_name("fake_cli.py")


@dataclass(frozen=True)
class FakeCli:
    """fake_cli.py behind an executable file, as a driver's `executable=` override takes it."""

    path: str

    def env(self, mode: str, **extra: str) -> dict[str, str]:
        """This process's environment with the fake CLI's mode (and `extra`) set."""
        return {**os.environ, "FAKE_CLI_MODE": mode, **extra}


@pytest.fixture
def fake_cli(tmp_path: Path) -> FakeCli:
    """A launcher that runs fake_cli.py with this interpreter (the one that has `mcp`).

    A generated file rather than fake_cli.py's own shebang: `/usr/bin/env python3` may find an
    interpreter without the test dependencies.
    """
    launcher = tmp_path / "fake-cli"
    launcher.write_text(
        f"#!{sys.executable}\n"
        "import runpy\n"
        f"runpy.run_path({str(FAKE_CLI)!r}, run_name='__main__')\n"
    )
    launcher.chmod(0o755)
    return FakeCli(str(launcher))


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (marked `anyio`) run on asyncio, the loop sagents_nb uses."""
    return "asyncio"


def _children() -> list[int]:
    """Live child processes of this test process."""
    mine = []
    proc = Path("/proc")
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            mine.append(int(entry.name))
    return mine


@pytest.fixture(autouse=True)
def no_leftover_children():
    """Every test must end with no child process still running."""
    yield
    assert _children() == []
