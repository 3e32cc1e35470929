"""A stored run is reused only when what decides its answer is what it was: the variant, the
agent tree (instructions, tools, team, kinds and their parameters), the endpoint (not its key)
and the prompts; the table says which rows were reused, and why a stored run was not."""

from __future__ import annotations

import httpx
import pytest

import sagents_nb as sn


def says_what_it_was_given(req: sn.ChatRequest) -> str:
    """An answer that changes with the model, the instructions and the tools offered."""
    system = req.system.split("\n")[-1] if req.system else "-"
    return f"{req.model} · {system} · {','.join(req.tools) or 'no tools'} · {req.last_user}"


def compare(agent: sn.Agent, store, prompts="salut", variants=None, llm=None) -> sn.Comparison:
    return sn.compare(
        agent,
        prompts,
        variants if variants is not None else {"v": {}},
        llm=llm or sn.mock_llm(says_what_it_was_given),
        store=store,
    )


def test_a_changed_variant_runs_again_and_says_what_changed(tmp_path) -> None:
    store, agent = tmp_path / "runs.db", sn.Agent("solo")
    old = compare(agent, store, variants={"v": {"model": "old"}})
    assert old.rows[0]["answer"] == "old · - · no tools · salut" and not old.rows[0]["reused"]

    new = compare(agent, store, variants={"v": {"model": "new"}})
    assert new.records[0].answer == "new · - · no tools · salut" and not new.records[0].reused
    row = new.rows[0]
    assert (row["reused"], row["why"]) == (False, "changed: variant")
    header = str(new).splitlines()[0].split()
    assert "reused" in header and "why" in header  # the table says so
    assert "changed: variant" in new._repr_mimebundle_()["text/html"]

    again = compare(agent, store, variants={"v": {"model": "new"}})
    assert again.rows[0]["reused"] and again.rows[0]["why"] is None
    assert again.rows[0]["answer"] == "new · - · no tools · salut"
    back = compare(agent, store, variants={"v": {"model": "old"}})  # its first run, stored
    assert back.rows[0]["reused"] and back.rows[0]["answer"] == "old · - · no tools · salut"
    assert back.rows[0]["session_id"] == old.rows[0]["session_id"]


def lookup(q: str) -> str:
    """Look a word up.

    Args:
        q: the word.
    """
    return q


def lookup_described(q: str) -> str:
    """Cherche un mot dans le dictionnaire 辞書.

    Args:
        q: the word.
    """
    return q


def lookup_wider(q: str, lang: str = "fr") -> str:
    """Look a word up.

    Args:
        q: the word.
        lang: its language.
    """
    return q


def tree(**changes) -> sn.Agent:
    fields = {
        "instructions": "Réponds en français.",
        "tools": [sn.tool(lookup)],
        "team": [sn.Agent("helper", does="aide", kind=sn.kinds.Resident(window_tokens=500))],
        **changes,
    }
    return sn.Agent("solo", **fields)


@pytest.mark.parametrize(
    "changes",
    [
        {"instructions": "日本語で答えてください。"},
        {"tools": [sn.tool(name="lookup")(lookup_described)]},  # its description
        {"tools": [sn.tool(name="lookup")(lookup_wider)]},  # its schema
        {"tools": [sn.tool(lookup), sn.tool(lookup_wider)]},  # one more
        {"team": [sn.Agent("helper", does="aide"), sn.Agent("autre", does="🙂")]},
        {"team": [sn.Agent("helper", does="aide", kind=sn.kinds.Resident(window_tokens=800))]},
        {"team": [sn.Agent("helper", does="aide", kind=sn.kinds.Worker())]},
        {"team": [sn.Agent("helper", does="aide toujours", kind=sn.kinds.Resident(500))]},
        {"kind": sn.kinds.Main(top_k=3)},
    ],
    ids=lambda changes: next(iter(changes)),
)
def test_a_changed_agent_tree_runs_again(tmp_path, changes) -> None:
    store = tmp_path / "runs.db"
    first = compare(tree(), store)
    assert first.rows[0]["status"] == "done"
    assert compare(tree(), store).records[0].reused  # the same tree, built again
    changed = compare(tree(**changes), store).records[0]
    assert not changed.reused
    assert changed.why == "changed: agent tree"


