"""Native: a child that is an external coding CLI (Claude Code, Codex...) running its own loop."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._base.checks import (
    check_bool,
    check_instance,
    check_items,
    check_number,
    check_path,
    is_str,
)
from .._base.messages import Message, ToolCall, Usage
from .._base.outcome import Outcome
from .._tools.node_tool import NodeTool
from .._tools.tool import ToolResult
from ..events import HarnessEventOccurred, TextDelta
from ._cli_agent import SubagentTree
from ._protocol import BaseKind

if TYPE_CHECKING:
    from ..harness import HarnessEvent, NativeHarness
    from ._child import Child


@dataclass
class _NativeState:
    cli_session: str
    """The session the CLI reported last (`HarnessDone.session_id`), continued by `resume`."""


class Native(BaseKind):
    """Runs each task as one process of a CLI harness; the tree shows it like any child.

    The child's tools are offered to the CLI over an injected MCP server (for drivers that
    support it); calls from the CLI run here, through the same hooks and pause points, and show
    as tool calls of the child. Every line the CLI prints becomes a `harness_event`, but a
    streamed piece of text, which is a `text_delta` (its whole message follows as a
    `harness_event`).

    The CLI's own sub-agents (Claude Code's Task/Agent tool) are children of the child, of kind
    `cli_agent` (`<child>/<type>.<n>`, e.g. `boss/coder.1/general-purpose.1`): their lines,
    tokens and calls of the child's tools are theirs, not the child's.

    The CLI does not inherit the kernel's whole environment: it gets the basics (PATH, HOME,
    locale, proxies), the variables its driver reads (`driver.env_vars`), `pass_env` and `env`.

    Args:
        driver: a `sn.harness` driver, e.g. `sn.harness.ClaudeCode()` (any `NativeHarness`;
            `sn.harness.BaseHarness` has the defaults).
        inactivity_timeout: seconds without output before the CLI is stopped.
        extra_args: raw arguments for the CLI.
        cwd: the CLI's working directory.
        env: variables to set for the CLI, on top of what it gets anyway.
        pass_env: names of more kernel variables to pass on (`NAME*` is a prefix).
        resume: keep one child per agent across tasks, each task continuing the CLI's session
            (Claude's session, Codex's thread) instead of starting anew.

    Raises:
        ConfigurationError: `driver` does not implement `sn.harness.NativeHarness`.
    """

    name = "native"

    def __init__(
        self,
        driver: NativeHarness,
        *,
        inactivity_timeout: float = 600.0,
        extra_args: Sequence[str] = (),
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        resume: bool = False,
    ) -> None:
        from ..harness._protocol import checked_driver  # here: `sn.kinds` loads without `harness`

        self.driver = checked_driver(driver)
        where = f"sn.kinds.Native({self.driver.name})"
        check_number("inactivity_timeout", inactivity_timeout, where=where, positive=True)
        check_items("extra_args", extra_args, is_str, where=where, accepted="a str")
        check_instance(
            "env", env, (Mapping, type(None)), where=where, accepted="a dict of str or None"
        )
        check_items("pass_env", pass_env, is_str, where=where, accepted="a variable name (str)")
        check_bool("resume", resume, where=where)
        self.inactivity_timeout = inactivity_timeout
        self.extra_args = list(extra_args)
        self.cwd = None if cwd is None else os.fspath(check_path("cwd", cwd, where=where))
        self.env = env
        self.pass_env = list(pass_env)
        self.resume = resume
        self.persistent = resume  # one child per agent, so its next task finds the session
        self._call_ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"Native({self.driver.name})"

    async def run_task(self, child: Child) -> Outcome | None:
        """Run the CLI once on the child's current input and record its answer."""
        from ..harness import (
            HarnessConfig,
            HarnessDone,
            HarnessText,
            ToolAnswer,
            cli_call_id,
            run_harness,
        )

        agent = child.agent
        child.tool_map = {t.name: t for t in agent.tools}
        subagents = SubagentTree(child)

        async def caller() -> Child:
            node = await subagents.caller(cli_call_id())
            if node is not child and not node.tool_map:
                node.tool_map = {t.name: t for t in agent.tools}
            return node

        async def call_tool(name: str, arguments: dict[str, Any]) -> ToolAnswer:
            node = await caller()
            call = ToolCall(
                id=f"cli_{next(self._call_ids)}", name=name, arguments=json.dumps(arguments)
            )
            (result,) = await node.execute_tools([call])
            return ToolAnswer(result.content, is_error=result.status != "ok")

        async def approve(name: str, arguments: dict[str, Any]) -> dict[str, Any] | str:
            # The CLI's own tool, gated like the child's tools: it shows as a call of the
            # agent that made it, passes the hooks and pause points, and runs only if they let it.
            node = await caller()
            gate = node.tool_map.get(name)
            if not isinstance(gate, _CliOwnTool):
                gate = _CliOwnTool(name if gate is None else f"cli:{name}", self.driver.name)
                node.tool_map[gate.name] = gate
            call = ToolCall(
                id=f"cli_{next(self._call_ids)}", name=gate.name, arguments=json.dumps(arguments)
            )
            (result,) = await node.execute_tools([call])
            if result.status != "ok":
                return result.content
            allowed: dict[str, Any] = gate.allowed.pop(call.id, arguments)  # as the hooks left them
            return allowed

        def on_event(event: HarnessEvent) -> None:
            node = subagents.place(event)
            if node is None:
                return
            if isinstance(event, HarnessText) and event.delta:
                node.emit(TextDelta(text=event.text))  # stored with its neighbours as one row
                return
            node.emit(HarnessEventOccurred(event=event.model_dump()))
            if isinstance(event, HarnessDone):
                if event.cost_usd is not None:
                    child.cost_usd = (child.cost_usd or 0.0) + event.cost_usd
                if event.session_id and self.resume:
                    # the child's own state, so a reopened or forked session resumes it too
                    child.kind_state[self.name] = _NativeState(event.session_id)
                    child.state_changed()

        config = HarnessConfig(
            child.input_text,
            model=agent.model if isinstance(agent.model, str) else None,  # a name for the CLI
            system_prompt=agent.instructions,
            cwd=self.cwd,
            extra_args=self.extra_args,
            resume=self._cli_session(child) if self.resume else None,
        )
        try:
            outcome = await run_harness(
                self.driver,
                config,
                tools=agent.tools,
                call_tool=call_tool,
                on_event=on_event,
                env=self.env,
                pass_env=self.pass_env,
                approve_tool=approve,
                inactivity_timeout=self.inactivity_timeout,
            )
        except asyncio.CancelledError:
            subagents.close("cancelled", f"{child.path}'s CLI was stopped")
            raise
        subagents.close("incomplete", f"{self.driver.name} ended before this sub-agent did")
        child.count_turn()
        child.add_usage(
            Usage(
                prompt_tokens=outcome.usage.input_tokens,
                completion_tokens=outcome.usage.output_tokens,
                total_tokens=outcome.usage.input_tokens + outcome.usage.output_tokens,
            )
        )
        self.append_history(child, Message(role="assistant", content=outcome.text))
        if outcome.status == "done":
            return Outcome("done", outcome.text)
        return Outcome("error", outcome.error or "the CLI failed")

    def _cli_session(self, child: Child) -> str | None:
        state = child.state_of(self.name, _NativeState)
        return state.cli_session if state is not None else None

    def dump_state(self, child: Child) -> Any:
        state = child.state_of(self.name, _NativeState)
        return {"cli_session": state.cli_session} if state is not None else None

    def load_state(self, child: Child, state: Any) -> None:
        if isinstance(state, dict) and isinstance(state.get("cli_session"), str):
            child.kind_state[self.name] = _NativeState(state["cli_session"])


class _CliOwnTool(NodeTool["Child"]):
    """Stands for one of the CLI's own tools in the child's tool map, so a permission question
    about it runs through the gate; "running" it records the arguments the CLI may use."""

    def __init__(self, name: str, cli: str) -> None:
        self.name = name
        self.description = f"{cli}'s own tool {name}"
        self.cli = cli
        self.allowed: dict[str, dict[str, Any]] = {}

    async def run(self, node: Child, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        self.allowed[call_id] = arguments
        return ToolResult(call_id, self.name, f"allowed: {self.cli} runs it itself")
