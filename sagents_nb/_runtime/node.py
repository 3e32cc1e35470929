"""A node: one agent instance in a delegation tree, with its storage, status, usage and children."""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .._base.loop import droppable
from .._base.messages import Message, Usage, system, tool_message, user
from .._base.outcome import Outcome
from .._endpoints.openai import request_json
from ..events import Event, StatusChanged, TaskSpawned
from ..kinds import kind_name
from .delegation import task_finished
from .not_rebuilt import shown_kind
from .result import TreeNode
from .tasks import QueuedInput, TaskEntry
from .turns import agent_choice, note_choice, run_task, summarise

if TYPE_CHECKING:
    from .._tools.tool import ToolResult
    from ..kinds import Child, ChildKind
    from .agent import Agent
    from .overflow import ViewFit
    from .session import Session

S = TypeVar("S")

TERMINAL = frozenset({"done", "incomplete", "error", "cancelled", "pending"})


class StoredHistory:
    """`Node.history` of a node whose storage was restored and not looked at yet: the first
    look, from any thread, reads the stored messages (`restore_history`) into the node's
    `history` attribute, which every later look finds at once (a non-data descriptor: the
    node's own attribute comes first, so a live node never gets here)."""

    def __get__(self, node: Node | None, owner: type[Node]) -> Any:
        if node is None:
            return self
        loaded = node._load_history()
        # two threads looking at once parse the same message objects; the first list is kept
        history: list[Message] = node.__dict__.setdefault("history", loaded)
        return history


class Released:
    """`Node.session` of a node released with its session (`Node.release`): the node's own
    attribute is dropped then, and a look finds this non-data descriptor, which says why."""

    def __get__(self, node: Node | None, owner: type[Node]) -> Any:
        if node is None:
            return self
        raise RuntimeError(
            f"node {node.path!r} was released with its session (a sweep's run, once its "
            "record was taken): open the stored session again to read it"
        )


