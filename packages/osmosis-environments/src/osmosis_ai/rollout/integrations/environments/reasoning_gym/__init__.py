"""Reasoning Gym generators as osmosis environments (``pip install 'osmosis-ai[reasoning-gym]'``).

``reasoning-gym:<generator>?<config fields>&seed=N``; see :mod:`.adapter` and
docs/guides/reasoning-gym.md. Importing this package does not import Reasoning Gym.
"""

from __future__ import annotations

from .adapter import SOURCE, ReasoningGymGrader, ReasoningGymSource, ReasoningGymWorkflow

__all__ = ["SOURCE", "ReasoningGymGrader", "ReasoningGymSource", "ReasoningGymWorkflow"]
