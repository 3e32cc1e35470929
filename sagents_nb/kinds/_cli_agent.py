"""A CLI child's own sub-agents (Claude Code's Task/Agent tool) as nodes below it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._base.messages import Usage
from .._base.outcome import Outcome
from ..events import HarnessEventOccurred
from ._protocol import BaseKind

if TYPE_CHECKING:
    from ..harness import HarnessEvent, HarnessSubagent, HarnessUsage
    from ._child import Child

ROUTE_WAIT = 0.5
"""Seconds a call from the CLI waits for the CLI's stream to say which of its agents made it
(the stream's line comes first; this covers the kernel reading it late)."""


class CliAgent(BaseKind):
    """A sub-agent a CLI child runs itself (Claude Code's Task/Agent tool), recorded from the
    CLI's stream below that child: its text, tool calls and tokens are what the CLI reports;
    its calls of the child's tools run here like the child's. Nothing else of it runs here."""

    name = "cli_agent"

    async def run_task(self, child: Child) -> Outcome | None:
        return Outcome(
            "error", f"{child.path} is a CLI's own sub-agent: it runs only inside its CLI"
        )


@dataclass
class _Agent:
    node: Child
    background: bool
    call: str | None
    """The CLI's id for the call that started it."""
    messages: set[str] = field(default_factory=set)
    """The CLI's ids of the model messages counted (a message may come as several lines)."""
    ended: HarnessSubagent | None = None
    """How the CLI said it ended (its node is ended once the call's result is read)."""
    finished: bool = False
    """Its node's task is ended."""
    turns: int = 0
    spent: Usage = field(default_factory=Usage)

    def spend(self, usage: HarnessUsage) -> None:
        """One model request, with the tokens the CLI reports for it."""
        spent = Usage(
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            total_tokens=usage.input_tokens + usage.output_tokens,
        )
        self.turns += 1
        self.spent = self.spent + spent
        self.node.count_turn()
        self.node.add_usage(spent)


class SubagentTree:
    """Places a CLI run's events on the node they belong to: the child for its main thread, a
    recorded child (`Child.record_child`) for each sub-agent the CLI starts, below the
    sub-agent that started it. A foreground sub-agent ends once the result of the call that
    started it is read, which carries its last request's tokens."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.kind = CliAgent()
        self.agents: dict[str, _Agent] = {}
        """By the CLI's id for the sub-agent, and by the id of the call that started it."""
        self.calls: dict[str, Child] = {}
        """The CLI's tool-call ids, to the node whose call it is."""
        self.ending: _Agent | None = None

    def place(self, event: HarnessEvent) -> Child | None:
        """The node `event` is emitted on; None for one told by the tree's own events."""
        from ..harness import HarnessModelCall, HarnessSubagent, HarnessToolCall, HarnessToolResult

        ending = self.ending
        if ending is not None and not (
            isinstance(event, HarnessToolResult) and event.id == ending.call
        ):
            self._end(ending)
        if isinstance(event, HarnessSubagent):
            self._subagent(event)
            return None
        owner = self._owner(getattr(event, "subagent", None))
        if isinstance(event, HarnessModelCall):
            agent = self.agents.get(event.subagent or "")
            if agent is not None and event.id not in agent.messages:
                agent.messages.add(event.id)
                agent.spend(event.usage)
            return None
        if isinstance(event, HarnessToolCall) and event.id:
            self.calls[event.id] = owner
        elif (
            isinstance(event, HarnessToolResult) and ending is not None and event.id == ending.call
        ):
            if event.usage is not None:
                ending.spend(event.usage)
            self._end(ending)
        return owner

    async def caller(self, call_id: str | None) -> Child:
        """The node that made the CLI's call `call_id` (the child when the stream never names
        it, as for the calls of a sub-agent's own sub-agents, whose lines the CLI does not
        write)."""
        if call_id is None:
            return self.child
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ROUTE_WAIT
        while call_id not in self.calls and loop.time() < deadline:
            await asyncio.sleep(0.01)
        return self.calls.get(call_id, self.child)

    def close(self, status: str, text: str) -> None:
        """End every sub-agent still open when the CLI's run is over (`status`: how, `text`:
        why), the deepest first."""
        if self.ending is not None:
            self._end(self.ending)
        for agent in reversed(list({id(a): a for a in self.agents.values()}.values())):
            if not agent.finished:
                self._finish(agent, Outcome(status, text))

    def _owner(self, subagent: str | None) -> Child:
        agent = self.agents.get(subagent) if subagent else None
        return agent.node if agent is not None else self.child

    def _subagent(self, event: HarnessSubagent) -> None:
        known = self.agents.get(event.id)
        if event.status == "running":
            if known is not None:
                return
            parent = self._owner(event.parent)
            name = (event.agent or "agent").replace("/", "-")
            node = parent.record_child(
                name,
                event.prompt,
                self.kind,
                call_id=event.call,
                label=event.description or None,
            )
            agent = _Agent(node, event.background, event.call)
            self.agents[event.id] = agent
            if event.call:
                self.agents[event.call] = agent
            return
        if known is None or known.ended is not None:
            return
        known.ended = event
        if known.background or not event.call:
            self._end(known)
        else:
            self.ending = known

    def _end(self, agent: _Agent) -> None:
        if self.ending is agent:
            self.ending = None
        ended = agent.ended
        if ended is not None and not agent.finished:
            self._finish(agent, Outcome(ended.status, ended.text))

    def _finish(self, agent: _Agent, outcome: Outcome) -> None:
        from ..harness import HarnessDone, HarnessError, HarnessUsage

        agent.finished = True
        node, usage = agent.node, agent.spent
        if outcome.status == "done":
            spent = HarnessUsage(
                input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens
            )
            said: HarnessDone | HarnessError = HarnessDone(
                content=outcome.text, usage=spent, turns=agent.turns
            )
        else:
            said = HarnessError(message=outcome.text)
        node.emit(HarnessEventOccurred(event=said.model_dump()))
        parent = node.parent
        if parent is not None:
            parent.record_finished(node, outcome)
