"""`NodeTool`: a built-in tool that acts on the node that calls it (`task`, `resident_agents`...)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._runtime.node import Node
    from .tool import ToolResult


class NodeTool:
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

    async def run(self, node: Node, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
