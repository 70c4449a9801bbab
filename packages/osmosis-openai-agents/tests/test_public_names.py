"""The public SDK 0.3 names of the OpenAI Agents integration, as 0.3.8 reports them."""

from __future__ import annotations

import importlib

import osmosis_ai.errors as errors

MODULE = "osmosis_ai.rollout.integrations.agents.openai_agents"
REFERENCE = (
    "OsmosisAgent",
    "OsmosisLitellmModel",
    "OsmosisMemorySession",
    "OsmosisRolloutModel",
    "SessionSampleSource",
)


def test_reference_names_are_exported_with_0_3_8s_module() -> None:
    module = importlib.import_module(MODULE)
    for name in REFERENCE:
        assert name in module.__all__
        assert getattr(module, name).__module__ == MODULE  # 0.3.8: one module, openai_agents.py


def test_all_is_derived_from_the_export_table() -> None:
    module = importlib.import_module(MODULE)
    assert module.__all__ == sorted(module._EXPORTS)


def test_every_exception_is_in_the_one_tree() -> None:
    module = importlib.import_module(MODULE)
    assert module.PolicyTimeoutError is errors.PolicyTimeoutError
    assert module.NoActiveRolloutError is errors.NoActiveRolloutError
    assert issubclass(module.SessionNotRegisteredError, errors.OsmosisError)
    assert issubclass(module.SessionNotRegisteredError, RuntimeError)  # 0.3.8 raised RuntimeError
