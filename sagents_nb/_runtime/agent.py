"""Agent specs and sagents-style Task classes; attributes stay mutable so cells can hot-swap them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._base.checks import check_int, check_items, check_str, refuse
from .._base.errors import ConfigurationError
from .._tools.tool import HOOK, Tool, is_hook
from .breakpoints import Breakpoint, by_action, split
from .pausing import checked_pause_on

if TYPE_CHECKING:
    from .._endpoints.openai import LLM
    from ..kinds import ChildKind
    from .result import Result
    from .session import Session

_UNSET = object()

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
        model: the model name, or an endpoint (`sn.LLM(...)`, `sn.mock_llm(...)`, or a URL for
            `sn.LLM(base_url=...)`) this agent calls instead of the session's; a child with
            none inherits its parent's.
        tools: `Tool`s (or plain functions, wrapped with `sn.tool`).
        team: agents or `sn.Task` subclasses this agent may delegate to through the `task` tool.
        kind: a `sn.kinds` instance, a kind class or a registered kind's name (`"resident"`);
            `Main()` for the top agent and `Worker()` for children by default.
        max_turns: model calls per run or task before the agent is stopped (loudly).
        hooks: tool hooks (`before_tool` / `after_tool`) for this agent's calls.
        pause_on: breakpoints for this agent's nodes: actions (`model`, `tool`, `task` to pause
            before; `reply` to pause after its answer, before its parent reads it),
            `sn.when(...)` or callables taking the `PendingAction`; one or several.
        token_budget: total tokens this agent may spend on one task, its children's included (a
            shared pool: a child's budget is the smaller of its own and what is left above it).
        tool_call_budget: tool calls this agent may make on one task.
    """

    def __init__(
        self,
        name: str,
        *,
        does: str = "",
        instructions: str | None = None,
        model: str | LLM | None = None,
        tools: Iterable[Tool | Any] = (),
        team: Iterable[Agent | type[Task]] = (),
        kind: ChildKind | None = None,
        max_turns: int | None = None,
        hooks: Sequence[Any] = (),
        pause_on: Any = (),
        token_budget: int | None = None,
        tool_call_budget: int | None = None,
    ) -> None:
        check_str("name", name, where="sn.Agent(...)")
        where = f"sn.Agent({name!r})"
        check_str("does", does, where=where)
        check_str("instructions", instructions, where=where, optional=True)
        check_int("max_turns", max_turns, where=where, minimum=1, optional=True)
        check_int("token_budget", token_budget, where=where, minimum=1, optional=True)
        check_int("tool_call_budget", tool_call_budget, where=where, minimum=0, optional=True)
        hooks = check_items("hooks", hooks, is_hook, where=where, accepted=HOOK)
        if not name or "/" in name:
            raise ValueError(f"agent name {name!r} must be non-empty and contain no '/'")
        self.name = name
        self.does = does
        self.instructions = instructions
        self.model = model
        self.tools = tool_list(tools, where)
        names = [t.name for t in self.tools]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise ConfigurationError(
                f"agent {name!r} has more than one tool named {', '.join(map(repr, clashes))}; "
                "tool names must be unique in a request: rename one with @sn.tool(name=...)"
            )
        self.team = team_list(team, where)
        self.kind = kind
        self.max_turns = max_turns
        self.hooks = list(hooks)
        self.pause_on = pause_on  # checked by the setter
        self.token_budget = token_budget
        self.tool_call_budget = tool_call_budget
        self.use_instructions: str | None = None
        self.display_text: str | None = None

    def __repr__(self) -> str:
        team = f", team={[member_name(m) for m in self.team]}" if self.team else ""
        return f"Agent({self.name!r}{team})"

    @property
    def kind(self) -> ChildKind | None:
        """The agent's kind; assign a new one between cells and it is swapped in at the next
        turn boundary (a kind class or a registered name is turned into a kind here)."""
        return self._kind

    @kind.setter
    def kind(self, value: ChildKind | str | type | None) -> None:
        if value is self.__dict__.get("_kind_given", _UNSET) or value is self.__dict__.get(
            "_kind", _UNSET
        ):
            return  # the same again (a Task class's kind is assigned at each turn boundary)
        from ..kinds import checked_kind  # the kinds load with the first kind given, not sn.Agent

        self._kind = checked_kind(value, where=f"sn.Agent({self.name!r})")
        self._kind_given = value

    @property
    def model(self) -> str | LLM | None:
        """The model name or endpoint; assign a new one between cells for the next request."""
        return self._model

    @model.setter
    def model(self, value: str | LLM | None) -> None:
        if value is self.__dict__.get("_model_given", _UNSET) or value is self.__dict__.get(
            "_model", _UNSET
        ):
            return
        self._model = checked_model("model", value, where=f"sn.Agent({self.name!r})")
        self._model_given = value

    @property
    def pause_on(self) -> set[Any]:
        """This agent's breakpoints (action names, `sn.when(...)`, callables); set it to one
        or several (checked)."""
        return self._pause_on

    @pause_on.setter
    def pause_on(self, actions: Any) -> None:
        self._pause_on = checked_pause_on(actions, f"Agent({self.name!r})")
        self.pause_tests: tuple[Breakpoint, ...] = split(self._pause_on)[1]
        """The predicates among them (tested at each gate)."""
        self.pause_tests_at = by_action(self.pause_tests)
        """The same for each action (`breakpoints.by_action`)."""

    @property
    def running_label(self) -> str:
        """What labels a running task call to this agent: `display_text`, else "Running <name>"."""
        return self.display_text or f"Running {self.name}"

    def members(self) -> list[Agent]:
        """The agents behind this agent's team members (a `Task` class compiles to one)."""
        return [member_agent(m) for m in self.team]

    def member(self, name: str) -> Agent | None:
        """The team member called `name`, or None."""
        return next((a for a in self.members() if a.name == name), None)

    async def run(
        self, prompt: str, *, llm: LLM | None = None, pause_on: Any = (), **session: Any
    ) -> Result:
        """Run once on a fresh session and return the `Result` (async)."""
        return await self._session(llm, session).run(prompt, pause_on=pause_on)

    def run_sync(
        self, prompt: str, *, llm: LLM | None = None, pause_on: Any = (), **session: Any
    ) -> Result:
        """Run once and wait for the `Result`; works in scripts and inside a running loop alike.

        Ctrl-C (a kernel interrupt) cancels the run: dangling tool calls are answered as
        cancelled, and `KeyboardInterrupt` is re-raised once the run has ended (or after 5 s).
        """
        return self._session(llm, session)._run_waiting(prompt, pause_on, what="agent.run_sync()")

    def _session(self, llm: LLM | None, options: dict[str, Any]) -> Session:
        """The fresh session of one run. Stored, its record goes in with the run's first commit
        (one transaction less a run) unless its id was chosen, which is checked at once."""
        # the session loads the rest of the runtime, the kinds and the endpoint: at the first run
        from .session import Session

        store = options.pop("store", None)
        session = Session(self, llm=llm, **options)
        if store is not None:
            session._record_into(store, later=options.get("session_id") is None)
        return session