class Node:
    """Runtime state of one agent instance; kinds read and write it through `kinds.Child`."""

    history: list[Message] = cast("list[Message]", StoredHistory())
    """Storage: every message kept, oldest first; a restored node's is read at the first look."""
    session: Session = cast("Session", Released())
    """The node's session: a plain attribute (read many times a turn), until it is released."""
    _load_history: Callable[[], list[Message]]

    def __init__(
        self,
        session: Session,
        agent: Agent,
        kind: ChildKind,
        *,
        path: str,
        parent: Node | None = None,
    ) -> None:
        self.session = session
        self.agent = agent
        self.kind = kind
        self.kind_state: dict[str, Any] = {}
        self.path = path
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.history = []
        self._history_tokens: int | None = 0
        """None: not counted yet (a reopened node's, counted at the first look)."""
        self._wires: list[dict[str, Any]] = []
        self._wire_json = bytearray()
        self._wire_at = array("q", [0])
        self._wired: list[Message] | None = None
        """The storage list `_wires` (and `_wire_json`) are the first messages of
        (`wire_history`)."""
        self.display: list[Message] | None = None
        self.display_swaps: dict[int, Message] = {}
        self.status = "spawned"
        self.turns = 0
        self.task_turns = 0
        self.task_tool_calls = 0
        self.task_tokens = 0
        self.usage = Usage()
        self.tasks: dict[tuple[str, str], TaskEntry] = {}
        self.persistent: dict[str, Node] = {}
        self.kinds_seen: dict[str, ChildKind] = {}
        self.counters: dict[str, int] = {}
        self.order: list[Node] = []
        self.notices: list[str] = []
        self.inbox: list[QueuedInput] = []
        self.joined: list[QueuedInput] = []
        """Inputs that cut into the running task: answered with its outcome."""
        self.lock = asyncio.Lock()
        self.busy = False
        self.input_index = -1
        self.input_text = ""
        self.display_text = agent.display_text
        self.reattached = 0
        self.refused: list[str] = []
        self.cost_usd: float | None = None
        """What a CLI child's runs cost, as the CLI reported (set by the `Native` kind)."""
        self.measured: tuple[int, int] | None = None
        self.view_fit: ViewFit | None = None
        """The size views are cut to after a context overflow the kind had no means for."""
        self.tool_map: dict[str, Any] = {}
        self.last_outcome: Outcome | None = None
        self.endpoint: tuple[Any, Any] | None = None
        """(the endpoint of its last request, the session's endpoint then); after a reopen in
        another process, (its label, None): the object is not stored."""
        self.choice: tuple[Any, str | None] | None = None
        """What its agents chose for its last request (`turns.agent_choice`)."""
        self.pinned_endpoint: tuple[tuple[Any, str | None], tuple[Any, str | None]] | None = None
        """(the choice in force at a fork's cut, what its agents chose when it was taken)."""
        self.paused_below: dict[str, str] = {}
        """Descendants waiting at a pause (path -> what they wait before): this node waits too."""

    def release(self) -> None:
        """Drop its references up, to its session and parent (see `Session.release`)."""
        self.__dict__.pop("session", None)
        self.parent = None

    def __repr__(self) -> str:
        return f"Node({self.path!r}, kind={kind_name(self.kind)}, status={self.status!r})"

    # events and status

    def emit(self, event: Event) -> Event:
        """Emit `event` on the session's bus, stamped with this node's path."""
        event.path = self.path
        return self.session.bus.emit(event)

    def set_status(self, status: str, detail: str | None = None) -> None:
        """Change the status and emit `status_changed`."""
        self.status = status
        self.emit(StatusChanged(status=status, detail=detail))

    # storage

    @property
    def token_count(self) -> Callable[[Message], int]:
        """The session's token counter."""
        return self.session.token_counter

    @property
    def history_tokens(self) -> int:
        """Storage's size by the session's token counter."""
        if self._history_tokens is None:
            self._history_tokens = sum(map(self.session.token_counter, self.history))
        return self._history_tokens

    @history_tokens.setter
    def history_tokens(self, tokens: int) -> None:
        self._history_tokens = tokens

    def restore_history(self, load: Callable[[], list[Message]]) -> None:
        """Storage is the stored messages `load` returns, read and counted when first looked
        at (`StoredHistory`): a reopened session of thousands of nodes parses none of them
        before a run, a fork or a click needs them."""
        del self.history
        self._load_history = load
        self._history_tokens = None

    def wire_history(self) -> list[dict[str, Any]]:
        """Storage's messages as their wire dicts (`Message.to_wire`), kept while storage grows:
        only the messages appended since the last look are turned into dicts; a storage
        replaced (compaction) or read again (a reopen) starts the list anew (and `wire_json`'s)."""
        history = self.history
        if history is not self._wired or len(self._wires) > len(history):
            self._wires, self._wired = [], history
            self._wire_json, self._wire_at = bytearray(), array("q", [0])
        wires = self._wires
        if len(wires) < len(history):
            wires += map(Message.to_wire, history[len(wires) :])
        return wires

    def wire_json(self) -> tuple[bytearray, array[int]]:
        """The JSON of `wire_history`'s dicts (`request_json`), each followed by a comma, in one
        bytearray, and where each one's starts there (and where the next one will): written
        when first asked for, then as storage grows."""
        wires = self.wire_history()
        json, at = self._wire_json, self._wire_at
        for wire in wires[len(at) - 1 :]:
            json += request_json(wire)
            json += b","
            at.append(len(json))
        return json, at

    def system_messages(self) -> list[Message]:
        """The system prompt (read from the agent now, so edits between cells apply)."""
        return [system(self.agent.instructions)] if self.agent.instructions else []

    def append(self, *messages: Message) -> None:
        """Append to storage (and to the display transcript for the session's top agent)."""
        self.history.extend(messages)
        if self._history_tokens is not None:  # else all are counted at the first look
            self._history_tokens += sum(map(self.session.token_counter, messages))
        if self.display is not None:
            swaps = self.display_swaps
            self.display.extend(swaps.pop(id(m), m) if swaps else m for m in messages)
        journal = self.session.journal
        if journal is not None:
            journal.messages_appended(self, messages)

    def replace_history(self, messages: Sequence[Message]) -> None:
        """Replace storage wholesale (compaction); the display transcript is left alone."""
        self.history = list(messages)
        self.history_tokens = sum(self.session.token_counter(m) for m in self.history)
        self.measured = None
        for state_key in [k for k in self.kind_state if k != self.kind.name]:
            del self.kind_state[state_key]
        journal = self.session.journal
        if journal is not None:
            journal.history_replaced(self)

    def state_of(self, key: str, cls: type[S]) -> S | None:
        """`kind_state[key]` if it is a `cls`, else None."""
        state = self.kind_state.get(key)
        return state if isinstance(state, cls) else None

    def state_changed(self) -> None:
        """Tell the store the kind's state changed: `kind.dump_state` is stored with the step."""
        journal = self.session.journal
        if journal is not None:
            journal.kind_state_changed(self)

    def context_tokens(self) -> int:
        """Storage size in tokens: the endpoint's reported usage when known, else the estimate."""
        if self.measured is not None:
            tokens, at = self.measured
            if at <= len(self.history):
                count = self.session.token_counter
                return tokens + sum(count(m) for m in self.history[at:])
        return self.history_tokens

    def close_dangling(self, reason: str) -> None:
        """Answer every unanswered tool call of the last assistant turn, so history stays valid."""
        for index in range(len(self.history) - 1, -1, -1):
            message = self.history[index]
            if message.role == "assistant" and message.tool_calls:
                answered = {m.tool_call_id for m in self.history[index + 1 :] if m.role == "tool"}
                missing = [c for c in message.tool_calls if c.id not in answered]
                if missing:
                    self.kind.append_history(
                        self, *(tool_message(c.id, f"[cancelled] {reason}") for c in missing)
                    )
                return
            if message.role == "user":
                return

    # children

    def next_child_path(self, agent_name: str) -> str:
        """`<path>/<agent>.<n>` for the next child of `agent_name`."""
        n = self.counters.get(agent_name, 0) + 1
        self.counters[agent_name] = n
        return f"{self.path}/{agent_name}.{n}"

    def forget(self, child: Child) -> None:
        """Stop keeping `child` as a persistent child: its agent's next task starts a new one."""
        if self.persistent.get(child.agent.name) is child:
            del self.persistent[child.agent.name]

    async def stop_tasks_of(self, child: Child, reason: str) -> int:
        """Cancel the tasks `child` is working on for this node and wait until they have
        stopped; each is answered as cancelled with `reason`. Returns how many there were."""
        running = [
            (entry, entry.task)
            for entry in self.tasks.values()
            if entry.child is child and entry.task is not None and not entry.task.done()
        ]
        for entry, task in running:
            entry.stopped = reason
            task.cancel()
        if running:
            await asyncio.wait([task for _, task in running])
        return len(running)

    def release_inbox(self, policy: str) -> str:
        """Answer every queued input: `keep` hands it back to the parent, `drop` skips it."""
        queued, self.inbox = self.inbox, []
        for item in queued:
            if item.future.done():
                continue
            if policy == "keep":
                text = (
                    f"{self.path} was disposed before handling this input; it is returned to "
                    f"you unhandled: {item.prompt}"
                )
            else:
                text = f"{self.path} was disposed; this input was skipped: {item.prompt}"
            item.future.set_result(Outcome("incomplete", text))
        return f"{self.path} disposed ({policy}); {len(queued)} queued input(s) " + (
            "returned to the parent" if policy == "keep" else "skipped"
        )

    def take_interrupts(self) -> None:
        """Offer each waiting input to the kind with `interrupt=True` (at a turn boundary of the
        running task); one it takes joins the task, one it refuses goes on waiting."""
        for item in [i for i in self.inbox if not i.future.done()]:
            if self.kind.deliver(self, user(item.prompt), interrupt=True):
                self.inbox.remove(item)
                self.joined.append(item)
                self.set_status("running", f"an input cut in: {item.prompt}")

    def settle_joined(self, outcome: Outcome) -> None:
        """Answer the inputs that cut into the task that ended with `outcome`."""
        joined, self.joined = self.joined, []
        for item in joined:
            if not item.future.done():
                item.future.set_result(outcome)

    def tree(self) -> TreeNode:
        """A snapshot of this node and its children, each with the usage of its subtree (summed
        from its children's snapshots: each node counted once, not once per ancestor)."""
        children = [child.tree() for child in self.order]
        usage = self.usage
        for child in children:
            usage = usage + child.usage
        return TreeNode(
            id=self.path,
            agent=self.agent.name,
            kind=shown_kind(self.kind),
            status=self.status,
            turns=self.turns,
            usage=usage,
            children=children,
            display_text=self.display_text,
            reattached=self.reattached,
            refused=list(self.refused),
            cost_usd=self.cost_usd,
        )

    def find(self, path: str) -> Node | None:
        """The node at `path` in this subtree."""
        if path == self.path:
            return self
        for child in self.order:
            if path.startswith(child.path):
                found = child.find(path)
                if found is not None:
                    return found
        return None

    def walk(self) -> list[Node]:
        """This node and all below it."""
        nodes = [self]
        for child in self.order:
            nodes.extend(child.walk())
        return nodes

    async def execute_tools(self, calls: list[Any]) -> list[ToolResult]:
        """Run tool calls concurrently (hooks and pauses applied); results in call order."""
        from .toolcalls import (
            execute_call,  # with the hooks, on the first call: not every run calls
        )

        if len(calls) == 1:
            return [await execute_call(self, calls[0])]
        tasks: list[asyncio.Task[Any]] = []

        async def settled(call: Any) -> Any:
            try:
                return await execute_call(self, call)
            except (asyncio.CancelledError, GeneratorExit):  # cancelled, or collected unfinished
                raise
            except BaseException as exc:  # a hook failed: stop the siblings, raise it below
                for task in tasks:  # (outside any task: asyncio lets SystemExit out of one)
                    if task is not asyncio.current_task():
                        task.cancel()
                return exc

        tasks.extend(droppable(asyncio.ensure_future(settled(c))) for c in calls)
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            raise
        outcomes = [None if task.cancelled() else task.result() for task in tasks]
        error = next((o for o in outcomes if isinstance(o, BaseException)), None)
        if error is not None:
            raise error
        return outcomes  # type: ignore[return-value]

    def count_turn(self) -> None:
        """Count one model turn of the current task."""
        self.turns += 1
        self.task_turns += 1

    def add_usage(self, usage: Usage) -> None:
        """Add reported usage: this node's, its task's token budgets, the session's."""
        self.usage = self.usage + usage
        self.spend(usage.total_tokens)
        self.session.add_usage(usage)

    def spend(self, tokens: int) -> None:
        """Count `tokens` against this node's task and every ancestor's: budgets are shared pools."""
        node: Node | None = self
        while node is not None:
            node.task_tokens += tokens
            node = node.parent

    def exhausted_pool(self) -> str | None:
        """What is spent, if a token budget here or up the tree is: a child's effective budget is
        the smaller of its own and what each ancestor has left."""
        node: Node | None = self
        while node is not None:
            budget = node.agent.token_budget
            if budget is not None and node.task_tokens >= budget:
                return (
                    f"tokens: {node.path}'s budget of {budget} is spent ({node.task_tokens} used)"
                )
            node = node.parent
        return None

    def waiting_below(self, path: str, pending: str | None) -> None:
        """Mark this node's ancestors `waiting` while `path` (here) waits at a pause (`pending`
        describes it; None: the pause ended), so a subtree's wait shows all the way up."""
        node = self.parent
        while node is not None:
            if pending is not None:
                node.paused_below[path] = pending
                if node.status == "running":
                    node.set_status("waiting", f"waiting for {path}: {pending}")
            else:
                node.paused_below.pop(path, None)
                if node.status == "waiting" and not node.paused_below:
                    node.set_status("running")
            node = node.parent

    def spawn(self, agent: Agent, kind: ChildKind) -> Node:
        """A new child of this node running `agent` as `kind`, numbered after its siblings."""
        child = Node(self.session, agent, kind, path=self.next_child_path(agent.name), parent=self)
        child.display_text = agent.running_label
        self.order.append(child)
        note_choice(child, agent_choice(child), self.session.bus.last_seq)
        return child

    def record_child(
        self,
        agent: str,
        prompt: str,
        kind: ChildKind,
        *,
        call_id: str | None = None,
        label: str | None = None,
    ) -> Node:
        """A child whose task runs elsewhere and is only recorded here (`kinds.Child`)."""
        mine = self.agent
        spec = type(mine)(
            agent,
            does=label or f"{self.path}'s own sub-agent",
            tools=mine.tools,
            kind=kind,
            hooks=mine.hooks,
            pause_on=mine.pause_on,
        )
        child = self.spawn(spec, kind)
        if label:
            child.display_text = label
        self.emit(
            TaskSpawned(
                child=child.path,
                agent=agent,
                prompt=prompt,
                kind=kind_name(kind),
                call_id=call_id,
                display_text=child.display_text,
            )
        )
        child.input_index, child.input_text = len(child.history), prompt
        child.append(user(prompt))
        child.set_status("running")
        return child

    def record_finished(self, child: Child, outcome: Outcome) -> None:
        """End a recorded child's task (`kinds.Child`)."""
        if not isinstance(child, Node) or child.parent is not self:
            raise ValueError(
                f"{child.path} is not a child of {self.path}: record_finished it there"
            )
        child.append(Message(role="assistant", content=outcome.text))
        child.last_outcome = outcome
        child.set_status(outcome.status)
        self.emit(task_finished(child, outcome))

    async def run_task(self, message: Message | None, *, resume: bool = False) -> Outcome:
        """Run one task on this node through the turn loop (`resume`: go on from storage)."""
        return await run_task(self, message, resume=resume)

    async def summarise(self, messages: Sequence[Message]) -> str:
        """Ask this node's endpoint for a summary of `messages` (visible in events and the wire)."""
        return await summarise(self, messages)


if TYPE_CHECKING:
    _a_node_is_a_child: type[Child] = Node  # mypy checks Node against the port kinds use
