"""`Child`: the port a kind works through, all a kind (and a kind's tool) may use of its node."""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from .._base.messages import Message, ToolCall, Usage
from .._base.outcome import Outcome
from .._tools.node_tool import NodeTool
from .._tools.tool import Tool, ToolResult
from ..events import Event

if TYPE_CHECKING:
    from .._endpoints.openai import LLM
    from ._protocol import ChildKind, DisposePolicy

S = TypeVar("S")


class AgentSpec(Protocol):
    """What a kind reads of its child's agent, read when used (so edits between cells apply)."""

    @property
    def name(self) -> str: ...

    @property
    def instructions(self) -> str | None: ...

    @property
    def model(self) -> str | LLM | None: ...

    @property
    def tools(self) -> Sequence[Tool]: ...


@runtime_checkable
class Child(Protocol):
    """One agent instance as its kind sees it: storage, its input, token counts, events, tools.

    Kinds and their tools get a `Child` and use nothing else of the runtime (the session's
    nodes implement it). Storage changes go through `append` / `replace_history` so the
    transcripts and the store follow; what the kind keeps besides messages lives in
    `kind_state` under the kind's `name`, read back typed with `state_of`.
    """

    @property
    def path(self) -> str:
        """The child's id in the tree, e.g. `lead/helper.1`."""

    @property
    def agent(self) -> AgentSpec:
        """The agent this child runs."""

    @property
    def kind(self) -> ChildKind:
        """The kind in force for this child."""

    @property
    def parent(self) -> Child | None:
        """The child that delegated to this one (None for the session's top agent)."""

    @property
    def status(self) -> str:
        """`spawned`, `running`, `waiting`, `done`, `incomplete`, ..."""

    @property
    def busy(self) -> bool:
        """A task is running on this child."""

    @property
    def persistent(self) -> Mapping[str, Child]:
        """This child's own persistent children, by agent name."""

    @property
    def inbox(self) -> Sequence[object]:
        """The inputs waiting until this child is free."""

    @property
    def notices(self) -> list[str]:
        """Notes the child's next request carries as one system message (then cleared)."""

    # the current input

    @property
    def input_index(self) -> int:
        """Where in `history` the current task's input is (-1: none yet)."""

    @property
    def input_text(self) -> str:
        """The current task's input."""

    # storage

    @property
    def history(self) -> Sequence[Message]:
        """Storage: every message kept, oldest first (change it with `append` / `replace_history`)."""

    @property
    def history_tokens(self) -> int:
        """Storage's size by the session's token counter."""

    @property
    def token_count(self) -> Callable[[Message], int]:
        """The session's token counter."""

    def context_tokens(self) -> int:
        """Storage's size in tokens: the endpoint's reported usage when known, else the count."""

    def system_messages(self) -> list[Message]:
        """The agent's system prompt as messages (none without instructions)."""

    def append(self, *messages: Message) -> None:
        """Add messages to storage (and to the session's transcript for the top agent)."""

    def replace_history(self, messages: Sequence[Message]) -> None:
        """Replace storage wholesale (a compaction); the display transcript keeps what it had."""

    @property
    def kind_state(self) -> MutableMapping[str, Any]:
        """What each kind keeps for this child besides its messages, by kind `name`."""

    def state_of(self, key: str, cls: type[S]) -> S | None:
        """`kind_state[key]` if it is a `cls`, else None."""

    def state_changed(self) -> None:
        """Tell the store the kind's state changed (it stores `kind.dump_state(child)`)."""

    # events, tools, the model

    def emit(self, event: Event) -> Event:
        """Emit `event` on the session's bus, stamped with this child's path."""

    def set_status(self, status: str, detail: str | None = None) -> None:
        """Change the status and emit `status_changed`."""

    tool_map: dict[str, OfferedTool]
    """The tools this turn's calls may name (set by the turn loop; a kind running its own loop
    sets it before `execute_tools`)."""

    async def execute_tools(self, calls: list[ToolCall]) -> list[ToolResult]:
        """Run calls concurrently, hooks and pauses applied; results in the calls' order."""

    async def summarise(self, messages: Sequence[Message]) -> str:
        """A model-written summary of `messages` through the child's endpoint (shown in events)."""

    def count_turn(self) -> None:
        """Count one model turn of the current task (a kind running its own loop counts its)."""

    def add_usage(self, usage: Usage) -> None:
        """Add reported usage: the child's, its task's token budgets, the session's."""

    cost_usd: float | None
    """What the child's runs cost, when its endpoint or CLI reports it."""

    # children whose tasks run outside the kernel (a CLI's own sub-agents), only recorded here

    def record_child(
        self,
        agent: str,
        prompt: str,
        kind: ChildKind,
        *,
        call_id: str | None = None,
        label: str | None = None,
    ) -> Child:
        """A new child of this one whose task runs elsewhere and is only recorded here: named
        like any (`<path>/<agent>.<n>`), announced with `task_spawned` (`call_id`: the call
        that started it; `label`: what the tree shows for it), its prompt stored, `running`.
        Its agent has this child's tools, hooks and breakpoints. Report its work through its
        own `emit`, `count_turn`, `add_usage` and `execute_tools`; end it with
        `record_finished`."""

    def record_finished(self, child: Child, outcome: Outcome) -> None:
        """End the task of `child` (a `record_child` of this one) with `outcome`: its answer
        stored, its status set, `task_finished` emitted here."""

    # what a kind's control tools do to the children they manage

    def release_inbox(self, policy: DisposePolicy) -> str:
        """Answer every waiting input: `keep` hands it back to the parent, `drop` skips it."""

    def forget(self, child: Child) -> None:
        """Stop keeping `child` as a persistent child: its agent's next task starts a new one."""

    async def stop_tasks_of(self, child: Child, reason: str) -> int:
        """Cancel `child`'s tasks for this child (each answered as cancelled with `reason`) and
        wait until they stopped; how many there were."""


OfferedTool = Tool | NodeTool[Child]
"""A tool a kind offers a model: an `sn.tool`, or a `NodeTool` that acts on the calling child."""
