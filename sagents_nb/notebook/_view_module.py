"""The view's one ES module, made from the shell `static/view.js` and the modules it imports
(`static/panes/*.js`, one per pane), with no build step.

anywidget loads the widget's `_esm` text from a blob, where a relative import has nothing to
resolve against, so the modules are joined here, each after those it imports: their imports of
each other dropped (every name then lives in the one module's scope, so a top-level name is
declared once in all of them), `export` dropped before `function` and `const`, and their
lit-html imports merged into one import of the vendored `static/lit-html.js` as a data: URL.
A module may import only `{ names }` from a relative `.js` file under `static/`: no package,
network or dynamic import."""

from __future__ import annotations

import base64
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).parent / "static"
SHELL = "view.js"
LIT = "lit-html.js"
MARK = "// ---- static/"
"""What starts each module's part of the joined text, before its name."""

_IMPORT = re.compile(r'^import \{([^}]*)\} from "([^"]+)";\n', re.MULTILINE)
_OTHER_IMPORT = re.compile(r"^import\b|\bimport\s*\(", re.MULTILINE)
_EXPORTED = re.compile(r"^export (?:function|const) (\w+)", re.MULTILINE)
_EXPORT = re.compile(r"^export (?=function |const )", re.MULTILINE)
_DECLARED = re.compile(r"^(?:function|const|let|class) (\w+)", re.MULTILINE)


@dataclass(frozen=True)
class Module:
    """One module of the view, ready to join."""

    name: str
    """Its path under `static/`, e.g. `panes/tree.js`."""
    text: str
    """Its code, without its imports and `export` keywords."""
    lit: tuple[str, ...]
    """What it imports from lit-html, as written (`render as paint`)."""


def view_module(static: Path = STATIC, shell: str = SHELL) -> str:
    """The view's ES module (or another widget's, from its own `shell` under `static/`):
    lit-html's import when a module uses it, then every module, each after its imports."""
    modules = view_modules(static, shell)
    names = _lit_names(modules)
    _check_declared_once(modules)
    parts = []
    if names:
        lit = base64.b64encode((static / LIT).read_bytes()).decode("ascii")
        parts.append(f'import {{ {", ".join(names)} }} from "data:text/javascript;base64,{lit}";\n')
    parts += [f"{MARK}{module.name}\n{module.text}" for module in modules]
    return "\n".join(parts)


def view_modules(static: Path = STATIC, shell: str = SHELL) -> list[Module]:
    """The shell and the modules it imports, directly or not, each after those it imports."""
    order: list[Module] = []
    exports: dict[str, set[str]] = {}
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in exports:
            return
        if name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(name) :], name])
            raise RuntimeError(f"the view's modules import each other in a cycle: {cycle}")
        visiting.append(name)
        source = (static / name).read_text(encoding="utf-8")
        lit: list[str] = []
        for listed, spec in _IMPORT.findall(source):
            wanted = [item.strip() for item in listed.split(",") if item.strip()]
            target = _resolve(static, name, spec)
            if target == LIT:
                lit += wanted
                continue
            if any(" as " in item for item in wanted):
                raise RuntimeError(
                    f"static/{name} renames with `as` what it imports from {spec}: inlined, "
                    "the modules share their names, so import them as they are named"
                )
            visit(target)
            missing = sorted(set(wanted) - exports[target])
            if missing:
                raise RuntimeError(
                    f"static/{name} imports {', '.join(missing)} from {spec}, "
                    "which does not export them"
                )
        body = _IMPORT.sub("", source)
        if _OTHER_IMPORT.search(body):
            raise RuntimeError(
                f'static/{name}: only `import {{ names }} from "./file.js";` can be inlined '
                "(no default, namespace, dynamic or URL import)"
            )
        exports[name] = set(_EXPORTED.findall(body))
        body = _EXPORT.sub("", body)
        if name != shell and re.search(r"^export\b", body, re.MULTILINE):
            raise RuntimeError(
                f"static/{name}: only `export function` and `export const` can be inlined "
                "(`export default` is the shell's)"
            )
        order.append(Module(name, re.sub(r"\n{3,}", "\n\n", body).strip() + "\n", tuple(lit)))
        visiting.pop()

    visit(shell)
    return order


def _resolve(static: Path, name: str, spec: str) -> str:
    target = posixpath.normpath(posixpath.join(posixpath.dirname(name), spec))
    if not spec.startswith(("./", "../")) or target.startswith("..") or not spec.endswith(".js"):
        raise RuntimeError(
            f"static/{name} imports {spec!r}: only .js files under static/, by a relative path, "
            "can be inlined (no package or network import)"
        )
    if not (static / target).is_file():
        raise RuntimeError(f"static/{name} imports {spec}: there is no static/{target}")
    return target


def _lit_names(modules: list[Module]) -> list[str]:
    """Every module's lit-html imports, merged; a local name must stand for one lit-html name."""
    merged: dict[str, str] = {}
    for module in modules:
        for item in module.lit:
            local = item.split(" as ")[-1].strip()
            if merged.setdefault(local, item) != item:
                raise RuntimeError(
                    f"static/{module.name} imports lit-html's {item!r}, another module "
                    f"{merged[local]!r}: give a name one meaning in every module"
                )
    return list(merged.values())


def _check_declared_once(modules: list[Module]) -> None:
    seen: dict[str, str] = {}
    for module in modules:
        for declared in _DECLARED.findall(module.text):
            if seen.setdefault(declared, module.name) != module.name:
                raise RuntimeError(
                    f"`{declared}` is declared by static/{seen[declared]} and static/"
                    f"{module.name}: inlined they share one scope, so rename one of them"
                )
