"""Integrations with agent frameworks; each lives in its own distribution.

Import a framework's integration explicitly (``osmosis_ai.rollout.integrations.agents.strands``,
``...agents.openai_agents``), so one framework never becomes a dependency of another. What core
offers integration authors is :mod:`osmosis_ai.rollout.integrations.spi`.
"""

from __future__ import annotations

import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)
# As in osmosis-ai 0.3.8: a neutral namespace that re-exports nothing.
__all__: list[str] = []
