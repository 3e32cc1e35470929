"""A notebook's export (nbconvert HTML, as nbviewer shows it) draws each view's output with the
same viewer the saved file has, working offline; with JavaScript off it shows the static text
(issue 31 item 2)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from benchmarks._browser import chromium

from .conftest import XSS, _require_chromium

pytestmark = [pytest.mark.browser, pytest.mark.kernel, pytest.mark.timeout(180)]

CELLS = [
    """
import sagents_nb as sn
from sagents_nb.notebook import view
from tests.notebook._saved_runs import delegating_session, finished
from tests.notebook.conftest import XSS

session = finished(delegating_session(children=1, turns=2))
view(session)
""",
    """
solo = sn.Session(sn.Agent("solo"), llm=sn.script("deuxième vue — 二つ目 🎌 " + XSS))
solo.send("salut").result()
view(solo)
""",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A notebook with two views, executed and exported to HTML (before the browser starts)."""
    _require_chromium()
    where = tmp_path_factory.mktemp("export")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(cell) for cell in CELLS]
    root = Path(__file__).resolve().parents[2]
    NotebookClient(nb, kernel_name="python3", timeout=90).execute(cwd=str(root))
    body, _ = HTMLExporter().from_notebook_node(nb)
    path = where / "exporté — 書き出し.html"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser(exported: Path) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def test_each_views_output_embeds_the_viewer(exported: Path, browser: Any) -> None:
    page_html = exported.read_text(encoding="utf-8")
    assert page_html.count('class="sagents-data"') == 2
    # nbclient keeps the widgets' state too, which nbconvert writes as JSON of its own
    outputs = re.sub(
        r'<script type="application/vnd.jupyter.widget-state\+json">.*?</script>',
        "",
        page_html,
        flags=re.S,
    )
    assert "<img src=x" not in outputs and "<script>window.__xss" not in outputs
    context = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(exported.as_uri())
        for index in range(2):
            page.locator(".sagents-saved").nth(index).and_(
                page.locator("[data-ready='true']")
            ).wait_for()
        views = page.locator(".sagents-saved .sagents-view")
        assert views.count() == 2
        assert page.locator(".sagents-fallback").first.is_hidden()
        first = views.first
        first.locator('.sn-node[data-path="coordinator/explore.1"]').first.click()
        first.locator('.sn-tabs [data-tab="tools"]').first.click()
        pane = first.locator('.sn-pane[data-tab="tools"][data-node="coordinator/explore.1"]')
        pane.wait_for()
        assert "mot 0 言葉" in pane.inner_text()
        second = views.nth(1)
        assert "deuxième vue — 二つ目 🎌" in second.inner_text()
        assert XSS in second.inner_text()  # as text
        # sized to its content: as tall as the view drawn, no frame of a fixed height
        box = page.locator(".sagents-offline").nth(1).bounding_box()
        drawn = second.bounding_box()
        assert box is not None and drawn is not None and abs(box["height"] - drawn["height"]) < 2
        assert page.evaluate("window.__xss") is None
        assert errors == []
    finally:
        context.close()


def test_without_javascript_the_export_shows_the_static_text(exported: Path, browser: Any) -> None:
    context = browser.new_context(java_script_enabled=False, offline=True)
    try:
        page = context.new_page()
        page.goto(exported.as_uri())
        static = page.locator(".sagents-static")
        assert static.count() == 2
        first, second = static.nth(0).inner_text(), static.nth(1).inner_text()
        assert page.locator(".sagents-view").count() == 0
    finally:
        context.close()
    assert "coordinator/explore.1" in first and "lis le chapitre 0 — 第0章 📖" in first
    assert "[done] deuxième vue — 二つ目 🎌 " + XSS in second
