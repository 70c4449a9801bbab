"""The public SDK 0.3 names of the Strands integration resolve to our classes."""

from __future__ import annotations

import importlib

MODULE = "osmosis_ai.rollout.integrations.agents.strands"


def test_reference_names_are_exported() -> None:
    module = importlib.import_module(MODULE)
    for name in ("OsmosisRolloutModel", "OsmosisStrandsAgent", "StrandsAgentSampleSource"):
        assert name in module.__all__
        assert getattr(module, name).__module__.startswith(MODULE)


def test_reference_sample_source_name_is_an_alias() -> None:
    module = importlib.import_module(MODULE)
    assert module.StrandsAgentSampleSource is module.StrandsSampleSource
