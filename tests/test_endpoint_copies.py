"""An endpoint that has answered can be deep-copied and pickled (with an agent that holds it,
in a notebook, or sent to a worker): the copy keeps its settings, wire log and script position,
and opens its own HTTP client on first use; the original goes on working."""

from __future__ import annotations

import copy
import json
import pickle

import httpx
import pytest

import sagents_nb as sn


def completion(request: httpx.Request) -> httpx.Response:
    asked = json.loads(request.content)["messages"][-1]["content"]
    message = {"role": "assistant", "content": f"vu : {asked}"}
    return httpx.Response(200, json={"choices": [{"message": message}]})


def test_a_used_mock_is_deep_copied_and_pickled_and_both_answer() -> None:
    llm = sn.script("premier 🍣", "deuxième 東京", "troisième")
    agent = sn.Agent("solo", model=llm)
    assert agent.run_sync("bonjour").text == "premier 🍣"
    twin = copy.deepcopy(agent)
    assert twin.model is not llm
    assert len(twin.model.exchanges) == len(llm.exchanges) == 1
    assert twin.run_sync("encore").text == "deuxième 東京"  # where its original was
    thawed = pickle.loads(pickle.dumps(llm))
    assert sn.Agent("p", model=thawed).run_sync("x").text == "deuxième 東京"
    assert agent.run_sync("et toi ?").text == "deuxième 東京"


def test_a_used_http_endpoint_is_deep_copied_with_its_key_hidden() -> None:
    llm = sn.LLM(
        "http://127.0.0.1:9/v1",
        api_key="sk-copie-secrete",
        transport=httpx.MockTransport(completion),
    )
    agent = sn.Agent("solo", model=llm)
    assert agent.run_sync("café ☕").text == "vu : café ☕"
    twin = copy.deepcopy(llm)
    assert sn.Agent("t", model=twin).run_sync("ラーメン").text == "vu : ラーメン"
    assert "sk-copie" not in repr(twin)
    assert agent.run_sync("encore").text == "vu : encore"


def test_an_agent_with_its_own_endpoint_runs_with_no_llm_and_no_environment() -> None:
    helper = sn.Agent("helper", does="aide", model=sn.script("ça va 👍"))
    boss = sn.Agent("boss", model=sn.mock_llm(lambda req: "chef"), team=[helper])
    assert sn.Agent("solo", model=sn.script("seul 🌙")).run_sync("salut").text == "seul 🌙"
    session = sn.Session(boss)
    assert session.llm is boss.model  # its children without an endpoint inherit it
    assert session.send("bonjour").result().text == "chef"
    with pytest.raises(sn.ConfigurationError, match="no model endpoint"):
        sn.Session(sn.Agent("nameless", model="gpt-4o-mini"))