def test_a_changed_kind_parameter_in_the_variant_runs_again(tmp_path) -> None:
    store = tmp_path / "runs.db"
    compare(tree(), store, variants={"r": {"helper": {"window_tokens": 300}}})
    same = compare(tree(), store, variants={"r": {"helper": {"window_tokens": 300}}})
    other = compare(tree(), store, variants={"r": {"helper": {"window_tokens": 301}}})
    assert same.records[0].reused and not other.records[0].reused
    assert other.records[0].why == "changed: variant"


def test_a_changed_endpoint_runs_again_but_its_key_is_not_part_of_it(tmp_path) -> None:
    store, agent = tmp_path / "runs.db", sn.Agent("solo")

    def server(key_seen: list[str]) -> httpx.MockTransport:
        def answer(request: httpx.Request) -> httpx.Response:
            key_seen.append(request.headers["authorization"])
            reply = {"role": "assistant", "content": "réponse"}
            return httpx.Response(200, json={"choices": [{"message": reply}]})

        return httpx.MockTransport(answer)

    def endpoint(key: str, model: str, seen: list[str]) -> sn.LLM:
        return sn.LLM("http://127.0.0.1:9/v1", api_key=key, model=model, transport=server(seen))

    seen: list[str] = []
    first = compare(agent, store, llm=endpoint("sk-first-key-1", "m-1", seen))
    assert first.rows[0]["answer"] == "réponse" and seen == ["Bearer sk-first-key-1"]
    rotated = compare(agent, store, llm=endpoint("sk-second-key-2", "m-1", seen))
    assert rotated.rows[0]["reused"] and len(seen) == 1  # a new key: the same endpoint
    other = compare(agent, store, llm=endpoint("sk-second-key-2", "m-2", seen))
    assert len(seen) == 2 and other.records[0].why == "changed: endpoint"
    mock = compare(agent, store, llm=sn.mock_llm(says_what_it_was_given, model="m-2"))
    assert mock.records[0].answer == "m-2 · - · no tools · salut"
    assert mock.records[0].why == "changed: endpoint"
    assert b"sk-" not in store.read_bytes()  # the fingerprint holds no key


def test_changed_prompts_run_again_and_several_changes_are_named(tmp_path) -> None:
    store, agent = tmp_path / "runs.db", sn.Agent("solo")
    compare(agent, store, prompts=["bonjour", "ça va ?"])
    assert compare(agent, store, prompts=["bonjour", "ça va ?"]).records[0].reused
    row = compare(agent, store, prompts=["bonjour", "元気？"]).rows[0]
    assert row["answer"] == "mock · - · no tools · 元気？" and row["why"] == "changed: prompt"
    both = compare(agent, store, prompts=["🍵"], variants={"v": {"model": "x"}}).rows[0]
    assert both["why"] == "changed: variant, prompt"


def test_a_sweep_reuses_only_the_unchanged_pairs(tmp_path) -> None:
    store, agent = tmp_path / "sweep.db", sn.Agent("solo")
    items = [{"id": "fr", "prompt": "thé ?"}, {"id": "ja", "prompt": "お茶？"}]
    variants = {"a": {"model": "a-1"}, "b": {"model": "b-1"}}
    sn.sweep(agent, items, variants, llm=sn.mock_llm(says_what_it_was_given), store=store)
    items[1]["prompt"] = "緑茶？"
    variants["b"] = {"model": "b-2"}
    again = sn.sweep(
        agent, items, variants, llm=sn.mock_llm(says_what_it_was_given), store=store, progress=False
    )
    assert again.record("b", "ja").answer == "b-2 · - · no tools · 緑茶？"
    assert [r.reused for r in again.records] == [True, False, False, False]
    table = {(r["item"], r["variant"]): (r["reused"], r["why"]) for r in again.rows}
    assert table == {
        ("fr", "a"): (True, None),
        ("fr", "b"): (False, "changed: variant"),
        ("ja", "a"): (False, "changed: prompt"),
        ("ja", "b"): (False, "changed: variant, prompt"),
    }


