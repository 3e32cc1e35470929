"""Mocks that know the tree: a request says which node, agent and turn it is for, its tool
results are the calling node's current task's, and `sn.mock_llm({...})` routes by path glob."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sagents_nb as sn
from sagents_nb._base.caller import path_matches

pytestmark = pytest.mark.timeout(30)

README = Path(__file__).parent.parent / "README.md"


def readme_quickstart() -> dict:
    """The README's first example, run as written (its `read_file` reads README.md)."""
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert code is not None
    names: dict = {}
    exec(compile(code.group(1).replace("print(", "_ = ("), "README", "exec"), names)
    return names


def test_the_readme_mock_delegates_for_every_message_of_a_session(monkeypatch) -> None:
    monkeypatch.chdir(README.parent)
    names = readme_quickstart()
    session = sn.Session(names["boss"], llm=sn.mock_llm(names["model"]))
    first = session.send("Survey the project").result()
    second = session.send("Et maintenant ? 次は？ 🚀").result()
    assert first.text.startswith("Done:") and second.text.startswith("Done:")
    children = [c.id for c in session.tree.children]
    assert children == ["boss/explore.1", "boss/explore.2"]  # the second message delegated too


def test_a_request_names_its_node_agent_and_turn_at_depth_three() -> None:
    seen: list[tuple[str | None, str | None, int | None, int]] = []

    def model(req: sn.ChatRequest):
        seen.append((req.node, req.agent, req.turn, len(req.tool_results)))
        if "task" in req.tools and not req.tool_results:
            member = "lecteur" if req.agent == "chef" else "辞書"
            return sn.reply(tool_calls=[sn.call("task", agent=member, prompt="cherche « 猫 »")])
        return f"{req.agent} a fini" if req.tool_results or "task" not in req.tools else "?"

    dictionary = sn.Agent("辞書", does="looks words up")
    reader = sn.Agent("lecteur", does="reads", team=[dictionary])
    chef = sn.Agent("chef", team=[reader])
    sn.Session(chef, llm=sn.mock_llm(model)).send("go").result()
    assert seen == [
        ("chef", "chef", 1, 0),
        ("chef/lecteur.1", "lecteur", 1, 0),
        ("chef/lecteur.1/辞書.1", "辞書", 1, 0),
        ("chef/lecteur.1", "lecteur", 2, 1),
        ("chef", "chef", 2, 1),
    ]


def test_tool_results_are_the_current_task_s_and_all_tool_results_the_request_s() -> None:
    requests: list[sn.ChatRequest] = []

    @sn.tool
    def lookup(word: str) -> str:
        """Look up.

        Args:
            word: a word.
        """
        return f"{word}: trouvé"

    def model(req: sn.ChatRequest):
        requests.append(req)
        if not req.tool_results:
            return sn.reply(tool_calls=[sn.call("lookup", word=req.last_user)])
        return "ok " + req.tool_results[-1]

    session = sn.Session(sn.Agent("a", tools=[lookup]), llm=sn.mock_llm(model))
    assert session.send("café").result().text == "ok café: trouvé"
    assert session.send("東京").result().text == "ok 東京: trouvé"
    assert requests[-1].tool_results == ["東京: trouvé"]
    assert requests[-1].all_tool_results == ["café: trouvé", "東京: trouvé"]


def test_a_routed_mock_answers_each_node_by_the_first_matching_glob() -> None:
    def boss(req: sn.ChatRequest):
        if not req.tool_results:
            return sn.reply(
                tool_calls=[
                    sn.call("task", agent="explore", prompt="a"),
                    sn.call("task", agent="audit", prompt="b"),
                ]
            )
        return " | ".join(req.tool_results)

    llm = sn.mock_llm(
        {
            "boss": boss,
            "boss/explore.*": lambda req: f"exploré ({req.node})",
            "**": lambda req: f"autre : {req.node}",
        }
    )
    team = [sn.Agent("explore", does="x"), sn.Agent("audit", does="y")]
    result = sn.Agent("boss", team=team).run_sync("go", llm=llm)
    assert result.text == "exploré (boss/explore.1) | autre : boss/audit.1"


def test_an_unrouted_node_is_an_error_naming_it_and_the_patterns() -> None:
    llm = sn.mock_llm({"chef/*": lambda req: "x"})
    result = sn.Agent("boss").run_sync("go", llm=llm)
    assert result.status == "error"
    assert "'boss'" in result.text and "'chef/*'" in result.text


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("boss", "boss", True),
        ("boss", "boss/w.1", False),
        ("boss/*", "boss/w.1", True),
        ("boss/*", "boss/w.1/x.1", False),
        ("boss/**", "boss/w.1/x.1", True),
        ("boss/*/audit.*", "boss/w.2/audit.1", True),
        ("boss/*/audit.*", "boss/audit.1", False),
        ("**/辞書.*", "chef/lecteur.1/辞書.3", True),
        ("b?ss", "boss", True),
        ("boss.*", "boss.1/x", False),
    ],
)
def test_path_globs(glob: str, path: str, matches: bool) -> None:
    assert path_matches(glob, path) is matches


def test_a_routes_dict_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(sn.ConfigurationError, match="maps node-path globs"):
        sn.mock_llm({"boss": "not a handler"})
    with pytest.raises(sn.ConfigurationError, match="no routes"):
        sn.mock_llm({})
