"""``osmosis_ai.rollout.integrations`` and ``.agents`` behave as in osmosis-ai 0.3.8."""

from __future__ import annotations

import importlib
import subprocess
import sys

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
        (
            "osmosis_ai.rollout.integrations.agents.pydantic_ai",
            'The Pydantic AI integration requires optional dependencies. Install them with `pip install "osmosis-ai[pydantic-ai]"`',
        ),
        (
            "osmosis_ai.rollout.integrations.agents.langgraph",
            'The LangGraph integration requires optional dependencies. Install them with `pip install "osmosis-ai[langgraph]"`',
        ),
        (
            "osmosis_ai.rollout.integrations.agents.adk",
            'The Google ADK integration requires optional dependencies. Install them with `pip install "osmosis-ai[adk]"`',
        ),
    ],
)
def test_missing_extra_hint_uses_0_3_8s_wording_and_quoting(leaf: str, sentence: str) -> None:
    with pytest.raises(ModuleNotFoundError) as caught:
        MissingExtraFinder().find_spec(leaf)
    assert str(caught.value).startswith(sentence)
    assert caught.value.name == leaf


_FRAMEWORK_MISSING = """
import sys
sys.modules[{framework!r}] = None  # as if not installed: `import {framework}` fails
try:
    from {leaf} import {name}
except ModuleNotFoundError as exc:
    print(exc.name)
    print(exc)
else:
    raise SystemExit("imported although the framework is missing")
"""


@pytest.mark.parametrize(
    ("leaf", "name", "framework", "extra"),
    [
        ("osmosis_ai.rollout.integrations.agents.strands", "OsmosisStrandsAgent", "strands",
         "strands"),
        ("osmosis_ai.rollout.integrations.agents.openai_agents", "OsmosisAgent", "agents",
         "openai-agents"),
        ("osmosis_ai.rollout.integrations.agents.pydantic_ai", "OsmosisRolloutModel",
         "pydantic_ai", "pydantic-ai"),
        ("osmosis_ai.rollout.integrations.agents.langgraph", "OsmosisChatModel", "langchain_openai",
         "langgraph"),
        ("osmosis_ai.rollout.integrations.agents.adk", "OsmosisRolloutModel", "google", "adk"),
        ("osmosis_ai.rollout.backend.harbor", "HarborBackend", "harbor", "harbor"),
    ],
)  # fmt: skip
def test_installed_integration_without_its_framework_gets_the_install_hint(
    leaf: str, name: str, framework: str, extra: str
) -> None:
    """Issue 38 item 9: the integration distribution is installed, its framework is not."""
    pytest.importorskip(leaf)
    code = _FRAMEWORK_MISSING.format(framework=framework, leaf=leaf, name=name)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    missing, message = done.stdout.splitlines()[:2]
    # The name of what is missing is kept, for code that checks it.
    assert missing.split(".")[0] == framework
    assert f'pip install "osmosis-ai[{extra}]"' in message
    assert f"the module {missing!r} it needs is not" in message
