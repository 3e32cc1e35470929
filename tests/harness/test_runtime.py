"""run_harness end to end against fake_cli.py: framing, terminal events, exits, timeouts, cleanup."""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb import ConfigurationError
from sagents_nb.harness import (
    BaseHarness,
    ClaudeCode,
    Codex,
    CursorAgent,
    Grok,
    HarnessConfig,
    HarnessDone,
    HarnessError,
    HarnessSession,
    HarnessText,
    HarnessToolCall,
    HarnessToolResult,
    HarnessUsage,
    NativeHarness,
    run_harness,
)
from sagents_nb.harness._process import child_environment

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(10)]


async def run(fake_cli: str, mode: str, prompt: str = "hi", **kwargs):
    """Run the fake CLI in `mode`; returns the outcome and every event it delivered."""
    events = []
    outcome = await run_harness(
        ClaudeCode(executable=fake_cli.path),
        HarnessConfig(prompt),
        env=fake_cli.env(mode, **kwargs.pop("extra_env", {})),
        on_event=events.append,
        **kwargs,
    )
    return outcome, events


async def test_happy_run_is_done_with_result_and_usage(fake_cli):
    outcome, events = await run(fake_cli, "happy")
    assert outcome.status == "done"
    assert outcome.text == "Hello from the fake CLI."
    assert outcome.usage == HarnessUsage(input_tokens=124, output_tokens=12)
    assert outcome.exit_code == 0
    assert outcome.error is None
    session = "5f0c9a63-2b1e-4c1e-9a57-7d0c1b6f2e11"
    assert events == [
        HarnessSession(session_id=session),
        HarnessText(text="Hello from the fake CLI."),
        HarnessDone(
            content="Hello from the fake CLI.",
            usage=outcome.usage,
            session_id=session,
            cost_usd=0.0123,
            turns=1,
            duration_ms=2650,
        ),
    ]


async def test_async_on_event_sees_tool_calls_live(fake_cli):
    seen = []

    async def on_event(event):
        await asyncio.sleep(0)
        seen.append(event)

    outcome = await run_harness(
        ClaudeCode(executable=fake_cli.path),
        HarnessConfig("hi"),
        env=fake_cli.env("tool_use"),
        on_event=on_event,
    )
    assert outcome.text == "There is one file."
    kinds = [HarnessSession, HarnessText, HarnessToolCall, HarnessToolResult, HarnessText]
    assert [type(e) for e in seen] == [*kinds, HarnessDone]
    assert seen[2] == HarnessToolCall(name="Bash", arguments={"command": "ls"}, id="toolu_01A")
    assert seen[3].id == "toolu_01A"


async def test_error_result_wins_over_the_exit_code(fake_cli):
    outcome, events = await run(fake_cli, "error_result")
    assert outcome.status == "error"
    assert "error_max_turns" in outcome.error and "--max-turns" in outcome.error
    assert outcome.exit_code == 1
    assert outcome.text == "Working on it."
    assert [e for e in events if isinstance(e, HarnessError)] == [
        HarnessError(message=outcome.error)
    ]


async def test_nonzero_exit_without_result_is_an_error_with_stderr(fake_cli):
    outcome, events = await run(fake_cli, "crash")
    assert outcome.status == "error"
    assert outcome.exit_code == 3
    assert "exited with code 3" in outcome.error
    assert "Invalid API key" in outcome.error
    assert outcome.stderr_tail == ["Error: Invalid API key · Please run /login", "exiting"]
    assert events[-1] == HarnessError(message=outcome.error)


async def test_exit_zero_without_result_is_done_with_the_text(fake_cli):
    outcome, events = await run(fake_cli, "no_done")
    assert outcome.status == "done"
    assert outcome.text == "first part, second part"
    assert events[-1] == HarnessDone(content="first part, second part")


async def test_stdin_is_closed(fake_cli):
    outcome, _ = await run(fake_cli, "stdin")
    assert outcome.text == "stdin gave 0 bytes"


async def test_inactivity_timeout_stops_a_silent_cli(fake_cli):
    started = time.monotonic()
    outcome, events = await run(fake_cli, "silent", inactivity_timeout=0.5)
    assert time.monotonic() - started < 4
    assert outcome.status == "error"
    assert "no output for 0.5 s" in outcome.error and "inactivity_timeout=" in outcome.error
    assert outcome.error.endswith("it wrote nothing to stderr")
    assert outcome.exit_code is not None and outcome.exit_code < 0
    assert events == [HarnessError(message=outcome.error)]


async def test_a_slow_on_event_does_not_count_as_inactivity(fake_cli):
    # The window is wide enough for a loaded machine to start the CLI; the handler alone
    # outlasts it once, which a timer that counted the handler's time would not survive.
    waits = [2.5]

    async def slow(event):
        if waits:
            await asyncio.sleep(waits.pop())

    outcome = await run_harness(
        ClaudeCode(executable=fake_cli.path),
        HarnessConfig("hi"),
        env=fake_cli.env("happy"),
        on_event=slow,
        inactivity_timeout=2.0,
    )
    assert outcome.status == "done" and not waits


