"""Real-browser tests of the view's themes, sizes and keyboard use: text reads at WCAG AA in
JupyterLab's light and dark themes, the view stacks when it is narrow, and the tree and the tabs
work from the keyboard alone, with their ARIA roles."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks._browser import Lab, open_notebook, run_cell
from sagents_nb.notebook._view_module import STATIC

from .conftest import screenshot, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

TEAM = '''
import sagents_nb as sn

@sn.tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: which file.
    """
    return ('{"nom": "démo", "fichiers": ["README.md", "setup.py"], "説明": "読んで 📖", '
            '"profond": {"liste": [1, 2, 3], "texte": "une phrase assez longue pour passer à la ligne"}}')

def handler(request):
    if request.system.startswith("You compress"):
        return "RÉSUMÉ des lectures — 要約"
    if "task" in request.tools:
        if not request.tool_results:
            return sn.reply(tool_calls=[sn.call("task", agent="keeper", prompt="cherche — 探して"),
                                        sn.call("task", agent="explore", prompt="lis le README"),
                                        sn.call("task", agent="deploy", prompt="ship it")])
        return "gardé ✅"
    if len(request.tool_results) < 2:  # two steps: the first one leaves, compacted
        return sn.reply(tool_calls=[sn.call("read_file", path="README.md")],
                        usage={"prompt_tokens": 500, "completion_tokens": 10, "total_tokens": 510})
    return "trouvé"

keeper = sn.Agent("keeper", does="remembers", tools=[read_file],
                  kind=sn.kinds.Resident(300, keep_recent=1))
