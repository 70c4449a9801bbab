"""LocalBackend's per-rollout config copies share Strands tools but not the model."""

from __future__ import annotations

import copy

from strands import tool

from osmosis_ai.rollout import AgentWorkflowConfig
from osmosis_ai.rollout.backend.local._loading import ConfigCopier
from osmosis_ai.rollout.integrations.agents.strands import OsmosisRolloutModel


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def test_tools_are_shared_and_the_model_is_copied() -> None:
    config = AgentWorkflowConfig.model_validate(
        {
            "name": "multiply",
            "model": OsmosisRolloutModel(params={"temperature": 1.0}),
            "tools": [multiply],
        }
    )
    copied = ConfigCopier(config).copy()
    assert copied is not config
    assert copied.tools is not config.tools  # pyright: ignore[reportAttributeAccessIssue]
    assert copied.tools[0] is multiply  # pyright: ignore[reportAttributeAccessIssue]
    assert copied.model is not config.model  # pyright: ignore[reportAttributeAccessIssue]
    copied.model.update_config(params={"temperature": 0.0})  # pyright: ignore[reportAttributeAccessIssue]
    assert config.model.config["params"] == {"temperature": 1.0}  # pyright: ignore[reportAttributeAccessIssue]
    # A plain deepcopy (no registration involved) still isolates tools, as before.
    assert copy.deepcopy([multiply])[0] is not multiply
