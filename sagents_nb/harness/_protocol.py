"""The `NativeHarness` protocol a CLI driver implements, `BaseHarness` with the defaults, and the
`HarnessConfig` a driver reads."""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Protocol, runtime_checkable

from .._base.checks import ArgumentError, check_fields
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

    def __post_init__(self) -> None:
        check_fields(self)


@runtime_checkable
class NativeHarness(Protocol):
    """A driver for one coding-agent CLI that runs its own agent loop.

    Drivers are pure: they build argv and parse output lines, and never do I/O. The runtime
    (`run_harness`) spawns the process, frames lines, and watches exit and timeouts.
    `BaseHarness` has the defaults of the last four members; a driver that does not subclass
    it implements all eight.
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

    @property
    def env_vars(self) -> Sequence[str]:
        """Names of this process's variables the CLI reads (`NAME*` is a prefix), passed on
        beside the basics every CLI gets."""

    def env(self, config: HarnessConfig) -> dict[str, str]:
        """Variables the driver sets for the run."""

    @property
    def injects_mcp_tools(self) -> bool:
        """The CLI takes the child's tools over an injected MCP server."""

    @property
    def gate_builtin_tools(self) -> bool:
        """The CLI asks the kernel (hooks, pauses) before it runs one of its own tools."""


class BaseHarness(ABC):
    """Defaults for a CLI driver: no variables beyond the basics, none set, the child's tools
    injected over MCP, the CLI's own tools not gated.

    Subclass it, give `name`, `executable`, `args` and `parse_line`, and override what differs;
    the built-in drivers do the same.
    """

    name: str
    executable: str
    env_vars: Sequence[str] = ()
    injects_mcp_tools: bool = True
    gate_builtin_tools: bool = False

    def __post_init__(self) -> None:
        """A driver that is a dataclass (as the built-in ones are) has its fields checked."""
        check_fields(self)

    @abstractmethod
    def args(self, config: HarnessConfig) -> list[str]:
        """The argv after the executable for one non-interactive run."""

    @abstractmethod
    def parse_line(self, line: str) -> list[HarnessEvent]:
        """Events from one stdout line. Never raises: noise and unknown shapes give `[]`."""

    def env(self, config: HarnessConfig) -> dict[str, str]:
        """Variables the driver sets for the run: none."""
        return {}


_MEMBERS = sorted(name for name in vars(NativeHarness) if not name.startswith("_"))


def checked_driver(driver: object) -> NativeHarness:
    """`driver`, checked: a `ConfigurationError` names what it lacks of `NativeHarness`."""
    if isinstance(driver, NativeHarness):
        return driver
    missing = [name for name in _MEMBERS if name not in dir(driver)]
    raise ArgumentError(
        f"driver: {type(driver).__name__} is not a CLI driver: it lacks {', '.join(missing)} of "
        "sn.harness.NativeHarness. Subclass sn.harness.BaseHarness, which has the defaults of "
        "env_vars, env, injects_mcp_tools and gate_builtin_tools, and give name, executable, "
        "args and parse_line"
    )


def available(driver: NativeHarness) -> bool:
    """Whether `driver`'s executable is there to run (on PATH, or a path that is executable)."""
    executable = checked_driver(driver).executable
    if os.sep in executable:
        return os.path.isfile(executable) and os.access(executable, os.X_OK)
    return shutil.which(executable) is not None
