"""The CLI's environment, and stopping its whole process group: SIGTERM, then SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping

SCRUBBED_ENV_VARS = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4")
"""Variables that make shells the CLI starts run code or change behaviour; never passed on."""

_POLL_SECONDS = 0.02


def child_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of `env` (default: this process's environment) without `SCRUBBED_ENV_VARS`."""
    child = dict(os.environ if env is None else env)
    for name in SCRUBBED_ENV_VARS:
        child.pop(name, None)
    return child


async def stop_process_group(process: asyncio.subprocess.Process, *, grace: float) -> bool:
    """End the group `process` leads (it was started in a new session) and reap the leader.

    Sends SIGTERM to the group, SIGKILL to whatever is left after `grace` seconds, and SIGKILL at
    once if this coroutine is itself cancelled. Returns whether the leader was still running.
    """
    running = process.returncode is None
    group = process.pid
    try:
        if _signal_group(group, signal.SIGTERM):
            loop = asyncio.get_running_loop()
            deadline = loop.time() + grace
            while _signal_group(group, 0) and loop.time() < deadline:
                await asyncio.sleep(_POLL_SECONDS)
            _signal_group(group, signal.SIGKILL)
        await process.wait()
    except BaseException:
        _signal_group(group, signal.SIGKILL)
        raise
    return running


def _signal_group(group: int, signum: int) -> bool:
    """Signal a process group; False when no process of it is left (or it is no longer ours)."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True
