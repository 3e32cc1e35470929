"""The live comparison view: variants side by side, one turn control for all, contexts diffed
against a baseline, model text escaped; and the sweep's progress bar widget."""

from __future__ import annotations

import ipywidgets
import pytest

import sagents_nb as sn
from sagents_nb.notebook import ComparisonView, sweep_progress

XSS = "<img src=x onerror=alert(1)>"


def model(req: sn.ChatRequest):
    if "task" in req.tools:
        steps = req.messages[0]["content"].split(" | ")
        done = sum(m["role"] == "tool" for m in req.messages)
        if done < len(steps):
            return sn.reply(tool_calls=[sn.call("task", agent="helper", prompt=steps[done])])
        return req.tool_results[-1]
    return "saw " + ", ".join(m["content"] for m in req.messages if m["role"] == "user")


def comparison() -> sn.Comparison:
    boss = sn.Agent("boss", team=[sn.Agent("helper", does="remembers")])
    return sn.compare(
        boss,
        f"Ada | {XSS} | 名前は？",
        {"resident": {"helper": "resident"}, "worker": {"helper": "worker"}},
        llm=sn.mock_llm(model),
    )


def test_one_slider_moves_every_column_and_the_diff_marks_what_differs() -> None:
    widget = comparison().view()
    assert isinstance(widget, ComparisonView) and widget.agent_picker.value == "helper"
    assert widget.slider.max == 3 and len(widget.columns) == 2
    widget.turn = 2
    resident, worker = (c.value for c in widget.columns)
    assert "boss/helper.1" in resident and "boss/helper.2" in worker  # the same turn in both
    # the worker's view lacks the resident's first task: shown struck through in its column
    assert 'sn-cmp-missing"><span class="sn-cmp-role">user</span>Ada</div>' in worker
    assert "sn-cmp-added" not in resident  # the baseline has nothing to add to itself
    assert "forgot 2" in worker and 'class="highlight"' in widget.plot.value
    widget.baseline_picker.value = "worker"
    assert "sn-cmp-added" in widget.columns[0].value  # now the resident's extra memory


def test_model_and_user_text_is_escaped_in_every_column() -> None:
    widget = comparison().view()
    for turn in (1, 2, 3):
        widget.turn = turn
        for column in widget.columns:
            assert "<img" not in column.value
    assert "&lt;img src=x onerror=alert(1)&gt;" in widget.columns[0].value
    assert "名前は？" in widget.columns[0].value


def test_switching_agent_resets_the_turn_range() -> None:
    widget = comparison().view("helper")
    widget.turn = 3
    widget.agent_picker.value = "boss"
    assert widget.slider.max == 4 and widget.turn == 3
    widget.agent_picker.value = "helper"
    assert widget.slider.max == 3


def test_agent_and_baseline_are_attributes_that_move_their_controls() -> None:
    widget = comparison().view()
    assert (widget.agent, widget.baseline) == ("helper", "resident")
    widget.turn = 2
    widget.baseline = "worker"
    assert widget.baseline_picker.value == "worker"
    assert "sn-cmp-added" in widget.columns[0].value  # diffed against the worker now
    widget.turn = 3
    widget.agent = "boss"
    assert widget.agent_picker.value == "boss" and widget.slider.max == 4
    assert "<h4>resident</h4>" in widget.columns[0].value and "boss" in widget.columns[0].value
    with pytest.raises(ValueError, match=r"no variant 'résident' .*resident, worker"):
        widget.baseline = "résident"
    with pytest.raises(ValueError, match=r"no agent '助手' .*boss, helper"):
        widget.agent = "助手"
    assert (widget.agent, widget.baseline) == ("boss", "worker")


def test_the_progress_widget_counts_runs_and_errors() -> None:
    progress = sweep_progress()
    assert isinstance(progress.bar, ipywidgets.IntProgress)
    progress.total = 4
    progress.bar.max = 4
    progress.advance(3, 1)
    assert progress.bar.value == 3 and progress.label.value == "3/4 · 1 error"
    progress.close(interrupted=True)
    assert progress.bar.bar_style == "warning" and progress.label.value.endswith("interrupted")
