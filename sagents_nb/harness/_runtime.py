"""Runs a native CLI once as a child process, streaming its events and folding them into an outcome."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import os
import shutil
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from .._base.checks import check_callable, check_instance, check_int, check_items, check_number
from .._base.errors import ConfigurationError
from ._conversation import Ask, Conversation, Received, conversation_of
from ._events import (
    HarnessDone,
    HarnessError,
    HarnessEvent,
    HarnessRetry,
    HarnessSession,
    HarnessText,
)
from ._framing import LineFramer
from ._mcp import SERVED, CallTool, ServedTool, is_served, serve_tools
from ._outcome import HarnessOutcome
from ._permission import PERMISSION_TOOL, ApproveTool, with_permission_tool
from ._process import child_environment, stop_process_group, wait_for_exit
from ._protocol import MCP_TOKEN_ENV, HarnessConfig, NativeHarness, checked_driver
from ._tool_answer import ToolAnswer

OnEvent = Callable[[HarnessEvent], Awaitable[None] | None]
"""Receives each event live; may be sync or async."""

_READ_BYTES = 64 * 1024
_KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when the CLI's process group is stopped."""
_PIPE_DRAIN = 1.0
"""Seconds to wait for both pipes to reach EOF once the process group is gone."""
_EXIT_POLL = 0.1
"""How often an idle run checks whether the CLI has exited while its stdout stays open."""

_Ending = Literal["eof", "quiet", "grace"]


async def run_harness(
    driver: NativeHarness,
    config: HarnessConfig,
    *,
    tools: Sequence[ServedTool] = (),
    call_tool: CallTool | None = None,
    on_event: OnEvent | None = None,
    env: Mapping[str, str] | None = None,
    pass_env: Sequence[str] = (),
    approve_tool: ApproveTool | None = None,
    inactivity_timeout: float = 120.0,
    exit_grace: float = 5.0,
    max_line_bytes: int = 1_000_000,
    stderr_tail_lines: int = 20,
) -> HarnessOutcome:
    """Run `driver`'s CLI once and return how it ended.

    The CLI runs without a shell, with stdin closed, in its own process group (a driver that
    converses with its CLI, as `Codex(gate_builtin_tools=True)` does, writes to its stdin
    instead, and closes it when the run is over). It does not get this
    process's whole environment (API keys for other services stay here): only the basics
    (`BASE_ENV_VARS`: PATH, HOME, locale, proxies...), the variables its driver names
    (`driver.env_vars`), those named in `pass_env`, then the driver's settings
    (`driver.env(config)`) and `env` on top; never variables that make shells run code. Every event reaches
    `on_event` as its line arrives. The first terminal event (done, or a fatal error) decides the
    outcome; later ones are dropped. Without one, exit 0 means done with the text received and any
    other exit, a missing executable or `inactivity_timeout` seconds without a line means error;
    the runtime then emits that terminal event itself. Cancelling the call stops the whole process
    group (SIGTERM, then SIGKILL) and re-raises; so does an exception from `on_event`.

    Args:
        driver: The CLI driver.
        config: What to ask and how.
        tools: Tools to offer the CLI over MCP (only for drivers with `injects_mcp_tools`).
        call_tool: Runs a tool call from the CLI: `await call_tool(name, arguments) -> str`.
        on_event: Receives each event live; sync or async.
        env: Variables to set for the CLI, on top of the rest (they win).
        pass_env: Names of more variables of this process to pass on (`NAME*` is a prefix).
        approve_tool: Answers the CLI's permission questions about its own tools, for drivers
            with `gate_builtin_tools` set: `await approve_tool(name, arguments)` returns the
            arguments to run with, or the reason to refuse. Without it such a question is
            refused.
        inactivity_timeout: Seconds without a stdout line before the CLI is stopped.
        exit_grace: Seconds the CLI gets to exit after its terminal event or after closing stdout.
        max_line_bytes: Longer stdout lines are skipped with a non-fatal error event.
        stderr_tail_lines: How many of the last stderr lines the outcome keeps.

    Raises:
        ConfigurationError: `driver` does not implement `NativeHarness`, or `tools` were given
            without `call_tool`.
    """
    driver = checked_driver(driver)
    where = "run_harness(...)"
    check_instance("config", config, HarnessConfig, where=where, accepted="a HarnessConfig")
    check_items("tools", tools, is_served, where=where, accepted=SERVED)
    for name, value in (
        ("call_tool", call_tool),
        ("on_event", on_event),
        ("approve_tool", approve_tool),
    ):
        check_callable(name, value, where=where, optional=True)
    check_number("inactivity_timeout", inactivity_timeout, where=where, positive=True)
    check_number("exit_grace", exit_grace, where=where)
    check_int("max_line_bytes", max_line_bytes, where=where, minimum=1)
    check_int("stderr_tail_lines", stderr_tail_lines, where=where, minimum=0)
    if tools and call_tool is None:
        raise ConfigurationError(
            "run_harness got tools= but no call_tool=; pass call_tool=... so their calls can run"
        )
    run = _Run(
        driver,
        on_event,
        approve_tool if driver.gate_builtin_tools else None,
        inactivity_timeout=inactivity_timeout,
        exit_grace=exit_grace,
        max_line_bytes=max_line_bytes,
        stderr_tail_lines=stderr_tail_lines,
    )
    passed = (*driver.env_vars, *pass_env)

    def environment(config: HarnessConfig) -> dict[str, str]:
        return child_environment(passed=passed, settings={**driver.env(config), **(env or {})})

    conversing = conversation_of(driver, config) is not None  # it asks over stdout, not MCP
    if approve_tool is not None and driver.gate_builtin_tools and not conversing:
        tools, call_tool = with_permission_tool(tools, call_tool, approve_tool)
        config = replace(config, permission_tool=PERMISSION_TOOL)
    if call_tool is not None:
        call_tool = run.counting(call_tool)
    if not tools or call_tool is None or not driver.injects_mcp_tools:
        return await run.execute(config, environment(config))
    async with serve_tools(tools, call_tool) as injection:
        injected = replace(config, mcp_config_path=injection.config_path, mcp_url=injection.url)
        child_env = environment(injected)
        child_env[MCP_TOKEN_ENV] = injection.token
        return await run.execute(injected, child_env)


