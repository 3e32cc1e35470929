"""`NodeTool`: a built-in tool that acts on the node that calls it (`task`, `resident_agents`...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .tool import ToolResult

NodeT = TypeVar("NodeT", contravariant=True)
"""What `run` acts on: `sn.kinds.Child` for a kind's tool, the runtime's node for its own."""


class NodeTool(Generic[NodeT]):
    """A built-in tool that acts on the calling node (`task`, `resident_agents`, ...)."""

    name: str = ""
    description: str = ""
    parameters: dict[str, Any] = {}  # noqa: RUF012 - replaced per instance

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def run(self, node: NodeT, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
