"""The README's picture of the live view (`docs/view.png`) is made by this test from a real
JupyterLab and chromium session: `SAGENTS_SCREENSHOT=1` makes it again; otherwise the test only
checks the checked-in file is a PNG of a sane size. (The scene's text is French and ASCII: the
browser here has no CJK or emoji font, and the picture shows what a reader would see.)"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

PICTURE = Path(__file__).resolve().parents[2] / "docs" / "view.png"

SCENE = '''
import sagents_nb as sn

@sn.tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: which file.
    """
    return f"# {path}\\n" + "Le déploiement passe par la CI, puis par la revue. " * 6

FILES = ["README.md", "DEPLOY.md", "docs/ci.md", "docs/review.md"]

def model(request):
    if request.system.startswith("You compress"):
        return "Résumé : la CI, puis la revue ; fichiers lus."
    if "task" in request.tools:
        if not request.tool_results:
            return sn.reply(tool_calls=[
                sn.call("task", agent="reader", prompt="Comment déploie-t-on ?"),
                sn.call("task", agent="scout", prompt="What does the CI check?")])
        return "Deploys go through CI, then review (" + ", ".join(FILES) + ")."
    done = request.turn - 1  # the turns this child took in its task so far
    if request.agent == "reader" and done < len(FILES):
        return sn.reply(tool_calls=[sn.call("read_file", path=FILES[done])])
    if request.agent == "scout" and done < 1:
        return sn.reply(tool_calls=[sn.call("read_file", path="docs/ci.md")])
    return f"{request.agent}: read {done} files"

reader = sn.Agent("reader", does="reads the docs", tools=[read_file],
                  kind=sn.kinds.Resident(400, keep_recent=2))
scout = sn.Agent("scout", does="checks one thing", tools=[read_file])
session = sn.Session(sn.Agent("lead", does="answers questions", team=[reader, scout]),
                     llm=sn.mock_llm(model))
session.send("How do we deploy?").result()
session
'''


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "docs/view.png is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.timeout(150)
def test_the_readme_picture_of_the_view_is_a_real_screenshot(
    request: pytest.FixtureRequest,
) -> None:
    if os.environ.get("SAGENTS_SCREENSHOT") == "1":
        lab: Lab = request.getfixturevalue("lab")
        page: Any = request.getfixturevalue("page")
        open_notebook(page, lab.notebook("readme-picture.ipynb", SCENE))
        run_cell(page, 0)
        view = page.locator(".sagents-view")
        view.locator(".sn-answer", has_text="Deploys go through CI").wait_for()
        view.locator('.sn-node[data-path="lead/reader.1"]').click()
        view.get_by_role("tab", name="Context").click()
        view.locator('.sn-pane[data-tab="context"] .sn-chart').wait_for()
        view.locator(".sn-pane .sn-columns .sn-mark-summary").first.wait_for()
        PICTURE.parent.mkdir(exist_ok=True)
        view.screenshot(path=str(PICTURE))
    assert PICTURE.exists(), "docs/view.png is missing: make it with SAGENTS_SCREENSHOT=1"
    data = PICTURE.read_bytes()
    width, height = _png_size(data)
    assert 800 <= width <= 2000 and 400 <= height <= 2400, (width, height)
    assert 20_000 <= len(data) <= 1_500_000, len(data)