class _Run:
    """One CLI process, from spawn to outcome."""

    def __init__(
        self,
        driver: NativeHarness,
        on_event: OnEvent | None,
        approve_tool: ApproveTool | None,
        *,
        inactivity_timeout: float,
        exit_grace: float,
        max_line_bytes: int,
        stderr_tail_lines: int,
    ) -> None:
        self._driver = driver
        self._on_event = on_event
        self._approve_tool = approve_tool
        self._conversation: Conversation | None = None
        self._stdin: asyncio.StreamWriter | None = None
        self._answering: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None
        """What went wrong while answering one of the CLI's questions, raised by the reader."""
        self._inactivity_timeout = inactivity_timeout
        self._exit_grace = exit_grace
        self._max_line_bytes = max_line_bytes
        self._stderr: deque[str] = deque(maxlen=stderr_tail_lines)
        self._texts: list[str] = []
        self._terminal: HarnessDone | HarnessError | None = None
        self._last_retry: HarnessRetry | None = None
        self._calls_running = 0
        self._call_ended_at = -math.inf
        self._session_id: str | None = None
        self._stderr_reported = False

    def counting(self, call_tool: CallTool) -> CallTool:
        """`call_tool`, tracked, so the CLI's silence while it waits for an answer is no hang."""

        async def tracked(name: str, arguments: dict[str, Any]) -> str | ToolAnswer:
            self._calls_running += 1
            try:
                return await call_tool(name, arguments)
            finally:
                self._calls_running -= 1
                self._call_ended_at = asyncio.get_running_loop().time()

        return tracked

    async def execute(self, config: HarnessConfig, env: dict[str, str]) -> HarnessOutcome:
        name, wanted = self._driver.name, self._driver.executable
        self._conversation = conversation_of(self._driver, config)
        executable = shutil.which(wanted, path=env.get("PATH", os.defpath))
        if executable is None:
            return await self._fail(
                f"cannot find the {name} executable {wanted!r} on PATH; install {name}, or pass "
                f"executable='/path/to/{os.path.basename(wanted)}' to the driver"
            )
        try:
            process = await asyncio.create_subprocess_exec(
                executable,
                *self._driver.args(config),
                stdin=asyncio.subprocess.DEVNULL
                if self._conversation is None
                else asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=config.cwd,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            return await self._fail(
                f"could not start {name} ({executable}): {exc}; check that it is an executable "
                f"program and that the working directory {config.cwd or os.getcwd()!r} exists"
            )
        assert process.stdout is not None and process.stderr is not None  # both are PIPEs
        stderr = asyncio.create_task(self._collect_stderr(process.stderr))
        try:
            if self._conversation is not None:
                self._stdin = process.stdin
                await self._write(self._conversation.opening())
            ending = await self._read_stdout(process.stdout, process)
            # After EOF the CLI is about to exit: give it `exit_grace`. Otherwise stop it now.
            kept_running = ending == "eof" and not await wait_for_exit(process, self._exit_grace)
        finally:
            for task in self._answering:
                task.cancel()
            await asyncio.gather(*self._answering, return_exceptions=True)
            self._close_stdin()
            await stop_process_group(process, grace=_KILL_GRACE)
            # Both pipes must reach EOF for asyncio to close the process transport.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(stderr, _discard(process.stdout)), _PIPE_DRAIN
                )
        terminal = self._terminal or await self._settle(process.returncode, ending, kept_running)
        return self._outcome(terminal, process.returncode)

    async def _read_stdout(
        self, stdout: asyncio.StreamReader, process: asyncio.subprocess.Process
    ) -> _Ending:
        """Hand stdout lines to the driver until EOF or a deadline.

        Returns `eof`; `quiet` after `inactivity_timeout` seconds without a line; or `grace` when,
        after a terminal event or the leader's exit, `exit_grace` seconds pass without EOF (say, a
        grandchild still holds the pipe).
        """
        loop = asyncio.get_running_loop()
        framer = LineFramer(self._max_line_bytes)
        read: asyncio.Future[bytes] | None = None
        quiet_at = loop.time() + self._inactivity_timeout
        grace_at = math.inf
        try:
            while True:
                if grace_at == math.inf and (
                    self._terminal is not None or process.returncode is not None
                ):
                    grace_at = loop.time() + self._exit_grace
                if read is None:
                    read = asyncio.ensure_future(stdout.read(_READ_BYTES))
                deadline = min(quiet_at, grace_at)
                # Until the run has ended, wake now and then to notice the leader's exit.
                wake = deadline if grace_at < math.inf else min(deadline, loop.time() + _EXIT_POLL)
                await asyncio.wait({read}, timeout=max(0.0, wake - loop.time()))
                if self._failure is not None:
                    raise self._failure
                if not read.done():
                    # While the kernel runs a call from the CLI (or waits at a pause on it), the
                    # CLI is waiting for the answer: its quiet time counts from the call's end.
                    if self._calls_running:
                        quiet_at = loop.time() + self._inactivity_timeout
                    quiet_at = max(quiet_at, self._call_ended_at + self._inactivity_timeout)
                    if loop.time() >= min(quiet_at, grace_at):
                        return "quiet" if grace_at == math.inf else "grace"
                    continue
                chunk = read.result()
                read = None
                lines = framer.feed(chunk) if chunk else framer.finish()
                for line in lines:
                    await self._handle_line(line)
                if not chunk:
                    return "eof"
                if lines:  # counted from after `on_event` ran, so a slow consumer is not a hang
                    quiet_at = loop.time() + self._inactivity_timeout
        finally:
            if read is not None:
                read.cancel()

    async def _collect_stderr(self, stderr: asyncio.StreamReader) -> None:
        framer = LineFramer(self._max_line_bytes)
        while chunk := await stderr.read(_READ_BYTES):
            self._stderr.extend(map(self._stderr_line, framer.feed(chunk)))
        self._stderr.extend(map(self._stderr_line, framer.finish()))

    def _stderr_line(self, line: bytes | None) -> str:
        if line is None:
            return f"[a stderr line over {self._max_line_bytes} bytes was skipped]"
        return line.decode("utf-8", "replace").rstrip("\r")

    async def _handle_line(self, line: bytes | None) -> None:
        if line is None:
            await self._accept(
                HarnessError(
                    message=f"skipped a line of {self._driver.name} output over "
                    f"{self._max_line_bytes} bytes; raise max_line_bytes= to read such lines",
                    fatal=False,
                )
            )
            return
        text = line.decode("utf-8", "replace").rstrip("\r")
        if self._conversation is not None:
            await self._received(self._conversation.receive(text))
            return
        for event in self._driver.parse_line(text):
            await self._accept(event)

    async def _received(self, received: Received) -> None:
        """Pass on a conversation's events, write its replies, and ask the kernel its questions
        (each answered when the kernel decides, maybe after a pause; reading goes on)."""
        for event in received.events:
            await self._accept(event)
        await self._write(received.replies)
        for ask in received.asks:
            task = asyncio.create_task(self._answer(ask))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        if received.finished:
            self._close_stdin()

    async def _answer(self, ask: Ask) -> None:
        self._calls_running += 1  # the CLI is silent while it waits: no hang
        try:
            verdict = None
            if self._approve_tool is not None:
                verdict = await self._approve_tool(ask.name, dict(ask.arguments))
            await self._received(ask.answer(verdict))
        except Exception as exc:  # raised where the run is read, as `on_event`'s are
            self._failure = self._failure or exc
        finally:
            self._calls_running -= 1
            self._call_ended_at = asyncio.get_running_loop().time()

    async def _write(self, lines: Sequence[str]) -> None:
        """Lines to the CLI's stdin; a CLI that has stopped reading is noticed by its exit."""
        if self._stdin is None or not lines or self._stdin.is_closing():
            return
        self._stdin.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
        with contextlib.suppress(ConnectionError):
            await self._stdin.drain()

    def _close_stdin(self) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.close()

    async def _accept(self, event: HarnessEvent) -> None:
        """Record `event` and pass it on; terminal events after the first are dropped."""
        if isinstance(event, HarnessText):
            # the whole message follows its streamed pieces; a sub-agent's text is not the answer
            if not event.delta and event.subagent is None:
                self._texts.append(event.text)
        elif isinstance(event, HarnessRetry):
            self._last_retry = event
        elif isinstance(event, HarnessSession):
            self._session_id = event.session_id
        elif isinstance(event, HarnessDone) or (isinstance(event, HarnessError) and event.fatal):
            if self._terminal is not None:
                return
            if isinstance(event, HarnessDone) and not event.content:
                event = event.model_copy(update={"content": "".join(self._texts)})
            if isinstance(event, HarnessDone) and event.session_id is None and self._session_id:
                event = event.model_copy(update={"session_id": self._session_id})
            self._terminal = event
        if self._on_event is not None:
            delivered = self._on_event(event)
            if inspect.isawaitable(delivered):
                await delivered

    async def _settle(
        self, exit_code: int | None, ending: _Ending, kept_running: bool
    ) -> HarnessDone | HarnessError:
        """The terminal event for a run whose CLI reported none, emitted like any other."""
        name = self._driver.name
        if ending == "quiet" and (retry := self._last_retry) is not None:
            cause = f"HTTP {retry.status}" if retry.status else "a failed request"
            message = (
                f"{name} wrote no output for {self._inactivity_timeout:g} s while retrying its "
                f"model request (last retry, attempt {retry.attempt}, was for {cause}"
                f"{': ' + retry.error if retry.error else ''}), so it was stopped; check the "
                f"model endpoint{self._stderr_excerpt()}"
            )
        elif ending == "quiet":
            message = (
                f"{name} wrote no output for {self._inactivity_timeout:g} s, so it was stopped "
                f"(raise inactivity_timeout= if it needs longer between lines){self._stderr_excerpt()}"
            )
        elif kept_running:
            message = (
                f"{name} closed its output without a result and did not exit within "
                f"{self._exit_grace:g} s, so it was stopped{self._stderr_excerpt()}"
            )
        elif exit_code == 0:
            done = HarnessDone(content="".join(self._texts))
            await self._accept(done)
            return done
        elif exit_code is not None and exit_code < 0:
            message = (
                f"{name} was killed by {_signal_name(-exit_code)} before it finished"
                f"{self._stderr_excerpt()}"
            )
        else:
            message = (
                f"{name} exited with code {exit_code} before it finished{self._stderr_excerpt()}"
            )
        error = HarnessError(message=message)
        self._stderr_reported = True
        await self._accept(error)
        return error

    def _stderr_excerpt(self) -> str:
        if not self._stderr:
            return "; it wrote nothing to stderr"
        return "; its last stderr lines, which usually name the cause:\n" + "\n".join(self._stderr)

    async def _fail(self, message: str) -> HarnessOutcome:
        error = HarnessError(message=message)
        await self._accept(error)
        return self._outcome(error, None)

    def _outcome(
        self, terminal: HarnessDone | HarnessError, exit_code: int | None
    ) -> HarnessOutcome:
        if isinstance(terminal, HarnessDone):
            return HarnessOutcome(
                status="done",
                text=terminal.content,
                usage=terminal.usage,
                exit_code=exit_code,
                stderr_tail=list(self._stderr),
            )
        message = terminal.message
        if self._stderr and not self._stderr_reported:  # the CLI's own error line names no stderr
            message += self._stderr_excerpt()
        return HarnessOutcome(
            status="error",
            text="".join(self._texts),
            exit_code=exit_code,
            stderr_tail=list(self._stderr),
            error=message,
        )


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(_READ_BYTES):
        pass


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
