"""The public SDK 0.3 names of the Strands integration resolve to our classes, as 0.3.8 reports them."""

from __future__ import annotations

import importlib

MODULE = "osmosis_ai.rollout.integrations.agents.strands"


def test_reference_names_are_exported_with_0_3_8s_module() -> None:
    module = importlib.import_module(MODULE)
    for name in ("OsmosisRolloutModel", "OsmosisStrandsAgent", "StrandsAgentSampleSource"):
        assert name in module.__all__
        assert getattr(module, name).__module__ == MODULE  # 0.3.8: one module, strands.py


def test_all_is_derived_from_the_export_table() -> None:
    module = importlib.import_module(MODULE)
    assert module.__all__ == sorted(module._EXPORTS)


def test_reference_sample_source_name_is_an_alias() -> None:
    module = importlib.import_module(MODULE)
    assert module.StrandsAgentSampleSource is module.StrandsSampleSource