def test_an_errored_stored_run_says_so(tmp_path) -> None:
    store, agent = tmp_path / "runs.db", sn.Agent("solo")
    broken = {"on": True}

    def handler(req: sn.ChatRequest):
        if broken["on"]:
            return httpx.Response(400, json={"error": {"message": "en panne 故障"}})
        return "réparé"

    assert compare(agent, store, llm=sn.mock_llm(handler)).rows[0]["status"] == "error"
    broken["on"] = False
    row = compare(agent, store, llm=sn.mock_llm(handler)).rows[0]
    assert (row["answer"], row["why"]) == ("réparé", "the stored run ended in error")


SETUP = '''
import sys
import sagents_nb as sn

instructions, key = sys.argv[1], sys.argv[2]


@sn.tool
def cherche(mot: str) -> str:
    """Cherche un mot.

    Args:
        mot: le mot 単語.
    """
    return mot


class Garde:
    def before_tool(self, call):
        return None


def crie(scope, message, context):
    return message, message


class Résumé(sn.Task):
    task_name = "resume"
    description = "résume"
    instructions = "Résume en une phrase."
    model_override = sn.script("court")


coder = sn.Agent("coder", does="code", kind=sn.kinds.Native(sn.harness.ClaudeCode(api_key=key)))
helper = sn.Agent("helper", does="aide", kind=sn.kinds.Resident(window_tokens=900), team=[Résumé])
boss = sn.Agent(
    "boss", instructions=instructions, tools=[cherche], hooks=[Garde()], pause_on=(),
    team=[helper, coder],
)
cmp = sn.compare(
    boss,
    ["salut", "ça va ? 🙂"],
    {"v": {"preprocessor": crie, "state": {"langue": "fr", "tags": {"a", "b", "c"}}}},
    llm=sn.mock_llm(lambda req: "réponse"),
    store=sys.argv[3],
)
print(cmp.records[0].reused, cmp.records[0].why)
'''


def test_a_new_process_with_the_same_setup_reuses_the_run_and_a_new_key_is_the_same(
    tmp_path,
) -> None:
    import os
    import subprocess
    import sys

    script, store = tmp_path / "setup.py", tmp_path / "runs.db"
    script.write_text(SETUP, encoding="utf-8")

    def run(instructions: str, key: str, seed: str) -> str:
        environment = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script), instructions, key, str(store)],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        return done.stdout.strip()

    assert run("Sois bref.", "sk-ant-first", "1") == "False None"
    assert run("Sois bref.", "sk-ant-second", "2") == "True None"  # set order, key: the same
    assert run("簡潔に。", "sk-ant-second", "3") == "False changed: agent tree"
    assert b"sk-ant-" not in store.read_bytes()


def test_the_same_tree_is_reused_after_its_runs_and_a_kind_changed_in_place_is_not(
    tmp_path,
) -> None:
    store, agent = tmp_path / "runs.db", tree()
    compare(agent, store, variants={"r": {"helper": {"keep_recent": 2}}})
    assert compare(agent, store, variants={"r": {"helper": {"keep_recent": 2}}}).records[0].reused
    helper = agent.member("helper")
    assert helper is not None and isinstance(helper.kind, sn.kinds.Resident)
    helper.kind.window_tokens = 120  # a setting changed between cells, not through a variant
    row = compare(agent, store, variants={"r": {"helper": {"keep_recent": 2}}}).records[0]
    assert not row.reused and row.why == "changed: agent tree"