explore = sn.Agent("explore", does="reads", tools=[read_file])
session = sn.Session(sn.Agent("lead", team=[keeper, explore]), llm=sn.mock_llm(handler))
session.send("vas-y — 行け").result()
session
'''

# Every visible piece of text in the view, with its colour and the background it is drawn on
# (backgrounds composited up the ancestors, colours normalised through a canvas pixel).
CONTRAST = """
view => {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const rgba = (colour) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = "rgba(0, 0, 0, 0)";
    ctx.fillStyle = colour;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const background = (el) => {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const colour = rgba(getComputedStyle(node).backgroundColor);
      if (colour[3] > 0) layers.push(colour);
      if (colour[3] >= 1) break;
    }
    let result = [255, 255, 255, 1];
    for (const layer of layers.reverse()) result = over(layer, result);
    return result;
  };
  const opacity = (el) => {
    let value = 1;
    for (let node = el; node; node = node.parentElement) value *= Number(getComputedStyle(node).opacity);
    return value;
  };
  const lum = ([r, g, b]) => {
    const f = (c) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const found = [];
  for (const el of view.querySelectorAll("*")) {
    if (el.closest("svg, [disabled], option")) continue;
    const text = [...el.childNodes]
      .filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent)
      .join("")
      .trim();
    if (!text) continue;
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height || getComputedStyle(el).visibility === "hidden") continue;
    const bg = background(el);
    const fg = rgba(getComputedStyle(el).color);
    fg[3] *= opacity(el);
    const shown = over(fg, bg);
    const [hi, lo] = [lum(shown), lum(bg)].sort((a, b) => b - a);
    found.push({
      text: text.slice(0, 40),
      cls: String(el.className),
      ratio: (hi + 0.05) / (lo + 0.05),
    });
  }
  return found;
}
"""

# One key of each of `classes` added to a legend, measured as CONTRAST measures, then removed.
LEGEND = """
(legend, [check, classes]) => {
  const made = classes.map((name) => {
    const key = document.createElement("span");
    key.className = `sn-key ${name}`;
    key.textContent = `key ${name}`;
    return legend.appendChild(key);
  });
  const found = eval(check)(legend);
  made.forEach((key) => key.remove());
  return found.filter((item) => item.text.startsWith("key sn-"));
}
"""


def _set_theme(lab: Lab, theme: str) -> None:
    """Choose Lab's theme through its settings API (the page loaded next uses it)."""
    body = json.dumps({"raw": json.dumps({"theme": theme})}).encode()
    request = urllib.request.Request(
        f"{lab.url}/lab/api/settings/@jupyterlab/apputils-extension:themes",
        data=body,
        method="PUT",
        headers={"Authorization": f"token {lab.token}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).close()


@pytest.fixture
def theme(lab: Lab, request: pytest.FixtureRequest) -> Iterator[str]:
    name = getattr(request, "param", "JupyterLab Light")
    _set_theme(lab, name)
    try:
        yield name
    finally:
        _set_theme(lab, "JupyterLab Light")


def shown_team(page: Any, lab: Lab, name: str) -> Any:
    open_notebook(page, lab.notebook(name, TEAM))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    view.locator(".sn-answer", has_text="gardé").wait_for()
    return view


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"], indirect=True)
def test_every_text_reads_at_aa_contrast_in_the_light_and_dark_themes(
    page: Any, lab: Lab, theme: str
) -> None:
    view = shown_team(page, lab, f"contrast-{theme.split()[-1]}.ipynb")
    light = theme == "JupyterLab Light"
    assert page.locator("body").get_attribute("data-jp-theme-light") == str(light).lower()
    view.locator('.sn-node[data-path="lead/keeper.1"]').click()
    view.get_by_role("tab", name="Context").click()
    view.locator(".sn-pane .sn-columns .sn-mark-summarised").first.wait_for()
    checked = view.evaluate(CONTRAST)
    classes = " ".join(item["cls"] for item in checked)
    for wanted in ("sn-mark-summarised", "sn-mark-inview", "sn-mark-summary", "sn-status"):
        assert wanted in classes, wanted
    selected = view.locator(".sn-node.sn-selected .sn-agent").evaluate(
        "(el, check) => eval(check)(el.closest('.sn-node'))", CONTRAST
    )
    assert any(item["text"] == "keeper.1" for item in selected)
    # every legend key the view can draw (a chart shows only the kinds that occurred: made here)
    keys = sorted(set(re.findall(r"\.(sn-(?:wf-)?key-[\w-]+)", (STATIC / "view.css").read_text())))
    assert {"sn-key-view", "sn-key-compaction", "sn-wf-key-pause", "sn-wf-key-model"} <= set(keys)
    legend = view.locator(".sn-pane .sn-legend").evaluate(LEGEND, [CONTRAST, keys])
    assert sorted(item["cls"] for item in legend) == sorted(f"sn-key {key}" for key in keys)
    poor = [item for item in checked + selected + legend if item["ratio"] < 4.5]
    screenshot(page, f"a11y-contrast-{theme.split()[-1].lower()}.png")
    assert not poor, poor


def test_a_narrow_view_stacks_the_tree_above_the_panes(page: Any, lab: Lab) -> None:
    # Lab's side bar and margins take about 430 px: the view itself is about 800 px wide
    page.set_viewport_size({"width": 1230, "height": 1000})
    view = shown_team(page, lab, "narrow.ipynb")
    width = view.evaluate("el => el.getBoundingClientRect().width")
    assert 700 < width < 900, width
    tree, main = view.locator(".sn-tree"), view.locator(".sn-main")
    wait_until(
        lambda: (
            tree.bounding_box()["y"] + tree.bounding_box()["height"] <= main.bounding_box()["y"] + 1
        ),
        what="the tree to stack above the panes",
    )
    assert main.bounding_box()["width"] > 0.9 * width
    view.locator('.sn-node[data-path="lead/keeper.1"]').click()
    view.get_by_role("tab", name="Tool calls").click()
    result = view.locator(".sn-pane .sn-card .sn-result").first
    result.wait_for()
    # JSON wraps at spaces, not a character a line: a line holds a good run of characters
    lines = result.evaluate(
        "el => Math.round(el.getBoundingClientRect().height / parseFloat(getComputedStyle(el).lineHeight || 14))"
    )
    assert result.bounding_box()["width"] > 0.8 * width
    assert lines <= 4, lines
    assert view.evaluate("el => el.scrollWidth <= el.clientWidth + 1")
    screenshot(page, "a11y-narrow.png")
    page.set_viewport_size({"width": 1400, "height": 1000})
    wait_until(
        lambda: abs(tree.bounding_box()["y"] - main.bounding_box()["y"]) < 40,
        what="the tree and the panes side by side again",
    )


def focused(page: Any) -> dict[str, Any]:
    return page.evaluate(
        """() => {
          const el = document.activeElement;
          return { role: el.getAttribute("role"), path: el.dataset.path || null,
                   tab: el.dataset.tab || null, text: el.textContent.trim() };
        }"""
    )


def test_the_keyboard_alone_selects_a_node_and_switches_tabs(page: Any, lab: Lab) -> None:
    view = shown_team(page, lab, "keyboard.ipynb")
    view.locator(".sn-tree-filter").focus()
    page.keyboard.press("Tab")
    while focused(page)["role"] != "treeitem":
        assert focused(page)["role"] is None or focused(page)["role"] == "button", focused(page)
        page.keyboard.press("Tab")
    assert focused(page)["path"] == "lead"
    page.keyboard.press("ArrowDown")
    assert focused(page)["path"] == "lead/keeper.1"
    page.keyboard.press("End")
    assert focused(page)["path"] == "lead/explore.1"
    page.keyboard.press("ArrowUp")
    assert focused(page)["path"] == "lead/keeper.1"
    page.keyboard.press("Enter")
    view.locator('.sn-pane[data-node="lead/keeper.1"]').wait_for()
    row = view.locator('.sn-node[data-path="lead/keeper.1"]')
    assert row.get_attribute("aria-selected") == "true"
    assert row.get_attribute("tabindex") == "0"
    assert focused(page)["path"] == "lead/keeper.1"  # the redraw kept the focus
    page.keyboard.press("ArrowLeft")  # a leaf: to its parent
    assert focused(page)["path"] == "lead"
    page.keyboard.press("ArrowLeft")  # expanded: collapses
    wait_until(lambda: view.locator(".sn-node").count() == 1, what="the root to collapse")
    assert view.locator('.sn-node[data-path="lead"]').get_attribute("aria-expanded") == "false"
    page.keyboard.press("ArrowRight")  # collapsed: expands
    wait_until(lambda: view.locator(".sn-node").count() == 3, what="the root to expand")
    page.keyboard.press("ArrowRight")  # expanded: to its first child
    assert focused(page)["path"] == "lead/keeper.1"
    page.keyboard.press("Home")
    assert focused(page)["path"] == "lead"
    page.keyboard.press("Tab")
    assert focused(page)["role"] == "tab" and focused(page)["tab"] == "transcript"
    page.keyboard.press("ArrowRight")
    view.locator('.sn-pane[data-tab="context"]').wait_for()
    assert focused(page)["tab"] == "context"
    page.keyboard.press("End")
    last = view.locator('[role="tab"]').last.get_attribute("data-tab")
    view.locator(f'.sn-pane[data-tab="{last}"]').wait_for()
    page.keyboard.press("Home")
    view.locator('.sn-pane[data-tab="transcript"]').wait_for()
    page.keyboard.press("ArrowLeft")  # wraps round to the last tab
    view.locator(f'.sn-pane[data-tab="{last}"]').wait_for()
    assert focused(page)["tab"] == last
    assert view.locator('[role="tab"][tabindex="0"]').count() == 1


def test_the_tree_tabs_and_buttons_carry_their_roles_and_names(page: Any, lab: Lab) -> None:
    view = shown_team(page, lab, "roles.ipynb")
    tree = view.get_by_role("tree", name="delegation tree")
    assert tree.count() == 1
    items = view.get_by_role("treeitem")
    assert items.count() == 3
    for i in range(3):
        item = items.nth(i)
        assert item.get_attribute("aria-level") in ("1", "2")
        assert item.get_attribute("aria-selected") in ("true", "false")
        assert item.get_attribute("aria-setsize") and item.get_attribute("aria-posinset")
    assert items.first.get_attribute("aria-expanded") == "true"
    assert view.locator('[role="treeitem"][tabindex="0"]').count() == 1
    tablist = view.get_by_role("tablist")
    assert tablist.count() == 1
    tabs = view.get_by_role("tab")
    assert tabs.count() >= 6
    selected = view.locator('[role="tab"][aria-selected="true"]')
    assert selected.count() == 1 and selected.get_attribute("tabindex") == "0"
    panel = view.get_by_role("tabpanel")
    assert panel.get_attribute("id") == selected.get_attribute("aria-controls")
    assert panel.get_attribute("aria-labelledby") == selected.get_attribute("id")
    view.get_by_role("tab", name="Context").click()
    view.locator(".sn-turn-nav").wait_for()
    # every control has an accessible name a screen reader can say (not "▸" or "◀")
    snapshot = view.aria_snapshot()
    unnamed = [
        line.strip()
        for line in snapshot.splitlines()
        if any(f"- {role}" in line for role in ("button", "combobox", "textbox", "checkbox"))
        and '"' not in line
    ]
    assert not unnamed, snapshot
    names = re.findall(r'- (?:button|treeitem|tab) "([^"]*)"', snapshot)
    assert names and not [name for name in names if set(name) & set("◀▶▸▾")], names
    for name in ("previous turn", "next turn"):
        assert view.get_by_role("button", name=name).count() >= 1, (name, snapshot)


TWO_PAUSES = '''
import sagents_nb as sn

