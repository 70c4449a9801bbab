"""``osmosis_ai.rollout.integrations`` and ``.agents`` behave as in osmosis-ai 0.3.8."""

from __future__ import annotations

import importlib

import pytest

from osmosis_ai.rollout.optional_imports import MissingExtraFinder


@pytest.mark.parametrize(
    "package", ["osmosis_ai.rollout.integrations", "osmosis_ai.rollout.integrations.agents"]
)
def test_the_namespaces_define_an_empty_all(package: str) -> None:
    assert importlib.import_module(package).__all__ == []


@pytest.mark.parametrize(
    ("leaf", "sentence"),
    [
        (
            "osmosis_ai.rollout.integrations.agents.strands",
            'The Strands integration requires optional dependencies. Install them with `pip install "osmosis-ai[strands]"`',
        ),
        (
            "osmosis_ai.rollout.integrations.agents.openai_agents",
            'The OpenAI Agents integration requires optional dependencies. Install them with `pip install "osmosis-ai[openai-agents]"`',
        ),
    ],
)
def test_missing_extra_hint_uses_0_3_8s_wording_and_quoting(leaf: str, sentence: str) -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        MissingExtraFinder().find_spec(leaf)
    assert str(caught.value).startswith(sentence)
    assert caught.value.name == leaf
