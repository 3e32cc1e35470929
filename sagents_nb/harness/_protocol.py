"""The `NativeHarness` protocol a CLI driver implements, and the `HarnessConfig` it reads."""

from __future__ import annotations

import os
import shutil
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._events import HarnessEvent

MCP_SERVER_NAME = "sagents"
"""The name the injected MCP server goes by in every CLI's configuration."""

MCP_TOKEN_ENV = "SAGENTS_MCP_TOKEN"
"""Environment variable holding the injected server's bearer token, for CLIs that read it there."""


@dataclass(frozen=True)
class HarnessConfig:
    """One non-interactive run of a CLI: what to ask and how."""

    prompt: str
    """The user prompt; always passed to the CLI as a single argument, never parsed as a flag."""
    _: KW_ONLY
    model: str | None = None
    """Model id, or None for the CLI's default."""
    system_prompt: str | None = None
    """Instructions added to the CLI's own system prompt."""
    mcp_config_path: str | None = None
    """A Claude-Code-style MCP config file naming the injected tool server (set by the runtime)."""
    mcp_url: str | None = None
    """The injected tool server's URL, for CLIs configured by URL (set by the runtime)."""
    cwd: str | None = None
    """Working directory of the CLI process; None keeps the caller's."""
    extra_args: list[str] = field(default_factory=list)
    """Raw arguments passed through verbatim, after the driver's own options."""
    permission_tool: str | None = None
    """The injected server's tool that answers permission questions (set by the runtime)."""
    resume: str | None = None
    """A session id the CLI reported (`HarnessDone.session_id`) to continue instead of starting anew."""


@runtime_checkable
class NativeHarness(Protocol):
    """A driver for one coding-agent CLI that runs its own agent loop.

    Drivers are pure: they build argv and parse output lines, and never do I/O. The runtime
    (`run_harness`) spawns the process, frames lines, and watches exit and timeouts.

    Three members are optional: `injects_mcp_tools` (True when left out), `env_vars`, the names
    of this process's variables the CLI reads (a name ending in `*` is a prefix; by default none
    beyond the basics every CLI gets), and `env(config) -> dict[str, str]`, variables the driver
    sets for the run.
    """

    @property
    def name(self) -> str:
        """Human-readable CLI name, used in messages."""

    @property
    def executable(self) -> str:
        """The program to run: a name looked up on PATH, or a path."""

    def args(self, config: HarnessConfig) -> list[str]:
        """The argv after the executable for one non-interactive run."""

    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from one stdout line. Never raises: noise and unknown shapes give `[]`."""


def injects_tools(driver: Any) -> bool:
    """Whether `driver` takes the child's tools over MCP (`injects_mcp_tools`, True by default)."""
    return bool(getattr(driver, "injects_mcp_tools", True))


def available(driver: Any) -> bool:
    """Whether `driver`'s executable is there to run (on PATH, or a path that is executable)."""
    executable = driver.executable
    if os.sep in executable:
        return os.path.isfile(executable) and os.access(executable, os.X_OK)
    return shutil.which(executable) is not None
