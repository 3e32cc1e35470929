"""Agent specs and sagents-style Task classes; attributes stay mutable so cells can hot-swap them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._tools.tool import Tool

if TYPE_CHECKING:
    from .._endpoints.openai import LLM
    from ..kinds import ChildKind
    from .result import Result

TASK_BOILERPLATE = (
    "You are a sub-agent handling one bounded task for another agent. Complete the task, or fail "
    "clearly and say why. There is no user to ask: work with what you have. Return a concise "
    "result: your final message is handed back as the task's answer."
)


class Agent:
    """An agent spec: who it is, what it may call, whom it may delegate to, and its kind.

    Args:
        name: a short name; children's ids are built from it.
        does: one line on what the agent does (shown to parents in the `task` tool).
        instructions: the system prompt.
        model: the model name; a child with none inherits its parent's.
        tools: `Tool`s (or plain functions, wrapped with `sn.tool`).
        team: agents or `sn.Task` subclasses this agent may delegate to through the `task` tool.
        kind: a `sn.kinds` instance; `Main()` for the top agent and `Worker()` for children by default.
        max_turns: model calls per run or task before the agent is stopped (loudly).
        hooks: tool hooks (`before_tool` / `after_tool`) for this agent's calls.
        pause_on: actions (`model`, `tool`, `task`) to pause before, for this agent.
        token_budget: total tokens this agent may spend on one task.
        tool_call_budget: tool calls this agent may make on one task.
    """

    def __init__(
        self,
        name: str,
        *,
        does: str = "",
        instructions: str | None = None,
        model: str | None = None,
        tools: Iterable[Tool | Any] = (),
        team: Iterable[Agent | type[Task]] = (),
        kind: ChildKind | None = None,
        max_turns: int | None = None,
        hooks: Sequence[Any] = (),
        pause_on: Iterable[str] = (),
        token_budget: int | None = None,
        tool_call_budget: int | None = None,
    ) -> None:
        if not name or "/" in name:
            raise ValueError(f"agent name {name!r} must be non-empty and contain no '/'")
        self.name = name
        self.does = does
        self.instructions = instructions
        self.model = model
        self.tools = [t if isinstance(t, Tool) else Tool(t) for t in tools]
        self.team = list(team)
        self.kind = kind
        self.max_turns = max_turns
        self.hooks = list(hooks)
        self.pause_on = set(pause_on)
        self.token_budget = token_budget
        self.tool_call_budget = tool_call_budget
        self.use_instructions: str | None = None
        self.display_text: str | None = None

    def __repr__(self) -> str:
        team = f", team={[member_name(m) for m in self.team]}" if self.team else ""
        return f"Agent({self.name!r}{team})"

    def members(self) -> list[Agent]:
        """The agents behind this agent's team members (a `Task` class compiles to one)."""
        return [member_agent(m) for m in self.team]

    def member(self, name: str) -> Agent | None:
        """The team member called `name`, or None."""
        return next((a for a in self.members() if a.name == name), None)

    async def run(
        self, prompt: str, *, llm: LLM | None = None, pause_on: Iterable[str] = (), **session: Any
    ) -> Result:
        """Run once on a fresh session and return the `Result` (async)."""
        from .session import Session

        return await Session(self, llm=llm, **session).run(prompt, pause_on=pause_on)

    def run_sync(
        self, prompt: str, *, llm: LLM | None = None, pause_on: Iterable[str] = (), **session: Any
    ) -> Result:
        """Run once and wait for the `Result`; works in scripts and inside a running loop alike."""
        from .._base.loop import run_sync
        from .session import Session

        return run_sync(
            Session(self, llm=llm, **session).run(prompt, pause_on=pause_on),
            what="agent.run_sync()",
        )


class Task:
    """Base class for sagents-style task specs; a subclass may stand in a `team` directly.

    Class attributes: `task_name`, `description`, `instructions`, and optionally `use_instructions`
    (served lazily by the `get_task_instructions` tool), `display_text` (labels the running call),
    `model_override` (the child's model), `tools`, `team` and `kind`.
    """

    task_name: ClassVar[str]
    description: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    use_instructions: ClassVar[str | None] = None
    display_text: ClassVar[str | None] = None
    model_override: ClassVar[str | None] = None
    tools: ClassVar[Sequence[Any]] = ()
    team: ClassVar[Sequence[Any]] = ()
    kind: ClassVar[Any] = None

    _compiled: ClassVar[Agent | None] = None

    @classmethod
    def as_agent(cls) -> Agent:
        """The child agent this task compiles to (built once per class)."""
        if cls.__dict__.get("_compiled") is None:
            agent = Agent(
                cls.task_name,
                does=cls.description,
                instructions=f"{TASK_BOILERPLATE}\n\n{cls.instructions}".rstrip(),
                model=cls.model_override,
                tools=cls.tools,
                team=cls.team,
                kind=cls.kind,
            )
            agent.use_instructions = cls.use_instructions
            agent.display_text = cls.display_text
            cls._compiled = agent
        return cls.__dict__["_compiled"]  # type: ignore[no-any-return]


def member_agent(member: Agent | type[Task]) -> Agent:
    """The agent behind a team member."""
    if isinstance(member, Agent):
        return member
    if isinstance(member, type) and issubclass(member, Task):
        return member.as_agent()
    raise TypeError(f"team members must be sn.Agent or sn.Task subclasses, got {member!r}")


def member_name(member: Agent | type[Task]) -> str:
    """A team member's name."""
    return member_agent(member).name