@sn.tool
def pay(invoice: str) -> str:
    """Pay an invoice.

    Args:
        invoice: which one.
    """
    return f"payée : {invoice} ✅"

def handler(request):
    if not request.tool_results:
        return sn.reply(tool_calls=[sn.call("pay", invoice="facture-été"),
                                    sn.call("pay", invoice="請求書-2")])
    return "tout est réglé — 完了"

session = sn.Session(sn.Agent("comptable", tools=[pay]), llm=sn.mock_llm(handler))
run = session.send("règle les factures 💶", pause_on={"tool"})
run.wait()
run
'''


def test_approving_from_the_keyboard_keeps_the_focus_in_the_view(page: Any, lab: Lab) -> None:
    open_notebook(page, lab.notebook("approve-focus.ipynb", TWO_PAUSES))
    run_cell(page, 0)
    view = page.locator(".sagents-view")
    cards = view.locator(".sn-pending .sn-decision")
    view.locator(".sn-pending-count", has_text="2 pauses waiting").wait_for()
    first = cards.first.get_attribute("data-pause")
    cards.first.locator(".sn-approve").focus()
    page.keyboard.press("Enter")
    # the first pause's card is gone: the focus is on the next pause's Approve
    wait_until(
        lambda: cards.count() == 1 and cards.first.get_attribute("data-pause") != first,
        what="the next pause",
    )
    wait_until(
        lambda: page.evaluate(
            "() => document.activeElement.matches('.sagents-view .sn-decision .sn-approve')"
        ),
        what="the focus on the next pause's Approve",
    )
    page.keyboard.press("Enter")
    view.locator(".sn-answer", has_text="tout est réglé").wait_for()
    # the last pause ended with the run: the focus stays in the view, on a control that works
    held = wait_until(
        lambda: page.evaluate(
            """() => {
              const el = document.activeElement;
              return el.closest(".sagents-view") && !el.disabled
                ? { tag: el.tagName, role: el.getAttribute("role"), text: el.textContent.trim() }
                : null;
            }"""
        ),
        what="the focus in the view after the last Approve",
    )
    assert held["tag"] == "BUTTON", held
    # a single node of one model turn and two tool calls reads in the singular where it is one
    assert view.locator(".sn-tree-summary").inner_text().startswith("1 node ·")
