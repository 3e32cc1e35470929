"""The view's one ES module, joined from the shell and its pane modules: every module is in it,
nothing is loaded over the network, each pane names the Python that builds its state, and a
module the join cannot inline (or a name two modules declare) is refused with the reason."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sagents_nb.notebook._offline import _code as offline_code
from sagents_nb.notebook._view_module import LIT, MARK, STATIC, view_module, view_modules
from sagents_nb.notebook._widget import LiveView

NOTEBOOK = STATIC.parent
OFFLINE = "offline.js"
"""The saved file's model (`_offline`), joined after the view's module in a saved page only."""
BROWSER = "browse.js"  # the store browser's shell: a widget of its own (notebook/_browse.py)
SOURCES = sorted(
    p.relative_to(STATIC).as_posix()
    for p in STATIC.rglob("*.js")
    if p.name not in (LIT, OFFLINE, BROWSER)
)


def inlined(esm: str) -> list[str]:
    return re.findall(rf"^{re.escape(MARK)}(\S+)$", esm, re.MULTILINE)


def test_the_widget_inlines_every_module_once_and_the_shell_last() -> None:
    names = inlined(LiveView._esm)
    assert sorted(names) == SOURCES, "a module under static/ is not imported by view.js"
    assert len(names) == len(set(names))
    assert names[-1] == "view.js"
    assert len(SOURCES) >= 12  # the shell and a module per pane


def test_a_saved_page_joins_the_offline_model_after_the_view() -> None:
    code = offline_code()
    assert inlined(code) == [*inlined(LiveView._esm), OFFLINE]
    assert "export default" not in code and "const VIEW = { render };" in code
    assert not re.search(r"""\bimport\s*\(""", code)
    assert re.findall(r"^import\b", code, re.MULTILINE) == ["import"]  # lit-html's, vendored


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to parse the module")
def test_a_saved_pages_code_parses_as_one_es_module(tmp_path: Path) -> None:
    path = tmp_path / "saved.mjs"
    path.write_text(offline_code(), encoding="utf-8")
    checked = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_the_inlined_module_loads_nothing_over_the_network() -> None:
    esm = LiveView._esm
    assert not re.search(r"""\bimport\b[^;]*?\bfrom\s*["'](?:https?:|//)""", esm)
    assert not re.search(r"""\bimport\s*\(""", esm)
    imports = re.findall(r'^import \{[^}]*\} from "([^"]{0,28})', esm, re.MULTILINE)
    assert imports == ["data:text/javascript;base64,"]  # lit-html, vendored
    assert esm.rstrip().endswith("export default { render };")


def test_each_pane_module_names_the_python_that_builds_its_state() -> None:
    for name in [*SOURCES, OFFLINE]:
        if name == "view.js":
            continue
        text = (STATIC / name).read_text(encoding="utf-8")
        (line,) = re.findall(r"^// Its state: (.*)$", text, re.MULTILINE) or [None]
        assert line, f"static/{name} does not say where its state is built"
        for part in line.split(";"):
            (module,) = re.findall(r"notebook/(\w+\.py)", part)
            python = (NOTEBOOK / module).read_text(encoding="utf-8")
            for builder in re.findall(r"([\w.]+)\(\)", part):
                assert f"def {builder.rpartition('.')[2]}(" in python, (name, module, builder)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to parse the module")
def test_the_joined_module_parses_as_one_es_module(tmp_path: Path) -> None:
    # inlined, the modules share one scope: a name declared twice would be a SyntaxError
    path = tmp_path / "view.mjs"
    path.write_text(LiveView._esm, encoding="utf-8")
    checked = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def static_dir(tmp_path: Path, **files: str) -> Path:
    (tmp_path / "panes").mkdir()
    shutil.copy(STATIC / LIT, tmp_path / LIT)
    (tmp_path / "view.js").write_text(
        'import { html, render as paint } from "./lit-html.js";\n'
        'import { pane } from "./panes/pane.js";\n\n'
        "function render({ el }) {\n  paint(html`${pane()}`, el);\n}\n\n"
        "export default { render };\n"
    )
    for name, text in files.items():
        (tmp_path / "panes" / f"{name}.js").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_pane_is_joined_after_what_it_imports(tmp_path: Path) -> None:
    static = static_dir(
        tmp_path,
        pane='import { html } from "../lit-html.js";\nimport { label } from "./parts.js";\n\n'
        "export function pane() {\n  return html`<b>${label('週報 📈')}</b>`;\n}\n",
        parts="export const label = (text) => `« ${text} »`;\n",
    )
    assert [m.name for m in view_modules(static)] == ["panes/parts.js", "panes/pane.js", "view.js"]
    esm = view_module(static)
    assert esm.count("\nimport ") == 0 and esm.startswith("import { html, render as paint } from")
    assert "const label = " in esm and "export const" not in esm
    assert "週報 📈" in esm


@pytest.mark.parametrize(
    ("pane", "says"),
    [
        (
            'import { html } from "https://cdn.example/lit.js";\nexport function pane() {}\n',
            "no package or network import",
        ),
        (
            'import { html } from "../lit-html.js";\nexport function pane() {\n'
            '  return import("https://cdn.example/x.js");\n}\n',
            "no default, namespace, dynamic or URL import",
        ),
        ('import * as lit from "../lit-html.js";\nexport function pane() {}\n', "only `import {"),
        ('import { other } from "./missing.js";\nexport function pane() {}\n', "no static/panes"),
        ("function pane() {}\nexport default pane;\n", "`export default` is the shell's"),
        ("export function paint() {}\n", "does not export them"),
        (  # inlined, the modules share one scope
            "function render() {}\nexport function pane() {}\n",
            "`render` is declared by static/panes/pane.js and static/view.js",
        ),
    ],
)
def test_a_module_the_join_cannot_inline_is_refused(tmp_path: Path, pane: str, says: str) -> None:
    with pytest.raises(RuntimeError, match=re.escape(says)):
        view_module(static_dir(tmp_path, pane=pane))