class Task:
    """Base class for sagents-style task specs; a subclass may stand in a `team` directly.

    Class attributes: `task_name`, `description`, `instructions`, and optionally `use_instructions`
    (served lazily by the `get_task_instructions` tool), `display_text` (labels the running call),
    `model_override` (the child's model name or endpoint), `tools`, `team` and `kind`. They are
    checked when the class is defined and read again at each turn boundary.
    """

    task_name: ClassVar[str]
    description: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    use_instructions: ClassVar[str | None] = None
    display_text: ClassVar[str | None] = None
    model_override: ClassVar[Any] = None
    tools: ClassVar[Sequence[Any]] = ()
    team: ClassVar[Sequence[Any]] = ()
    kind: ClassVar[Any] = None

    _compiled: ClassVar[Agent | None] = None
    _compiled_tools: ClassVar[Sequence[Any] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("task_name", getattr(cls, "task_name", None))
        if not isinstance(name, str) or not name or "/" in name:
            raise TypeError(
                f"sn.Task subclass {cls.__name__} needs task_name = '<name>' (a non-empty string "
                f"without '/'; children are named after it), not {name!r}"
            )
        where = f"sn.Task subclass {cls.__name__}"
        checked_model("model_override", cls.model_override, where=where)
        from ..kinds import checked_kind

        checked_kind(cls.kind, where=where)
        for field, allowed in _TASK_FIELDS.items():
            value = getattr(cls, field)
            if not isinstance(value, allowed):
                raise TypeError(
                    f"sn.Task subclass {cls.__name__}: {field} must be a plain value "
                    f"({' or '.join(t.__name__ for t in allowed)}), not "
                    f"{type(value).__name__}; write `{field} = ...` as a class attribute "
                    "(callbacks written as methods are not called)"
                )
        check_items("tools", cls.tools, callable, where=where, accepted="a tool or a function")
        check_items("team", cls.team, is_member, where=where, accepted=MEMBER)

    @classmethod
    def as_agent(cls) -> Agent:
        """The child agent this task compiles to: one per class, its fields read from the class
        each time, so a class edited between cells takes effect at the next turn."""
        agent = cls.__dict__.get("_compiled")
        if agent is None:
            agent = cls._compiled = Agent(cls.task_name)
        agent.does = cls.description
        agent.instructions = f"{TASK_BOILERPLATE}\n\n{cls.instructions}".rstrip()
        agent.model = cls.model_override
        if cls.__dict__.get("_compiled_tools") is not cls.tools:  # wrapping tools is costly
            agent.tools = tool_list(cls.tools, f"sn.Task subclass {cls.__name__}")
            cls._compiled_tools = cls.tools
        agent.team = list(cls.team)
        agent.kind = cls.kind
        agent.use_instructions = cls.use_instructions
        agent.display_text = cls.display_text
        return agent


_TASK_FIELDS: dict[str, tuple[type, ...]] = {
    "description": (str,),
    "instructions": (str,),
    "use_instructions": (str, type(None)),
    "display_text": (str, type(None)),
    "tools": (list, tuple),
    "team": (list, tuple),
}
"""Task attributes that must be plain values, and the types each may have."""


MEMBER = "an sn.Agent or an sn.Task subclass"


def is_member(value: object) -> bool:
    """Whether `value` may stand in a team: an `Agent` or an `sn.Task` subclass."""
    return isinstance(value, Agent) or (isinstance(value, type) and issubclass(value, Task))


def tool_list(tools: Any, where: str) -> list[Tool]:
    """`tools=` as `Tool`s: each a `Tool` or a function (wrapped with `sn.tool`); one alone too."""
    if isinstance(tools, Tool) or (callable(tools) and not isinstance(tools, type)):
        tools = [tools]
    items = check_items("tools", tools, callable, where=where, accepted="a tool or a function")
    return [t if isinstance(t, Tool) else Tool(t) for t in items]


def team_list(team: Any, where: str) -> list[Agent | type[Task]]:
    """`team=` as a list: each an `Agent` or an `sn.Task` subclass; one alone too."""
    if is_member(team):
        return [team]
    return check_items("team", team, is_member, where=where, accepted=MEMBER)


def checked_model(name: str, value: Any, *, where: str) -> Any:
    """A model name, an endpoint, or None; a URL (`http://...`) becomes `sn.LLM(base_url=...)`."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.startswith(("http://", "https://")):
            from .._endpoints.openai import LLM

            return LLM(base_url=value)
        return value
    from .._endpoints.openai import LLM  # an endpoint given: httpx is loaded already

    if not isinstance(value, LLM):
        refuse(
            name,
            value,
            "a model name (str), an endpoint (sn.LLM(...), sn.mock_llm(...)), a URL or None",
            where=where,
        )
    return value


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
