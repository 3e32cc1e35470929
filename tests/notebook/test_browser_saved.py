"""The file `save_html` writes, opened in chromium from disk with the network off (issue 31 item
2): every tab of the root and of a child works, the forks taken are below, search finds, a
thousand-event log pages back to its first event; not one request beyond the file itself, and
no model text runs as markup. No Jupyter: the file is all there is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sagents_nb as sn
from benchmarks._browser import chromium
from sagents_nb.notebook import save_html, view

from ._saved_runs import delegating_session, thousand_events
from .conftest import XSS, _require_chromium, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

CHILD = "coordinator/explore.1"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files, written before the browser starts (its sync API holds this thread's loop)."""
    _require_chromium()
    where = tmp_path_factory.mktemp("saved")
    session = delegating_session(children=2, turns=3, store=":memory:")
    run = session.send("Qu’y a-t-il ? 何がある？ 🤔", pause_on={"tool"})
    assert run.wait(timeout=30) == "paused"
    run.approve()
    run.wait(timeout=30)
    run.resume()
    assert run.wait(timeout=60) == "done"
    shown = view(session)
    try:
        fork = session.fork(at=8)
        shown.show_fork(fork, 8)
        paths = {"session": save_html(shown, where / "séance — 会話.html")}
    finally:
        shown.close()
    paths["long"] = thousand_events().save_html(where / "long.html")
    cmp = sn.compare(
        sn.Agent("solo"),
        "bonjour — こんにちは 🎉",
        {"a": {}, "b": {}},
        llm=sn.mock_llm(lambda request: f"réponse {XSS}"),
    )
    paths["comparison"] = cmp.save_html(where / "cmp.html")
    return paths


