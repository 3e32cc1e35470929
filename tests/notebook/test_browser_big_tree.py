"""Real-browser test of a large stored tree (issue 32 item 1): a session of 2,001 nodes (about
32,000 events) reopened in JupyterLab shows its tree at once, with aggregate rows for the
children not listed; its events are read afterwards (the pane says so meanwhile) and a click on
a grandchild's row lands; then, while a new run streams into the same view, every click lands.
No timing is asserted (`benchmarks/view_browser.py` measures)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell

from .conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

BUILD = '''
import asyncio
import sagents_nb as sn
from sagents_nb.notebook import view

CHILDREN, EACH = 20, 99

@sn.tool
def sonder(n: int) -> str:
    """Probe one thing.

    Args:
        n: which.
    """
    return f"sondé {n} — 調べた ✓"

async def handler(req):
    prompt = req.last_user or ""
    if "task" in req.tools and req.last["role"] == "user":
        if prompt.startswith("groupe"):
            count = 30 if "encore" in prompt else EACH
            calls = [sn.call("task", agent="feuille", prompt=f"{prompt} · feuille {i}")
                     for i in range(count)]
        else:
            groups = ["groupe encore 東京 0", "groupe encore 東京 1"] if prompt == "encore" else [
                f"groupe {i} 🚀" for i in range(CHILDREN)]
            calls = [sn.call("task", agent="milieu", prompt=group) for group in groups]
        return sn.reply(tool_calls=calls)
    if "sonder" in req.tools and req.last["role"] == "user":
        if "encore" in prompt:
            await asyncio.sleep(1.0)  # the new run streams for a few seconds
        return sn.reply(tool_calls=[sn.call("sonder", n=len(prompt))])
    return "fini ✓"

feuille = sn.Agent("feuille", does="sonde", tools=[sonder])
milieu = sn.Agent("milieu", does="répartit", team=[feuille])
racine = sn.Agent("racine", does="délègue", team=[milieu])
options = dict(llm=sn.mock_llm(handler), max_nodes=3000, max_model_calls=None)
first = sn.Session(racine, store="big.db", **options)
first.send("go").result()
first.store.close()
print("BUILT", len(first.events))
'''
OPEN = "session = sn.Session.open('big.db', first.id, agent=racine, **options)\nview(session)"
STREAM = 'run = session.send("encore")'


def test_a_large_stored_tree_opens_with_aggregate_rows_and_clicks_land(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("big_tree.ipynb", BUILD, OPEN, STREAM), timeout=60_000)
    run_cell(page, 0)
    built = page.locator('.jp-OutputArea-output[data-mime-type$="stdout"]', has_text="BUILT")
    built.wait_for(timeout=180_000)
    assert int(built.inner_text().split()[1]) > 30_000
    run_cell(page, 1)
    view = page.locator(".sagents-view")
    view.locator('.sn-node[data-path="racine"]').wait_for(timeout=60_000)
    summary = view.locator(".sn-tree-summary")
    assert summary.inner_text().startswith("2001 nodes")
    # 20 children listed under the root; under each child 20 leaves and one aggregate row
    assert (
        view.locator('.sn-node[data-path^="racine/milieu."]:not([data-path*="/feuille"])').count()
        == 20
    )
    aggregate = view.locator(".sn-more-row").first
    assert "79 more children: 79 done" in aggregate.inner_text()
    leaf = "racine/milieu.3/feuille.7"
    view.locator(f'.sn-node[data-path="{leaf}"]').click()
    pane = view.locator(f'.sn-pane[data-node="{leaf}"]')
    pane.wait_for(timeout=30_000)
    # once the stored events are read, the pane shows the leaf's transcript
    pane.get_by_text("sondé", exact=False).first.wait_for(timeout=120_000)
    assert "groupe 2 🚀 · feuille 6" in pane.inner_text()
    assert "stored events…" not in pane.inner_text()
    screenshot(page, "big-tree.png")

    run_cell(page, 2)  # a new run streams into the same view: two more children of the root
    view.locator(".sn-more-row", has_text="2 more children").click()
    view.locator('.sn-node[data-path="racine/milieu.21"]').wait_for(timeout=60_000)
    clicked = ["racine/milieu.21", "racine/milieu.5/feuille.2", "racine/milieu.1", leaf]
    for path in clicked:
        view.locator(f'.sn-node[data-path="{path}"]').click()
        view.locator(f'.sn-pane[data-node="{path}"]').wait_for(timeout=30_000)
    cancel = view.get_by_role("button", name="Cancel", exact=True)
    if cancel.is_enabled():
        cancel.click()