async def test_a_cli_that_closes_stdout_but_keeps_running_is_stopped(fake_cli):
    outcome, _ = await run(fake_cli, "closed_stdout", exit_grace=0.2)
    assert outcome.status == "error" and outcome.text == "closing stdout"
    assert "closed its output without a result and did not exit within 0.2 s" in outcome.error


async def test_a_cli_killed_by_a_signal_is_an_error_naming_it(fake_cli):
    outcome, _ = await run(fake_cli, "killed")
    assert outcome.status == "error" and outcome.exit_code == -9
    assert "killed by SIGKILL" in outcome.error and "about to be killed" in outcome.error


async def test_noise_lines_are_ignored(fake_cli):
    outcome, events = await run(fake_cli, "noise")
    assert outcome.text == "between the noise"
    assert [type(e) for e in events] == [HarnessText, HarnessDone]


async def test_an_over_long_line_is_skipped_and_the_run_goes_on(fake_cli):
    outcome, events = await run(fake_cli, "long_line", max_line_bytes=1000)
    assert outcome.status == "done"
    assert outcome.text == "after the long line"
    warning = events[0]
    assert isinstance(warning, HarnessError) and not warning.fatal
    assert "1000 bytes" in warning.message and "max_line_bytes=" in warning.message
    assert events[1] == HarnessText(text="short")
    assert events[2] == HarnessDone(
        content="after the long line",
        usage=outcome.usage,
        session_id="5f0c9a63-2b1e-4c1e-9a57-7d0c1b6f2e11",
        cost_usd=0.0123,
        turns=1,
        duration_ms=2650,
    )


async def test_lines_written_in_pieces_are_reassembled(fake_cli):
    outcome, events = await run(fake_cli, "pieces")
    assert outcome.text == "ok"
    assert events[0] == HarnessText(text="pieced together")


async def test_shell_startup_variables_are_scrubbed(fake_cli):
    outcome, _ = await run(
        fake_cli, "env", extra_env={"BASH_ENV": "/tmp/evil.sh", "PS4": "$(touch /tmp/pwned)"}
    )
    assert outcome.text == "<unset>|<unset>"


async def test_the_cli_gets_only_the_env_it_needs_not_the_kernels_keys(fake_cli, monkeypatch):
    # Issue 17 item 12: a kernel's OPENAI_API_KEY reached Claude Code (and every other CLI).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-planted-openai")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "planted-aws")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-planted")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("MY_TEAM_TOKEN", "named-by-the-user")
    outcome = await run_harness(
        ClaudeCode(executable=fake_cli.path),
        HarnessConfig("hi"),
        env={"FAKE_CLI_MODE": "env_names"},
        pass_env=["MY_TEAM_*"],
    )
    names = set(json.loads(outcome.text))
    assert {"PATH", "HOME", "LC_ALL", "ANTHROPIC_API_KEY", "MY_TEAM_TOKEN"} <= names
    assert {"OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY"} & names == set()
    assert "DISABLE_AUTOUPDATER" in names  # the driver's own switches


