"""The package's import graph has no cycles, counting imports inside functions (ARCHITECTURE.md).

import-linter's layers contract (`make test`) keeps the layers in order; this test also covers the
modules inside one layer. Imports under `if TYPE_CHECKING:` do not run and do not count; the
display hooks (a result, run or session loading the widget layer when shown) are the one
sanctioned way up.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sagents_nb"


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(
    name: str, path: Path, modules: dict[str, Path], *, type_checking: bool = False
) -> set[str]:
    """The package's modules that `name` imports when it runs (any depth), and under
    `if TYPE_CHECKING:` too with `type_checking`."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()

    def target(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package[: len(package) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def walk(tree: ast.AST) -> None:
        for node in ast.iter_child_nodes(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
                if type_checking:
                    walk(node)
                continue
            named: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = target(node)
                named = [f"{base}.{alias.name}" for alias in node.names] + [base]
            elif isinstance(node, ast.Import):
                named = [alias.name for alias in node.names]
            for candidate in named:
                while candidate and candidate not in modules:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    found.add(candidate)
                    break
            walk(node)

    walk(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _sanctioned(importer: str, imported: str) -> bool:
    widgets = "sagents_nb.notebook"
    if imported.startswith(widgets) and not importer.startswith(widgets):
        return True  # display hooks (`_repr_mimebundle_`, `%load_ext`) load the widget layer
    return importer.startswith(widgets) and imported == "sagents_nb"  # widgets use the facade


def test_no_module_imports_itself_through_others() -> None:
    modules = _modules()
    graph = {
        name: {m for m in _imports(name, path, modules) if not _sanctioned(name, m)}
        for name, path in modules.items()
    }
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            here, trail = stack.pop()
            for nxt in graph[here]:
                if nxt == start:
                    cycles.append(" -> ".join([*trail, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*trail, nxt]))
            if cycles:
                break
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_graph_walk_sees_imports_inside_functions() -> None:
    modules = _modules()
    agent = "sagents_nb._runtime.agent"
    assert "sagents_nb._runtime.session" in _imports(agent, modules[agent], modules)


def test_kinds_and_tools_are_typed_against_ports_below_them() -> None:
    # Kinds and node tools see a node as `kinds.Child`: not even a type-only import reaches the
    # runtime, the store, compare or the widgets (issue 27 item 1).
    modules = _modules()
    above = (
        "sagents_nb._runtime",
        "sagents_nb._store",
        "sagents_nb._compare",
        "sagents_nb.notebook",
    )
    reaching = {
        name: sorted(
            m for m in _imports(name, path, modules, type_checking=True) if m.startswith(above)
        )
        for name, path in modules.items()
        if name.startswith(("sagents_nb.kinds", "sagents_nb._tools"))
    }
    assert {name: found for name, found in reaching.items() if found} == {}


def test_the_store_room_names_nothing_above_events_and_base() -> None:
    """`_store/` keeps rows, not runtime objects: not even its type hints name a node, a kind,
    a tool, an endpoint or a session (import-linter's contract counts the imports that run)."""
    modules = _modules()
    allowed = ("sagents_nb._store", "sagents_nb.events", "sagents_nb._base")
    reached = {
        f"{name} -> {imported}"
        for name, path in modules.items()
        if name.startswith("sagents_nb._store")
        for imported in _imports(name, path, modules, type_checking=True)
        if not imported.startswith(allowed)
    }
    assert reached == set()
