"""`resident_agents`: the control tool a parent of resident children gets (list, inspect, compress,
destroy)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .._tools.node_tool import NodeTool
from .._tools.tool import ToolResult
from ._protocol import CompactUnsupported

if TYPE_CHECKING:
    from ._child import Child


class ResidentControlTool(NodeTool["Child"]):
    """`resident_agents`: list, inspect, compress or destroy this agent's resident children."""

    name = "resident_agents"
    description = (
        "Manage your resident sub-agents (children that remember across tasks): "
        "list them, inspect one, compress its context, or destroy it."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "inspect", "compress", "destroy"]},
            "id": {"type": "string", "description": "the resident's id (for all but list)"},
            "residual": {
                "type": "string",
                "enum": ["keep", "drop"],
                "description": "for destroy: hand queued inputs back (keep) or skip them",
            },
        },
        "required": ["action"],
    }

    def _manages(self, child: Child) -> bool:
        """The tool manages the children whose kind gives it to their parent."""
        return any(tool is self for tool in child.kind.parent_tools())

    async def run(self, node: Child, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        action = arguments.get("action")
        residents = {c.path: c for c in node.persistent.values() if self._manages(c)}
        if action == "list":
            return ToolResult(
                call_id, self.name, json.dumps([c.kind.describe(c) for c in residents.values()])
            )
        child = residents.get(str(arguments.get("id")))
        if child is None:
            return ToolResult(
                call_id,
                self.name,
                f"error: no resident with id "
                f"{arguments.get('id')!r} (residents: {', '.join(residents) or 'none'})",
                "error",
            )
        if action == "inspect":
            info = child.kind.describe(child)
            info["recent"] = [f"{m.role}: {(m.content or '')[:200]}" for m in child.history[-6:]]
            return ToolResult(call_id, self.name, json.dumps(info))
        if action == "compress":
            try:
                report = await child.kind.compact(child)
            except CompactUnsupported as exc:
                return ToolResult(call_id, self.name, f"error: {exc}", "error")
            return ToolResult(
                call_id,
                self.name,
                f"compacted {child.path} by {report.strategy}: {report.before_tokens} "
                f"-> {report.after_tokens} tokens, {report.removed} messages folded",
            )
        if action == "destroy":
            residual = arguments.get("residual", "keep")
            if residual not in ("keep", "drop"):
                return ToolResult(
                    call_id, self.name, "error: residual must be keep or drop", "error"
                )
            node.forget(child)
            note = child.kind.dispose(child, residual)
            stopped = await node.stop_tasks_of(child, f"{child.path} was destroyed")
            if stopped:
                note += f"; {stopped} task(s) in flight stopped (answered as cancelled)"
            child.set_status("destroyed", note)
            return ToolResult(call_id, self.name, note)
        return ToolResult(
            call_id,
            self.name,
            f"error: unknown action {action!r} (use list, inspect, compress or destroy)",
            "error",
        )


RESIDENT_CONTROL = ResidentControlTool()
