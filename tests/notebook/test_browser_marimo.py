"""The live view in marimo (served on loopback by the test, `marimo edit`): as
`mo.ui.anywidget(view(run))` and as a cell's bare last expression, the same tree and controls as
in JupyterLab; a cell's re-run keeps the view mounted; the view follows marimo's light or dark
theme; no request leaves the server's origin."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from benchmarks._browser import Marimo, chromium, marimo

from ._host_runs import TEAM, step_the_paused_child
from .conftest import _require_chromium, fresh_page, screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


def cell(body: str, returns: str = "", uses: str = "") -> str:
    return f"@app.cell\ndef _({uses}):\n{textwrap.indent(body.strip(), '    ')}\n    return {returns}\n"


APP = "\n".join(
    [
        "import marimo\n\napp = marimo.App()\n",
        cell(
            "import marimo as mo\nimport sagents_nb as sn\nfrom sagents_nb.notebook import view",
            "mo, sn, view",
        ),
        # marimo refuses a name defined in two cells: `sn` comes from the first
        cell(TEAM.replace("import sagents_nb as sn\n", ""), "session, run", "sn"),
        cell("wrapped = mo.ui.anywidget(view(run))\nwrapped", "(wrapped,)", "mo, run, view"),
        cell(
            'again = mo.ui.button(label="encore", value=0, on_click=lambda n: n + 1)\nagain',
            "(again,)",
            "mo",
        ),
        cell('print(f"passe {again.value} — 再実行")\nview(session)', "", "again, session, view"),
        'if __name__ == "__main__":\n    app.run()\n',
    ]
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Marimo]:
    _require_chromium()
    with marimo(tmp_path_factory.mktemp("marimo"), APP, theme="system", timeout=30) as running:
        yield running


@pytest.fixture(scope="module")
def browser(served: Marimo) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    with fresh_page(browser, request) as tab:
        yield tab


def test_marimo_shows_the_view_both_ways_and_keeps_it_across_a_rerun(
    page: Any, served: Marimo
) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(served.url)
    views = page.locator(".sagents-view")
    wrapped, bare = views.nth(0), views.nth(1)
    wrapped.wait_for(timeout=60_000)
    bare.wait_for()
    assert wrapped.evaluate("n => n.getRootNode().host.tagName") == "MARIMO-ANYWIDGET"
    step_the_paused_child(wrapped)
    bare.locator(".sn-answer", has_text="Résumé").wait_for()
    status = bare.locator('.sn-node[data-path="coordinator/explore.1"] .sn-status')
    assert (status.text_content() or "").strip() == "done"
    screenshot(page, "live-view-marimo.png")

    # a re-run of the cell that shows `view(session)` updates the view on screen, not a new one
    bare.evaluate("n => { n.__snMark = 'même vue' }")
    page.get_by_role("button", name="encore").click()
    page.get_by_text("passe 1 — 再実行").wait_for()
    page.wait_for_timeout(500)
    assert views.nth(1).evaluate("n => n.__snMark") == "même vue"

    # marimo's theme: light, then dark, the view's surfaces and text following it
    for scheme, background in (("dark", "rgb(24, 28, 26)"), ("light", "rgb(255, 255, 255)")):
        page.emulate_media(color_scheme=scheme)
        wait_until(
            lambda b=background: wrapped.evaluate("n => getComputedStyle(n).backgroundColor") == b,
            timeout=5,
            what=f"the {scheme} theme",
        )
        assert ("sn-dark" in (wrapped.get_attribute("class") or "")) == (scheme == "dark")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "live-view-marimo-dark.png")

    origin = urlsplit(served.url).netloc
    elsewhere = [u for u in requests if urlsplit(u).scheme in ("http", "https", "ws", "wss")]
    assert [u for u in elsewhere if urlsplit(u).netloc != origin] == []