@pytest.fixture(scope="module")
def browser(files: dict[str, Path]) -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture
def offline(browser: Any) -> Iterator[tuple[Any, list[str]]]:
    """A page with the network off, and every request it makes."""
    context = browser.new_context(offline=True, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page, requests
    finally:
        context.close()
    assert errors == []


def opened(page: Any, path: Path) -> Any:
    """The first view's own tree and panes (its forks' views are drawn inside it, below)."""
    page.goto(path.as_uri())
    page.locator(".sagents-saved[data-ready='true']").wait_for()
    return page.locator(".sagents-view").first.locator(".sn-body").first


def tab(shown: Any, name: str, node: str) -> Any:
    shown.locator(f'.sn-tabs [data-tab="{name}"]').first.click()
    pane = shown.locator(f'.sn-pane[data-tab="{name}"][data-node="{node}"]').first
    pane.wait_for()
    return pane


def test_every_tab_of_a_child_works_offline_with_no_request(
    files: dict[str, Path], offline: tuple[Any, list[str]]
) -> None:
    page, requests = offline
    shown = opened(page, files["session"])
    assert page.locator(".sn-run").first.inner_text().startswith("run 1")
    tree = shown.locator(".sn-tree").first
    for node in ("coordinator", CHILD, "coordinator/explore.2"):
        tree.locator(f'.sn-node[data-path="{node}"]').first.wait_for()
    tree.locator(f'.sn-node[data-path="{CHILD}"]').first.click()
    pane = tab(shown, "transcript", CHILD)
    assert "lis le chapitre 0 — 第0章 📖" in pane.inner_text()
    assert "<img src=x onerror=window.__xss=1>" in pane.inner_text()  # as text
    pane = tab(shown, "context", CHILD)
    assert "Changes since turn 3" in pane.inner_text()
    shown.locator('.sn-pane button[aria-label="previous turn"]').first.click()
    wait_until(lambda: "Changes since turn 2" in pane.inner_text(), what="the turn before")
    pane = tab(shown, "tools", CHILD)
    assert pane.inner_text().count("lookup") >= 3 and "mot 0 言葉" in pane.inner_text()
    pane = tab(shown, "compaction", CHILD)
    assert "no compaction" in pane.inner_text()  # a worker forgets nothing
    pane = tab(shown, "wire", CHILD)
    assert "mock.local/v1/chat/completions" in pane.inner_text()
    assert "belong to other nodes" in pane.inner_text()
    pane = tab(shown, "events", CHILD)
    first = pane.locator(".sn-event").first
    first.locator("summary").click()
    wait_until(lambda: '"seq"' in first.inner_text(), what="the event's JSON")
    shown.locator(".sn-events input[type=checkbox]").last.check()  # this node only
    count = shown.locator(".sn-pane .sn-events-count").first
    wait_until(lambda: "matching event" in count.inner_text(), what="the node’s own events")
    paths = shown.locator(".sn-pane .sn-event .sn-path").all_inner_texts()
    assert paths[0] == "coordinator" and set(paths[1:]) == {CHILD}  # the one opened, kept
    pane = tab(shown, "timing", CHILD)
    assert shown.locator(".sn-pane .sn-waterfall").count() >= 1
    assert "explore.1" in pane.inner_text()
    pane = tab(shown, "decisions", CHILD)
    assert "approved" in pane.inner_text() and "lookup" in pane.inner_text()
    # the root again
    shown.locator('.sn-tree .sn-node[data-path="coordinator"]').first.click()
    tab(shown, "transcript", "coordinator")
    assert "Qu’y a-t-il ? 何がある？ 🤔" in shown.locator(".sn-pane").first.inner_text()
    assert page.evaluate("window.__xss") is None
    assert requests == [files["session"].as_uri()]


def test_search_finds_and_goes_to_the_event(
    files: dict[str, Path], offline: tuple[Any, list[str]]
) -> None:
    page, requests = offline
    shown = opened(page, files["session"])
    page.locator(".sn-search-box").first.fill("mot 1 言葉")
    found = page.locator(".sn-found-row").first
    found.wait_for()
    seq = found.get_attribute("data-seq")
    found.click()
    shown.locator(f'.sn-pane[data-tab="events"] .sn-event.sn-at[data-seq="{seq}"]').wait_for()
    assert requests == [files["session"].as_uri()]


def test_the_forks_taken_are_shown_below(
    files: dict[str, Path], offline: tuple[Any, list[str]]
) -> None:
    page, _ = offline
    opened(page, files["session"])
    forked = page.locator(".sn-forked").first
    forked.wait_for()
    assert "branched at event 8" in forked.inner_text()
    inner = forked.locator(".sagents-view").first
    inner.locator('.sn-node[data-path="coordinator"]').first.wait_for()
    inner.locator('.sn-tabs [data-tab="events"]').first.click()
    inner.locator('.sn-pane[data-tab="events"]').first.wait_for()


def test_a_thousand_event_log_pages_back_to_its_first_event(
    files: dict[str, Path], offline: tuple[Any, list[str]]
) -> None:
    page, requests = offline
    shown = opened(page, files["long"])
    tab(shown, "events", "coordinator")
    pager = shown.locator(".sn-pane .sn-pager").first
    total = int(pager.get_attribute("data-total"))
    assert total >= 1000
    newest = int(pager.get_attribute("data-start"))
    shown.locator(".sn-pane .sn-pager .sn-older").first.click()
    wait_until(lambda: int(pager.get_attribute("data-start")) == newest - 100, what="a page older")
    shown.locator(".sn-pane .sn-pager .sn-oldest").first.click()
    wait_until(lambda: pager.get_attribute("data-start") == "0", what="the first page")
    assert shown.locator(".sn-pane .sn-event").first.get_attribute("data-seq") == "1"
    assert requests == [files["long"].as_uri()]


def test_a_comparison_draws_each_runs_view(
    files: dict[str, Path], offline: tuple[Any, list[str]]
) -> None:
    page, requests = offline
    opened(page, files["comparison"])
    assert page.locator(".sagents-view").count() == 2
    assert page.locator(".sagents-saved-title").all_inner_texts() == ["a · item 0", "b · item 0"]
    assert page.evaluate("window.__xss") is None
    assert requests == [files["comparison"].as_uri()]


def test_without_javascript_the_file_shows_its_static_text(
    files: dict[str, Path], browser: Any
) -> None:
    context = browser.new_context(java_script_enabled=False, offline=True)
    try:
        page = context.new_page()
        page.goto(files["session"].as_uri())
        text = page.locator(".sagents-fallback").inner_text()
    finally:
        context.close()
    assert "coordinator/explore.1" in text and "lis le chapitre 0 — 第0章 📖" in text
    assert "Réponse finale : tout va bien ✅" in text and "Decisions at pauses" in text
