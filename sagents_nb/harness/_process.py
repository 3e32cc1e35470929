"""The CLI's environment, and stopping its whole process group: SIGTERM, then SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping

SCRUBBED_ENV_VARS = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4")
"""Variables that make shells the CLI starts run code or change behaviour; never passed on."""

_POLL_SECONDS = 0.02
_REAP_SECONDS = 5.0
"""How long a SIGKILLed leader may take to be reaped before stopping gives up on it."""


def child_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """A copy of `env` (default: this process's environment) without `SCRUBBED_ENV_VARS`."""
    child = dict(os.environ if env is None else env)
    for name in SCRUBBED_ENV_VARS:
        child.pop(name, None)
    return child


async def stop_process_group(process: asyncio.subprocess.Process, *, grace: float) -> None:
    """End the group `process` leads (it was started in a new session).

    Sends SIGTERM to the group, waits up to `grace` seconds for the leader to exit, then sends
    SIGKILL to whatever is left, at once if this coroutine is itself cancelled. Returns once the
    leader is reaped.
    """
    group = process.pid
    try:
        if _signal_group(group, signal.SIGTERM):
            await wait_for_exit(process, grace)
            _signal_group(group, signal.SIGKILL)
        await wait_for_exit(process, _REAP_SECONDS)
    except BaseException:
        _signal_group(group, signal.SIGKILL)
        raise


async def wait_for_exit(process: asyncio.subprocess.Process, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the process itself to exit; returns whether it did.

    Unlike `process.wait()`, this does not also wait for its pipes to close, which a grandchild
    holding them open could delay indefinitely.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while process.returncode is None and loop.time() < deadline:
        await asyncio.sleep(_POLL_SECONDS)
    return process.returncode is not None


def _signal_group(group: int, signum: int) -> bool:
    """Signal a process group; False when no process of it is left (or it is no longer ours)."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True