def test_each_driver_passes_the_variables_its_cli_reads():
    kernel = {"PATH": "/bin", "OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "GROK_API_KEY": "g"}
    for driver, key in [(ClaudeCode(), "ANTHROPIC_API_KEY"), (Codex(), "OPENAI_API_KEY"),
                        (Grok(), "GROK_API_KEY"), (CursorAgent(), None)]:  # fmt: skip
        env = child_environment(passed=driver.env_vars, source=kernel)
        assert set(env) == {"PATH", *([key] if key else [])}, driver.name


async def test_a_flag_like_prompt_arrives_as_one_argument(fake_cli):
    prompt = "--help; rm -rf / $(whoami) `id` 'quoted' \"double\""
    outcome, _ = await run(fake_cli, "argv", prompt=prompt)
    argv = json.loads(outcome.text)
    assert argv == ClaudeCode().args(HarnessConfig(prompt))
    assert argv[-2:] == ["--", prompt]


async def test_the_first_terminal_event_wins(fake_cli):
    outcome, events = await run(fake_cli, "double_terminal")
    assert outcome.status == "done" and outcome.text == "first"
    assert [type(e) for e in events] == [HarnessDone]


async def test_a_cli_that_hangs_after_its_result_is_stopped_after_exit_grace(fake_cli):
    started = time.monotonic()
    outcome, _ = await run(fake_cli, "after_done_hang", exit_grace=0.3)
    assert time.monotonic() - started < 4
    assert outcome.status == "done" and outcome.text == "answer before hanging"


async def test_a_grandchild_holding_stdout_does_not_keep_the_run_open(fake_cli, tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    outcome, _ = await run(fake_cli, "orphan_pipe", exit_grace=0.3, extra_env=_pid_file(pids))
    assert time.monotonic() - started < 4
    assert outcome.status == "done" and outcome.text == "left a grandchild holding stdout"
    assert await all_gone(_read_pids(pids))


async def test_a_missing_executable_is_a_clear_error():
    events = []
    outcome = await run_harness(
        ClaudeCode(executable="no-such-claude-binary"), HarnessConfig("hi"), on_event=events.append
    )
    assert outcome.status == "error" and outcome.exit_code is None
    assert "'no-such-claude-binary'" in outcome.error
    assert "install Claude Code" in outcome.error and "executable=" in outcome.error
    assert events == [HarnessError(message=outcome.error)]


@pytest.mark.parametrize("mode", ["grandchild", "stubborn"])
async def test_cancelling_kills_the_whole_process_group(fake_cli, tmp_path, mode):
    pids = tmp_path / "pids"
    ready = asyncio.Event()
    task = asyncio.create_task(
        run_harness(
            ClaudeCode(executable=fake_cli.path),
            HarnessConfig("hi"),
            env=fake_cli.env(mode, **_pid_file(pids)),
            on_event=lambda event: ready.set(),
        )
    )
    await asyncio.wait_for(ready.wait(), 5)
    running = _read_pids(pids)
    assert running and all(alive(pid) for pid in running)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await all_gone(running)


async def test_tools_without_call_tool_is_a_configuration_error(fake_cli):
    tool = _Tool()
    with pytest.raises(ConfigurationError, match="call_tool="):
        await run_harness(ClaudeCode(executable=fake_cli.path), HarnessConfig("hi"), tools=[tool])


async def test_tools_are_not_served_to_a_driver_that_cannot_take_them(fake_cli):
    async def call_tool(name, arguments):
        raise AssertionError("never called")

    outcome = await run_harness(
        CursorAgent(executable=fake_cli.path),
        HarnessConfig("hi"),
        tools=[_Tool()],
        call_tool=call_tool,
        env=fake_cli.env("argv"),
    )
    assert not any(arg.startswith("--mcp-config") for arg in json.loads(outcome.text))


@dataclass(frozen=True)
class WholeDriver:
    """Implements all of `NativeHarness` without `BaseHarness`: Claude Code's output, its own
    variables, no injected tools."""

    executable: str
    name: str = "whole"
    env_vars: tuple[str, ...] = ("WHOLE_*",)
    injects_mcp_tools: bool = False
    gate_builtin_tools: bool = False

    def args(self, config: HarnessConfig) -> list[str]:
        return ClaudeCode().args(config)

    def parse_line(self, line: str) -> list:
        return ClaudeCode().parse_line(line)

    def env(self, config: HarnessConfig) -> dict[str, str]:
        return {"WHOLE_SET_BY_DRIVER": "entier 全部"}


async def test_a_driver_that_implements_the_whole_protocol_needs_no_base_class(
    fake_cli, monkeypatch
):
    monkeypatch.setenv("WHOLE_FROM_KERNEL", "1")
    driver = WholeDriver(fake_cli.path)
    assert isinstance(driver, NativeHarness) and not isinstance(driver, BaseHarness)
    outcome = await run_harness(driver, HarnessConfig("hi"), env={"FAKE_CLI_MODE": "env_names"})
    assert {"WHOLE_FROM_KERNEL", "WHOLE_SET_BY_DRIVER"} <= set(json.loads(outcome.text))

    async def call_tool(name, arguments):
        raise AssertionError("never called")

    outcome = await run_harness(
        driver, HarnessConfig("hi"), tools=[_Tool()], call_tool=call_tool, env=fake_cli.env("argv")
    )
    assert outcome.status == "done"
    assert not any(arg.startswith("--mcp-config") for arg in json.loads(outcome.text))


async def test_a_driver_that_lacks_members_is_refused_saying_which(fake_cli):
    class Partial:
        name = "partial"
        executable = fake_cli.path

        def args(self, config):
            return [config.prompt]

        def parse_line(self, line):
            return []

    lacks = (
        r"Partial is not a CLI driver: it lacks env, env_vars, gate_builtin_tools, "
        r"injects_mcp_tools of sn\.harness\.NativeHarness\. Subclass sn\.harness\.BaseHarness"
    )
    with pytest.raises(ConfigurationError, match=lacks):
        await run_harness(Partial(), HarnessConfig("hi"), env=fake_cli.env("happy"))
    with pytest.raises(ConfigurationError, match=lacks):
        sn.kinds.Native(Partial())


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return not Path("/proc").is_dir()  # without procfs, os.kill is all there is to go on
    return state != "Z"


async def all_gone(pids: list[int]) -> bool:
    """Whether every pid is gone within a second: SIGKILL is sent, but dying takes a moment."""
    for _ in range(100):
        if not any(alive(pid) for pid in pids):
            return True
        await asyncio.sleep(0.01)
    return False


@dataclass
class _Tool:
    name: str = "add"
    description: str = "Add two numbers."
    parameters: dict = field(default_factory=lambda: {"type": "object", "properties": {}})


def _pid_file(path: Path) -> dict[str, str]:
    return {"FAKE_CLI_PIDS": str(path)}


def _read_pids(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []
