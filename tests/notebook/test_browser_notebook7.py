"""The live view in Jupyter Notebook 7 (the `notebook` package, served on loopback by the test):
the same tree and controls as in JupyterLab, and no request beyond the server's own origin."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from benchmarks._browser import Lab, jupyter_lab, open_notebook, run_cell

from ._host_runs import TEAM, step_the_paused_child
from .conftest import _require_chromium, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Notebook 7 in place of JupyterLab for this module's `browser` and `page` fixtures."""
    _require_chromium()
    with jupyter_lab(tmp_path_factory.mktemp("nb7"), timeout=30, app="notebook") as running:
        yield running


def test_step_a_paused_child_in_notebook_7_without_leaving_the_origin(page: Any, lab: Lab) -> None:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    url = lab.notebook("équipe.ipynb", TEAM + "\nrun\n")
    open_notebook(page, url)
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    step_the_paused_child(view)
    screenshot(page, "live-view-notebook7.png")
    origin = urlsplit(lab.url).netloc
    elsewhere = [u for u in requests if urlsplit(u).scheme in ("http", "https", "ws", "wss")]
    elsewhere = [u for u in elsewhere if urlsplit(u).netloc != origin]
    assert elsewhere == []
    assert requests  # the listener saw the page's own requests
