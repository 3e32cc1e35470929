"""The CLI's environment, and stopping its whole process group: SIGTERM, then SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence

SCRUBBED_ENV_VARS = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4")
"""Variables that make shells the CLI starts run code or change behaviour; never passed on."""

BASE_ENV_VARS = (
    *("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR", "LANG", "LANGUAGE"),
    *("LC_*", "XDG_*"),
    # A machine behind a proxy or with its own certificate authority needs these to reach anything.
    *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"),
    *("no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"),
)
"""What every CLI gets from this process's environment; a name ending in `*` is a prefix."""

_POLL_SECONDS = 0.02
_REAP_SECONDS = 5.0
"""How long a SIGKILLed leader may take to be reaped before stopping gives up on it."""


def child_environment(
    *,
    passed: Sequence[str] = (),
    settings: Mapping[str, str] | None = None,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The CLI's environment: only what it needs, never this process's whole environment.

    The variables of `source` (default: this process's environment) named in `BASE_ENV_VARS` or
    `passed` (a name ending in `*` is a prefix), then `settings` on top, without
    `SCRUBBED_ENV_VARS`. So an `OPENAI_API_KEY` in the kernel reaches Codex, which reads it, and
    not Claude Code, which has no use for it.
    """
    source = os.environ if source is None else source
    wanted = (*BASE_ENV_VARS, *passed)
    exact = {name for name in wanted if not name.endswith("*")}
    prefixes = tuple(name[:-1] for name in wanted if name.endswith("*"))
    child = {
        name: value
        for name, value in source.items()
        if name in exact or (prefixes and name.startswith(prefixes))
    }
    child.update(settings or {})
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
